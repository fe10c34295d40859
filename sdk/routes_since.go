package sdk

import (
	"encoding/binary"
	"math/bits"
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
	// plane slices has the same hash, and a later answer's changed
	// destinations are diffed against them for an answer of edits.
	planes []plan.DestPlanes
}

// answer names r with a fresh token and remembers it; when since names an
// answer remembered and both have the same shape, the routes returned
// carry only the destinations that changed (Base and Changed set), as
// edits of that answer's planes (Edits) when the caller takes them
// (edits) and they can be had (see changedEntries). r itself is not
// modified. stable: the engine declared CapStablePlanes.
func (l *lastAnswer) answer(since uint64, width int, r *plan.Routes, stable, edits bool) *plan.Routes {
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
	out.Base, out.Changed, out.Edits = 0, nil, nil
	var basePlanes []plan.DestPlanes
	l.mu.Lock()
	for _, k := range l.kept {
		if since == 0 || k.token != since || k.width != width || len(k.hashes) != len(hashes) {
			continue
		}
		out.Base, out.Changed, basePlanes = since, []int32{}, k.planes
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
	l.mu.Unlock()
	// The kept planes are read outside the lock: a stable engine never
	// writes to them, and they stay whole in memory while read here even
	// if another answer drops them from kept.
	if edits && basePlanes != nil {
		if e, ok := changedEntries(basePlanes, r.Planes, out.Changed, width); ok {
			out.Edits = e
		}
	}
	return &out
}

// changedEntries returns the entries of the destinations in changed whose
// planes in dests differ from those in base, in (destination, plane,
// switch) order, or false when edits cannot say it (a destination whose
// number of planes changed, or more than 128 of them, which no answer
// carries; a plane not width long) or the planes say it in fewer bytes
// (see editEntriesPerPlaneByte).
func changedEntries(base, dests []plan.DestPlanes, changed []int32, width int) ([]plan.Edit, bool) {
	total := 0
	for _, e := range changed {
		was, is := base[e].Planes, dests[e].Planes
		if len(was) != len(is) || len(is) > 1<<7 {
			return nil, false
		}
		for k := range is {
			if len(was[k]) != width || len(is[k]) != width {
				return nil, false
			}
		}
		total += len(is) * width
	}
	most := max(total/editEntriesPerPlaneByte, minEditEntries)
	edits := []plan.Edit{}
	for _, e := range changed {
		for k, pl := range dests[e].Planes {
			edits = diffPlane(edits, e, uint8(k), base[e].Planes[k], pl)
			if len(edits) > most {
				return nil, false
			}
		}
	}
	return edits, true
}

// editEntriesPerPlaneByte: an answer of edits carries at most one entry
// in this many of the changed planes' bytes (or minEditEntries, which
// either form sends in no time), or the planes go whole: an entry is 7
// bytes on the wire at ft3-56 (12 in memory), a plane's entry one. One
// cable there changes a few thousand of 18 M.
const (
	editEntriesPerPlaneByte = 8
	minEditEntries          = 4096
)

// diffPlane appends to edits an entry for every switch whose port in is
// differs from was (both the same length), eight switches at a time.
func diffPlane(edits []plan.Edit, dest int32, k uint8, was, is plan.Plane) []plan.Edit {
	n := len(is) &^ 7
	for s := 0; s < n; s += 8 {
		x := binary.LittleEndian.Uint64(was[s:]) ^ binary.LittleEndian.Uint64(is[s:])
		for x != 0 {
			b := bits.TrailingZeros64(x) / 8
			edits = append(edits, plan.Edit{Dest: dest, Switch: int32(s + b), Plane: k, Port: is[s+b]})
			x &^= 0xFF << (8 * b)
		}
	}
	for s := n; s < len(is); s++ {
		if was[s] != is[s] {
			edits = append(edits, plan.Edit{Dest: dest, Switch: int32(s), Plane: k, Port: is[s]})
		}
	}
	return edits
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
