package sftree

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// ftreeBase is the ftree engine's routing and its tree.
func ftreeBase(t testing.TB, topo *topology.Topology, lmc uint8) (*plan.Routes, Tree) {
	t.Helper()
	r, res, err := ftree.Route(context.Background(), topo, lmc, ftree.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return r, FromFtree(res.Tree)
}

// checkResult walks every switch plane from every switch, fails on loops
// and wrong deliveries, compares the count of unrouted pairs with the
// report, checks that CA planes are the base's own, and runs the shared
// CDG checker over the realised tables.
func checkResult(t *testing.T, topo *topology.Topology, base, r *plan.Routes, rep *Report, lmc uint8) {
	t.Helper()
	sws := topo.Switches()
	unrouted := int64(0)
	for d, node := range sws {
		e := topo.EndpointIndex(topology.PortRef{Node: node, Port: 0})
		if n := len(r.Planes[e].Planes); n != 1 {
			t.Fatalf("switch destination %d has %d planes, want 1", d, n)
		}
		pl := r.Planes[e].Planes[0]
		for s := range sws {
			if s == d {
				continue
			}
			if pl[s] == plan.NoPort {
				unrouted++
				continue
			}
			if _, err := testfab.Walk(topo, pl, int32(s), e); err != nil {
				t.Fatalf("switch %d -> switch %d: %v", s, d, err)
			}
		}
	}
	if unrouted != rep.Unreachable {
		t.Errorf("%d switch pairs unrouted, report says %d", unrouted, rep.Unreachable)
	}
	if rep.UpDown+rep.ViaSubtree+rep.ViaSibling+rep.ViaExtraRoots+rep.Unreachable != rep.Pairs {
		t.Errorf("report does not add up: %+v", rep)
	}
	for e, ep := range topo.Endpoints() {
		if topo.SwitchIndex(ep.Node) >= 0 {
			continue
		}
		a, b := base.Planes[e].Planes, r.Planes[e].Planes
		if len(a) != len(b) {
			t.Fatalf("CA endpoint %d: %d planes, base has %d", e, len(b), len(a))
		}
		for k := range a {
			if !slices.Equal(a[k], b[k]) {
				t.Fatalf("CA endpoint %d plane %d differs from the fat-tree engine's", e, k)
			}
		}
	}
	real, err := testfab.Realize(topo, r, lmc)
	if err != nil {
		t.Fatal(err)
	}
	if cyc, err := cdg.Cycle(context.Background(), real); err != nil {
		t.Fatal(err)
	} else if cyc != "" {
		t.Fatalf("credit loop with switch traffic: %s", cyc)
	}
}

func TestFullTrees(t *testing.T) {
	type fab struct {
		name string
		make func() (*topology.Topology, error)
		lmc  uint8
	}
	fabs := []fab{
		{"ft2-648", func() (*topology.Topology, error) { return sdktest.FatTree2(36, 18, 18) }, 0},
		{"ft2-648-lmc2", func() (*topology.Topology, error) { return sdktest.FatTree2(36, 18, 18) }, 2},
		{"ft3-k8", func() (*topology.Topology, error) { return sdktest.FatTree3(8) }, 1},
		{"ft3-k24", func() (*topology.Topology, error) { return sdktest.FatTree3(24) }, 0},
	}
	for _, f := range fabs {
		t.Run(f.name, func(t *testing.T) {
			if testing.Short() && strings.Contains(f.name, "k24") {
				t.Skip("3,456 CAs: skipped in -short")
			}
			topo, err := f.make()
			if err != nil {
				t.Fatal(err)
			}
			g := route.NewGraph(topo)
			base, tree := ftreeBase(t, topo, f.lmc)
			r, rep, err := Route(context.Background(), g, tree, base, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// checkResult proves the tables acyclic whatever Route checked.
			checkResult(t, topo, base, r, rep, f.lmc)
			if rep.Unreachable != 0 || rep.Withdrawn != 0 || rep.CDGChecked {
				t.Errorf("full tree, one root: want every pair routed and the CDG left to the paper's argument: %+v", rep)
			}
			always, arep, err := Route(context.Background(), g, tree, base, Options{CDG: CDGAlways})
			if err != nil {
				t.Fatal(err)
			}
			if !arep.CDGChecked || arep.Withdrawn != 0 || arep.CDGEdges == 0 {
				t.Errorf("CDGAlways on a full tree: %+v", arep)
			}
			for e := range r.Planes {
				if !slices.EqualFunc(r.Planes[e].Planes, always.Planes[e].Planes, func(a, b plan.Plane) bool { return slices.Equal(a, b) }) {
					t.Fatalf("endpoint %d: the CDG check changed a route on a full tree", e)
				}
			}
			if rep.ViaSubtree == 0 {
				t.Errorf("no pair went through the subtree; spine-to-spine pairs need it: %+v", rep)
			}
			if sm := smSwitch(topo); rep.Root == g.SwitchGUID(sm) {
				t.Errorf("subtree root is the SM's leaf 0x%016x", rep.Root)
			}
			t.Logf("root 0x%016x (%s); pairs %d: up/down %d, subtree %d; CDG edges %d; times updown %v combine %v verify %v",
				rep.Root, rep.RootHow, rep.Pairs, rep.UpDown, rep.ViaSubtree, arep.CDGEdges, rep.UpDownTime, rep.CombineTime, arep.VerifyTime)
		})
	}
}

// degrade takes down a seeded share of the inter-switch links.
func degrade(topo *topology.Topology, frac float64, seed uint64) int {
	g := route.NewGraph(topo)
	type lk struct {
		s int32
		p uint8
	}
	var links []lk
	for s := int32(0); s < int32(g.N); s++ {
		for _, l := range g.Links(s) {
			if s < l.Peer {
				links = append(links, lk{s, l.Port})
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x5f7ee))
	rng.Shuffle(len(links), func(i, j int) { links[i], links[j] = links[j], links[i] })
	n := int(frac * float64(len(links)))
	for _, l := range links[:n] {
		testfab.SetLinkState(topo, l.s, l.p, topology.StateDown)
	}
	return n
}

func TestDegradedTrees(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    int
		frac float64
		seed uint64
	}{
		{"ft3-k12-1pct", 12, 0.01, 1},
		{"ft3-k12-5pct", 12, 0.05, 2},
		{"ft3-k16-5pct", 16, 0.05, 3},
		{"ft3-k8-20pct", 8, 0.20, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := sdktest.FatTree3(tc.k)
			if err != nil {
				t.Fatal(err)
			}
			removed := degrade(topo, tc.frac, tc.seed)
			g := route.NewGraph(topo)
			base, tree := ftreeBase(t, topo, 0)
			r, rep, err := Route(context.Background(), g, tree, base, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, topo, base, r, rep, 0)
			t.Logf("%d links down; root 0x%016x (%s); reach %.3f%%; pairs %d: up/down %d, subtree %d, sibling %d, unreachable %d (withdrawn %d)",
				removed, rep.Root, rep.RootHow, rep.Reachability(), rep.Pairs, rep.UpDown, rep.ViaSubtree, rep.ViaSibling, rep.Unreachable, rep.Withdrawn)
		})
	}
}

// benchTree times Route alone (the fat-tree base is built before the
// timer); run with -bench FatTree -benchtime 3x.
func benchTree(b *testing.B, k int, check CDGCheck) {
	topo, err := sdktest.FatTree3(k)
	if err != nil {
		b.Fatal(err)
	}
	g := route.NewGraph(topo)
	base, tree := ftreeBase(b, topo, 0)
	var rep *Report
	testfab.Bench(b, func() error {
		var err error
		_, rep, err = Route(context.Background(), g, tree, base, Options{CDG: check})
		return err
	})
	b.ReportMetric(rep.Reachability(), "reach-%")
	b.ReportMetric(float64(rep.UpDownTime.Milliseconds()), "updown-ms")
	b.ReportMetric(float64(rep.VerifyTime.Milliseconds()), "verify-ms")
}

func BenchmarkFatTree36(b *testing.B)       { benchTree(b, 36, CDGWhenNeeded) }
func BenchmarkFatTree36Always(b *testing.B) { benchTree(b, 36, CDGAlways) }
func BenchmarkFatTree48(b *testing.B)       { benchTree(b, 48, CDGWhenNeeded) }

// TestExtraRoots cuts the cable from a top switch into the first root's
// pod, so that the top switch reaches the root on no up*/down* path, and
// checks that extra roots route more pairs than the paper's single root,
// with CA planes untouched and the CDG (switch traffic included) acyclic.
func TestExtraRoots(t *testing.T) {
	for _, k := range []int{8, 12} {
		t.Run(fmt.Sprintf("ft3-k%d", k), func(t *testing.T) {
			topo, err := sdktest.FatTree3(k)
			if err != nil {
				t.Fatal(err)
			}
			g := route.NewGraph(topo)
			base, tree := ftreeBase(t, topo, 0)
			_, rep, err := Route(context.Background(), g, tree, base, Options{MaxRoots: 1})
			if err != nil {
				t.Fatal(err)
			}
			root := topo.SwitchIndex(topo.NodeByGUID(rep.Root))
			// Climb from the root to a top switch and cut its last link.
			x, prev, port := root, int32(-1), uint8(0)
			for tree.Rank(x) > 0 {
				for _, l := range g.Links(x) {
					if tree.Rank(l.Peer) < tree.Rank(x) {
						prev, port, x = x, l.Port, l.Peer
						break
					}
				}
			}
			testfab.SetLinkState(topo, prev, port, topology.StateDown)
			g = route.NewGraph(topo)
			base, tree = ftreeBase(t, topo, 0)
			var reps [2]*Report
			ud, err := newUpDown(g, tree)
			if err != nil {
				t.Fatal(err)
			}
			for i, max := range []int{1, DefaultMaxRoots} {
				// routeFrom keeps the configured root whatever it leaves dark.
				r, rep, _, err := routeFrom(context.Background(), g, tree, base, ud, rep.Root, max, CDGWhenNeeded)
				if err != nil {
					t.Fatal(err)
				}
				checkResult(t, topo, base, r, rep, 0)
				reps[i] = rep
				t.Logf("max roots %d: roots %d, reach %.3f%%, extra %d, unreachable %d, backed off %d",
					max, len(rep.Roots), rep.Reachability(), rep.ViaExtraRoots, rep.Unreachable, rep.BackedOff)
			}
			single, multi := reps[0], reps[1]
			if single.Unreachable == 0 {
				t.Fatalf("cutting a top switch off the root's pod left every pair routable by one root; the test does not exercise extra roots")
			}
			if len(single.Roots) != 1 || single.ViaExtraRoots != 0 {
				t.Errorf("MaxRoots 1 used %d roots, %d extra pairs", len(single.Roots), single.ViaExtraRoots)
			}
			if multi.ViaExtraRoots == 0 || len(multi.Roots) < 2 {
				t.Errorf("no pair routed through an extra root: %+v", multi)
			}
			if multi.Unreachable+multi.ViaExtraRoots != single.Unreachable {
				t.Errorf("extra roots routed %d pairs, but unreachable went %d -> %d", multi.ViaExtraRoots, single.Unreachable, multi.Unreachable)
			}
			if multi.ViaSubtree != single.ViaSubtree || multi.UpDown != single.UpDown {
				t.Errorf("extra roots changed first-root routes: subtree %d -> %d, up/down %d -> %d", single.ViaSubtree, multi.ViaSubtree, single.UpDown, multi.UpDown)
			}
			if single.ConfiguredRootReplaced || multi.ConfiguredRootReplaced {
				t.Errorf("the root was replaced although it was not configured")
			}
			// The same root configured: pairs it leaves dark would make the
			// host refuse every plan, so Algorithm 1's root takes over.
			r, pinned, err := Route(context.Background(), g, tree, base, Options{Root: rep.Root})
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, topo, base, r, pinned, 0)
			if !pinned.ConfiguredRootReplaced || pinned.Root == rep.Root || pinned.Unreachable != 0 {
				t.Errorf("configured root 0x%016x leaving %d pairs dark: got root 0x%016x (%s), replaced %v, unreachable %d",
					rep.Root, multi.Unreachable, pinned.Root, pinned.RootHow, pinned.ConfiguredRootReplaced, pinned.Unreachable)
			}
			if !strings.Contains(pinned.RootHow, fmt.Sprintf("configured subtree_root 0x%016x", rep.Root)) {
				t.Errorf("the report does not say why the configured root was replaced: %q", pinned.RootHow)
			}
		})
	}
}
