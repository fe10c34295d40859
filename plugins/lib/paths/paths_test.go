package paths

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab/gen"
	"github.com/ibsm/ibsm/sdk/topology"
)

func seeded(s uint64) *rand.Rand { return rand.New(rand.NewPCG(s, 99)) }

// refOrient recomputes the up*/down* order from scratch: BFS ranks from
// root, "up" toward lower (rank, switch index).
func refOrient(f *Fabric, root int32) func(c int32) bool {
	rank := make([]int, f.N)
	for i := range rank {
		rank[i] = -1
	}
	rank[root] = 0
	q := []int32{root}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		for c := f.Off[x]; c < f.Off[x+1]; c++ {
			if y := f.Peer[c]; rank[y] < 0 {
				rank[y] = rank[x] + 1
				q = append(q, y)
			}
		}
	}
	return func(c int32) bool {
		a, b := f.From[c], f.Peer[c]
		return rank[b] < rank[a] || (rank[b] == rank[a] && b < a)
	}
}

// allLegal enumerates every loopless legal path from switch a to b by DFS.
func allLegal(f *Fabric, up func(int32) bool, a, b int32) [][]int32 {
	var out [][]int32
	seen := make([]bool, f.N)
	var cur []int32
	var dfs func(s int32, descending bool)
	dfs = func(s int32, descending bool) {
		if s == b {
			out = append(out, append([]int32(nil), cur...))
			return
		}
		seen[s] = true
		for c := f.Off[s]; c < f.Off[s+1]; c++ {
			isUp := up(c)
			if (descending && isUp) || seen[f.Peer[c]] {
				continue
			}
			cur = append(cur, c)
			dfs(f.Peer[c], descending || !isUp)
			cur = cur[:len(cur)-1]
		}
		seen[s] = false
	}
	dfs(a, false)
	return out
}

func testFabrics(t *testing.T) map[string]*topology.Topology {
	t.Helper()
	out := map[string]*topology.Topology{}
	var err error
	if out["irregular16"], err = gen.Topology(gen.Random{Switches: 16, Degree: 4, CAs: 40, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if out["rrg10"], err = gen.Topology(gen.RRG{Switches: 10, NetPorts: 4, CAsPerSwitch: 2, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	// Parallel cables and uneven hosts.
	if out["sdktest-random"], err = sdktest.Random(42, 12, 8, 2); err != nil {
		t.Fatal(err)
	}
	if out["ring"], err = sdktest.Ring(5, 2); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkPaths verifies that ps has exactly one path per ordered pair of
// distinct endpoints of eps, each contiguous, starting at src's port and
// ending at dst's, legal, and as short as the shortest legal path found by
// exhaustive search. It returns the channel sequences by pair.
func checkPaths(t *testing.T, f *Fabric, up func(int32) bool, eps []int32, ps []plan.Path, shortest bool) map[[2]int32][]int32 {
	t.Helper()
	want := len(eps) * (len(eps) - 1)
	if len(ps) != want {
		t.Fatalf("%d paths, want %d (one per ordered pair)", len(ps), want)
	}
	isEp := map[int32]bool{}
	for _, e := range eps {
		isEp[e] = true
	}
	minLen := map[[2]int32]int{}
	got := map[[2]int32][]int32{}
	for _, p := range ps {
		key := [2]int32{p.Src, p.Dst}
		if p.Src == p.Dst || !isEp[p.Src] || !isEp[p.Dst] {
			t.Fatalf("path %d->%d is not between two distinct routed endpoints", p.Src, p.Dst)
		}
		if _, dup := got[key]; dup {
			t.Fatalf("pair %d->%d has two paths", p.Src, p.Dst)
		}
		chans, err := f.PathChannels(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		got[key] = chans
		sws := f.Topo.Switches()
		if h := p.Hops[0]; h.Switch != sws[f.Home[p.Src]] || h.In != f.HomePort[p.Src] {
			t.Fatalf("path %d->%d starts at node %d port %d, want node %d port %d", p.Src, p.Dst, h.Switch, h.In, sws[f.Home[p.Src]], f.HomePort[p.Src])
		}
		if h := p.Hops[len(p.Hops)-1]; h.Switch != sws[f.Home[p.Dst]] || h.Out != f.HomePort[p.Dst] {
			t.Fatalf("path %d->%d ends at node %d port %d, want node %d port %d", p.Src, p.Dst, h.Switch, h.Out, sws[f.Home[p.Dst]], f.HomePort[p.Dst])
		}
		descending := false
		for _, c := range chans {
			if up(c) && descending {
				t.Fatalf("path %d->%d climbs after descending: %v", p.Src, p.Dst, chans)
			}
			descending = descending || !up(c)
		}
		sp := [2]int32{f.Home[p.Src], f.Home[p.Dst]}
		if _, ok := minLen[sp]; !ok {
			m := 1 << 30
			for _, q := range allLegal(f, up, sp[0], sp[1]) {
				m = min(m, len(q))
			}
			minLen[sp] = m
		}
		if shortest && len(chans) != minLen[sp] {
			t.Fatalf("path %d->%d has %d hops, the shortest legal path has %d", p.Src, p.Dst, len(chans), minLen[sp])
		}
	}
	return got
}

func TestRoutingsLegalShortestComplete(t *testing.T) {
	for name, topo := range testFabrics(t) {
		f, err := NewFabric(topo)
		if err != nil {
			t.Fatal(err)
		}
		for _, sw := range []bool{false, true} {
			o := DefaultOptions()
			o.Switches = sw
			o.K = 6
			om := o
			om.Granularity = PerMachinePair
			runs := map[string]func() (*Result, error){
				"random":            func() (*Result, error) { return RandomShortestUpDownOpts(topo, seeded(1), o) },
				"widest":            func() (*Result, error) { return ShortestWidestOpts(topo, seeded(1), o) },
				"selection-switch":  func() (*Result, error) { return PathSelectionOpts(topo, seeded(1), o) },
				"selection-machine": func() (*Result, error) { return PathSelectionOpts(topo, seeded(1), om) },
			}
			for algo, run := range runs {
				t.Run(name+"/"+algo, func(t *testing.T) {
					r, err := run()
					if err != nil {
						t.Fatal(err)
					}
					if r.Unrouted != 0 {
						t.Fatalf("%d pairs unrouted on a connected fabric", r.Unrouted)
					}
					checkPaths(t, f, refOrient(f, r.Root), f.Endpoints(sw), r.Paths, true)
				})
			}
		}
	}
}

func TestDeterministicPerSeed(t *testing.T) {
	topo, err := gen.Topology(gen.Random{Switches: 16, Degree: 6, CAs: 48, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for algo, run := range map[string]func(*topology.Topology, *rand.Rand) ([]plan.Path, error){
		"random": RandomShortestUpDown, "widest": ShortestWidest, "selection": PathSelection,
	} {
		a, err := run(topo, seeded(11))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := run(topo, seeded(11))
		c, _ := run(topo, seeded(12))
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed, different paths", algo)
		}
		if reflect.DeepEqual(a, c) {
			t.Errorf("%s: seeds 11 and 12 gave identical paths; the seed is not used", algo)
		}
	}
}

// TestWidestBeatsRandomShortest: on seeded irregular fabrics the
// shortest-widest bottleneck is no worse than a random shortest choice
// from the same root (and strictly better on most).
func TestWidestBeatsRandomShortest(t *testing.T) {
	better := 0
	for seed := uint64(1); seed <= 6; seed++ {
		topo, err := gen.Topology(gen.Random{Switches: 16, Degree: 8, CAs: 64, Seed: int64(seed)})
		if err != nil {
			t.Fatal(err)
		}
		o := DefaultOptions()
		o.Root = 3
		w, err := ShortestWidestOpts(topo, seeded(seed), o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := RandomShortestUpDownOpts(topo, seeded(seed), o)
		if err != nil {
			t.Fatal(err)
		}
		mw, _ := MaxLoad(topo, w.Paths)
		mr, _ := MaxLoad(topo, r.Paths)
		if mw > mr {
			t.Errorf("seed %d: shortest-widest max channel load %d > random shortest %d", seed, mw, mr)
		}
		if mw < mr {
			better++
		}
	}
	if better < 4 {
		t.Errorf("shortest-widest beat random shortest on only %d of 6 fabrics", better)
	}
}

func TestYenKShortest(t *testing.T) {
	for name, topo := range testFabrics(t) {
		f, _ := NewFabric(topo)
		u := NewUpDown(f, 0)
		up := refOrient(f, 0)
		y := newYen(u)
		row := make([]uint16, 2*f.N)
		q := make([]int32, 2*f.N)
		rng := seeded(4)
		for b := int32(0); b < int32(f.N); b++ {
			u.DistTo(b, row, nil, q)
			for a := int32(0); a < int32(f.N); a++ {
				all := allLegal(f, up, a, b)
				var lens []int
				for _, p := range all {
					lens = append(lens, len(p))
				}
				sort.Ints(lens)
				for _, tc := range []struct{ k, stretch int }{{8, -1}, {16, 0}, {3, 1}} {
					got := y.KShortest(a, b, tc.k, tc.stretch, row, rng)
					limit := 1 << 30
					if tc.stretch >= 0 && len(lens) > 0 {
						limit = lens[0] + tc.stretch
					}
					var want []int
					for _, l := range lens {
						if l <= limit && len(want) < tc.k {
							want = append(want, l)
						}
					}
					var gotLens []int
					seen := map[string]bool{}
					for _, p := range got {
						gotLens = append(gotLens, len(p))
						if !u.Legal(p) || (len(p) > 0 && (f.From[p[0]] != a || f.Peer[p[len(p)-1]] != b)) {
							t.Fatalf("%s %d->%d: path %v is not a legal walk from a to b", name, a, b, p)
						}
						if !slices.ContainsFunc(all, func(q []int32) bool { return slices.Equal(p, q) }) {
							t.Fatalf("%s %d->%d: path %v loops or is illegal (not among the loopless legal paths)", name, a, b, p)
						}
						if k := pathKey(p); seen[k] {
							t.Fatalf("%s %d->%d: path %v returned twice", name, a, b, p)
						} else {
							seen[k] = true
						}
					}
					if !sort.IntsAreSorted(gotLens) {
						t.Fatalf("%s %d->%d: lengths %v not nondecreasing", name, a, b, gotLens)
					}
					if !slices.Equal(gotLens, want) {
						t.Fatalf("%s %d->%d k=%d stretch=%d: lengths %v, want the %d shortest %v", name, a, b, tc.k, tc.stretch, gotLens, len(want), want)
					}
				}
			}
		}
	}
}

func TestPathSelectionOnePerPairFromCandidates(t *testing.T) {
	topo, err := gen.Topology(gen.Random{Switches: 16, Degree: 8, CAs: 64, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := NewFabric(topo)
	for _, stretch := range []int{0, -1} {
		o := DefaultOptions()
		o.MaxStretch = stretch
		rng := seeded(2)
		u, eps, err := setup(topo, rng, o)
		if err != nil {
			t.Fatal(err)
		}
		cands := KShortestLegal(u, eps, o.K, o.MaxStretch, rng)
		multi := 0
		for _, a := range eps {
			if n := len(cands.Of(f.Home[a], f.Home[eps[0]])); n > 1 {
				multi++
			}
		}
		if multi == 0 {
			t.Fatal("no pair has several candidates; the test fabric proves nothing")
		}
		r := selectPaths(u, eps, cands, o.K, PerMachinePair, rng)
		got := checkPaths(t, f, refOrient(f, r.Root), eps, r.Paths, stretch == 0)
		for pair, chans := range got {
			set := cands.Of(f.Home[pair[0]], f.Home[pair[1]])
			if !slices.ContainsFunc(set, func(q []int32) bool { return slices.Equal(q, chans) }) {
				t.Fatalf("pair %v got a path that is not one of its candidates", pair)
			}
		}
	}
}

// TestSelectionRelievesLoad: selection from several candidates must not
// end up more loaded (in machine-pair paths per channel) than keeping every
// pair's first candidate, at either granularity.
func TestSelectionRelievesLoad(t *testing.T) {
	topo, err := gen.Topology(gen.Random{Switches: 16, Degree: 8, CAs: 64, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []Granularity{PerSwitchPair, PerMachinePair} {
		o := DefaultOptions()
		o.Root = 0
		o.Granularity = g
		one := o
		one.K = 1
		r1, err := PathSelectionOpts(topo, seeded(3), one)
		if err != nil {
			t.Fatal(err)
		}
		r16, err := PathSelectionOpts(topo, seeded(3), o)
		if err != nil {
			t.Fatal(err)
		}
		m1, _ := MaxLoad(topo, r1.Paths)
		m16, _ := MaxLoad(topo, r16.Paths)
		if m16 >= m1 {
			t.Errorf("%v: k=16 max channel load %d, k=1 (no choice) %d: selection did not balance", g, m16, m1)
		}
	}
}

// TestPathSelectionGranularity: per switch pair, every machine pair
// between two switches takes the same switch-level path (one of the pair's
// candidates); per machine pair they do not (or the test fabric could not
// tell the two apart).
func TestPathSelectionGranularity(t *testing.T) {
	topo, err := gen.Topology(gen.Random{Switches: 16, Degree: 8, CAs: 96, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := NewFabric(topo)
	for _, g := range []Granularity{PerSwitchPair, PerMachinePair} {
		for _, sw := range []bool{false, true} {
			o := DefaultOptions()
			o.Granularity = g
			o.Switches = sw
			rng := seeded(4)
			u, eps, err := setup(topo, rng, o)
			if err != nil {
				t.Fatal(err)
			}
			cands := KShortestLegal(u, eps, o.K, o.MaxStretch, rng)
			r := selectPaths(u, eps, cands, o.K, g, rng)
			got := checkPaths(t, f, refOrient(f, r.Root), eps, r.Paths, true)
			bySw := map[[2]int32][]int32{}
			split := 0
			for pair, chans := range got {
				a, b := f.Home[pair[0]], f.Home[pair[1]]
				set := cands.Of(a, b)
				if !slices.ContainsFunc(set, func(q []int32) bool { return slices.Equal(q, chans) }) {
					t.Fatalf("%v: pair %v got a path that is not one of its candidates", g, pair)
				}
				k := [2]int32{a, b}
				if prev, ok := bySw[k]; !ok {
					bySw[k] = chans
				} else if !slices.Equal(prev, chans) {
					split++
				}
			}
			switch {
			case g == PerSwitchPair && split > 0:
				t.Errorf("switch granularity (switch endpoints %v): %d machine pairs differ from another pair of the same switch pair", sw, split)
			case g == PerMachinePair && split == 0:
				t.Errorf("machine granularity (switch endpoints %v): every switch pair's machine pairs share one path; the fabric cannot tell the granularities apart", sw)
			}
		}
	}
}

// TestUnitsWeights: per switch pair, one unit per ordered pair of distinct
// switches with endpoints, weighted by the endpoint pairs it carries.
func TestUnitsWeights(t *testing.T) {
	topo, err := sdktest.Random(42, 12, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := NewFabric(topo)
	eps := f.Endpoints(false)
	us := newUnits(f, eps, PerSwitchPair)
	per := map[int32]int32{}
	for _, e := range eps {
		per[f.Home[e]]++
	}
	if want := len(per) * (len(per) - 1); us.len() != want {
		t.Fatalf("%d units for %d switches with endpoints, want %d", us.len(), len(per), want)
	}
	var sum, cross int
	for p := 0; p < us.len(); p++ {
		a, b := us.src[p], us.dst[p]
		if a == b || us.weight[p] != per[a]*per[b] || us.index[int(a)*f.N+int(b)] != int32(p) {
			t.Fatalf("unit %d: switches %d->%d weight %d, want %d", p, a, b, us.weight[p], per[a]*per[b])
		}
		sum += int(us.weight[p])
	}
	for _, x := range eps {
		for _, y := range eps {
			if f.Home[x] != f.Home[y] {
				cross++
			}
		}
	}
	if sum != cross {
		t.Errorf("weights sum to %d, %d endpoint pairs cross switches", sum, cross)
	}
	if m := newUnits(f, eps, PerMachinePair); m.len() != len(eps)*(len(eps)-1) {
		t.Errorf("machine granularity: %d units, want %d", m.len(), len(eps)*(len(eps)-1))
	}
}

func TestErrors(t *testing.T) {
	topo, _ := sdktest.Ring(4, 1)
	o := DefaultOptions()
	if _, err := ShortestWidestOpts(topo, nil, o); err == nil || !strings.Contains(err.Error(), "random source") {
		t.Errorf("nil rng: %v", err)
	}
	o.Root = 9
	if _, err := ShortestWidestOpts(topo, seeded(1), o); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("bad root: %v", err)
	}
	o = DefaultOptions()
	o.K = MaxK + 1
	if _, err := PathSelectionOpts(topo, seeded(1), o); err == nil || !strings.Contains(err.Error(), "candidate paths") {
		t.Errorf("bad k: %v", err)
	}
	o = DefaultOptions()
	o.Granularity = 7
	if _, err := PathSelectionOpts(topo, seeded(1), o); err == nil || !strings.Contains(err.Error(), "granularity") {
		t.Errorf("bad granularity: %v", err)
	}
	if _, err := NewFabric(nil); err == nil {
		t.Error("nil topology accepted")
	}
	for in, want := range map[string]Granularity{"switch": PerSwitchPair, "machine": PerMachinePair} {
		if g, err := ParseGranularity(in); err != nil || g != want || g.String() != in {
			t.Errorf("ParseGranularity(%q) = %v, %v", in, g, err)
		}
	}
	for _, in := range []string{"", "Switch", "host"} {
		if _, err := ParseGranularity(in); err == nil {
			t.Errorf("ParseGranularity(%q) accepted", in)
		}
	}
}

func TestUpDownOrder(t *testing.T) {
	// Line 0-1-2-3 rooted at 2: ranks 2,1,0,1; order 2,1,3,0. A 1-D mesh
	// with one CA per switch: port 2 goes to the next switch, 3 to the
	// previous one.
	topo, err := gen.Topology(gen.Torus{Dims: []int{4}, Mesh: true, CAsPerSwitch: 1})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := NewFabric(topo)
	u := NewUpDown(f, 2)
	if want := []int32{3, 1, 0, 2}; !slices.Equal(u.Ord, want) {
		t.Fatalf("Ord = %v, want %v", u.Ord, want)
	}
	c01, c12, c21, c23 := f.ChannelOf(0, 2), f.ChannelOf(1, 2), f.ChannelOf(2, 3), f.ChannelOf(2, 2)
	if !u.Up(c01) || !u.Up(c12) || u.Up(c21) || u.Up(c23) {
		t.Fatal("channel directions wrong")
	}
	if !u.Legal([]int32{c01, c12, c23}) {
		t.Error("0->1->2->3 (up, up, down) is legal")
	}
	c32, c10 := f.Rev[c23], f.Rev[c01]
	if u.Legal([]int32{c32, c21, c10}) != true {
		t.Error("3->2->1->0 (up, down, down) is legal")
	}
	if u.Legal([]int32{c21, c12}) {
		t.Error("2->1->2 (down then up) accepted")
	}
}
