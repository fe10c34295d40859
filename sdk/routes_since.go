package sdk

import (
	"math/rand/v2"
	"sync"

	"github.com/ibsm/ibsm/sdk/plan"
)

// lastAnswer remembers a routing engine's last few planes answers, each
// as one hash per destination, so that the next answer to a request
// naming one of them (RouteRequest.Since) carries only the destinations
// whose planes changed: after one cable of the largest fat tree in the
// LID space that is a few hundred of 47,824 destinations instead of
// 172 MB of planes. Hashes, not the planes, are kept: an engine may reuse
// its planes' memory for its next answer, and 8 bytes per destination is
// all the comparison needs. More than one is kept because the host may
// not keep the answer it asked for last (a sweep cancelled after the
// call, a shadow pipeline asking the same plugin).
type lastAnswer struct {
	mu   sync.Mutex
	kept [keptAnswers]answerHashes // the most recent first
}

// keptAnswers is how many answers lastAnswer remembers (384 KB each at
// 47,824 destinations).
const keptAnswers = 4

type answerHashes struct {
	token  uint64
	width  int
	hashes []uint64
	// planes are the answer's own, kept for an engine that declared
	// CapStablePlanes: a destination of the next answer with the same
	// plane slices has the same hash.
	planes []plan.DestPlanes
}

// answer names r with a fresh token and remembers it; when since names an
// answer remembered and both have the same shape, the routes returned
// carry only the destinations that changed (Base and Changed set). r
// itself is not modified. stable: the engine declared CapStablePlanes.
func (l *lastAnswer) answer(since uint64, width int, r *plan.Routes, stable bool) *plan.Routes {
	if !r.IsPlanes() {
		return r
	}
	l.mu.Lock()
	prev := l.kept[0]
	l.mu.Unlock()
	var hashes []uint64
	if stable && prev.planes != nil && len(prev.planes) == len(r.Planes) && prev.width == width {
		hashes = stableHashes(prev, r.Planes)
	} else {
		hashes = plan.DestHashes(r.Planes)
	}
	out := *r
	out.Token = rand.Uint64() | 1 // never 0, which means none
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range l.kept {
		if since == 0 || k.token != since || k.width != width || len(k.hashes) != len(hashes) {
			continue
		}
		out.Base, out.Changed = since, []int32{}
		for e, h := range hashes {
			if h != k.hashes[e] {
				out.Changed = append(out.Changed, int32(e))
			}
		}
		break
	}
	copy(l.kept[1:], l.kept[:keptAnswers-1])
	l.kept[0] = answerHashes{token: out.Token, width: width, hashes: hashes}
	if stable {
		l.kept[0].planes = r.Planes
	}
	return &out
}

// stableHashes returns the hashes of dests, taking prev's for every
// destination whose planes are the slices prev's answer held (an engine
// that declared CapStablePlanes never writes to those) and hashing the
// others.
func stableHashes(prev answerHashes, dests []plan.DestPlanes) []uint64 {
	out := make([]uint64, len(dests))
	var fresh []plan.DestPlanes
	var at []int
	for e, d := range dests {
		if sameSlices(prev.planes[e], d) {
			out[e] = prev.hashes[e]
			continue
		}
		fresh, at = append(fresh, d), append(at, e)
	}
	for k, h := range plan.DestHashes(fresh) {
		out[at[k]] = h
	}
	return out
}

// sameSlices reports whether a and b hold the same plane slices (the same
// memory, not merely equal bytes).
func sameSlices(a, b plan.DestPlanes) bool {
	if len(a.Planes) != len(b.Planes) {
		return false
	}
	for k, p := range a.Planes {
		q := b.Planes[k]
		if len(p) != len(q) || (len(p) > 0 && &p[0] != &q[0]) {
			return false
		}
	}
	return true
}
