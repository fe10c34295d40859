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
	token  uint64   // the plugin's name for the answer
	hashes []uint64 // plan.DestPlanes.Hash of each destination's planes
	lids   uint64   // hashLIDs of the LID plan rz was realised with
	rz     *plan.Realized
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

// keep makes e's answer routes (token: the plugin's name for it, 0 for
// none; hashes: its destinations' hashes), as realised in rz with lids,
// the basis of e's next route call.
func (r *Runner) keep(e Engine, in Input, token uint64, routes *plan.Routes, hashes []uint64, lids *plan.LIDPlan, rz *plan.Realized) {
	if token == 0 || !routes.IsPlanes() || lids.Planes != nil {
		return
	}
	b := &routeBasis{engine: e.Name, lmc: in.LMC, token: token, hashes: hashes, lids: hashLIDs(lids), rz: rz}
	r.mu.Lock()
	r.basis = b
	r.mu.Unlock()
}

// changedHashes returns the per-destination hashes of routes that change
// basis b's answer.
func (b *routeBasis) changedHashes(routes *plan.Routes) ([]uint64, error) {
	hs := slices.Clone(b.hashes)
	for _, d := range routes.Changed {
		if d < 0 || int(d) >= len(hs) {
			return nil, fmt.Errorf("changed destination %d out of range", d)
		}
		hs[d] = routes.Planes[d].Hash()
	}
	return hs, nil
}
