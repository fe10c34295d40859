package program

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/mcast"
	"github.com/ibsm/ibsm/transport/smp"
)

// MFTStats counts what one MFT push did.
type MFTStats struct {
	// BlocksSent is the MulticastForwardingTable Sets sent; BlocksSkipped
	// the blocks of the touched switches that already held what they should.
	BlocksSent, BlocksSkipped int64
	Failed                    int64
}

// MFTProgrammer writes MulticastForwardingTable blocks (IBA 14.2.5.12),
// only those that differ from what it last wrote to each switch. A switch
// it has not written yet (first push, after a reset, a new switch) gets
// every block of the wanted table, zero blocks included, so no stale MLID
// survives in the blocks in use.
type MFTProgrammer struct {
	C        *mad.Client
	Log      hclog.Logger
	Parallel int

	mu    sync.Mutex
	known map[uint64]mcast.Blocks // by switch node GUID
}

// Forget drops what the programmer knows (the switches may have been
// reset or programmed by another SM): the next push rewrites every block.
func (p *MFTProgrammer) Forget(guids ...uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(guids) == 0 {
		p.known = nil
		return
	}
	for _, g := range guids {
		delete(p.known, g)
	}
}

// Known returns a copy of what the programmer last wrote to a switch.
func (p *MFTProgrammer) Known(guid uint64) mcast.Blocks {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := mcast.Blocks{}
	for k, b := range p.known[guid] {
		out[k] = b
	}
	return out
}

// Apply pushes want (by switch GUID) to the given switches of fab. A
// switch that fails keeps its old known state, so the next push retries
// it; the error names how many Sets failed.
func (p *MFTProgrammer) Apply(ctx context.Context, fab *discovery.Fabric, want map[uint64]mcast.Blocks, switches []uint64) (MFTStats, error) {
	var sent, skipped atomic.Int64
	r := fanout.New(p.Parallel)
	p.mu.Lock()
	if p.known == nil {
		p.known = map[uint64]mcast.Blocks{}
	}
	p.mu.Unlock()
	for _, g := range switches {
		n := fab.Nodes[g]
		if n == nil || n.Info.NodeType != smp.NodeTypeSwitch {
			continue
		}
		p.mu.Lock()
		known, seen := p.known[g]
		p.mu.Unlock()
		w := want[g]
		var sets []mcast.BlockKey
		for k, blk := range w {
			if old, ok := known[k]; seen && (ok && old == blk || !ok && blk == (smp.MFTBlock{})) {
				skipped.Add(1)
				continue
			}
			sets = append(sets, k)
		}
		for k := range known {
			if _, ok := w[k]; !ok && known[k] != (smp.MFTBlock{}) {
				sets = append(sets, k) // the block went: zero it
			}
		}
		if len(sets) == 0 {
			continue
		}
		path := n.Path
		r.Go(func() error {
			done := mcast.Blocks{}
			var firstErr error
			for _, k := range sets {
				blk := w[k]
				mod, err := smp.MFTMod(k.Position, k.Block)
				if err == nil {
					err = p.C.Set(ctx, path, smp.AttrMulticastForwardingTable, mod, &blk, nil)
				}
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("switch 0x%016x MFT block %d position %d: %w", g, k.Block, k.Position, err)
					}
					continue
				}
				sent.Add(1)
				done[k] = blk
			}
			p.mu.Lock()
			kn := p.known[g]
			if kn == nil {
				kn = mcast.Blocks{}
				p.known[g] = kn
			}
			for k, b := range done {
				kn[k] = b
			}
			if firstErr != nil {
				delete(p.known, g) // unsure what it holds: rewrite all next time
			}
			p.mu.Unlock()
			return firstErr
		})
	}
	err := r.Wait("programming multicast forwarding tables")
	st := MFTStats{BlocksSent: sent.Load(), BlocksSkipped: skipped.Load()}
	if err != nil {
		st.Failed = 1
	}
	return st, err
}
