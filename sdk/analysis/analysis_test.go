package analysis_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// ref is a brute-force walk of every pair, independent of the package's
// memoised per-LID trees.
type ref struct {
	ca, sw      analysis.PairStats
	hops        []int64
	load        map[topology.PortRef]int64
	maxLoad     int64
	maxSwLoad   int64
	unreachable int64
}

func dlid(l *plan.LIDPlan, src, dst int32) uint16 {
	for i := len(l.Overrides) - 1; i >= 0; i-- {
		o := l.Overrides[i]
		if o.Src == src && o.Dst == dst {
			return l.Ports[dst].Base + uint16(o.Offset)
		}
	}
	return l.DLID(src, dst)
}

func bruteForce(r *plan.Realized) ref {
	t := r.Topo
	eps := t.Endpoints()
	out := ref{load: map[topology.PortRef]int64{}}
	isSw := func(e int) bool { return t.Nodes[eps[e].Node].Type == topology.Switch }
	for src := range eps {
		for dst := range eps {
			if src == dst || isSw(src) != isSw(dst) {
				continue
			}
			d := dlid(r.LIDs, int32(src), int32(dst))
			var cur int32
			var used []topology.PortRef
			ok := false
			hops := 0
			if isSw(src) {
				cur = eps[src].Node
			} else {
				if !t.IsLinkUp(eps[src]) {
					goto done
				}
				peer := t.Port(eps[src]).Peer
				if peer == eps[dst] {
					ok = true
					used = append(used, eps[src])
					goto done
				}
				if t.SwitchIndex(peer.Node) < 0 {
					goto done
				}
				used = append(used, eps[src])
				cur = peer.Node
			}
			for step := 0; step <= len(t.Switches()); step++ {
				hops++
				p := r.LFT[t.SwitchIndex(cur)][d]
				if p == 0 {
					ok = eps[dst] == topology.PortRef{Node: cur, Port: 0}
					break
				}
				if p == plan.NoPort || int(p) >= len(t.Nodes[cur].Ports) {
					break
				}
				ref := topology.PortRef{Node: cur, Port: p}
				if !t.IsLinkUp(ref) {
					break
				}
				used = append(used, ref)
				peer := t.Port(ref).Peer
				if t.SwitchIndex(peer.Node) < 0 {
					ok = peer == eps[dst]
					break
				}
				cur = peer.Node
			}
		done:
			st := &out.ca
			if isSw(src) {
				st = &out.sw
			}
			st.Total++
			if !ok {
				out.unreachable++
				continue
			}
			st.Reachable++
			if isSw(src) {
				continue
			}
			for len(out.hops) <= hops {
				out.hops = append(out.hops, 0)
			}
			out.hops[hops]++
			for _, u := range used {
				out.load[u]++
			}
		}
	}
	for p, v := range out.load {
		out.maxLoad = max(out.maxLoad, v)
		if t.Nodes[p.Node].Type == topology.Switch && t.Nodes[t.Port(p).Peer.Node].Type == topology.Switch {
			out.maxSwLoad = max(out.maxSwLoad, v)
		}
	}
	return out
}

type router func(*topology.Topology) *plan.Routes

func updown(t *topology.Topology) *plan.Routes { return analysistest.UpDown(t, 0) }

// updownSpine roots Up*/Down* at the last switch (a spine or core in the
// fabrics built here).
func updownSpine(t *topology.Topology) *plan.Routes {
	return analysistest.UpDown(t, int32(len(t.Switches())-1))
}

func mustRealize(t *testing.T, topo *topology.Topology, err error, route router, lmc uint8, rule plan.DLIDRule) *plan.Realized {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysistest.Realize(topo, route(topo), lmc, rule)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lidOf returns the base LID of the i-th CA (or switch) in endpoint order.
func lidOf(r *plan.Realized, typ topology.NodeType, i int) (int32, uint16) {
	for e, p := range r.Topo.Endpoints() {
		if r.Topo.Nodes[p.Node].Type == typ {
			if i == 0 {
				return int32(e), r.LIDs.Ports[e].Base
			}
			i--
		}
	}
	panic("no such endpoint")
}

func TestAnalyse(t *testing.T) {
	type tc struct {
		name  string
		build func(t *testing.T) (*plan.Realized, *plan.VLPlan)
		opt   analysis.Options
		check func(t *testing.T, rep *analysis.Report)
	}
	cases := []tc{
		{
			name: "fat tree 2-level minhop: complete, but switch-to-switch traffic turns down-up",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.FatTree2(4, 2, 3, 1)
				return mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase), nil
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if !rep.CAPairs.Complete() || !rep.SwitchPairs.Complete() || rep.LoopLIDs != 0 || rep.BadEntries != 0 {
					t.Errorf("report: %+v", rep)
				}
				if rep.CAPairs.Total != 12*11 || rep.SwitchPairs.Total != 6*5 {
					t.Errorf("pairs = %+v / %+v, want 132 / 30", rep.CAPairs, rep.SwitchPairs)
				}
				if want := []int64{0, 24, 0, 108}; !reflect.DeepEqual(rep.Hops, want) {
					t.Errorf("hops = %v, want %v", rep.Hops, want)
				}
				// Spine->leaf links: 27 routes into a leaf, split 2:1 by
				// destination parity over two spines.
				if rep.Load.Max != 18 || rep.Load.MaxNormalized != 18.0/11 {
					t.Errorf("load = %+v, want 18 (18/11)", rep.Load)
				}
				// spine -> leaf -> spine paths make the CDG cyclic.
				if rep.DeadlockFree || len(rep.VLs[0].Cycle) == 0 {
					t.Errorf("want a cycle from switch-to-switch traffic, got %+v", rep.VLs)
				}
			},
		},
		{
			name: "fat tree 2-level up/down from one spine is deadlock-free",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.FatTree2(4, 2, 3, 1)
				return mustRealize(t, topo, err, updownSpine, 0, plan.DLIDBase), nil
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if !rep.OK() {
					t.Errorf("report not OK: %+v", rep)
				}
			},
		},
		{
			name: "fat tree 3-level k=4 up/down",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.FatTree3(4, 1)
				return mustRealize(t, topo, err, updown, 0, plan.DLIDBase), nil
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if !rep.OK() || rep.Switches != 20 || rep.CAs != 16 {
					t.Errorf("report: ok=%v switches=%d cas=%d %+v", rep.OK(), rep.Switches, rep.CAs, rep.VLs)
				}
				if rep.MaxHops != 5 {
					t.Errorf("max hops %d, want 5", rep.MaxHops)
				}
			},
		},
		{
			name: "ring of 6 minhop has a credit loop on VL0",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.Ring(6, 1, 1)
				return mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase), nil
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if !rep.CAPairs.Complete() || !rep.SwitchPairs.Complete() || rep.LoopLIDs != 0 {
					t.Errorf("ring should be fully reachable: %+v %+v", rep.CAPairs, rep.SwitchPairs)
				}
				if rep.DeadlockFree || len(rep.VLs) != 1 || rep.VLs[0].Acyclic {
					t.Fatalf("ring minhop should be cyclic on VL0: %+v", rep.VLs)
				}
				if n := len(rep.VLs[0].Cycle); n != 6 {
					t.Errorf("cycle %v: want the 6 ring links of one direction", rep.VLs[0].Cycle)
				}
			},
		},
		{
			name: "ring of 6 split over two VLs by destination half is deadlock-free",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.Ring(6, 1, 2)
				r := mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase)
				return r, analysistest.RingVLs(r)
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if !rep.OK() {
					t.Errorf("want OK, got deadlock-free=%v VLs=%+v problems=%v", rep.DeadlockFree, rep.VLs, rep.VLProblems)
				}
				if !reflect.DeepEqual(rep.VLsUsed, []int{0, 1}) || !reflect.DeepEqual(rep.SLsUsed, []int{0, 1}) {
					t.Errorf("VLs %v SLs %v, want [0 1] both", rep.VLsUsed, rep.SLsUsed)
				}
			},
		},
		{
			name: "two VLs on VLCap 1 ports are VL problems",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.Ring(6, 1, 1)
				r := mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase)
				return r, analysistest.RingVLs(r)
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if rep.VLProblemCount == 0 || rep.OK() {
					t.Errorf("want VL problems, got %d", rep.VLProblemCount)
				}
				if !rep.DeadlockFree {
					t.Errorf("still deadlock-free as a CDG")
				}
			},
		},
		{
			name: "an SL override puts one pair on its own VL",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.Ring(6, 1, 2)
				r := mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase)
				src, _ := lidOf(r, topology.CA, 0)
				_, dst := lidOf(r, topology.CA, 3)
				v := &plan.VLPlan{Overrides: []plan.SLOverride{{Src: src, DLID: dst, SL: 1}}}
				for i := range v.Default {
					v.Default[i] = uint8(i % 2)
				}
				return r, v
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if !reflect.DeepEqual(rep.SLsUsed, []int{0, 1}) || !reflect.DeepEqual(rep.VLsUsed, []int{0, 1}) {
					t.Errorf("SLs %v VLs %v, want [0 1] both", rep.SLsUsed, rep.VLsUsed)
				}
				if len(rep.VLs) != 2 || rep.VLs[0].Acyclic || !rep.VLs[1].Acyclic || rep.VLs[1].Edges != 3 {
					t.Errorf("want VL0 cyclic and VL1 a single 3-dependency path: %+v", rep.VLs)
				}
			},
		},
		{
			name: "SL mapped to VL15 drops",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.FatTree2(2, 1, 2, 4)
				r := mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase)
				v := &plan.VLPlan{}
				v.Default[0] = 15
				return r, v
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if rep.VLProblemCount == 0 || !strings.Contains(rep.VLProblems[0].Message, "VL15") {
					t.Errorf("want VL15 problem, got %+v", rep.VLProblems)
				}
			},
		},
		{
			name: "forwarding loop between a leaf and a spine",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.FatTree2(2, 1, 2, 1)
				r := mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase)
				_, lid := lidOf(r, topology.CA, 0)
				// Switches: two leaves then the spine (GUID order). The
				// spine sends the first CA's LID back up to leaf 1 and
				// leaf 1 sends it to the spine.
				r.LFT[2][lid] = r.LFT[2][lid]%2 + 1 // the other leaf (ports 1,2)
				return r, nil
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if rep.LoopLIDs != 1 || len(rep.Loops) != 1 {
					t.Fatalf("loops = %d %+v", rep.LoopLIDs, rep.Loops)
				}
				if len(rep.Unreachable) == 0 || rep.Unreachable[0].Code != analysis.FailLoop ||
					!strings.Contains(rep.Unreachable[0].Message, "loop at switch") {
					t.Errorf("unreachable samples %+v", rep.Unreachable)
				}
			},
		},
		{
			name: "missing route, down port, port 0 and wrong CA",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.FatTree2(2, 2, 2, 1)
				r := mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase)
				_, l0 := lidOf(r, topology.CA, 0)
				_, l1 := lidOf(r, topology.CA, 1)
				_, l2 := lidOf(r, topology.CA, 2)
				_, l3 := lidOf(r, topology.CA, 3)
				// Leaves are switches 0,1 (CAs on ports 1,2; spines on 3,4).
				r.LFT[1][l0] = plan.NoPort // leaf 1 cannot reach CA 0
				r.LFT[1][l1] = 0           // leaf 1 swallows CA 1's LID
				r.LFT[0][l2] = 9           // leaf 0 has 4 ports
				r.LFT[1][l3] = 1           // leaf 1 hands CA 3's LID to CA 2
				return r, nil
			},
			check: func(t *testing.T, rep *analysis.Report) {
				codes := map[string]bool{}
				for _, u := range rep.Unreachable {
					codes[u.Code] = true
				}
				for _, c := range []string{analysis.FailNoRoute, analysis.FailPort0, analysis.FailNoSuchPort, analysis.FailWrongPort} {
					if !codes[c] {
						t.Errorf("no unreachable sample with code %s: %+v", c, rep.Unreachable)
					}
				}
				if rep.BadEntries != 3 {
					t.Errorf("bad entries = %d, want 3 (port 0, no such port, wrong CA)", rep.BadEntries)
				}
			},
		},
		{
			name: "LMC 1 with DLID spread and an override",
			build: func(t *testing.T) (*plan.Realized, *plan.VLPlan) {
				topo, err := analysistest.FatTree2(3, 2, 2, 1)
				if err != nil {
					t.Fatal(err)
				}
				l := analysistest.SequentialLIDs(topo, 1, plan.DLIDSpread)
				src, _ := lidOf(&plan.Realized{Topo: topo, LIDs: l}, topology.CA, 0)
				dst, _ := lidOf(&plan.Realized{Topo: topo, LIDs: l}, topology.CA, 5)
				l.Overrides = []plan.DLIDOverride{{Src: src, Dst: dst, Offset: 1 - uint8(src%2)}}
				r, err := plan.Realize(topo, analysistest.MinHop(topo), l)
				if err != nil {
					t.Fatal(err)
				}
				// Break the second LID of CA 5 on its own leaf (switch 2):
				// only sources selecting offset 1 notice.
				r.LFT[2][l.Ports[dst].Base+1] = plan.NoPort
				return r, nil
			},
			check: func(t *testing.T, rep *analysis.Report) {
				if rep.MaxLMC != 1 || rep.CAPairs.Complete() {
					t.Errorf("want LMC 1 and incomplete CA pairs: %+v", rep.CAPairs)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, vls := c.build(t)
			rep, err := analysis.Analyse(r, vls, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteForce(r)
			if rep.CAPairs != want.ca || rep.SwitchPairs != want.sw {
				t.Errorf("pairs CA %+v SW %+v, brute force CA %+v SW %+v", rep.CAPairs, rep.SwitchPairs, want.ca, want.sw)
			}
			if !reflect.DeepEqual(trim(rep.Hops), trim(want.hops)) {
				t.Errorf("hops %v, brute force %v", rep.Hops, want.hops)
			}
			if rep.Load.Max != want.maxLoad || rep.Load.MaxSwitchLink != want.maxSwLoad {
				t.Errorf("load max %d / switch %d, brute force %d / %d", rep.Load.Max, rep.Load.MaxSwitchLink, want.maxLoad, want.maxSwLoad)
			}
			// Determinism: one worker and many agree exactly.
			one, err := analysis.Analyse(r, vls, analysis.Options{Workers: 1, AllLIDs: c.opt.AllLIDs})
			if err != nil {
				t.Fatal(err)
			}
			many, err := analysis.Analyse(r, vls, analysis.Options{Workers: 7, AllLIDs: c.opt.AllLIDs})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(one, many) {
				t.Errorf("report depends on worker count:\n%+v\n%+v", one, many)
			}
			var buf bytes.Buffer
			if err := rep.Text(&buf); err != nil || !strings.Contains(buf.String(), "CA->CA reachability") {
				t.Errorf("text: %v %q", err, buf.String())
			}
			if _, err := json.Marshal(rep); err != nil {
				t.Errorf("json: %v", err)
			}
			c.check(t, rep)
		})
	}
}

func trim(h []int64) []int64 {
	for len(h) > 0 && h[len(h)-1] == 0 {
		h = h[:len(h)-1]
	}
	if len(h) == 0 {
		return nil // no pairs: as a brute-force walk that counts none
	}
	return h
}

func TestAnalyseRejectsMalformed(t *testing.T) {
	topo, err := analysistest.FatTree2(2, 1, 1, 1)
	r := mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase)
	cases := []struct {
		name string
		mut  func(r *plan.Realized)
		vls  *plan.VLPlan
	}{
		{"nil topology", func(r *plan.Realized) { r.Topo = nil }, nil},
		{"short LFT", func(r *plan.Realized) { r.LFT[0] = r.LFT[0][:1] }, nil},
		{"missing switch LFT", func(r *plan.Realized) { r.LFT = r.LFT[:1] }, nil},
		{"owner outside range", func(r *plan.Realized) { r.LIDOwner[1], r.LIDOwner[2] = r.LIDOwner[2], r.LIDOwner[1] }, nil},
		{"owner table misses an endpoint's LID", func(r *plan.Realized) { r.LIDOwner[len(r.LIDOwner)-1] = 0 }, nil},
		{"SL > 15", func(r *plan.Realized) {}, &plan.VLPlan{SLByDLID: []uint8{0, 16}}},
		{"SL2VL on missing node", func(r *plan.Realized) {}, &plan.VLPlan{SL2VL: []plan.SL2VLEntry{{Node: 99}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cp := *r
			cp.LFT = make([][]uint8, len(r.LFT))
			for i := range r.LFT {
				cp.LFT[i] = append([]uint8(nil), r.LFT[i]...)
			}
			cp.LIDOwner = append([]int32(nil), r.LIDOwner...)
			c.mut(&cp)
			if _, err := analysis.Analyse(&cp, c.vls, analysis.Options{}); err == nil {
				t.Errorf("want an error")
			}
		})
	}
}
