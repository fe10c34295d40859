package rollout

import (
	"errors"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

func realize(t *testing.T, topo *topology.Topology, r *plan.Routes) Plan {
	t.Helper()
	rz, err := analysistest.Realize(topo, r, 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	return Plan{Rz: rz}
}

// exactUnion is an independent check of a transition: the exact (pair by
// pair) dependency graphs of both states, merged, must have no cycle.
func exactUnion(t *testing.T, p Pair, from, to State) {
	t.Helper()
	a, b := p.Mix(from), p.Mix(to)
	ea := analysistest.Exact(a.Rz, a.VLs, false)
	eb := analysistest.Exact(b.Rz, b.VLs, false)
	for e := range eb.Edges {
		ea.Edges[e] = true
	}
	if on := ea.OnCycle(); len(on) > 0 {
		t.Errorf("transition %d -> %d switches new: the exact union graph has %d hops on cycles", from.Count(), to.Count(), len(on))
	}
	rep, err := analysis.Analyse(b.Rz, b.VLs, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("state with %d switches new is not OK: loops %d, CA pairs %v, switch pairs %v, deadlock-free %v",
			to.Count(), rep.LoopLIDs, rep.CAPairs, rep.SwitchPairs, rep.DeadlockFree)
	}
}

// A 3-level fat tree (k=8: 128 CAs, 80 switches) with up/down rooted at
// one core as the active plan and at the next core as the candidate,
// promoted in three stages (a third, half the rest, the rest): every
// intermediate state and transition is checked again independently (the
// exact pair-by-pair dependency graph).
func TestScheduleFatTreeThreeStages(t *testing.T) {
	topo, err := analysistest.FatTree3(8, 1)
	if err != nil {
		t.Fatal(err)
	}
	tiers, count := Tiers(topo), [3]int{}
	for _, tr := range tiers {
		count[tr]++
	}
	if count != [3]int{32, 32, 16} {
		t.Errorf("tiers: %v switches per tier, want 32 leaves, 32 aggregation, 16 cores", count)
	}
	p := Pair{Old: realize(t, topo, analysistest.UpDown(topo, 0)), New: realize(t, topo, analysistest.UpDown(topo, 1))}
	c, err := NewChecker(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := Compare(TablesOf(p.Old), TablesOf(p.New))
	if d.SwitchesChanged < 3 || d.LIDsChanged != 0 {
		t.Fatalf("diff = %d switches, %d LIDs; want some switches and no LID", d.SwitchesChanged, d.LIDsChanged)
	}
	stages := []conf.Stage{{Name: "canary", Fraction: 0.34, Tier: -1}, {Name: "half", Fraction: 0.5, Tier: -1}, {Name: "last", Fraction: 1, Tier: -1}}
	groups, err := Groups(topo, d.Changed(topo), stages)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, g := range groups {
		if g.Name != stages[i].Name || len(g.Switches) == 0 {
			t.Fatalf("group %d is %q with %d switches, want %q, not empty", i, g.Name, len(g.Switches), stages[i].Name)
		}
		total += len(g.Switches)
	}
	if len(groups) != 3 || total != d.SwitchesChanged {
		t.Errorf("%d stages hold %d switches, %d change", len(groups), total, d.SwitchesChanged)
	}
	sc, err := Build(c, groups)
	if err != nil {
		t.Fatal(err)
	}
	nsw := len(topo.Switches())
	seen := map[string]bool{}
	for i, st := range sc.Steps {
		seen[st.Stage] = true
		exactUnion(t, p, StateAfter(nsw, sc.Steps, i), StateAfter(nsw, sc.Steps, i+1))
	}
	if len(seen) != 3 {
		t.Errorf("steps cover stages %v, want all three", seen)
	}
	final := p.Mix(StateAfter(nsw, sc.Steps, len(sc.Steps)))
	if d := Compare(TablesOf(final), TablesOf(p.New)); d.LFTBlocks != 0 {
		t.Errorf("after the last step %d blocks still differ from the candidate", d.LFTBlocks)
	}
	t.Logf("%d steps, %d analyses, splits %v", len(sc.Steps), sc.Analyses, sc.Splits)
}

// Rooted at a core of another pod's reach, the candidate cannot be
// entered stage by stage at all: the first mixed state loops, and the
// refusal says where.
func TestScheduleRefusesLoop(t *testing.T) {
	topo, err := analysistest.FatTree3(8, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := Pair{Old: realize(t, topo, analysistest.UpDown(topo, 0)), New: realize(t, topo, analysistest.UpDown(topo, 5))}
	c, err := NewChecker(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := Compare(TablesOf(p.Old), TablesOf(p.New))
	groups, _ := Groups(topo, d.Changed(topo), []conf.Stage{{Name: "leaves", Tier: 0}})
	_, err = Build(c, groups)
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Stage != "leaves" || !strings.Contains(err.Error(), "forwarding loop toward LID") {
		t.Fatalf("want the leaves stage refused with the loop named, got %v", err)
	}
}

// An adversarial candidate on a ring: the active plan is up/down rooted at
// switch 0, the candidate up/down rooted at the opposite switch. Each is
// deadlock-free alone, but their turns are forbidden at opposite ends of
// the ring: changing every switch at once lets old and new packets close a
// credit loop around it. The schedule must reorder (every step checked
// again, independently) or refuse naming the cycle; never pass a cyclic
// transition.
func TestScheduleRingAdversarial(t *testing.T) {
	const n = 6
	topo, err := analysistest.Ring(n, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := Pair{Old: realize(t, topo, analysistest.UpDown(topo, 0)), New: realize(t, topo, analysistest.UpDown(topo, n/2))}
	c, err := NewChecker(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	o, nw := c.Reports()
	if !o.OK() || !nw.OK() {
		t.Fatalf("end plans must each verify: old %v new %v", o.OK(), nw.OK())
	}
	all := make(State, n)
	for i := range all {
		all[i] = true
	}
	naive := c.Transition(make(State, n), all)
	if naive == nil || !strings.Contains(naive.Error(), "credit loop") {
		t.Fatalf("the naive one-step change should close a credit loop, got %v", naive)
	}
	t.Logf("naive: %v", naive)
	d := Compare(TablesOf(p.Old), TablesOf(p.New))
	groups, err := Groups(topo, d.Changed(topo), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Build(c, groups)
	var ref *RefusedError
	switch {
	case errors.As(err, &ref):
		if !strings.Contains(err.Error(), "cycle") || !strings.Contains(err.Error(), "0x") {
			t.Errorf("refusal does not name the cycle: %v", err)
		}
		t.Logf("refused after %d analyses: %v", sc.Analyses, err)
	case err != nil:
		t.Fatal(err)
	default:
		if len(sc.Steps) < 2 {
			t.Fatalf("the naive step is cyclic, yet the schedule has %d step(s)", len(sc.Steps))
		}
		for i := range sc.Steps {
			exactUnion(t, p, StateAfter(n, sc.Steps, i), StateAfter(n, sc.Steps, i+1))
		}
		t.Logf("reordered into %d steps: %v", len(sc.Steps), sc.Splits)
	}
}

func TestStageableRefusals(t *testing.T) {
	topo, err := analysistest.FatTree3(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	old := realize(t, topo, analysistest.UpDown(topo, 0))
	lids := analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)
	lids.Ports[0], lids.Ports[1] = lids.Ports[1], lids.Ports[0]
	rz, err := plan.Realize(topo, analysistest.MinHop(topo), lids)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Pair{Old: old, New: Plan{Rz: rz}}).Stageable(); err == nil || !strings.Contains(err.Error(), "other LIDs") {
		t.Errorf("LID change: %v", err)
	}
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(old.Rz.TopLID)+1), VLs: 2}
	v.SLByDLID[3] = 1
	if err := (Pair{Old: old, New: Plan{Rz: old.Rz, VLs: v}}).Stageable(); err == nil || !strings.Contains(err.Error(), "DLID 3 SL 1") {
		t.Errorf("SL change: %v", err)
	}
	if _, err := NewChecker(Pair{Old: old, New: realize(t, topo, analysistest.MinHop(topo))}, 1); err != nil {
		t.Errorf("same LIDs and SLs: %v", err)
	}
}

func TestGroupsSelectors(t *testing.T) {
	topo, err := analysistest.FatTree3(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	sws := topo.Switches()
	changed := make([]bool, len(sws))
	for i := range changed {
		changed[i] = i%2 == 0 // half the switches change
	}
	g0 := topo.Nodes[sws[0]].GUID
	groups, err := Groups(topo, changed, []conf.Stage{
		{Name: "one", GUIDs: []uint64{g0, topo.Nodes[sws[1]].GUID}, Tier: -1},
		{Name: "half", Fraction: 0.5, Tier: -1},
		{Name: "none", NodeDesc: "no such switch*", Tier: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	nChanged := (len(sws) + 1) / 2
	left := nChanged - 1
	if len(groups) != 4 || len(groups[0].Switches) != 1 || groups[0].Switches[0] != 0 ||
		len(groups[1].Switches) != (left+1)/2 || len(groups[2].Switches) != 0 ||
		groups[3].Name != "rest" || len(groups[3].Switches) != left-(left+1)/2 {
		t.Errorf("groups = %+v (changed %d)", groups, nChanged)
	}
	if _, err := Groups(topo, changed, []conf.Stage{{Name: "bad", GUIDs: []uint64{0xdead}, Tier: -1}}); err == nil || !strings.Contains(err.Error(), "not a switch") {
		t.Errorf("unknown GUID: %v", err)
	}
}
