package sdk

import (
	"math/rand/v2"
	"sync"

	"github.com/ibsm/ibsm/sdk/plan"
)

// lastAnswer remembers a routing engine's last planes answer as one hash
// per destination, so that the next answer to a request naming it
// (RouteRequest.Since) carries only the destinations whose planes
// changed: after one cable of the largest fat tree in the LID space that
// is a few hundred of 47,824 destinations instead of 172 MB of planes.
// Hashes, not the planes, are kept: an engine may reuse its planes'
// memory for its next answer, and 8 bytes per destination is all the
// comparison needs.
type lastAnswer struct {
	mu     sync.Mutex
	token  uint64
	width  int
	hashes []uint64
}

// answer names r with a fresh token and remembers it; when since names
// the answer remembered before and both have the same shape, the routes
// returned carry only the destinations that changed (Base and Changed
// set). r itself is not modified.
func (l *lastAnswer) answer(since uint64, width int, r *plan.Routes) *plan.Routes {
	if !r.IsPlanes() {
		l.mu.Lock()
		l.token, l.hashes = 0, nil
		l.mu.Unlock()
		return r
	}
	hashes := plan.DestHashes(r.Planes)
	out := *r
	out.Token = rand.Uint64() | 1 // never 0, which means none
	l.mu.Lock()
	defer l.mu.Unlock()
	if since != 0 && since == l.token && width == l.width && len(hashes) == len(l.hashes) {
		out.Base, out.Changed = since, []int32{}
		for e, h := range hashes {
			if h != l.hashes[e] {
				out.Changed = append(out.Changed, int32(e))
			}
		}
	}
	l.token, l.width, l.hashes = out.Token, width, hashes
	return &out
}
