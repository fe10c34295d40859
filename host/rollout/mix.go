package rollout

import (
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Plan is one complete forwarding state as the verifier accepted it.
type Plan struct {
	Rz  *plan.Realized
	VLs *plan.VLPlan // nil: one SL, one VL
}

// Pair is the plan in force (Old) and the one to move to (New), on the
// same topology snapshot.
type Pair struct {
	Old, New Plan
}

// Stageable reports why the pair cannot be promoted switch by switch, or
// nil: both plans must address every port alike and give every source the
// same SL toward every destination, so that a mixed state is a plan (the
// LIDs and SLs end nodes use do not depend on which switches changed).
func (p Pair) Stageable() error {
	o, n := p.Old.Rz, p.New.Rz
	switch {
	case o == nil || n == nil || o.LIDs == nil || n.LIDs == nil:
		return fmt.Errorf("a plan is missing its realised forwarding tables")
	case o.Topo != n.Topo && o.Topo.Hash() != n.Topo.Hash():
		return fmt.Errorf("the plans were computed on different topologies; wait for the candidate to be recomputed on the current fabric")
	case o.TopLID != n.TopLID || !slices.Equal(o.LIDs.Ports, n.LIDs.Ports):
		return fmt.Errorf("the candidate assigns other LIDs than the active plan (%s); a LID change reaches every port at once and cannot be staged per switch: give the candidate the active lid_assigner, or restart with the candidate as routing", lidDiff(o.LIDs, n.LIDs))
	case o.LIDs.Rule != n.LIDs.Rule || !slices.Equal(o.LIDs.Overrides, n.LIDs.Overrides):
		return fmt.Errorf("the candidate selects other DLIDs for some sources than the active plan; SA hands those out to end nodes, so the change cannot be staged per switch")
	}
	if err := sameSLs(p.Old.VLs, p.New.VLs, int(o.TopLID)); err != nil {
		return err
	}
	return sameCASL2VL(p)
}

func lidDiff(a, b *plan.LIDPlan) string {
	if len(a.Ports) != len(b.Ports) {
		return fmt.Sprintf("%d vs %d endpoints", len(a.Ports), len(b.Ports))
	}
	n, first := 0, -1
	for i := range a.Ports {
		if a.Ports[i] != b.Ports[i] {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	if first < 0 {
		return "the top LID differs"
	}
	return fmt.Sprintf("%d endpoints differ, e.g. endpoint %d: LID %d/LMC %d vs %d/%d", n, first,
		a.Ports[first].Base, a.Ports[first].LMC, b.Ports[first].Base, b.Ports[first].LMC)
}

func sl(v *plan.VLPlan, lid int) uint8 {
	if v == nil || lid >= len(v.SLByDLID) {
		return 0
	}
	return v.SLByDLID[lid]
}

func sameSLs(a, b *plan.VLPlan, top int) error {
	for lid := 0; lid <= top; lid++ {
		if sl(a, lid) != sl(b, lid) {
			return fmt.Errorf("the candidate gives DLID %d SL %d where the active plan gives SL %d; end nodes take SLs from SA, so an SL change cannot be staged per switch", lid, sl(b, lid), sl(a, lid))
		}
	}
	var ao, bo []plan.SLOverride
	if a != nil {
		ao = a.Overrides
	}
	if b != nil {
		bo = b.Overrides
	}
	if !slices.Equal(ao, bo) {
		return fmt.Errorf("the candidate has other per-source SL overrides than the active plan; an SL change cannot be staged per switch")
	}
	return nil
}

// sameCASL2VL: the default SL2VL table and those of CA ports are not a
// switch's to change.
func sameCASL2VL(p Pair) error {
	var od, nd [16]uint8
	if p.Old.VLs != nil {
		od = p.Old.VLs.Default
	}
	if p.New.VLs != nil {
		nd = p.New.VLs.Default
	}
	if od != nd {
		return fmt.Errorf("the candidate changes the default SL2VL table (%v -> %v); only per-switch tables can be staged", od, nd)
	}
	t := p.Old.Rz.Topo
	if !slices.Equal(tablesOf(p.Old.VLs, t, false), tablesOf(p.New.VLs, t, false)) {
		return fmt.Errorf("the candidate changes CA ports' SL2VL tables; only switch tables can be staged")
	}
	return nil
}

// tablesOf returns the SL2VL entries of switches (sw) or of other nodes,
// sorted.
func tablesOf(v *plan.VLPlan, t *topology.Topology, sw bool) []plan.SL2VLEntry {
	if v == nil {
		return nil
	}
	var out []plan.SL2VLEntry
	for _, e := range v.SL2VL {
		if (t.Nodes[e.Node].Type == topology.Switch) == sw {
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out
}

func sortEntries(es []plan.SL2VLEntry) {
	slices.SortFunc(es, func(a, b plan.SL2VLEntry) int {
		if a.Node != b.Node {
			return int(a.Node) - int(b.Node)
		}
		if a.In != b.In {
			return int(a.In) - int(b.In)
		}
		return int(a.Out) - int(b.Out)
	})
}

// switchTables groups the switch SL2VL entries of v by node.
func switchTables(v *plan.VLPlan, t *topology.Topology) map[int32][]plan.SL2VLEntry {
	m := map[int32][]plan.SL2VLEntry{}
	for _, e := range tablesOf(v, t, true) {
		m[e.Node] = append(m[e.Node], e)
	}
	return m
}

// State is a mixed forwarding state: New[s] tells whether switch index s
// (topology.Switches() order) holds its new tables.
type State []bool

// Count is the number of switches on new tables.
func (st State) Count() int {
	n := 0
	for _, b := range st {
		if b {
			n++
		}
	}
	return n
}

// With returns a copy of st with the switches ws on new tables.
func (st State) With(ws []int32) State {
	out := slices.Clone(st)
	for _, s := range ws {
		out[s] = true
	}
	return out
}

// Mix returns the plan of state st: each switch's LFT and SL2VL tables
// from New where st says so, else from Old. Call Stageable first.
func (p Pair) Mix(st State) Plan {
	o, n := p.Old.Rz, p.New.Rz
	rz := *o
	rz.LFT = make([][]uint8, len(o.LFT))
	for s := range rz.LFT {
		if st[s] {
			rz.LFT[s] = n.LFT[s]
		} else {
			rz.LFT[s] = o.LFT[s]
		}
	}
	return Plan{Rz: &rz, VLs: p.mixVLs(st, nil)}
}

// mixVLs is the VL plan of state st; flip, when set, takes those switches'
// tables from the other plan than st says (the union check's second pass).
func (p Pair) mixVLs(st State, flip []int32) *plan.VLPlan {
	if p.Old.VLs == nil && p.New.VLs == nil {
		return nil
	}
	t := p.Old.Rz.Topo
	base := p.Old.VLs
	if base == nil {
		base = p.New.VLs
	}
	v := *base
	isNew := slices.Clone(st)
	for _, s := range flip {
		isNew[s] = !isNew[s]
	}
	v.SL2VL = tablesOf(base, t, false)
	ot, nt := switchTables(p.Old.VLs, t), switchTables(p.New.VLs, t)
	for s, node := range t.Switches() {
		if isNew[s] {
			v.SL2VL = append(v.SL2VL, nt[node]...)
		} else {
			v.SL2VL = append(v.SL2VL, ot[node]...)
		}
	}
	return &v
}

// sl2vlDiffers lists the switches (indices) whose SL2VL tables differ
// between the plans.
func (p Pair) sl2vlDiffers() []bool {
	t := p.Old.Rz.Topo
	ot, nt := switchTables(p.Old.VLs, t), switchTables(p.New.VLs, t)
	out := make([]bool, len(t.Switches()))
	for s, node := range t.Switches() {
		out[s] = !slices.Equal(ot[node], nt[node])
	}
	return out
}
