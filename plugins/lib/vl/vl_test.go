package vl_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/vl"
	"github.com/ibsm/ibsm/plugins/lib/vl/vltest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/testfab/gen"
	"github.com/ibsm/ibsm/sdk/topology"
)

// fabricTrees is fabric and its destination trees.
func fabricTrees(t testing.TB, topo *topology.Topology, r *plan.Routes) (*vl.Fabric, *vl.Trees) {
	t.Helper()
	f := fabric(t, topo, r)
	tr, err := f.BuildTrees()
	if err != nil {
		t.Fatal(err)
	}
	return f, tr
}

// fabric indexes r's tables on topo with sequential LIDs.
func fabric(t testing.TB, topo *topology.Topology, r *plan.Routes) *vl.Fabric {
	t.Helper()
	f, err := vl.NewFabric(vltest.Realize(t, topo, r))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type algo struct {
	name string
	run  vl.Algorithm
}

var algos = []algo{{"layered", vl.Layered}, {"dfsssp", vl.DFSSSP}, {"acro", vl.ACRO}}

func toPlan(f *vl.Fabric, ly *vl.Layers) (*plan.VLPlan, vl.Stats, error) {
	if ly.PerHop {
		tr, _ := f.BuildTrees()
		return vl.HopPlan(f, ly, tr, 16)
	}
	return vl.PairPlan(f, ly)
}

func TestAlgorithms(t *testing.T) {
	rrg := func(n, d, c int, seed int64) func() (*topology.Topology, error) {
		return func() (*topology.Topology, error) {
			return gen.Topology(gen.RRG{Switches: n, NetPorts: d, CAsPerSwitch: c, Seed: seed})
		}
	}
	fabs := []struct {
		name   string
		build  func() (*topology.Topology, error)
		cyclic bool // one VL is not enough
	}{
		{"ring6", func() (*topology.Topology, error) { return testfab.Ring(6, 1) }, true},
		{"torus4x4", func() (*topology.Topology, error) { return testfab.Torus2D(4, 4, 1) }, true},
		{"line4", func() (*topology.Topology, error) { return testfab.Line(4, 1) }, false},
		{"rrg24x4", rrg(24, 4, 2, 1), true},
		{"rrg32x6", rrg(32, 6, 1, 2), true},
	}
	for _, fb := range fabs {
		topo, err := fb.build()
		if err != nil {
			t.Fatal(err)
		}
		f, tr := fabricTrees(t, topo, vltest.MinHop(t, topo))
		if err := vl.Check(f, &plan.VLPlan{}); (err != nil) != fb.cyclic {
			t.Fatalf("%s: one-VL check = %v, want cyclic %v", fb.name, err, fb.cyclic)
		}
		for _, a := range algos {
			t.Run(fb.name+"/"+a.name, func(t *testing.T) {
				ly, err := a.run(context.Background(), f, tr, 8)
				if err != nil {
					t.Fatal(err)
				}
				v, st, err := toPlan(f, ly)
				if err != nil {
					t.Fatal(err)
				}
				if err := vl.Check(f, v); err != nil {
					t.Fatalf("plan with %d layers is not deadlock-free: %v", ly.N, err)
				}
				if fb.cyclic != (ly.N > 1) {
					t.Errorf("layers = %d on a fabric with cyclic=%v", ly.N, fb.cyclic)
				}
				if ly.PerHop && (st.Overrides != 0 || st.SLs > vl.MaxSLs || v.VLs < ly.N || v.VLs > 8) {
					t.Errorf("acro plan: %+v, want one SL per DLID (no overrides), at most 16 SLs, between %d layers and 8 VLs", st, ly.N)
				}
				t.Logf("%+v", st)
			})
		}
	}
}

// uncap lifts every port's VLCap (a generated snapshot says 8) so that the
// layer counts are the algorithms' own.
func uncap(topo *topology.Topology) {
	for i := range topo.Nodes {
		for p := range topo.Nodes[i].Ports {
			topo.Nodes[i].Ports[p].VLCap = 255
		}
	}
}

func TestLimits(t *testing.T) {
	topo, err := testfab.Torus2D(4, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	f, tr := fabricTrees(t, topo, vltest.MinHop(t, topo))
	for _, a := range algos {
		_, err := a.run(context.Background(), f, tr, 1)
		var le *vl.LimitError
		if !errors.As(err, &le) || le.Available != 1 || le.Needed < 2 {
			t.Errorf("%s with one VL: err = %v, want a LimitError needing 2 of 1", a.name, err)
		}
	}
}

// TestACROVersusLASH is Kawano et al.'s claim at a small scale: on random
// regular graphs with a fixed random minimal routing table, ACRO needs no
// more layers than LASH-style layering on average, and every ACRO plan that
// fits 16 SLs passes the exact checker.
func TestACROVersusLASH(t *testing.T) {
	var acro, lash int
	for seed := int64(1); seed <= 6; seed++ {
		topo, err := gen.Topology(gen.RRG{Switches: 32, NetPorts: 4, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		uncap(topo)
		r, err := vl.RandomMinimal(topo, seed)
		if err != nil {
			t.Fatal(err)
		}
		f, tr := fabricTrees(t, topo, r)
		a, err := vl.ACRO(context.Background(), f, tr, 64)
		if err != nil {
			t.Fatal(err)
		}
		l, err := vl.Layered(context.Background(), f, tr, 64)
		if err != nil {
			t.Fatal(err)
		}
		acro += a.N
		lash += l.N
		v, st, err := vl.HopPlan(f, a, tr, 8)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := vl.Check(f, v); err != nil {
			t.Errorf("seed %d: ACRO plan: %v", seed, err)
		}
		if st.Overrides != 0 {
			t.Errorf("seed %d: %d per-source overrides, want none", seed, st.Overrides)
		}
	}
	t.Logf("layers over 6 seeds: acro %d, layered %d", acro, lash)
	if acro > lash {
		t.Errorf("acro needs %d layers in all, layered %d", acro, lash)
	}
}

// TestHopPlanFewSLs squeezes acro's IB plan into few SLs: the plan grows
// VLs first, then splits destinations into per-source overrides, and is
// either deadlock-free (exact checker) or a LimitError — never silently
// wrong. With one VL on a cyclic routing it must refuse.
func TestHopPlanFewSLs(t *testing.T) {
	topo, err := gen.Topology(gen.RRG{Switches: 32, NetPorts: 4, CAsPerSwitch: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	r, err := vl.RandomMinimal(topo, 3)
	if err != nil {
		t.Fatal(err)
	}
	f, tr := fabricTrees(t, topo, r)
	ly, err := vl.ACRO(context.Background(), f, tr, 8)
	if err != nil {
		t.Fatal(err)
	}
	sawSplit := false
	for _, c := range []struct{ vls, sls int }{{8, 16}, {8, 2}, {ly.N, 3}, {ly.N, 1}, {1, 16}} {
		v, st, err := vl.HopPlanSLs(f, ly, tr, c.vls, c.sls)
		var le *vl.LimitError
		switch {
		case err != nil && errors.As(err, &le):
			if c.vls == 8 && c.sls == 16 {
				t.Errorf("%d VLs, %d SLs: %v", c.vls, c.sls, err)
			}
			t.Logf("%d VLs, %d SLs: %v", c.vls, c.sls, err)
		case err != nil:
			t.Errorf("%d VLs, %d SLs: want a LimitError, got %v", c.vls, c.sls, err)
		default:
			if c.vls == 1 {
				t.Errorf("one VL accepted on a cyclic routing: %+v", st)
			}
			if err := vl.Check(f, v); err != nil {
				t.Errorf("%d VLs, %d SLs: %+v: %v", c.vls, c.sls, st, err)
			}
			if st.SLs > c.sls || v.VLs > c.vls {
				t.Errorf("%d VLs, %d SLs: plan uses %+v", c.vls, c.sls, st)
			}
			sawSplit = sawSplit || st.Overrides > 0
			t.Logf("%d VLs, %d SLs: %+v", c.vls, c.sls, st)
		}
	}
	if !sawSplit {
		t.Error("no squeeze reached the per-source fallback")
	}
}

// minHopRRG is random regular graph g routed by min-hop, indexed, with its
// destination trees.
func minHopRRG(t *testing.T, g gen.RRG) (*vl.Fabric, *vl.Trees) {
	t.Helper()
	topo, err := gen.Topology(g)
	if err != nil {
		t.Fatal(err)
	}
	return fabricTrees(t, topo, vltest.MinHop(t, topo))
}

// TestHopPlanWords: HopPlan keeps a class's state in 32-bit words when
// every switch has at most 27 switch-to-switch ports and in 64-bit words
// up to 59; both give the same plan, a fabric with more switch ports
// than the narrow word holds is planned deadlock-free on the wide one, and
// one with more than the wide word holds is refused by name.
func TestHopPlanWords(t *testing.T) {
	cases := []struct {
		name            string
		rrg             gen.RRG
		compare, refuse bool
	}{
		{"rrg32x6 narrow and wide", gen.RRG{Switches: 32, NetPorts: 6, CAsPerSwitch: 2, Seed: 2}, true, false},
		{"rrg40x30 wide", gen.RRG{Switches: 40, NetPorts: 30, CAsPerSwitch: 1, Seed: 1}, false, false},
		{"rrg64x60 refused", gen.RRG{Switches: 64, NetPorts: 60, CAsPerSwitch: 1, Seed: 1}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, tr := minHopRRG(t, c.rrg)
			ly, err := vl.ACRO(context.Background(), f, tr, 8)
			if err != nil {
				t.Fatal(err)
			}
			v, st, err := vl.HopPlan(f, ly, tr, 8)
			if c.refuse {
				if err == nil || !strings.Contains(err.Error(), "60 switch-to-switch ports") {
					t.Fatalf("err = %v, want a refusal naming the 60 switch-to-switch ports", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := vl.Check(f, v); err != nil {
				t.Fatalf("%+v: %v", st, err)
			}
			if !c.compare {
				return
			}
			w, _, err := vl.HopPlanWide(f, ly, tr, 8)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, w) {
				t.Errorf("the narrow and the wide state words give different plans")
			}
		})
	}
}

// TestACROWords: ACRO keeps a switch's children toward a destination as a
// bit mask of 16, 32 or 64 bits by its switch-to-switch port count; every
// width that holds the ports gives the same layers, and a fabric with more
// ports than the widest holds is refused by name.
func TestACROWords(t *testing.T) {
	cases := []struct {
		name   string
		rrg    gen.RRG
		widths []int // 0: vl.ACRO itself
		refuse bool
	}{
		{"rrg32x6", gen.RRG{Switches: 32, NetPorts: 6, CAsPerSwitch: 2, Seed: 2}, []int{0, 16, 32, 64}, false},
		{"rrg40x30", gen.RRG{Switches: 40, NetPorts: 30, CAsPerSwitch: 1, Seed: 1}, []int{0, 32, 64}, false},
		{"rrg72x64", gen.RRG{Switches: 72, NetPorts: 64, CAsPerSwitch: 1, Seed: 1}, []int{0, 64}, false},
		{"rrg72x66 refused", gen.RRG{Switches: 72, NetPorts: 66, CAsPerSwitch: 1, Seed: 1}, []int{0}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, tr := minHopRRG(t, c.rrg)
			var first *vl.Layers
			for _, w := range c.widths {
				run := vl.ACRO
				if w > 0 {
					run = vl.ACROWords(w)
				}
				ly, err := run(context.Background(), f, tr, 8)
				if c.refuse {
					if err == nil || !strings.Contains(err.Error(), "66 switch-to-switch ports") {
						t.Fatalf("err = %v, want a refusal naming the 66 switch-to-switch ports", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("%d-bit masks: %v", w, err)
				}
				if first == nil {
					first = ly
				} else if !reflect.DeepEqual(first, ly) {
					t.Errorf("%d-bit masks give other layers than ACRO's own width", w)
				}
			}
		})
	}
}
