package pipeline

import (
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk/plan"
)

// routeBasis is what the host keeps of a remote engine's last planes
// answer so that its next route call carries only the destinations that
// changed (sdk.RouteRequest.Since): after one cable of the largest fat
// tree in the LID space that is a few hundred destinations instead of
// 172 MB of planes. The tables realised from the answer stand in for its
// planes: the changed destinations are written into a copy of them
// (plan.RealizeChanged).
type routeBasis struct {
	engine string
	lmc    uint8
	topo   uint64   // the hash of the topology answered
	token  uint64   // the plugin's name for the answer
	hashes []uint64 // planeHasher hashes of each destination's planes
	// full: every destination has one plane per LID of its port (its
	// own LMC, which the LID assigner chose: a switch's port 0 often has
	// LMC 0 where CAs have the configured one), so plane k is realised by
	// LID base+k alone and the next answer may name changed entries
	// (plan.Routes.Edits): their old ports are rz's.
	full bool
	lids uint64 // hashLIDs of the LID plan rz was realised with
	rz   *plan.Realized
}

// since returns the basis to name in e's route call, nil to ask for the
// whole answer. Changes are asked for only where nothing after the route
// call reads the planes: a LID assigner that declared routes-unread and
// a VL assigner whose one-VL plan the host proves itself (the host asks
// the engine again for its whole answer should either need them).
func (r *Runner) since(e Engine, in Input) *routeBasis {
	r.mu.Lock()
	b := r.basis
	r.mu.Unlock()
	if b == nil || b.engine != e.Name || b.lmc != in.LMC || !r.LID.RoutesUnread || !r.VL.OneVL || r.checker() == nil ||
		len(b.hashes) != len(in.Topo.Endpoints()) || len(b.rz.LFT) != len(in.Topo.Switches()) {
		return nil
	}
	return b
}

// keep makes e's answer routes for in (whose topology hashes to topo;
// token: the plugin's name for the answer, 0 for none; hashes: its
// destinations' hashes; from: the basis it changes, for an answer of
// changes), as realised in rz with lids, the basis of e's next route call.
func (r *Runner) keep(e Engine, in Input, topo, token uint64, routes *plan.Routes, hashes []uint64, from *routeBasis, lids *plan.LIDPlan, rz *plan.Realized) {
	if token == 0 || !routes.IsPlanes() || lids.Planes != nil {
		return
	}
	full := routes.Base == 0 || from.full
	for e, d := range routes.Planes {
		// An answer of changes carries planes only for the destinations
		// it changed whole; edited ones keep their count.
		if n := len(d.Planes); (n != 0 || routes.Base == 0) && (e >= len(lids.Ports) || n != lids.Ports[e].Count()) {
			full = false
			break
		}
	}
	b := &routeBasis{engine: e.Name, lmc: in.LMC, topo: topo, token: token, hashes: hashes, full: full, lids: hashLIDs(lids), rz: rz}
	r.mu.Lock()
	r.basis = b
	r.mu.Unlock()
}

// changedHashes returns the per-destination planeHasher hashes of
// routes that change basis b's answer: the changed destinations' planes
// hashed, or the hashes of b's answer moved by each edit, whose old port
// is the one b's tables hold.
func (b *routeBasis) changedHashes(routes *plan.Routes) ([]uint64, error) {
	hs := slices.Clone(b.hashes)
	h := hasherFor(planeKey, routes.Planes) // the changed destinations' (an answer of edits has none)
	if routes.Edits != nil {
		if !b.full {
			return nil, fmt.Errorf("the engine named changed entries of planes it had not answered one per LID")
		}
		for _, x := range routes.Edits {
			lid, ok := b.lidOf(x)
			if !ok {
				return nil, fmt.Errorf("changed entry (destination %d, plane %d, switch %d) out of range", x.Dest, x.Plane, x.Switch)
			}
			hs[x.Dest] = h.edit(hs[x.Dest], int(x.Plane), int(x.Switch), b.rz.LFT[x.Switch][lid], x.Port)
		}
		return hs, nil
	}
	for _, d := range routes.Changed {
		if d < 0 || int(d) >= len(hs) {
			return nil, fmt.Errorf("changed destination %d out of range", d)
		}
		hs[d] = h.hash(routes.Planes[d])
	}
	return hs, nil
}

// lidOf returns the LID that realises edit x's plane in b's tables.
func (b *routeBasis) lidOf(x plan.Edit) (int, bool) {
	ports := b.rz.LIDs.Ports
	if x.Dest < 0 || int(x.Dest) >= len(ports) || x.Switch < 0 || int(x.Switch) >= len(b.rz.LFT) || int(x.Plane) >= ports[x.Dest].Count() {
		return 0, false
	}
	lid := int(ports[x.Dest].Base) + int(x.Plane)
	return lid, lid <= int(b.rz.TopLID)
}

// tablesFor returns the basis whose tables a whole planes answer routes
// (hashes: its destinations') may be realised from as changes: the same
// fabric shape and LIDs, and at most half of the destinations changed
// (beyond that nearly every table is copied anyway). A cable that comes
// back brings back a plan filed before it went down; realised in full
// that is 187 M entries transposed into a second set of tables at
// ft3-56, where a few thousand destinations differ from the tables kept.
func (r *Runner) tablesFor(in Input, routes *plan.Routes, hashes []uint64, lids *plan.LIDPlan) *routeBasis {
	r.mu.Lock()
	b := r.basis
	r.mu.Unlock()
	if b == nil || !routes.IsPlanes() || lids.Planes != nil || len(hashes) != len(b.hashes) ||
		len(b.rz.LFT) != len(in.Topo.Switches()) || hashLIDs(lids) != b.lids {
		return nil
	}
	n := 0
	for d, h := range hashes {
		if h != b.hashes[d] {
			n++
		}
	}
	if n > len(hashes)/2 {
		return nil
	}
	return b
}

// changesTo returns whole routes (hashes: its destinations') as a change
// to b's answer, for plan.RealizeChanged from b's tables: the same planes,
// with the destinations whose hashes differ named.
func (b *routeBasis) changesTo(routes *plan.Routes, hashes []uint64) *plan.Routes {
	out := &plan.Routes{Planes: routes.Planes, Base: b.token | 1, Changed: []int32{}}
	for d, h := range hashes {
		if h != b.hashes[d] {
			out.Changed = append(out.Changed, int32(d))
		}
	}
	return out
}
