package analysis_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/host/analysis"
	"github.com/ibsm/ibsm/host/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// hop is a switch out-channel held on a VL: a node of the exact graph.
type hop struct {
	ch topology.PortRef
	vl uint8
}

// exactCDG is the (channel, VL) dependency graph built by following every
// (source, DLID) route hop by hop and looking up each hop's SL2VL table:
// independent of the package's per-destination trees and SL grouping.
type exactCDG struct {
	edges map[[2]hop]bool
	vls   map[topology.PortRef]uint16 // switch out-channel -> VLs on it
}

func exactDeps(r *plan.Realized, v *plan.VLPlan, allLIDs bool) exactCDG {
	t := r.Topo
	eps := t.Endpoints()
	ex := exactCDG{edges: map[[2]hop]bool{}, vls: map[topology.PortRef]uint16{}}
	tabs := map[[3]int32][16]uint8{}
	if v != nil {
		for _, e := range v.SL2VL {
			tabs[[3]int32{e.Node, int32(e.In), int32(e.Out)}] = e.VL
		}
	}
	vlOf := func(node int32, in, out, sl uint8) uint8 {
		if v == nil {
			return 0
		}
		if tab, ok := tabs[[3]int32{node, int32(in), int32(out)}]; ok {
			return tab[sl] & 15
		}
		return v.Default[sl] & 15
	}
	for src := range eps {
		for dst := range eps {
			if src == dst {
				continue
			}
			lids := []uint16{dlid(r.LIDs, int32(src), int32(dst))}
			if allLIDs {
				lids = lids[:0]
				p := r.LIDs.Ports[dst]
				for k := 0; k < p.Count(); k++ {
					lids = append(lids, p.Base+uint16(k))
				}
			}
			for _, d := range lids {
				var sl uint8
				if v != nil {
					sl = v.SL(int32(src), d)
				}
				cur, in := eps[src].Node, uint8(0)
				if t.SwitchIndex(cur) < 0 {
					peer := t.Port(eps[src]).Peer
					if !t.IsLinkUp(eps[src]) || t.SwitchIndex(peer.Node) < 0 {
						continue
					}
					cur, in = peer.Node, peer.Port
				}
				var path []hop
				ok := false
				for step := 0; step <= len(t.Switches()); step++ {
					out := r.LFT[t.SwitchIndex(cur)][d]
					if out == 0 {
						ok = eps[dst] == topology.PortRef{Node: cur, Port: 0}
						break
					}
					ref := topology.PortRef{Node: cur, Port: out}
					if out == plan.NoPort || int(out) >= len(t.Nodes[cur].Ports) || !t.IsLinkUp(ref) {
						break
					}
					path = append(path, hop{ref, vlOf(cur, in, out, sl)})
					peer := t.Port(ref).Peer
					if t.SwitchIndex(peer.Node) < 0 {
						ok = peer == eps[dst]
						break
					}
					cur, in = peer.Node, peer.Port
				}
				if !ok {
					continue
				}
				for i, h := range path {
					ex.vls[h.ch] |= 1 << h.vl
					if h.vl == 15 {
						break // dropped here
					}
					if i > 0 {
						ex.edges[[2]hop{path[i-1], h}] = true
					}
				}
			}
		}
	}
	return ex
}

// onCycle reports the nodes that lie on a cycle (reach themselves).
func (ex exactCDG) onCycle() map[hop]bool {
	succ := map[hop][]hop{}
	for e := range ex.edges {
		succ[e[0]] = append(succ[e[0]], e[1])
	}
	on := map[hop]bool{}
	for u := range succ {
		seen := map[hop]bool{}
		stack := slices.Clone(succ[u])
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if x == u {
				on[u] = true
				break
			}
			if !seen[x] {
				seen[x] = true
				stack = append(stack, succ[x]...)
			}
		}
	}
	return on
}

// checkExact compares the report's CDG figures with the exact graph.
func checkExact(t *testing.T, r *plan.Realized, rep *analysis.Report, ex exactCDG) {
	t.Helper()
	topo := r.Topo
	names := map[string]topology.PortRef{}
	for _, n := range topo.Switches() {
		for p := 1; p < len(topo.Nodes[n].Ports); p++ {
			names[fmt.Sprintf("0x%016x/%d", topo.Nodes[n].GUID, p)] = topology.PortRef{Node: n, Port: uint8(p)}
		}
	}
	var edges, cross, chans [16]int
	for e := range ex.edges {
		edges[e[1].vl]++
		if e[0].vl != e[1].vl {
			cross[e[1].vl]++
		}
	}
	for _, m := range ex.vls {
		for v := range 16 {
			if m&(1<<v) != 0 {
				chans[v]++
			}
		}
	}
	on := ex.onCycle()
	var cyclic [16]bool
	for h := range on {
		cyclic[h.vl] = true
	}
	seen := [16]bool{}
	for _, st := range rep.VLs {
		v := st.VL
		seen[v] = true
		if st.Edges != edges[v] || st.FromOtherVLs != cross[v] || st.Channels != chans[v] {
			t.Errorf("VL%d: %d dependencies (%d from other VLs) on %d channels, exact graph %d (%d) on %d", v, st.Edges, st.FromOtherVLs, st.Channels, edges[v], cross[v], chans[v])
		}
		if st.Acyclic != !cyclic[v] {
			t.Errorf("VL%d: acyclic %v, but the exact graph has a cycle through it: %v", v, st.Acyclic, cyclic[v])
		}
		if st.Acyclic {
			continue
		}
		if len(st.Cycle) < 2 || len(st.CycleVLs) != len(st.Cycle) || !slices.Contains(st.CycleVLs, v) {
			t.Errorf("VL%d: cycle %v with VLs %v", v, st.Cycle, st.CycleVLs)
			continue
		}
		hops := make([]hop, len(st.Cycle))
		for i, s := range st.Cycle {
			name, _, _ := strings.Cut(s, " ")
			ref, ok := names[name]
			if !ok {
				t.Fatalf("VL%d: cycle names %q, not a switch port", v, s)
			}
			hops[i] = hop{ref, uint8(st.CycleVLs[i])}
		}
		for i := range hops {
			if e := [2]hop{hops[i], hops[(i+1)%len(hops)]}; !ex.edges[e] {
				t.Errorf("VL%d: cycle %v: %v -> %v is not a dependency", v, st.Cycle, e[0], e[1])
			}
		}
	}
	for v := range 15 {
		if (edges[v] > 0 || chans[v] > 0) && !seen[v] {
			t.Errorf("VL%d carries traffic (%d channels, %d dependencies) but the report has no entry", v, chans[v], edges[v])
		}
	}
	// VLCap and VL15 per hop, on switch channels (when no sample was cut).
	if rep.VLProblemCount == len(rep.VLProblems) {
		want, got := 0, 0
		for ch, m := range ex.vls {
			capv := topo.LinkVLs(ch)
			for v := range 16 {
				if m&(1<<v) != 0 && (v == 15 || v >= capv) {
					want++
				}
			}
		}
		for _, p := range rep.VLProblems {
			if _, ok := names[p.Channel]; ok {
				got++
			}
		}
		if got != want {
			t.Errorf("%d VL problems on switch channels, exact per-hop count %d: %+v", got, want, rep.VLProblems)
		}
	}
	if rep.DeadlockFree != (len(on) == 0) {
		t.Errorf("deadlock-free %v, exact graph has %d nodes on cycles", rep.DeadlockFree, len(on))
	}
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
