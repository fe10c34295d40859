package sim

import (
	"sync"

	"github.com/ibsm/ibsm/transport/smp"
)

// maxSharedBlocks bounds the distinct LFT blocks blockPool keeps (64 B each
// plus the map's own): a fabric whose tables change again and again keeps
// at most this many for sharing; blocks beyond it are stored unshared.
const maxSharedBlocks = 1 << 20

// blockPool shares identical LFT blocks between switches. The tables of a
// regular fabric repeat: on a full 3-level fat tree with sequential LIDs
// 0.6 % of ft3-36's 337 k blocks are distinct, so a block per Set held
// ~185 MB of the host's heap on ft3-56's embedded fabric where the distinct
// ones take well under 1 MB. Stored blocks are never written (a Set
// replaces the slot's pointer), so sharing them is safe.
type blockPool struct {
	mu sync.RWMutex
	m  map[smp.LFTBlock]*smp.LFTBlock
}

// get returns the shared copy of b, adding one if there is none yet.
func (p *blockPool) get(b *smp.LFTBlock) *smp.LFTBlock {
	p.mu.RLock()
	s, ok := p.m[*b]
	p.mu.RUnlock()
	if ok {
		return s
	}
	s = new(smp.LFTBlock)
	*s = *b
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.m[*b]; ok {
		return old
	}
	if p.m == nil {
		p.m = make(map[smp.LFTBlock]*smp.LFTBlock)
	}
	if len(p.m) < maxSharedBlocks {
		p.m[*b] = s
	}
	return s
}
