package check_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// cable is a switch-to-switch link by switch index and port.
type cable struct {
	s int32
	p uint8
}

// deltaFabric builds a fresh ft3-8 (or ring) with cables down.
func deltaFabric(t *testing.T, ring bool, down ...cable) *topology.Topology {
	t.Helper()
	var topo *topology.Topology
	var err error
	if ring {
		topo, err = analysistest.Ring(6, 1, 1)
	} else {
		topo, err = analysistest.FatTree3(8, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range down {
		testfab.SetLinkState(topo, c.s, c.p, topology.StateDown)
	}
	return topo
}

// switchCables lists every switch-to-switch cable once (from its lower
// switch index).
func switchCables(topo *topology.Topology) []cable {
	var out []cable
	for s, n := range topo.Switches() {
		for p := 1; p < len(topo.Nodes[n].Ports); p++ {
			peer := topo.Nodes[n].Ports[p].Peer
			if peer.Connected() && topo.SwitchIndex(peer.Node) > int32(s) {
				out = append(out, cable{int32(s), uint8(p)})
			}
		}
	}
	return out
}

// planOf routes topo with routes (Up*/Down* from switch 0 unless given)
// and the sequential LIDs, realised.
func planOf(t *testing.T, topo *topology.Topology, routes *plan.Routes) check.Plan {
	t.Helper()
	if routes == nil {
		routes = analysistest.UpDown(topo, 0)
	}
	lids := testfab.SequentialLIDs(topo, 0)
	rz, err := plan.Realize(topo, routes, lids)
	if err != nil {
		t.Fatal(err)
	}
	return check.Plan{Topo: topo, Routes: routes, LIDs: lids, VLs: plan.OneVL(), Realized: rz}
}

func fullOK(t *testing.T, p check.Plan) bool {
	t.Helper()
	_, err := check.Check(p, check.Options{})
	return err == nil
}

// TestDelta: Delta accepts only what Check accepts, says why otherwise,
// and accepts the plain cases it is for (a cable down and re-routed, the
// cable back up, the same plan again).
func TestDelta(t *testing.T) {
	ft := deltaFabric(t, false)
	cables := switchCables(ft)
	c0 := cables[0]
	cases := []struct {
		name   string
		basis  func() check.Plan
		next   func() check.Plan
		wantOK bool
		why    string // part of the reason when refused
	}{
		{name: "the same plan", basis: func() check.Plan { return planOf(t, deltaFabric(t, false), nil) },
			next: func() check.Plan { return planOf(t, deltaFabric(t, false), nil) }, wantOK: true},
		{name: "a cable down, re-routed", basis: func() check.Plan { return planOf(t, deltaFabric(t, false), nil) },
			next: func() check.Plan { return planOf(t, deltaFabric(t, false, c0), nil) }, wantOK: true},
		{name: "a cable back up", basis: func() check.Plan { return planOf(t, deltaFabric(t, false, c0), nil) },
			next: func() check.Plan { return planOf(t, deltaFabric(t, false), nil) }, wantOK: true},
		{name: "a cable down, tables unchanged", basis: func() check.Plan { return planOf(t, deltaFabric(t, false), nil) },
			next: func() check.Plan {
				p := planOf(t, deltaFabric(t, false), nil)
				p.Topo = deltaFabric(t, false, c0)
				p.Realized.Topo = p.Topo
				return p
			}, why: "not an up link"},
		{name: "a credit loop on the same ring", basis: func() check.Plan { return planOf(t, deltaFabric(t, true), nil) },
			next: func() check.Plan {
				topo := deltaFabric(t, true)
				return planOf(t, topo, analysistest.MinHop(topo))
			}, why: "cycle"},
		{name: "other LIDs", basis: func() check.Plan { return planOf(t, deltaFabric(t, false), nil) },
			next: func() check.Plan {
				p := planOf(t, deltaFabric(t, false), nil)
				p.LIDs = testfab.SequentialLIDs(p.Topo, 1)
				rz, err := plan.Realize(p.Topo, p.Routes, p.LIDs)
				if err != nil {
					t.Fatal(err)
				}
				p.Realized = rz
				return p
			}, why: "LID plan changed"},
		{name: "a CA link down", basis: func() check.Plan { return planOf(t, deltaFabric(t, false), nil) },
			next: func() check.Plan {
				topo := deltaFabric(t, false)
				ep := topo.Endpoints()[0]
				if topo.Nodes[ep.Node].Type == topology.Switch {
					ep = topo.Endpoints()[len(topo.Endpoints())-1]
				}
				topo.Port(ep).State = topology.StateDown
				return planOf(t, topo, nil)
			}, why: "CA or router link"},
		{name: "two VLs", basis: func() check.Plan { return planOf(t, deltaFabric(t, false), nil) },
			next: func() check.Plan {
				p := planOf(t, deltaFabric(t, false), nil)
				p.VLs = &plan.VLPlan{VLs: 2, Default: [16]uint8{0, 1}}
				return p
			}, why: "more than one VL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d check.Delta
			b := c.basis()
			if !fullOK(t, b) {
				t.Fatal("the basis does not pass Check")
			}
			d.Accepted(b, 0)
			next := c.next()
			ok, why := d.Check(next)
			if ok && !fullOK(t, next) {
				t.Fatal("Delta accepted a plan Check rejects")
			}
			if ok != c.wantOK || !strings.Contains(why, c.why) {
				t.Fatalf("Delta = %v (%q), want %v (%q)", ok, why, c.wantOK, c.why)
			}
		})
	}
}

// TestDeltaSequences: random cables down and up again, each plan Up*/Down*
// routed (from switch 0, or now and then another root), some with one
// entry broken: wherever Delta accepts, Check accepts; and Delta accepts
// most of them.
func TestDeltaSequences(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cables := switchCables(deltaFabric(t, false))
	var d check.Delta
	var down []cable
	first := planOf(t, deltaFabric(t, false), nil)
	d.Accepted(first, 0)
	last, lastDown := first, []cable(nil)
	accepted, steps, refused := 0, 0, 0
	for range 200 {
		if len(down) > 0 && rng.IntN(3) == 0 {
			down = down[:len(down)-1]
		} else {
			down = append(down, cables[rng.IntN(len(cables))])
		}
		topo := deltaFabric(t, false, down...)
		root := int32(0)
		if rng.IntN(4) == 0 {
			root = int32(rng.IntN(len(topo.Switches())))
		}
		p := planOf(t, topo, analysistest.UpDown(topo, root))
		switch rng.IntN(6) {
		case 0: // a broken entry: a random port toward a random owned LID
			lft := p.Realized.LFT[rng.IntN(len(p.Realized.LFT))]
			lft[1+rng.IntN(int(p.Realized.TopLID))] = uint8(rng.IntN(10))
		case 1: // an entry removed (harmless only where no source's traffic comes)
			lft := p.Realized.LFT[rng.IntN(len(p.Realized.LFT))]
			lft[1+rng.IntN(int(p.Realized.TopLID))] = plan.NoPort
		}
		full := fullOK(t, p)
		ok, why := d.Check(p)
		steps++
		if ok {
			accepted++
			if !full {
				t.Fatalf("step %d (%d cables down): Delta accepted a plan Check rejects", steps, len(down))
			}
			if rng.IntN(4) == 0 {
				// The caller does not take it (a later stage failed, the
				// sweep was cancelled): the basis must stay as it was.
				refused++
				down = slices.Clone(lastDown)
				if rng.IntN(2) == 0 {
					d.Accepted(last, 0) // the plan in force, named again
				}
				continue
			}
			d.Accepted(p, 0)
			last, lastDown = p, slices.Clone(down)
			if !check.BasisCountsAfresh(&d) {
				t.Fatalf("step %d: the basis's dependency counts differ from its plan's", steps)
			}
			continue
		}
		if !check.BasisCountsAfresh(&d) {
			t.Fatalf("step %d: after a refusal the basis's dependency counts differ from its plan's", steps)
		}
		t.Logf("step %d (%d cables down): Delta refused: %s (Check: %v)", steps, len(down), why, full)
		if full {
			d.Accepted(p, 0)
			last, lastDown = p, slices.Clone(down)
		} else {
			d.Forget()
			d.Accepted(first, 0)
			last, lastDown, down = first, nil, nil
		}
	}
	if refused == 0 {
		t.Error("no plan was checked and then not kept")
	}
	if accepted < steps/2 {
		t.Errorf("Delta accepted %d of %d re-routes; want most", accepted, steps)
	}
}

// TestDeltaRealizedChanges: tables RealizeChanged made from the basis's,
// or from the tables the basis's were made from (which Delta then
// compares in the changed LIDs only, or in the entries written where the
// changes came entry by entry), get the same verdict as the same
// forwarding realised in full, through random cables and now and then a
// broken entry in a changed destination's plane.
func TestDeltaRealizedChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	cables := switchCables(deltaFabric(t, false))
	var d check.Delta
	var down []cable
	last := planOf(t, deltaFabric(t, false), nil)
	d.Accepted(last, 0)
	var parent *check.Plan // what last's tables were made from
	agreed, siblings := 0, 0
	for step := range 100 {
		if len(down) > 0 && rng.IntN(3) == 0 {
			down = down[:len(down)-1]
		} else {
			down = append(down, cables[rng.IntN(len(cables))])
		}
		topo := deltaFabric(t, false, down...)
		routes := analysistest.UpDown(topo, int32(rng.IntN(2)))
		// Now and then the tables are made from those the basis's were
		// made from, as the host realises a plan filed before (a cable
		// back) and then the next cable's changes from the tables kept.
		from, sibling := last, parent != nil && rng.IntN(3) == 0
		if sibling {
			from = *parent
		}
		changes := &plan.Routes{Planes: make([]plan.DestPlanes, len(routes.Planes)), Base: 1, Changed: []int32{}}
		for e, dp := range routes.Planes {
			if dp.Hash() != from.Routes.Planes[e].Hash() {
				changes.Planes[e] = dp
				changes.Changed = append(changes.Changed, int32(e))
			}
		}
		if len(changes.Changed) > 0 && rng.IntN(4) == 0 { // a broken entry
			e := changes.Changed[rng.IntN(len(changes.Changed))]
			pl := slices.Clone(routes.Planes[e].Planes[0])
			pl[rng.IntN(len(pl))] = uint8(rng.IntN(6))
			routes.Planes[e].Planes = []plan.Plane{pl}
			changes.Planes[e] = routes.Planes[e]
		}
		if rng.IntN(2) == 0 { // the same changes entry by entry
			changes.Edits = []plan.Edit{}
			for _, e := range changes.Changed {
				for sw, port := range changes.Planes[e].Planes[0] {
					if port != from.Routes.Planes[e].Planes[0][sw] {
						changes.Edits = append(changes.Edits, plan.Edit{Dest: e, Switch: int32(sw), Port: port})
					}
				}
				changes.Planes[e] = plan.DestPlanes{}
			}
		}
		whole := planOf(t, topo, routes)
		rz, err := plan.RealizeChanged(from.Realized, topo, changes, whole.LIDs)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := plan.ChangedBetween(last.Realized, rz); sibling && ok {
			siblings++
		}
		byChanges := whole
		byChanges.Realized = rz
		okWhole, _ := d.Check(whole)
		ok, why := d.Check(byChanges)
		if ok != okWhole {
			t.Fatalf("step %d: Delta on the tables realised from changes %v (%s), in full %v", step, ok, why, okWhole)
		}
		full := fullOK(t, whole)
		if ok && !full {
			t.Fatalf("step %d: Delta accepted a plan Check rejects", step)
		}
		if ok {
			agreed++
		}
		if ok || full {
			d.Accepted(byChanges, 0)
			if !sibling {
				parent = &check.Plan{}
				*parent = last
			}
			last = byChanges
			last.Routes = routes
		}
	}
	if siblings == 0 {
		t.Error("no plan was realised from the tables its basis was realised from")
	}
	if agreed < 30 {
		t.Errorf("Delta accepted %d of 100 plans realised from changes; want most", agreed)
	}
}

// TestDeltaSettle: a basis accepted while the CA ports were Armed (a
// bring-up) takes the topology where they are Active, as the next cable's
// is patched from it, and still proves that cable's plan; a topology with
// a link changed is not taken.
func TestDeltaSettle(t *testing.T) {
	armed := deltaFabric(t, false)
	for i := range armed.Nodes {
		if armed.Nodes[i].Type == topology.CA {
			for p := 1; p < len(armed.Nodes[i].Ports); p++ {
				armed.Nodes[i].Ports[p].State = topology.StateArmed
			}
		}
	}
	var d check.Delta
	d.Accepted(planOf(t, armed, nil), 0)
	d.Prepare()
	cables := switchCables(armed)
	d.Settle(deltaFabric(t, false, cables[0]))
	if check.BasisTopology(&d) != armed {
		t.Fatal("a topology with a cable down was taken as the basis's")
	}
	active := deltaFabric(t, false)
	d.Settle(active)
	if check.BasisTopology(&d) != active {
		t.Fatal("the topology that differs only in port states was not taken")
	}
	next := planOf(t, deltaFabric(t, false, cables[0]), nil)
	if ok, why := d.Check(next); !ok {
		t.Fatalf("the cable's plan after Settle: %s", why)
	}
	d.Accepted(next, 0)
	if !check.BasisCountsAfresh(&d) {
		t.Error("the basis's counts are not its plan's")
	}
}
