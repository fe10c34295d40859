package program_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestCAReset: a CA port that lost the LID this programmer gave it was
// reset, its tables with it: the next Apply gives it its LID and its SL2VL
// and VLArbitration tables again, and nothing to any other port, whether
// the plan's LIDs are those of the last Apply (the reset is found among
// the ports lidSets looks at) or all changed (every known CA is checked).
func TestCAReset(t *testing.T) {
	tc := cases[1] // two VLs: tables on CA ports
	tests := []struct {
		name   string
		newLID bool // the second plan gives every end port another LID
	}{
		{"same LIDs", false},
		{"other LIDs", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tc.file(t))
			_, topo := r.discover(t)
			routes := tc.route(topo)
			rz := realize(t, topo, routes, tc.lmc)
			vls := analysistest.RingVLs(rz)
			p := &program.Programmer{C: r.c, Parallel: 4}
			apply(t, p, r, rz, vls)

			// The last end port, a CA's, goes back to LID 0 (raw Set).
			fab, _ := r.discover(t)
			ep := topo.Endpoints()[len(topo.Endpoints())-1]
			n := fab.Nodes[topo.Nodes[ep.Node].GUID]
			path, err := fab.PortPath(n, ep.Port)
			must(t, err)
			pi := n.Ports[ep.Port].Info
			pi.LID, pi.PortState, pi.PortPhysicalState = 0, smp.PortStateNoChange, smp.PhysStateNoChange
			pi.LinkSpeedEnabled, pi.LinkWidthEnabled, pi.LinkDownDefaultState = 0, 0, 0
			must(t, r.c.Set(context.Background(), path, smp.AttrPortInfo, uint32(ep.Port), &pi, nil))

			rz2, ports := rz, int64(1)
			if tt.newLID {
				rz2, err = analysistest.Realize(topo, routes, tc.lmc, plan.DLIDBase)
				must(t, err)
				shifted := *rz2.LIDs
				shifted.Ports = append([]plan.PortLID(nil), rz2.LIDs.Ports...)
				for i := range shifted.Ports {
					shifted.Ports[i].Base += 1 << tc.lmc * uint16(len(shifted.Ports))
				}
				rz2, err = plan.Realize(topo, routes, &shifted)
				must(t, err)
				ports = int64(len(topo.Endpoints()))
			}
			vls2 := analysistest.RingVLs(rz2)
			st := apply(t, p, r, rz2, vls2)
			if st.PortInfoSets != ports || st.SL2VLSets != 1 || st.VLArbSets != 2 {
				t.Fatalf("after the CA port's reset: %d PortInfo, %d SL2VL, %d VLArbitration Sets; want %d, 1 and 2 (its low and high block)",
					st.PortInfoSets, st.SL2VLSets, st.VLArbSets, ports)
			}
			checkFabric(t, r, topo, rz2, vls2)
			if st = apply(t, p, r, rz2, vls2); st.Sets() != 0 {
				t.Fatalf("the same plan again sent %+v", st)
			}
		})
	}
}

// TestComparedFollowsChanges walks the tables a cable's way down and back
// produce in the pipeline: a change realised from the plan in force, the
// old topology's plan from the cache realised afresh, then the next
// cable's change realised from the first change's tables (not from what
// was applied last). Each Apply sends exactly the blocks that differ; it
// compares every block only where nothing relates the new tables to the
// last ones (the plan from the cache), else only the blocks of the LIDs
// that changed since (a regression to whole-table compares fails here).
func TestComparedFollowsChanges(t *testing.T) {
	c := newChangeRig(t)
	r, topo, routes, rz0, p, e1, e2 := c.r, c.topo, c.routes, c.rz0, c.p, c.e1, c.e2
	blocks := int64(rz0.TopLID)/64 + 1
	sw := int64(len(topo.Switches()))
	if blocks < 3 {
		t.Fatalf("the fabric spans %d LFT blocks; the test needs several", blocks)
	}
	moved1 := reroute(t, topo, routes, e1, []int{0})
	rz1 := c.change(t, rz0, moved1, e1)
	rzU := realize(t, topo, routes, 0) // the first topology again: from the cache, realised afresh
	// The next change keeps the first (e1 moved) and moves e2: its tables
	// differ from rzU's in a block ChangedSince does not name, which only
	// the relation kept since rzU's Apply says to compare.
	moved2 := reroute(t, topo, moved1, e2, []int{1})
	rz2 := c.change(t, rz1, moved2, e2)
	top := int64(rz0.TopLID) + 1
	steps := []struct {
		name         string
		rz           *plan.Realized
		sent         int64
		comparedMost int64 // LFT entries
	}{
		{"a change from the plan in force", rz1, 1, 1}, // e1's entry in the one row copied
		// Nothing relates it: every row whole, the one that differs
		// block by block too.
		{"the plan from the cache", rzU, 1, sw*top + blocks*64},
		// e2's entry in every row, and the block rzU's Apply changed.
		{"a change from the first change", rz2, 2, sw + 64},
		{"the same tables again", rz2, 0, 0},
	}
	for _, step := range steps {
		st := apply(t, p, r, step.rz, nil)
		if st.LFTBlocksSent != step.sent {
			t.Fatalf("%s: %d blocks sent, want %d", step.name, st.LFTBlocksSent, step.sent)
		}
		if c := p.Compared(); c > step.comparedMost {
			t.Fatalf("%s: %d entries compared, want at most %d", step.name, c, step.comparedMost)
		}
		checkFabric(t, r, topo, step.rz, nil)
	}
}

// TestComparedAfterSamePlan: the pipeline may realise a cable's tables
// from a plan the SM never applied, a sweep's whose key was the plan in
// force's (nothing sent; Same), sharing that plan's rows. The next Apply,
// after another plan in between, still compares only the LIDs that
// changed and the blocks the programmer rewrote since.
func TestComparedAfterSamePlan(t *testing.T) {
	c := newChangeRig(t)
	r, topo, routes, rz0, p, e1, e2 := c.r, c.topo, c.routes, c.rz0, c.p, c.e1, c.e2
	sw, top := int64(len(topo.Switches())), int64(rz0.TopLID)+1
	moved1 := reroute(t, topo, routes, e1, []int{0})
	rz1 := c.change(t, rz0, moved1, e1)
	rz1b := c.change(t, rz1, moved1) // the same tables: a sweep's plan with rz1's key
	rzU := realize(t, topo, routes, 0)
	rz2 := c.change(t, rz1b, reroute(t, topo, moved1, e2, []int{1}), e2)
	tests := []struct {
		name         string
		same         bool // the SM said rz1b is rz1's tables
		comparedMost int64
	}{
		{"told", true, sw + 64},           // e2's entry in every row, switch 0's block rzU rewrote
		{"not told", false, sw*top + 192}, // every row whole
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p.Forget()
			apply(t, p, r, rz0, nil)
			apply(t, p, r, rz1, nil)
			if tc.same {
				p.Same(rz1, rz1b)
			}
			apply(t, p, r, rzU, nil)
			st := apply(t, p, r, rz2, nil)
			if st.LFTBlocksSent != 2 {
				t.Fatalf("%d blocks sent, want 2 (e1's and e2's)", st.LFTBlocksSent)
			}
			if c := p.Compared(); c > tc.comparedMost {
				t.Fatalf("%d entries compared, want at most %d", c, tc.comparedMost)
			}
			checkFabric(t, r, topo, rz2, nil)
		})
	}
}

// changeRig is a fabric spanning several LFT blocks programmed with rz0,
// and two CA destinations whose LIDs are in different blocks.
type changeRig struct {
	r      *rig
	topo   *topology.Topology
	routes *plan.Routes
	rz0    *plan.Realized
	p      *program.Programmer
	e1, e2 int
}

func newChangeRig(t *testing.T) *changeRig {
	f, err := topogen.FatTree{Radix: 16, Levels: 2}.Generate()
	must(t, err)
	c := &changeRig{r: newRig(t, f)}
	_, c.topo = c.r.discover(t)
	c.routes = analysistest.UpDown(c.topo, 0)
	c.rz0 = realize(t, c.topo, c.routes, 0)
	c.p = &program.Programmer{C: c.r.c}
	apply(t, c.p, c.r, c.rz0, nil)
	eps := c.topo.Endpoints()
	c.e1 = len(eps) - 1
	for c.topo.Nodes[eps[c.e2].Node].Type != topology.CA || c.rz0.LIDs.Ports[c.e2].Base/64 == c.rz0.LIDs.Ports[c.e1].Base/64 {
		c.e2++
	}
	return c
}

// change realises routes moved, which change destinations e of base's
// answer, from base's tables (the LIDs of rz0).
func (c *changeRig) change(t *testing.T, base *plan.Realized, moved *plan.Routes, e ...int) *plan.Realized {
	t.Helper()
	changed := make([]int32, len(e))
	for i, d := range e {
		changed[i] = int32(d)
	}
	rz, err := plan.RealizeChanged(base, c.topo, &plan.Routes{Base: 1, Changed: changed, Planes: moved.Planes}, c.rz0.LIDs)
	must(t, err)
	return rz
}

// TestApplyChanged: told which nodes changed since the last Apply (a
// cable came back between two switches), Apply looks at the end ports of
// those nodes only and moves their ports to Active; where it cannot rely
// on that (a client re-registration to ask for) it looks at every end
// port.
func TestApplyChanged(t *testing.T) {
	tests := []struct {
		name  string
		rereg bool
		whole bool // every end port looked at
	}{
		{"cable up", false, false},
		{"cable up, re-registration asked", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := cases[0].file(t)
			r := newRig(t, f)
			_, topo := r.discover(t)
			rz := realize(t, topo, cases[0].route(topo), 0)
			p := &program.Programmer{C: r.c}
			apply(t, p, r, rz, nil)
			var l struct{ a, b uint64 }
			var pa uint8
			for _, link := range f.Links() {
				if link.A.Type == topology.Switch && link.B.Type == topology.Switch {
					l.a, l.b, pa = link.A.GUID, link.B.GUID, uint8(link.PA)
					break
				}
			}
			must(t, r.fab.LinkDown(l.a, pa))
			apply(t, p, r, rz, nil)
			must(t, r.fab.LinkUp(l.a, pa))
			if tc.rereg {
				p.Reregister()
			}
			fab, topo2 := r.discover(t)
			st, err := p.ApplyChanged(context.Background(), fab, topo2, rz, nil, []uint64{l.a, l.b})
			must(t, err)
			if st.StateSets != 4 {
				t.Fatalf("%d state Sets, want 4 (both ends Armed, then Active)", st.StateSets)
			}
			want := 2 // the two switches' port 0
			if tc.whole {
				want = len(topo.Endpoints())
			}
			if got := p.Looked(); got != want {
				t.Fatalf("looked at %d end ports, want %d", got, want)
			}
			checkFabric(t, r, topo, rz, nil)
		})
	}
}
