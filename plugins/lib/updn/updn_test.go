package updn

import (
	"context"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

func sw(i int) uint64 { return testfab.SwitchGUIDBase + uint64(i) + 1 }

// checkLegal walks every plane from every switch and fails on a missing
// route, a loop, or a climb after a descent.
func checkLegal(t *testing.T, name string, topo *topology.Topology, r *plan.Routes, roots []uint64) (unrouted int) {
	t.Helper()
	g := route.NewGraph(topo)
	var rootIdx []int32
	for _, guid := range roots {
		rootIdx = append(rootIdx, topo.SwitchIndex(topo.NodeByGUID(guid)))
	}
	ord, err := rankOrder(g, rootIdx)
	if err != nil {
		t.Fatal(err)
	}
	sws := topo.Switches()
	for e := range topo.Endpoints() {
		for k, pl := range r.Planes[e].Planes {
			for s0 := range sws {
				s, descended := int32(s0), false
				for steps := 0; ; steps++ {
					if steps > len(sws) {
						t.Fatalf("%s: loop toward endpoint %d plane %d from switch %d", name, e, k, s0)
					}
					out := pl[s]
					if out == plan.NoPort {
						unrouted++
						break
					}
					next := g.PeerSwitch(s, out)
					if next < 0 {
						break // delivered (Walk checks where)
					}
					if ord[next] < ord[s] && descended {
						t.Fatalf("%s: route to endpoint %d from switch %d climbs after descending at switch %d", name, e, s0, s)
					}
					if ord[next] > ord[s] {
						descended = true
					}
					s = next
				}
				if pl[s] != plan.NoPort {
					if _, err := testfab.Walk(topo, pl, int32(s0), int32(e)); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
				}
			}
		}
	}
	return unrouted
}

func acyclic(t *testing.T, topo *topology.Topology, r *plan.Routes, lmc uint8) []cdg.Channel {
	t.Helper()
	real, err := testfab.Realize(topo, r, lmc)
	if err != nil {
		t.Fatal(err)
	}
	g, err := cdg.Build(context.Background(), real)
	if err != nil {
		t.Fatal(err)
	}
	return g.FindCycle()
}

func TestUpDown(t *testing.T) {
	tests := []struct {
		name      string
		build     func() (*topology.Topology, error)
		cfg       Config
		lmc       uint8
		wantRoots []uint64
		wantHow   string
		shortest  bool // every route to a CA is a shortest path (true on fat trees)
		// wantNoRoute counts (switch, endpoint) pairs without a legal route.
		// On a fat tree with the spines as roots, some switch-to-switch pairs
		// need a valley (down then up) and are left unrouted, as OpenSM's
		// updn does without connect_roots; CA destinations are all routed.
		wantNoRoute int64
	}{
		{name: "fat tree k=4 picks the cores", build: func() (*topology.Topology, error) { return testfab.FatTree3(4) },
			wantRoots: []uint64{sw(0), sw(1), sw(2), sw(3)}, wantHow: "farthest from CAs", shortest: true, wantNoRoute: 4*7 + 8*6},
		{name: "fat tree k=6 lmc 1", build: func() (*topology.Topology, error) { return testfab.FatTree3(6) }, lmc: 1,
			wantRoots: []uint64{sw(0), sw(1), sw(2), sw(3), sw(4), sw(5), sw(6), sw(7), sw(8)}, wantHow: "farthest from CAs", shortest: true, wantNoRoute: 504},
		{name: "fat tree k=4, leaf root: every pair routable", build: func() (*topology.Topology, error) { return testfab.FatTree3(4) },
			cfg: Config{Auto: AutoLeaf}, wantRoots: []uint64{sw(6)}, wantHow: "leaf", shortest: true},
		{name: "fat tree k=6, leaf root, lmc 2", build: func() (*topology.Topology, error) { return testfab.FatTree3(6) }, lmc: 2,
			cfg: Config{Auto: AutoLeaf}, wantRoots: []uint64{sw(12)}, wantHow: "leaf", shortest: true},
		{name: "fat tree k=4, centre forced", build: func() (*topology.Topology, error) { return testfab.FatTree3(4) },
			cfg: Config{Auto: AutoCentre}, wantRoots: []uint64{sw(0)}, wantHow: "centre"},
		{name: "ring of 6, leaf asked: no layers, centre", build: func() (*topology.Topology, error) { return testfab.Ring(6, 1) },
			cfg: Config{Auto: AutoLeaf}, wantRoots: []uint64{sw(0)}, wantHow: "centre"},
		{name: "ring of 6: one centre root", build: func() (*topology.Topology, error) { return testfab.Ring(6, 1) },
			wantRoots: []uint64{sw(0)}, wantHow: "centre"},
		{name: "ring with a configured root", build: func() (*topology.Topology, error) { return testfab.Ring(6, 1) },
			cfg: Config{Roots: []uint64{sw(3)}}, wantRoots: []uint64{sw(3)}, wantHow: "configured"},
		{name: "torus 4x4", build: func() (*topology.Topology, error) { return testfab.Torus2D(4, 4, 1) },
			wantRoots: []uint64{sw(0)}, wantHow: "centre"},
		{name: "torus 3x5 lmc 2", build: func() (*topology.Topology, error) { return testfab.Torus2D(3, 5, 2) }, lmc: 2,
			wantRoots: []uint64{sw(0)}, wantHow: "centre"},
		{name: "line: centre", build: func() (*topology.Topology, error) { return testfab.Line(5, 1) },
			wantRoots: []uint64{sw(2)}, wantHow: "centre", shortest: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			r, res, err := Route(context.Background(), topo, tc.lmc, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Roots) != len(tc.wantRoots) {
				t.Fatalf("roots %x, want %x", res.Roots, tc.wantRoots)
			}
			for i := range res.Roots {
				if res.Roots[i] != tc.wantRoots[i] {
					t.Fatalf("roots %x, want %x", res.Roots, tc.wantRoots)
				}
			}
			if res.How != tc.wantHow {
				t.Errorf("how = %q, want %q", res.How, tc.wantHow)
			}
			if res.Report.NoRoute != tc.wantNoRoute {
				t.Errorf("%d unrouted pairs, want %d: %v", res.Report.NoRoute, tc.wantNoRoute, res.Report.Examples)
			}
			if n := checkLegal(t, tc.name, topo, r, res.Roots); int64(n) != tc.wantNoRoute<<tc.lmc {
				t.Errorf("%d unrouted walks, want %d", n, tc.wantNoRoute<<tc.lmc)
			}
			for e, ep := range topo.Endpoints() {
				if topo.Nodes[ep.Node].Type == topology.Switch {
					continue
				}
				for s := range topo.Switches() {
					for _, pl := range r.Planes[e].Planes {
						if pl[s] == plan.NoPort {
							t.Fatalf("CA endpoint %d unrouted from switch %d", e, s)
						}
					}
				}
			}
			if cyc := acyclic(t, topo, r, tc.lmc); cyc != nil {
				t.Errorf("CDG has a cycle of %d channels", len(cyc))
			}
			if tc.shortest {
				dist := testfab.SwitchDistances(topo)
				for e, ep := range topo.Endpoints() {
					if topo.Nodes[ep.Node].Type == topology.Switch {
						continue
					}
					home := testfab.HomeSwitch(topo, int32(e))
					for s := range topo.Switches() {
						if r.Planes[e].Planes[0][s] == plan.NoPort {
							continue // counted above
						}
						hops, err := testfab.Walk(topo, r.Planes[e].Planes[0], int32(s), int32(e))
						if err != nil || hops != dist[s][home] {
							t.Fatalf("switch %d -> endpoint %d: %d hops (%v), shortest %d", s, e, hops, err, dist[s][home])
						}
					}
				}
			}
		})
	}
}

// TestRingCycleFreeUnlikeMinHop is the point of updn: on a ring of 6 the
// shortest paths alone form a credit loop, up/down's do not.
func TestRingCycleFree(t *testing.T) {
	topo, err := testfab.Ring(6, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := Route(context.Background(), topo, 0, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if cyc := acyclic(t, topo, r, 0); cyc != nil {
		t.Fatalf("up/down on a 6-ring has a CDG cycle: %v", cyc)
	}
	// The same check finds the min-hop loop, so it can fail.
	mh, _, err := route.MinHopRoutes(context.Background(), route.NewGraph(topo), route.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if acyclic(t, topo, mh, 0) == nil {
		t.Fatal("min-hop on a 6-ring shows no cycle: the CDG check is blind")
	}
}

// TestPartitioned: every component gets its own root; only cross-component
// pairs stay unrouted, and a configured root missing from the fabric is
// reported.
func TestPartitioned(t *testing.T) {
	topo, err := testfab.Ring(6, 1)
	if err != nil {
		t.Fatal(err)
	}
	testfab.SetLinkState(topo, 0, 1, topology.StateDown) // 0-1
	testfab.SetLinkState(topo, 2, 1, topology.StateDown) // 2-3: components {1,2}, {3,4,5,0}
	r, res, err := Route(context.Background(), topo, 0, Config{Roots: []uint64{sw(4), 0xdead}})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2 * 4 * 2 * 2); res.Report.NoRoute != want {
		t.Errorf("NoRoute = %d, want %d", res.Report.NoRoute, want)
	}
	if len(res.Missing) != 1 || !strings.Contains(res.Missing[0], "dead") {
		t.Errorf("missing = %v, want the 0xdead GUID", res.Missing)
	}
	if res.How != "configured+centre" {
		t.Errorf("how = %q", res.How)
	}
	if len(res.Roots) != 2 || res.Roots[1] != sw(4) {
		t.Errorf("roots = %x, want one auto root in {1,2} and 0x..5", res.Roots)
	}
	checkLegal(t, "partitioned", topo, r, res.Roots)
	if cyc := acyclic(t, topo, r, 0); cyc != nil {
		t.Errorf("cycle: %v", cyc)
	}
}

func BenchmarkFatTree36(b *testing.B) {
	topo, err := testfab.FatTree3(36)
	if err != nil {
		b.Fatal(err)
	}
	testfab.Bench(b, func() error {
		_, _, err := Route(context.Background(), topo, 0, Config{})
		return err
	})
}
