package analysis_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// checkExact compares the report's CDG figures with the exact graph.
func checkExact(t *testing.T, r *plan.Realized, rep *analysis.Report, ex analysistest.ExactCDG) {
	t.Helper()
	for _, e := range ex.Compare(r, rep) {
		t.Error(e)
	}
}

func exactDeps(r *plan.Realized, v *plan.VLPlan, allLIDs bool) analysistest.ExactCDG {
	return analysistest.Exact(r, v, allLIDs)
}

func datelineRing(t *testing.T, n, cas int, lmc uint8, dropBack bool) (*plan.Realized, *plan.VLPlan) {
	t.Helper()
	topo, err := analysistest.Ring(n, cas, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysistest.ClockwiseRing(topo, lmc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := analysistest.DatelineVLs(r, dropBack)
	if err != nil {
		t.Fatal(err)
	}
	return r, v
}

func TestCDGOverChannelVL(t *testing.T) {
	cases := []struct {
		name    string
		build   func(t *testing.T) (*plan.Realized, *plan.VLPlan)
		allLIDs bool
		check   func(t *testing.T, rep *analysis.Report)
	}{
		{
			name:  "dateline ring: VL 0 to VL 1 mid-path, deadlock-free",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) { return datelineRing(t, 6, 1, 0, false) },
			check: func(t *testing.T, rep *analysis.Report) {
				if !rep.OK() {
					t.Errorf("want OK: deadlock-free %v, VLs %+v, problems %v", rep.DeadlockFree, rep.VLs, rep.VLProblems)
				}
				if !reflect.DeepEqual(rep.VLsUsed, []int{0, 1}) || !reflect.DeepEqual(rep.SLsUsed, []int{0, 1, 2, 3, 4, 5}) {
					t.Errorf("VLs %v SLs %v, want [0 1] and SL 0 plus one per crossed-to position 0..4", rep.VLsUsed, rep.SLsUsed)
				}
				if rep.VLs[1].FromOtherVLs == 0 {
					t.Errorf("no dependency from VL0 into VL1 counted: %+v", rep.VLs)
				}
			},
		},
		{
			name:  "dateline ring dropping back to VL 0: credit loop across VLs",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) { return datelineRing(t, 6, 1, 0, true) },
			check: func(t *testing.T, rep *analysis.Report) {
				if rep.DeadlockFree {
					t.Fatalf("want a credit loop: %+v", rep.VLs)
				}
				for _, st := range rep.VLs {
					if st.Acyclic {
						t.Errorf("VL%d acyclic, but the loop passes both VLs", st.VL)
						continue
					}
					// The loop is the six clockwise ring links, the dateline on VL1.
					if len(st.Cycle) != 6 || !slices.Contains(st.CycleVLs, 0) || !slices.Contains(st.CycleVLs, 1) {
						t.Errorf("VL%d: cycle %v VLs %v, want the 6 ring links over VL0 and VL1", st.VL, st.Cycle, st.CycleVLs)
					}
					for _, s := range st.Cycle {
						if !strings.HasSuffix(s, " (VL0)") && !strings.HasSuffix(s, " (VL1)") {
							t.Errorf("VL%d: hop %q does not name its VL", st.VL, s)
						}
					}
				}
				var b bytes.Buffer
				if err := rep.Text(&b); err != nil || !strings.Contains(b.String(), "CDG CYCLIC") || !strings.Contains(b.String(), "(VL1) -> ") {
					t.Errorf("text: %v\n%s", err, b.String())
				}
			},
		},
		{
			name:    "dateline ring at LMC 1, every LID used",
			build:   func(t *testing.T) (*plan.Realized, *plan.VLPlan) { return datelineRing(t, 5, 2, 1, false) },
			allLIDs: true,
			check: func(t *testing.T, rep *analysis.Report) {
				if !rep.OK() {
					t.Errorf("want OK: deadlock-free %v, VLs %+v", rep.DeadlockFree, rep.VLs)
				}
			},
		},
		{
			name: "clockwise ring on one VL is cyclic as before",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.Ring(6, 1, 1)
				if err != nil {
					t.Fatal(err)
				}
				r, err := analysistest.ClockwiseRing(topo, 0)
				if err != nil {
					t.Fatal(err)
				}
				return r, nil
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if rep.DeadlockFree || len(rep.VLs) != 1 || len(rep.VLs[0].Cycle) != 6 || rep.VLs[0].CycleVLs[0] != 0 {
					t.Fatalf("want one VL with the 6-link loop: %+v", rep.VLs)
				}
				if strings.Contains(rep.VLs[0].Cycle[0], "(VL") {
					t.Errorf("a one-VL cycle names VLs per hop: %v", rep.VLs[0].Cycle)
				}
				if rep.VLs[0].FromOtherVLs != 0 {
					t.Errorf("one VL, %d dependencies from other VLs", rep.VLs[0].FromOtherVLs)
				}
			},
		},
		{
			name: "source CAs' in-ports map the SL differently at the first switch",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.FatTree2(3, 2, 2, 2)
				r := mustRealize(t, topo, err, updownSpine, 0, plan.DLIDBase)
				// Leaf 0 (CAs on ports 1, 2; spines on 3, 4): traffic from
				// CA port 2 starts on VL1 and drops to VL0 at the next switch.
				v := &plan.VLPlan{VLs: 2}
				leaf := topo.Switches()[0]
				for out := 1; out <= 4; out++ {
					if out != 2 {
						v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: leaf, In: 2, Out: uint8(out), VL: [16]uint8{1}})
					}
				}
				return r, v
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if !rep.OK() || !reflect.DeepEqual(rep.VLsUsed, []int{0, 1}) {
					t.Errorf("want OK on VLs [0 1]: %v %+v", rep.VLsUsed, rep.VLs)
				}
				if rep.VLs[0].FromOtherVLs == 0 || rep.VLs[1].Edges != 0 {
					t.Errorf("VL1 only on first hops, each followed by VL0: %+v", rep.VLs)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, v := c.build(t)
			rep, err := analysis.Analyse(r, v, analysis.Options{AllLIDs: c.allLIDs})
			if err != nil {
				t.Fatal(err)
			}
			checkExact(t, r, rep, exactDeps(r, v, c.allLIDs))
			one, err := analysis.Analyse(r, v, analysis.Options{AllLIDs: c.allLIDs, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(one.VLs, rep.VLs) {
				t.Errorf("VL stats depend on the worker count:\n%+v\n%+v", one.VLs, rep.VLs)
			}
			c.check(t, rep)
		})
	}
}

// TestCDGAgainstExact draws random VL plans (SLs per DLID, per-source
// overrides, SL2VL tables per switch port pair, CA tables) over small
// fabrics and LID plans, and compares the report with the exact graph.
func TestCDGAgainstExact(t *testing.T) {
	type fab struct {
		name  string
		topo  func() (*topology.Topology, error)
		route router
	}
	fabs := []fab{
		{"ring5 minhop", func() (*topology.Topology, error) { return analysistest.Ring(5, 2, 4) }, analysistest.MinHop},
		{"fat tree updown", func() (*topology.Topology, error) { return analysistest.FatTree2(3, 2, 2, 4) }, updownSpine},
		{"fat tree minhop", func() (*topology.Topology, error) { return analysistest.FatTree2(3, 2, 3, 4) }, analysistest.MinHop},
		// VLCap 3: VL 3 of the random tables is a problem on every hop it lands.
		{"ring4 minhop vlcap 3", func() (*topology.Topology, error) { return analysistest.Ring(4, 2, 3) }, analysistest.MinHop},
	}
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for _, fb := range fabs {
		for seed := range seeds {
			rng := rand.New(rand.NewPCG(uint64(seed), 5))
			lmc := uint8(rng.IntN(2))
			allLIDs := lmc > 0 && rng.IntN(2) == 0
			name := fmt.Sprintf("%s/seed %d lmc %d all %v", fb.name, seed, lmc, allLIDs)
			t.Run(name, func(t *testing.T) {
				topo, err := fb.topo()
				if err != nil {
					t.Fatal(err)
				}
				l := analysistest.SequentialLIDs(topo, lmc, plan.DLIDSpread)
				eps := topo.Endpoints()
				if lmc > 0 {
					for i := 0; i < len(eps); i++ {
						l.Overrides = append(l.Overrides, plan.DLIDOverride{Src: int32(rng.IntN(len(eps))), Dst: int32(rng.IntN(len(eps))), Offset: uint8(rng.IntN(2))})
					}
				}
				r, err := plan.Realize(topo, fb.route(topo), l)
				if err != nil {
					t.Fatal(err)
				}
				v := randomVLPlan(rng, r)
				rep, err := analysis.Analyse(r, v, analysis.Options{AllLIDs: allLIDs, Samples: 10000})
				if err != nil {
					t.Fatal(err)
				}
				checkExact(t, r, rep, exactDeps(r, v, allLIDs))
			})
		}
	}
}

func randomVLPlan(rng *rand.Rand, r *plan.Realized) *plan.VLPlan {
	t := r.Topo
	const nSL, nVL = 4, 4
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(r.TopLID)+1), VLs: nVL}
	for i := range v.SLByDLID {
		v.SLByDLID[i] = uint8(rng.IntN(nSL))
	}
	for sl := range v.Default {
		v.Default[sl] = uint8(rng.IntN(nVL))
	}
	eps := t.Endpoints()
	seen := map[plan.SLOverride]bool{} // one override per (source, DLID): SL 0 as key
	for range len(eps) * 2 {
		dst := r.LIDs.Ports[rng.IntN(len(eps))]
		o := plan.SLOverride{Src: int32(rng.IntN(len(eps))), DLID: dst.Base + uint16(rng.IntN(dst.Count()))}
		if seen[o] {
			continue
		}
		seen[o] = true
		o.SL = uint8(rng.IntN(nSL))
		v.Overrides = append(v.Overrides, o)
	}
	table := func() [16]uint8 {
		var tab [16]uint8
		for sl := range tab {
			tab[sl] = uint8(rng.IntN(nVL))
		}
		return tab
	}
	for i := range t.Nodes {
		n := &t.Nodes[i]
		np := n.NumPorts()
		if n.Type != topology.Switch {
			if rng.IntN(2) == 0 {
				v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: int32(i), In: 1, Out: 1, VL: table()})
			}
			continue
		}
		for in := 0; in <= np; in++ {
			for out := 1; out <= np; out++ {
				if in != out && rng.IntN(3) == 0 {
					v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: int32(i), In: uint8(in), Out: uint8(out), VL: table()})
				}
			}
		}
	}
	return v
}
