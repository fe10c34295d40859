package analysis_test

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// leafRouting builds planes for a FatTree2 from a rule giving, for a CA
// destination on leaf dl at port dp, the up port a source leaf uses. Leaves
// are switch indices 0..leaves-1 (lowest GUIDs), spines follow; leaf ports
// 1..cas hold CAs, cas+1+j goes to spine j; spine port i+1 goes to leaf i.
func leafRouting(t *topology.Topology, leaves, cas int, up func(srcLeaf, dstLeaf int, dstPort uint8) uint8) *plan.Routes {
	eps := t.Endpoints()
	nsw := len(t.Switches())
	r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e, p := range eps {
		pl := make(plan.Plane, nsw)
		for s := range pl {
			pl[s] = plan.NoPort
		}
		if s := t.SwitchIndex(p.Node); s >= 0 {
			pl[s] = 0 // switch-to-switch traffic is not measured here
		} else {
			peer := t.Port(p).Peer
			dl := int(t.SwitchIndex(peer.Node))
			for s := 0; s < nsw; s++ {
				switch {
				case s == dl:
					pl[s] = peer.Port
				case s < leaves:
					pl[s] = up(s, dl, peer.Port)
				default:
					pl[s] = uint8(dl + 1)
				}
			}
		}
		r.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{pl}}
	}
	return r
}

// bruteShift walks every flow of one shift with a map of loads, independent
// of the package's flat arrays.
func bruteLoads(r *plan.Realized, flows [][2]int32) (map[topology.PortRef]int64, [][]topology.PortRef) {
	t := r.Topo
	eps := t.Endpoints()
	load := map[topology.PortRef]int64{}
	paths := make([][]topology.PortRef, len(flows))
	for i, fl := range flows {
		d := dlid(r.LIDs, fl[0], fl[1])
		path := []topology.PortRef{eps[fl[0]]}
		cur := t.Port(eps[fl[0]]).Peer.Node
		ok := false
		for step := 0; step < 64; step++ {
			p := r.LFT[t.SwitchIndex(cur)][d]
			ref := topology.PortRef{Node: cur, Port: p}
			path = append(path, ref)
			peer := t.Port(ref).Peer
			if t.SwitchIndex(peer.Node) < 0 {
				ok = peer == eps[fl[1]]
				break
			}
			cur = peer.Node
		}
		if !ok {
			continue
		}
		paths[i] = path
		for _, c := range path {
			load[c]++
		}
	}
	return load, paths
}

// caOrder is the documented CA index order: by switch index, then port.
func caOrder(t *topology.Topology) []int32 {
	var out []int32
	for s := range t.Switches() {
		for e, p := range t.Endpoints() {
			if t.SwitchIndex(p.Node) >= 0 {
				continue
			}
			if peer := t.Port(p).Peer; int(t.SwitchIndex(peer.Node)) == s {
				out = append(out, int32(e))
			}
		}
	}
	ports := func(e int32) uint8 { return t.Port(t.Endpoints()[e]).Peer.Port }
	slices.SortStableFunc(out, func(a, b int32) int {
		sa, sb := t.SwitchIndex(t.Port(t.Endpoints()[a]).Peer.Node), t.SwitchIndex(t.Port(t.Endpoints()[b]).Peer.Node)
		if sa != sb {
			return int(sa - sb)
		}
		return int(ports(a)) - int(ports(b))
	})
	return out
}

func bruteShift(r *plan.Realized, order []int32, s int) int64 {
	n := len(order)
	flows := make([][2]int32, n)
	for i := range order {
		flows[i] = [2]int32{order[i], order[(i+s)%n]}
	}
	load, _ := bruteLoads(r, flows)
	var m int64
	for _, v := range load {
		m = max(m, v)
	}
	return m
}

func bruteEBB(r *plan.Realized, order []int32, seed int64, count int) float64 {
	n := len(order)
	sum := 0.0
	for b := 0; b < count; b++ {
		p := analysis.Bisection(seed, b, n)
		var flows [][2]int32
		for k := 0; k < n/2; k++ {
			a, z := order[p[k]], order[p[n/2+k]]
			flows = append(flows, [2]int32{a, z}, [2]int32{z, a})
		}
		load, paths := bruteLoads(r, flows)
		bw := 0.0
		for _, path := range paths {
			if path == nil {
				continue
			}
			var m int64 = 1
			for _, c := range path {
				m = max(m, load[c])
			}
			bw += 1 / float64(m)
		}
		sum += bw / float64(len(flows))
	}
	return sum / float64(count)
}

func TestShiftAndEBB(t *testing.T) {
	ft := func(leaves, spines, cas int) *topology.Topology {
		topo, err := analysistest.FatTree2(leaves, spines, cas, 1)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	const seed = 42
	type tc struct {
		name      string
		r         func(t *testing.T) *plan.Realized
		shifts    int
		wantAll   bool
		wantN     int     // shifts evaluated
		worst     int64   // -1: compare with brute force only
		worstAt   int     // shift of the worst load (0: do not check)
		mean      float64 // -1: do not check
		free      int     // congestion-free shifts (-1: do not check)
		ebb       func(r *plan.Realized) float64
		ebbMin    float64 // -1: do not check
		ebbMax    float64
		unrouted  int64
		bisection int
	}
	cases := []tc{
		{
			// 2 leaves x 2 CAs, 2 spines; CA p of a leaf is reached through
			// spine p-1 (D-mod-k on the CA order): every shift is
			// congestion-free and every bisection flow runs at full speed.
			name: "d-mod-k on a full 2-level tree",
			r: func(t *testing.T) *plan.Realized {
				topo := ft(2, 2, 2)
				r, err := analysistest.Realize(topo, leafRouting(topo, 2, 2, func(_, _ int, dp uint8) uint8 { return 2 + dp }), 0, plan.DLIDBase)
				if err != nil {
					t.Fatal(err)
				}
				return r
			},
			shifts: analysis.ShiftsAuto, wantAll: true, wantN: 3,
			worst: 1, mean: 1, free: 3,
			ebb:    func(*plan.Realized) float64 { return 1 },
			ebbMin: 1, ebbMax: 1, bisection: 50,
		},
		{
			// Everything crosses spine 0: shift 2 sends both CAs of a leaf
			// up the same cable (load 2); shifts 1 and 3 pair one CA
			// locally and one remotely (load 1). A bisection either pairs
			// the CAs of each leaf (eBB 1) or crosses (every flow 1/2).
			name: "all traffic through spine 0",
			r: func(t *testing.T) *plan.Realized {
				topo := ft(2, 2, 2)
				r, err := analysistest.Realize(topo, leafRouting(topo, 2, 2, func(_, _ int, _ uint8) uint8 { return 3 }), 0, plan.DLIDBase)
				if err != nil {
					t.Fatal(err)
				}
				return r
			},
			shifts: analysis.ShiftsAll, wantAll: true, wantN: 3,
			worst: 2, worstAt: 2, mean: 4.0 / 3, free: 2,
			ebb: func(r *plan.Realized) float64 {
				sum := 0.0
				for b := 0; b < 200; b++ {
					p := analysis.Bisection(seed, b, 4)
					// Order indices 0,1 are leaf 0, 2,3 leaf 1.
					if p[0]/2 == p[2]/2 {
						sum += 1
					} else {
						sum += 0.5
					}
				}
				return sum / 200
			},
			ebbMin: 0.5, ebbMax: 1, bisection: 200,
		},
		{
			// Four leaves of three CAs over two spines, spine chosen by the
			// source leaf: shift 3 moves a whole leaf to the next one, so
			// its three flows share one up cable.
			name: "source-leaf spine choice",
			r: func(t *testing.T) *plan.Realized {
				topo := ft(4, 2, 3)
				r, err := analysistest.Realize(topo, leafRouting(topo, 4, 3, func(sl, _ int, _ uint8) uint8 { return uint8(4 + sl%2) }), 0, plan.DLIDBase)
				if err != nil {
					t.Fatal(err)
				}
				return r
			},
			shifts: analysis.ShiftsAuto, wantAll: true, wantN: 11,
			worst: 3, worstAt: 3, mean: -1, free: -1,
			ebbMin: -1, bisection: 40,
		},
		{
			name: "minhop with LMC 1 and spread DLIDs, against brute force",
			r: func(t *testing.T) *plan.Realized {
				topo := ft(4, 2, 3)
				r, err := analysistest.Realize(topo, analysistest.MinHop(topo), 1, plan.DLIDSpread)
				if err != nil {
					t.Fatal(err)
				}
				return r
			},
			shifts: analysis.ShiftsAuto, wantAll: true, wantN: 11,
			worst: -1, mean: -1, free: -1, ebbMin: -1, bisection: 30,
		},
		{
			name: "3-level tree, sampled shifts, against brute force",
			r: func(t *testing.T) *plan.Realized {
				topo, err := analysistest.FatTree3(4, 1)
				if err != nil {
					t.Fatal(err)
				}
				r, err := analysistest.Realize(topo, analysistest.UpDown(topo, 0), 0, plan.DLIDBase)
				if err != nil {
					t.Fatal(err)
				}
				return r
			},
			shifts: 5, wantAll: false, wantN: 5,
			worst: -1, mean: -1, free: -1, ebbMin: -1, bisection: 20,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.r(t)
			rep, err := analysis.Analyse(r, nil, analysis.Options{Shifts: c.shifts, Bisections: c.bisection, Seed: seed, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			s, e := rep.Shift, rep.EBB
			if s == nil || e == nil {
				t.Fatalf("metrics missing: shift %v ebb %v", s, e)
			}
			order := caOrder(r.Topo)
			if s.CAs != len(order) || s.All != c.wantAll || s.Shifts != c.wantN {
				t.Errorf("shift stats %+v: want %d CAs, all=%v, %d shifts", s, len(order), c.wantAll, c.wantN)
			}
			// Brute force over the same shifts: for a sample, the worst
			// is at most the brute-force worst over all shifts and equals
			// the brute-force value at the shift reported.
			var bruteWorst int64
			for sh := 1; sh < len(order); sh++ {
				bruteWorst = max(bruteWorst, bruteShift(r, order, sh))
			}
			if c.wantAll && s.Worst != bruteWorst {
				t.Errorf("worst shift load %d, brute force %d", s.Worst, bruteWorst)
			}
			if got := bruteShift(r, order, s.WorstShift); got != s.Worst || s.Worst > bruteWorst {
				t.Errorf("worst %d at shift %d; brute force there %d (all shifts %d)", s.Worst, s.WorstShift, got, bruteWorst)
			}
			if c.worst >= 0 && s.Worst != c.worst {
				t.Errorf("worst shift load %d, want %d", s.Worst, c.worst)
			}
			if c.worstAt > 0 && s.WorstShift != c.worstAt {
				t.Errorf("worst at shift %d, want %d", s.WorstShift, c.worstAt)
			}
			if c.mean >= 0 && math.Abs(s.Mean-c.mean) > 1e-12 {
				t.Errorf("mean %v, want %v", s.Mean, c.mean)
			}
			if c.free >= 0 && s.CongestionFree != c.free {
				t.Errorf("congestion-free shifts %d, want %d", s.CongestionFree, c.free)
			}
			if s.UnroutedFlows != c.unrouted || e.UnroutedFlows != c.unrouted {
				t.Errorf("unrouted %d / %d, want %d", s.UnroutedFlows, e.UnroutedFlows, c.unrouted)
			}
			want := bruteEBB(r, order, seed, c.bisection)
			if c.ebb != nil {
				if hand := c.ebb(r); math.Abs(hand-want) > 1e-12 {
					t.Fatalf("test bug: hand eBB %v, brute force %v", hand, want)
				}
			}
			if math.Abs(e.EBB-want) > 1e-9 {
				t.Errorf("eBB %v, brute force %v", e.EBB, want)
			}
			if e.Bisections != c.bisection || e.Flows != int64(c.bisection*2*(len(order)/2)) {
				t.Errorf("eBB stats %+v", e)
			}
			if c.ebbMin >= 0 && (e.Min != c.ebbMin || e.Max != c.ebbMax) {
				t.Errorf("eBB min/max %v/%v, want %v/%v", e.Min, e.Max, c.ebbMin, c.ebbMax)
			}
			// Same seed, one worker: same figures.
			rep1, err := analysis.Analyse(r, nil, analysis.Options{Shifts: c.shifts, Bisections: c.bisection, Seed: seed, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			rep1.Shift.Millis, rep1.EBB.Millis = s.Millis, e.Millis
			if *rep1.Shift != *s || *rep1.EBB != *e {
				t.Errorf("one worker differs:\n%+v\n%+v\nvs\n%+v\n%+v", rep1.Shift, rep1.EBB, s, e)
			}
		})
	}
}

func TestTrafficReport(t *testing.T) {
	topo, err := analysistest.FatTree2(2, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysistest.Realize(topo, leafRouting(topo, 2, 2, func(_, _ int, _ uint8) uint8 { return 3 }), 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.Analyse(r, nil, analysis.Options{Shifts: analysis.ShiftsAuto, Bisections: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.Text(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shift permutations (4 CAs, 3 shifts, all): worst load 2 at shift 2", "effective bisection bandwidth: ", "10 bisections, seed 3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Shift struct{ Worst int64 } `json:"shift"`
		EBB   struct{ Bisections int }
	}
	if err := json.Unmarshal(js, &back); err != nil || back.Shift.Worst != 2 || back.EBB.Bisections != 10 {
		t.Errorf("JSON %s: %+v %v", js, back, err)
	}

	// Off by default: the SM's verifier pays nothing.
	rep, err = analysis.Analyse(r, nil, analysis.Options{})
	if err != nil || rep.Shift != nil || rep.EBB != nil {
		t.Errorf("metrics computed without being asked: %+v %+v %v", rep.Shift, rep.EBB, err)
	}
}

func TestTrafficOrderAndErrors(t *testing.T) {
	topo, err := analysistest.FatTree2(2, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysistest.Realize(topo, leafRouting(topo, 2, 2, func(_, _ int, _ uint8) uint8 { return 3 }), 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	order := caOrder(topo)
	sw := int32(0) // endpoint 0 is a switch port 0 (switches sort first)
	for _, c := range []struct {
		name  string
		opt   analysis.Options
		worst int64
		err   string
	}{
		{"explicit default order", analysis.Options{Shifts: analysis.ShiftsAll, CAOrder: order}, 2, ""},
		// Interleaving the leaves turns shift 2 into local pairs and
		// shifts 1 and 3 into cross pairs from both CAs of a leaf.
		{"interleaved order", analysis.Options{Shifts: analysis.ShiftsAll, CAOrder: []int32{order[0], order[2], order[1], order[3]}}, 2, ""},
		{"duplicate", analysis.Options{Shifts: 1, CAOrder: []int32{order[0], order[0]}}, 0, "twice"},
		{"switch", analysis.Options{Shifts: 1, CAOrder: []int32{sw}}, 0, "not a CA port"},
		{"bad shifts", analysis.Options{Shifts: -7}, 0, "ShiftsAuto"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := analysis.Analyse(r, nil, c.opt)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Shift.Worst != c.worst || rep.Shift.Order != "caller-supplied" {
				t.Errorf("shift %+v, want worst %d", rep.Shift, c.worst)
			}
		})
	}
}

func TestTrafficWithoutPairs(t *testing.T) {
	topo, err := analysistest.FatTree2(1, 1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysistest.Realize(topo, analysistest.MinHop(topo), 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.Analyse(r, nil, analysis.Options{Shifts: analysis.ShiftsAll, Bisections: 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CAs != 1 || rep.Shift != nil || rep.EBB != nil {
		t.Errorf("one CA: %d CAs, shift %+v, eBB %+v; want no traffic metrics", rep.CAs, rep.Shift, rep.EBB)
	}
}
