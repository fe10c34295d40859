package sftree

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// pickCable chooses a switch port (near end of a cable) on a routed fabric.
type pickCable func(t *ftree.Tree, root int32) (int32, uint8)

// parents lists the switches s climbs to.
func parents(t *ftree.Tree, s int32) []int32 {
	var out []int32
	for _, g := range t.Up[s] {
		out = append(out, g.Peer)
	}
	return out
}

// inPod reports whether leaf-or-aggregation switch s shares a parent with
// (a leaf) or is a parent of the root leaf.
func inPod(t *ftree.Tree, root, s int32) bool {
	rp := parents(t, root)
	if slices.Contains(rp, s) || s == root {
		return true
	}
	for _, p := range parents(t, s) {
		if slices.Contains(rp, p) {
			return true
		}
	}
	return false
}

// upCable returns the first up cable of the first switch of level lvl that
// want accepts.
func upCable(lvl int32, want func(t *ftree.Tree, root, s int32) bool) pickCable {
	return func(t *ftree.Tree, root int32) (int32, uint8) {
		for _, s := range t.ByLevel[lvl] {
			if want(t, root, s) && len(t.Up[s]) > 0 {
				g := t.Up[s][len(t.Up[s])/2]
				return s, g.Ports[0]
			}
		}
		return -1, 0
	}
}

// nthUpCable is upCable's pick on the nth (from 0) switch want accepts.
func nthUpCable(lvl int32, want func(t *ftree.Tree, root, s int32) bool, n int) pickCable {
	return func(t *ftree.Tree, root int32) (int32, uint8) {
		for _, s := range t.ByLevel[lvl] {
			if want(t, root, s) && len(t.Up[s]) > 0 {
				if n == 0 {
					g := t.Up[s][len(t.Up[s])/2]
					return s, g.Ports[0]
				}
				n--
			}
		}
		return -1, 0
	}
}

// lostsOther is the cable of upCable(1, rootParent)'s top switch to the
// pod after the root's.
func lostsOther(t *ftree.Tree, root int32) (int32, uint8) {
	s, p := upCable(1, rootParent)(t, root)
	var top int32
	for _, g := range t.Up[s] {
		if g.Ports[0] == p {
			top = g.Peer
		}
	}
	for _, a := range t.ByLevel[1] {
		if a == s || inPod(t, root, a) {
			continue
		}
		for _, g := range t.Up[a] {
			if g.Peer == top {
				return a, g.Ports[0]
			}
		}
	}
	return -1, 0
}

// rootsFirstUplink is the root's first up cable (upCable picks a middle
// one).
func rootsFirstUplink(t *ftree.Tree, root int32) (int32, uint8) { return root, t.Up[root][0].Ports[0] }

func notInPod(t *ftree.Tree, root, s int32) bool { return !inPod(t, root, s) }
func podNotRoot(t *ftree.Tree, root, s int32) bool {
	return s != root && inPod(t, root, s) && !slices.Contains(parents(t, root), s)
}
func isRoot(_ *ftree.Tree, root, s int32) bool { return s == root }
func rootParent(t *ftree.Tree, root, s int32) bool {
	return slices.Contains(parents(t, root), s)
}

// cableOf names the cable at switch s port p of topo.
func cableOf(topo *topology.Topology, s int32, p uint8) Cable {
	r := topology.PortRef{Node: topo.Switches()[s], Port: p}
	peer := topo.Port(r).Peer
	return Cable{A: End{topo.Nodes[r.Node].GUID, p}, B: End{topo.Nodes[peer.Node].GUID, peer.Port}}
}

// verify runs the host's own checks (reachability of every CA and switch
// pair, loops, one-VL CDG) on routes for topo.
func verify(t *testing.T, what string, topo *topology.Topology, r *plan.Routes, lmc uint8) {
	t.Helper()
	if _, err := check.Check(check.Plan{Topo: topo, Routes: r, LIDs: testfab.SequentialLIDs(topo, lmc)}, check.Options{}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// verifyLike checks r like verify where the full route passes the host's
// checks, and where the full route leaves pairs dark (a heavily degraded
// tree), that r reaches at least as many CA and switch pairs as full, with
// no loops and an acyclic one-VL CDG.
func verifyLike(t *testing.T, what string, topo *topology.Topology, r, full *plan.Routes, lmc uint8) {
	t.Helper()
	lids := testfab.SequentialLIDs(topo, lmc)
	if _, err := check.Check(check.Plan{Topo: topo, Routes: full, LIDs: lids}, check.Options{}); err == nil {
		verify(t, what, topo, r, lmc)
		return
	}
	analyse := func(r *plan.Routes) *analysis.Report {
		real, err := plan.Realize(topo, r, lids)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analysis.Analyse(real, nil, analysis.Options{AllLIDs: lmc > 0})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	a, b := analyse(r), analyse(full)
	if a.LoopLIDs > 0 || a.BadEntries > 0 || !a.DeadlockFree {
		t.Fatalf("%s: %d looping LIDs, %d bad entries, deadlock-free %v", what, a.LoopLIDs, a.BadEntries, a.DeadlockFree)
	}
	if a.CAPairs.Reachable < b.CAPairs.Reachable || a.SwitchPairs.Reachable < b.SwitchPairs.Reachable {
		t.Fatalf("%s: reaches %d CA and %d switch pairs, a full route %d and %d", what, a.CAPairs.Reachable, a.SwitchPairs.Reachable, b.CAPairs.Reachable, b.SwitchPairs.Reachable)
	}
}

// crosses reports whether some plane of dp uses one of the dead ports.
func crosses(dp plan.DestPlanes, dead map[portRef]bool) bool {
	for _, pl := range dp.Planes {
		for p := range dead {
			if pl[p.s] == p.port {
				return true
			}
		}
	}
	return false
}

func TestReroute(t *testing.T) {
	ft3 := func() (*topology.Topology, error) { return sdktest.FatTree3(8) }
	ft2 := func() (*topology.Topology, error) { return sdktest.FatTree2(8, 4, 4) }
	for _, tc := range []struct {
		name string
		make func() (*topology.Topology, error)
		lmc  uint8
		// cables go down one after another, each from the previous state.
		cables []pickCable
		// fallback is a word the last cable's fallback reason must hold;
		// "" wants an in-place repair (always for the cables before it).
		fallback string
	}{
		{"ft3 leaf-agg, other pod", ft3, 0, []pickCable{upCable(2, notInPod)}, ""},
		{"ft3 leaf-agg, root's pod", ft3, 0, []pickCable{upCable(2, podNotRoot)}, ""},
		{"ft3 agg-core, other pod", ft3, 0, []pickCable{upCable(1, notInPod)}, ""},
		{"ft3 agg-core, other pod, lmc 1", ft3, 1, []pickCable{upCable(1, notInPod)}, ""},
		{"ft3 two cables, one after the other", ft3, 0, []pickCable{upCable(2, notInPod), upCable(1, notInPod)}, ""},
		{"ft3 agg-core, root's pod", ft3, 0, []pickCable{upCable(1, rootParent)}, ""},
		{"ft3 agg-core, root's pod, lmc 1", ft3, 1, []pickCable{upCable(1, rootParent)}, ""},
		{"ft3 leaf-agg, then agg-core in the root's pod", ft3, 0, []pickCable{upCable(2, notInPod), upCable(1, rootParent)}, ""},
		{"ft3 agg-core in the root's pod, then leaf-agg", ft3, 0, []pickCable{upCable(1, rootParent), upCable(2, notInPod)}, ""},
		{"ft3 agg-core in the root's pod, then the lost switch's other cable", ft3, 0, []pickCable{upCable(1, rootParent), lostsOther}, ""},
		{"ft3 two agg-core cables in the root's pod", ft3, 0, []pickCable{upCable(1, rootParent), nthUpCable(1, rootParent, 1)}, "more than one switch lost"},
		{"ft3 root's own uplink", ft3, 0, []pickCable{upCable(2, isRoot)}, ""},
		{"ft3 root's own uplink, lmc 1", ft3, 1, []pickCable{upCable(2, isRoot)}, ""},
		{"ft3 root's own uplink, then leaf-agg", ft3, 0, []pickCable{upCable(2, isRoot), upCable(2, notInPod)}, ""},
		{"ft3 root's own uplink, then agg-core in another pod", ft3, 0, []pickCable{upCable(2, isRoot), upCable(1, notInPod)}, ""},
		{"ft3 root's two uplinks", ft3, 0, []pickCable{upCable(2, isRoot), rootsFirstUplink}, "more than one switch lost"},
		{"ft2 leaf-spine", ft2, 0, []pickCable{upCable(1, func(_ *ftree.Tree, root, s int32) bool { return s != root })}, ""},
		{"ft2 root's own uplink", ft2, 0, []pickCable{upCable(1, isRoot)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			topo, err := tc.make()
			if err != nil {
				t.Fatal(err)
			}
			res, err := RouteFatTree(ctx, topo, tc.lmc, ftree.Config{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.State.why != "" {
				t.Fatalf("full tree not repairable: %s", res.State.why)
			}
			first, st := res.State, res.State
			var cables []Cable
			for i, pick := range tc.cables {
				s, p := pick(res.Tree, st.root)
				if s < 0 {
					t.Fatalf("cable %d: no such cable in this tree", i)
				}
				cables = append(cables, cableOf(topo, s, p))
				// A fresh topology with every cable so far down.
				down, err := tc.make()
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cables {
					testfab.SetLinkState(down, down.SwitchIndex(down.NodeByGUID(c.A.GUID)), c.A.Port, topology.StateDown)
				}
				g := route.NewGraph(down)
				next, rep, err := st.Reroute(ctx, g, Delta{Removed: cables[i:]})
				if err != nil {
					t.Fatal(err)
				}
				full, err := RouteFatTree(ctx, down, tc.lmc, ftree.Config{}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				verify(t, "full route", down, full.Routes, tc.lmc)
				verify(t, "reroute ("+rep.How+")", down, next.routes, tc.lmc)
				fd := diffRoutes(g, st.routes, full.Routes, nil)
				fc, fs, fe := fd.CADests, fd.SwitchDests, fd.Entries
				t.Logf("cable %d: %s %s; changed %d CA + %d switch destinations, %d entries; a full route changes %d + %d, %d entries",
					i, rep.How, rep.Fallback, rep.CADests, rep.SwitchDests, rep.Entries, fc, fs, fe)
				if tc.fallback != "" && i == len(tc.cables)-1 {
					if rep.How != HowFull || !strings.Contains(rep.Fallback, tc.fallback) {
						t.Fatalf("want a full route because %q, got %s (%q)", tc.fallback, rep.How, rep.Fallback)
					}
					if rep.Entries > fe {
						t.Errorf("the full route with the nearest root changed %d entries, Algorithm 1's root %d", rep.Entries, fe)
					}
					st = next
					continue
				}
				if rep.How != HowRepaired || rep.Fallback != "" {
					t.Fatalf("want an in-place repair, got %s: %s", rep.How, rep.Fallback)
				}
				if next.Root() != st.Root() {
					t.Errorf("root moved 0x%016x -> 0x%016x", st.Root(), next.Root())
				}
				if rep.Entries == 0 || rep.Entries > fe {
					t.Errorf("repair changed %d entries, the full route %d", rep.Entries, fe)
				}
				// Only destinations whose routes crossed the cable change
				// (switch rows also where the root's plane moved).
				dead := map[portRef]bool{}
				for _, end := range []End{cables[i].A, cables[i].B} {
					dead[portRef{g.Topo.SwitchIndex(g.Topo.NodeByGUID(end.GUID)), end.Port}] = true
				}
				var changedEPs []int32
				for e := range next.routes.Planes {
					changed := !slices.EqualFunc(st.routes.Planes[e].Planes, next.routes.Planes[e].Planes, func(a, b plan.Plane) bool { return slices.Equal(a, b) })
					if changed {
						changedEPs = append(changedEPs, int32(e))
					}
					if changed && !g.Attachment(int32(e)).IsSwitch && !crosses(st.routes.Planes[e], dead) {
						t.Fatalf("CA endpoint %d changed though no route of it crossed the cable", e)
					}
				}
				if !slices.Equal(changedEPs, rep.Changed) {
					t.Fatalf("report lists %d changed destinations, %d changed", len(rep.Changed), len(changedEPs))
				}
				st = next
			}
			// The cables back up, last first: each restores the routes from
			// before it went down, the last the original ones.
			for i := len(cables) - 1; i >= 0; i-- {
				up, err := tc.make()
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cables[:i] {
					testfab.SetLinkState(up, up.SwitchIndex(up.NodeByGUID(c.A.GUID)), c.A.Port, topology.StateDown)
				}
				back, rep, err := st.Reroute(ctx, route.NewGraph(up), Delta{Added: cables[i : i+1]})
				if err != nil {
					t.Fatal(err)
				}
				if rep.How != HowRestored {
					t.Fatalf("cable %d back up: %s (%s), want the routes from before it went down", i, rep.How, rep.Fallback)
				}
				verify(t, "restored", up, back.routes, tc.lmc)
				st = back
			}
			for e := range st.routes.Planes {
				if !slices.EqualFunc(first.routes.Planes[e].Planes, st.routes.Planes[e].Planes, func(a, b plan.Plane) bool { return slices.Equal(a, b) }) {
					t.Fatalf("endpoint %d: restored routes differ from the original", e)
				}
			}
		})
	}
}

// TestRerouteRefuses checks the deltas and fabrics Reroute does not repair
// in place: each falls back to a full route that says why (on another
// fabric, with every destination reported changed).
func TestRerouteRefuses(t *testing.T) {
	ctx := context.Background()
	topo, res := routedFT8(t)
	s, p := upCable(2, notInPod)(res.Tree, res.State.root)
	cable := cableOf(topo, s, p)
	other := cableOf(topo, s, res.Tree.Up[s][0].Ports[0])
	ft3 := func() (*topology.Topology, error) { return sdktest.FatTree3(8) }
	for _, tc := range []struct {
		name   string
		fabric func() (*topology.Topology, error)
		down   []Cable // cables down in the fabric
		delta  Delta
		want   string
	}{
		{"delta names another cable", ft3, []Cable{cable}, Delta{Removed: []Cable{other}}, "not in the delta"},
		{"delta misses the cable", ft3, []Cable{cable}, Delta{}, "the delta has 0"},
		{"a cable up it never lost", ft3, nil, Delta{Added: []Cable{cable}}, "the delta has 2"},
		{"fewer switches", func() (*topology.Topology, error) { return sdktest.FatTree3(6) }, nil, Delta{}, "the fabric has 45 switches"},
		{"another kind of tree", func() (*topology.Topology, error) { return sdktest.FatTree2(8, 4, 4) }, nil, Delta{}, "the fabric has 12 switches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fab, err := tc.fabric()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.down {
				testfab.SetLinkState(fab, fab.SwitchIndex(fab.NodeByGUID(c.A.GUID)), c.A.Port, topology.StateDown)
			}
			next, rep, err := res.State.Reroute(ctx, route.NewGraph(fab), tc.delta)
			if err != nil {
				t.Fatal(err)
			}
			if rep.How != HowFull || !strings.Contains(rep.Fallback, tc.want) {
				t.Fatalf("got %s (%q), want a full route because %q", rep.How, rep.Fallback, tc.want)
			}
			verify(t, "full route", fab, next.routes, 0)
			if len(rep.Changed) != len(next.routes.Planes) && sameNodes(res.State.g, route.NewGraph(fab)) != "" {
				t.Errorf("%d destinations reported changed on another fabric, want all %d", len(rep.Changed), len(next.routes.Planes))
			}
		})
	}
}

// TestRerouteSequence takes seeded cables down one after another, each
// rerouted from the previous state, and checks every result against a full
// route of the same fabric (verifyLike); repairs and fallbacks both occur,
// and on the longer runs full routes that leave pairs dark.
func TestRerouteSequence(t *testing.T) {
	for _, tc := range []struct {
		k, steps int
		seed     uint64
		// rootFirst takes the root's own uplink down first: the later
		// cables are repaired with switches lost, tied to a child.
		rootFirst bool
	}{{8, 12, 1, false}, {8, 12, 2, false}, {12, 10, 3, false}, {8, 30, 4, false}, {12, 40, 7, false}, {16, 30, 9, false},
		{8, 15, 105, true}, {8, 15, 103, true}, {12, 15, 201, true}} {
		t.Run(fmt.Sprintf("ft3-k%d-seed%d-rootfirst=%v", tc.k, tc.seed, tc.rootFirst), func(t *testing.T) {
			if testing.Short() && tc.k > 12 {
				t.Skip("1,024 CAs, 30 full routes: skipped in -short")
			}
			ctx := context.Background()
			topo, res := routedWith(t, func() (*topology.Topology, error) { return sdktest.FatTree3(tc.k) })
			g := route.NewGraph(topo)
			var links []portRef
			for s := int32(0); s < int32(g.N); s++ {
				for _, l := range g.Links(s) {
					if s < l.Peer {
						links = append(links, portRef{s, l.Port})
					}
				}
			}
			rng := rand.New(rand.NewPCG(tc.seed, 0x12e))
			rng.Shuffle(len(links), func(i, j int) { links[i], links[j] = links[j], links[i] })
			if tc.rootFirst {
				up := portRef{res.State.root, res.Tree.Up[res.State.root][0].Ports[0]}
				links = slices.DeleteFunc(links, func(l portRef) bool {
					return l == up || g.PeerSwitch(l.s, l.port) == up.s && g.PeerSwitch(up.s, up.port) == l.s
				})
				links = append([]portRef{up}, links...)
			}
			st := res.State
			hows := map[string]int{}
			for i, l := range links[:tc.steps] {
				c := cableOf(topo, l.s, l.port)
				down, err := sdktest.FatTree3(tc.k)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range links[:i+1] {
					testfab.SetLinkState(down, m.s, m.port, topology.StateDown)
				}
				next, rep, err := st.Reroute(ctx, route.NewGraph(down), Delta{Removed: []Cable{c}})
				if err != nil {
					t.Fatal(err)
				}
				full, err := RouteFatTree(ctx, down, 0, ftree.Config{}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				verifyLike(t, fmt.Sprintf("cable %d (%s %s)", i, rep.How, rep.Fallback), down, next.routes, full.Routes, 0)
				hows[rep.How]++
				if rep.How == HowRepaired && next.lost != nil {
					hows["repaired with switches lost"]++
				}
				st = next
			}
			t.Logf("%v", hows)
			if hows[HowRepaired] == 0 {
				t.Errorf("no cable was repaired in place: %v", hows)
			}
			if tc.rootFirst && hows["repaired with switches lost"] < 2 {
				t.Errorf("the root's uplink and a later cable were not repaired with switches lost: %v", hows)
			}
		})
	}
}

// TestRerouteMissedUp: a cable's return served without a Reroute (the
// host's plan cache), then another cable down. The fabric is the first
// routing's less the second cable, so that routing is repaired, not the
// fabric routed in full.
func TestRerouteMissedUp(t *testing.T) {
	ctx := context.Background()
	topo, res := routedFT8(t)
	fabric := func(down ...Cable) *topology.Topology { return ft8Without(t, down...) }
	s1, p1 := upCable(2, notInPod)(res.Tree, res.State.root)
	s2, p2 := upCable(1, notInPod)(res.Tree, res.State.root)
	a, b := cableOf(topo, s1, p1), cableOf(topo, s2, p2)
	st, rep, err := res.State.Reroute(ctx, route.NewGraph(fabric(a)), Delta{Removed: []Cable{a}})
	if err != nil || rep.How != HowRepaired {
		t.Fatalf("first cable: %v %+v", err, rep)
	}
	down := fabric(b)
	next, rep, err := st.Reroute(ctx, route.NewGraph(down), Delta{Removed: []Cable{b}, Added: []Cable{a}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.How != HowRepaired || rep.Back != 1 {
		t.Fatalf("got %s from %d back (%s), want the first routing repaired", rep.How, rep.Back, rep.Fallback)
	}
	verify(t, "repaired from the first routing", down, next.routes, 0)
	direct, _, err := res.State.Reroute(ctx, route.NewGraph(down), Delta{Removed: []Cable{b}})
	if err != nil {
		t.Fatal(err)
	}
	for e := range direct.routes.Planes {
		if !slices.EqualFunc(direct.routes.Planes[e].Planes, next.routes.Planes[e].Planes, func(a, b plan.Plane) bool { return slices.Equal(a, b) }) {
			t.Fatalf("endpoint %d: differs from repairing the first routing directly", e)
		}
	}
}

// TestRerouteMissedUpAfterFull: the host's sequence down(A), up(A) from
// its plan cache, down(B), where A and B each make the repair fall back to
// a full route (each two aggregation-core cables of the root's pod, so
// that two switches lose their way to the root), then up(B) from the
// cache and down(C): C is repaired from the first routing (whose fabric
// has A and B), which each full route keeps behind it, not routed in full
// because the routings kept all lack A or B.
func TestRerouteMissedUpAfterFull(t *testing.T) {
	ctx := context.Background()
	topo, res := routedFT8(t)
	fabric := func(down ...Cable) *route.Graph { return route.NewGraph(ft8Without(t, down...)) }
	r := res.State.root
	pod := func(n int) Cable {
		s, p := nthUpCable(1, rootParent, n)(res.Tree, r)
		return cableOf(topo, s, p)
	}
	a, b := []Cable{pod(0), pod(1)}, []Cable{pod(2), pod(3)}
	s, p := upCable(2, notInPod)(res.Tree, r)
	c := []Cable{cableOf(topo, s, p)}
	st := res.State
	for i, step := range []struct {
		down, up []Cable
		wantHow  string
		wantBack int
	}{
		{a, nil, HowFull, 0},
		{b, a, HowFull, 1},
		{c, b, HowRepaired, 1},
	} {
		g := fabric(step.down...)
		next, rep, err := st.Reroute(ctx, g, Delta{Removed: step.down, Added: step.up})
		if err != nil {
			t.Fatal(err)
		}
		if rep.How != step.wantHow || rep.Back != step.wantBack {
			t.Fatalf("step %d: %s from %d back (%s), want %s from %d back", i, rep.How, rep.Back, rep.Fallback, step.wantHow, step.wantBack)
		}
		verify(t, fmt.Sprintf("step %d", i), g.Topo, next.routes, 0)
		st = next
	}
}

// ft8Without is ft3-8 with the cables down.
func ft8Without(t *testing.T, down ...Cable) *topology.Topology {
	t.Helper()
	f, err := sdktest.FatTree3(8)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range down {
		testfab.SetLinkState(f, f.SwitchIndex(f.NodeByGUID(c.A.GUID)), c.A.Port, topology.StateDown)
	}
	return f
}

// routedFT8 routes a full ft3-8 with the defaults.
func routedFT8(t *testing.T) (*topology.Topology, *Result) {
	t.Helper()
	return routedWith(t, func() (*topology.Topology, error) { return sdktest.FatTree3(8) })
}

// routedWith routes the fabric build returns with the defaults.
func routedWith(t *testing.T, build func() (*topology.Topology, error)) (*topology.Topology, *Result) {
	t.Helper()
	topo, err := build()
	if err != nil {
		t.Fatal(err)
	}
	res, err := RouteFatTree(context.Background(), topo, 0, ftree.Config{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return topo, res
}

// TestRerouteEveryCable takes each switch cable of small trees down alone
// from the full routing: every result passes the host's checks (every
// pair, no loop, an acyclic one-VL CDG) and is repaired in place, the root
// kept; the root's own uplinks (on ft3 their aggregation switch, its top
// switches and their other children lose the root; on ft2 the spine) and
// on ft3 the cables between the root's pod and a top switch (that switch)
// are repaired through a lost switch's child, no other cable.
func TestRerouteEveryCable(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func() (*topology.Topology, error)
	}{
		{"ft3-k8", func() (*topology.Topology, error) { return sdktest.FatTree3(8) }},
		{"ft2-8-4-4", func() (*topology.Topology, error) { return sdktest.FatTree2(8, 4, 4) }},
		{"ft3-k12", func() (*topology.Topology, error) { return sdktest.FatTree3(12) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && strings.Contains(tc.name, "k12") {
				t.Skip("864 cables: skipped in -short")
			}
			ctx := context.Background()
			topo, res := routedWith(t, tc.make)
			g := route.NewGraph(topo)
			hows := map[string]int{}
			for s := int32(0); s < int32(g.N); s++ {
				for _, l := range g.Links(s) {
					if s > l.Peer {
						continue
					}
					down, err := tc.make()
					if err != nil {
						t.Fatal(err)
					}
					testfab.SetLinkState(down, s, l.Port, topology.StateDown)
					next, rep, err := res.State.Reroute(ctx, route.NewGraph(down), Delta{Removed: []Cable{cableOf(topo, s, l.Port)}})
					if err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("cable 0x%016x/%d (%s %s)", g.SwitchGUID(s), l.Port, rep.How, rep.Fallback)
					verify(t, what, down, next.routes, 0)
					rootsOwn := s == res.State.root || l.Peer == res.State.root
					rp := parents(res.Tree, res.State.root)
					rank := res.State.ud.rank
					podTop := rank[s] == 0 && slices.Contains(rp, l.Peer) || rank[l.Peer] == 0 && slices.Contains(rp, s)
					if rep.How != HowRepaired || next.Root() != res.State.Root() {
						t.Errorf("%s: want a repair keeping the root", what)
					}
					switch {
					case (rootsOwn || podTop) != (rep.Lost != 0):
						t.Errorf("%s: lost %d switches, want some only for the root's uplinks and its pod's cables to top switches", what, rep.LostSwitches)
					case rootsOwn:
						hows[fmt.Sprintf("repaired, root's uplink, %d switches lost", rep.LostSwitches)]++
					case podTop:
						hows[fmt.Sprintf("repaired, %d top switch lost", rep.LostSwitches)]++
					default:
						hows[rep.How]++
					}
				}
			}
			t.Logf("%v", hows)
		})
	}
}

// TestRerouteAfterLost: from a repair that ties switches the root lost to
// a child of the one whose way to the root died (ft3-k8: an
// aggregation-core cable in the root's pod loses a top switch; the root's
// own uplink its aggregation switch, that switch's top switches and their
// other children), each other switch cable goes down too: every result
// passes the host's checks, and all are repaired in place, the root kept,
// but those where a second switch loses its way to the root (the root's
// other uplinks, its pod's other aggregation-core cables, and after the
// uplink cables within the lost switches), which route in full. The cable
// to the lost switch's child is among the repairs.
func TestRerouteAfterLost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first pickCable
		lost  int // switches lost after the first cable
	}{
		{"agg-core in the root's pod", upCable(1, rootParent), 1},
		{"root's own uplink", upCable(2, isRoot), 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			topo, res := routedFT8(t)
			s0, p0 := tc.first(res.Tree, res.State.root)
			first := cableOf(topo, s0, p0)
			st, rep, err := res.State.Reroute(ctx, route.NewGraph(ft8Without(t, first)), Delta{Removed: []Cable{first}})
			if err != nil || rep.How != HowRepaired || st.lost == nil || rep.LostSwitches != tc.lost {
				t.Fatalf("first cable: %v %+v, want a repair losing %d switches", err, rep, tc.lost)
			}
			g := route.NewGraph(topo)
			hows := map[string]int{}
			for s := int32(0); s < int32(g.N); s++ {
				for _, l := range g.Links(s) {
					c := cableOf(topo, s, l.Port)
					if s > l.Peer || c == first || c == (Cable{first.B, first.A}) {
						continue
					}
					down := ft8Without(t, first, c)
					next, rep, err := st.Reroute(ctx, route.NewGraph(down), Delta{Removed: []Cable{c}})
					if err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("cable 0x%016x/%d (%s %s)", g.SwitchGUID(s), l.Port, rep.How, rep.Fallback)
					verify(t, what, down, next.routes, 0)
					switch {
					case rep.How == HowRepaired && next.Root() == st.Root():
						if l.Peer == st.lost.lam && s == st.lost.y || s == st.lost.lam && l.Peer == st.lost.y {
							hows["repaired, its child's cable"]++
						} else {
							hows[rep.How]++
						}
					case rep.How == HowFull && strings.Contains(rep.Fallback, "more than one switch lost"):
						hows["full, more lost"]++
					default:
						t.Errorf("%s: want a repair keeping the root, or a full route for a second switch lost", what)
					}
				}
			}
			t.Logf("%v", hows)
			if hows["repaired, its child's cable"] != 1 {
				t.Errorf("the cable to the lost switch's child was not repaired in place: %v", hows)
			}
		})
	}
}

// TestDiffering counts the differing entries of two planes, across and
// within the 64-entry chunks differing compares first.
func TestDiffering(t *testing.T) {
	for _, tc := range []struct {
		n    int
		at   []int // entries of b changed
		want int64
	}{
		{0, nil, 0},
		{5, nil, 0},
		{5, []int{0, 4}, 2},
		{64, []int{63}, 1},
		{65, []int{63, 64}, 2},
		{200, []int{0, 1, 2, 127, 128, 199}, 6},
		{3920, []int{7, 3000, 3919}, 3},
	} {
		a := make(plan.Plane, tc.n)
		for i := range a {
			a[i] = uint8(i % 7)
		}
		b := slices.Clone(a)
		for _, i := range tc.at {
			b[i]++
		}
		if got := differing(a, b); got != tc.want {
			t.Errorf("%d entries, %v changed: counted %d, want %d", tc.n, tc.at, got, tc.want)
		}
	}
}
