package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

type fabric struct {
	name  string
	build func() (*topology.Topology, error)
}

var fabrics = []fabric{
	{"ring6", func() (*topology.Topology, error) { return testfab.Ring(6, 1) }},
	{"line4x2", func() (*topology.Topology, error) { return testfab.Line(4, 2) }},
	{"torus3x4", func() (*topology.Topology, error) { return testfab.Torus2D(3, 4, 1) }},
	{"torus2x2", func() (*topology.Topology, error) { return testfab.Torus2D(2, 2, 2) }},
	{"fattree4", func() (*topology.Topology, error) { return testfab.FatTree3(4) }},
	{"fattree8", func() (*topology.Topology, error) { return testfab.FatTree3(8) }},
}

// TestShortest checks every switch reaches every endpoint, along a shortest
// path, for every plane.
func TestShortest(t *testing.T) {
	for _, f := range fabrics {
		for _, lmc := range []uint8{0, 2} {
			topo, err := f.build()
			if err != nil {
				t.Fatal(err)
			}
			r, rep, err := minHop(context.Background(), topo, lmc, config{})
			if err != nil {
				t.Fatalf("%s lmc %d: %v", f.name, lmc, err)
			}
			if rep.NoRoute != 0 {
				t.Errorf("%s lmc %d: %d unrouted pairs: %v", f.name, lmc, rep.NoRoute, rep.Examples)
			}
			dist := testfab.SwitchDistances(topo)
			for e := range topo.Endpoints() {
				home := testfab.HomeSwitch(topo, int32(e))
				if got := len(r.Planes[e].Planes); got != 1<<lmc {
					t.Fatalf("%s: endpoint %d has %d planes, want %d", f.name, e, got, 1<<lmc)
				}
				for k, pl := range r.Planes[e].Planes {
					for s := range topo.Switches() {
						hops, err := testfab.Walk(topo, pl, int32(s), int32(e))
						if err != nil {
							t.Fatalf("%s lmc %d plane %d: %v", f.name, lmc, k, err)
						}
						if hops != dist[s][home] {
							t.Fatalf("%s: switch %d reaches endpoint %d in %d hops, shortest is %d", f.name, s, e, hops, dist[s][home])
						}
					}
				}
			}
		}
	}
}

// TestBalance checks that on a fat tree each leaf spreads the remote CAs
// evenly over its up-ports, like OpenSM's least-loaded port choice.
func TestBalance(t *testing.T) {
	for _, k := range []int{4, 8} {
		topo, err := testfab.FatTree3(k)
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := minHop(context.Background(), topo, 0, config{})
		if err != nil {
			t.Fatal(err)
		}
		for s, node := range topo.Switches() {
			load := map[uint8]int{}
			for e, ep := range topo.Endpoints() {
				if topo.Nodes[ep.Node].Type != topology.CA {
					continue
				}
				out := r.Planes[e].Planes[0][s]
				if p := topo.Nodes[node].Ports[out].Peer; p.Connected() && topo.Nodes[p.Node].Type == topology.Switch && out > uint8(k/2) {
					load[out]++ // up-ports of leaves and aggregation switches are k/2+1..k
				}
			}
			if len(load) == 0 {
				continue // core switch: only down-ports
			}
			lo, hi := 1<<30, 0
			for _, n := range load {
				lo, hi = min(lo, n), max(hi, n)
			}
			if len(load) != k/2 || hi-lo > 1 {
				t.Errorf("k=%d switch %d: up-port loads %v, want %d ports within 1", k, s, load, k/2)
			}
		}
	}
}

// TestLMCSpread checks that the planes of one destination leave a leaf
// through different up-ports toward different aggregation switches.
func TestLMCSpread(t *testing.T) {
	topo, err := testfab.FatTree3(4)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := minHop(context.Background(), topo, 1, config{})
	if err != nil {
		t.Fatal(err)
	}
	dist := testfab.SwitchDistances(topo)
	checked := 0
	for e, ep := range topo.Endpoints() {
		if topo.Nodes[ep.Node].Type != topology.CA {
			continue
		}
		home := testfab.HomeSwitch(topo, int32(e))
		for s := range topo.Switches() {
			// Leaves are the switches with CAs; pick remote ones 4 hops away.
			if dist[s][home] != 4 {
				continue
			}
			a, b := r.Planes[e].Planes[0][s], r.Planes[e].Planes[1][s]
			if a == b {
				t.Fatalf("endpoint %d: switch %d uses port %d for both planes", e, s, a)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no remote leaf pairs checked")
	}
}

// TestDisconnected: unreachable destinations get NoPort and are reported,
// not an error; a link that is down is not used.
func TestDisconnected(t *testing.T) {
	tests := []struct {
		name        string
		down        [][2]int // switch index, port
		wantNoRoute int64
		wantHops    map[[2]int]int // (switch, endpoint) -> hops, -1 for NoPort
	}{
		{name: "ring cut once becomes a line", down: [][2]int{{0, 1}}, wantNoRoute: 0,
			// switch 0 to switch 1's port 0 (endpoint index of switch 1 is found below) goes the long way.
			wantHops: map[[2]int]int{{0, 1}: 5}},
		{name: "ring cut twice splits", down: [][2]int{{0, 1}, {2, 1}}, wantNoRoute: 2 * 4 * 2 * 2, // components {1,2} and {3,4,5,0}: 2x4 switch pairs each way, 2 endpoints per switch
			wantHops: map[[2]int]int{{0, 3}: 3, {0, 1}: -1, {2, 4}: -1, {1, 2}: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := testfab.Ring(6, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range tc.down {
				testfab.SetLinkState(topo, int32(d[0]), uint8(d[1]), topology.StateDown)
			}
			r, rep, err := minHop(context.Background(), topo, 0, config{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.NoRoute != tc.wantNoRoute {
				t.Errorf("NoRoute = %d, want %d (%v)", rep.NoRoute, tc.wantNoRoute, rep.Examples)
			}
			for k, want := range tc.wantHops {
				s, dstSwitch := int32(k[0]), topo.Switches()[k[1]]
				e := topo.EndpointIndex(topology.PortRef{Node: dstSwitch, Port: 0})
				hops, err := testfab.Walk(topo, r.Planes[e].Planes[0], s, e)
				if want < 0 {
					if err == nil || r.Planes[e].Planes[0][s] != plan.NoPort {
						t.Errorf("switch %d -> switch %d: routed (%d hops), want NoPort", k[0], k[1], hops)
					}
					continue
				}
				if err != nil || hops != want {
					t.Errorf("switch %d -> switch %d: %d hops, %v; want %d", k[0], k[1], hops, err, want)
				}
			}
		})
	}
}

// TestRingHasCycle: min-hop on a ring of 6 is not deadlock-free, which the
// single-VL assigner must catch.
func TestRingHasCycle(t *testing.T) {
	topo, err := testfab.Ring(6, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := minHop(context.Background(), topo, 0, config{})
	if err != nil {
		t.Fatal(err)
	}
	real, err := testfab.Realize(topo, r, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cyc, err := cdg.Cycle(context.Background(), real); err != nil {
		t.Fatal(err)
	} else if cyc == "" {
		t.Fatal("min-hop routing of a 6-ring has an acyclic CDG; expected a credit loop")
	}
}

func TestConfigure(t *testing.T) {
	e := &engine{log: hclog.NewNullLogger()}
	tests := []struct {
		name    string
		v       cty.Value
		want    bool
		wantErr string
	}{
		{"null block", cty.NullVal(e.Schema().ObjectType()), false, ""},
		{"defaults", e.Schema().Defaults(), false, ""},
		{"on", cty.ObjectVal(map[string]cty.Value{"count_switch_destinations": cty.True}), true, ""},
		{"wrong type", cty.ObjectVal(map[string]cty.Value{"count_switch_destinations": cty.StringVal("yes")}), false, "must be a bool"},
	}
	for _, tc := range tests {
		err := e.Configure(tc.v)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || e.cfg.countSwitches != tc.want {
			t.Errorf("%s: countSwitches=%v err=%v, want %v", tc.name, e.cfg.countSwitches, err, tc.want)
		}
	}
	if info := e.Info(); info.Name != "minhop" || info.Version != "0.1.0" || info.Kind != "routing_engine" {
		t.Errorf("Info = %+v", info)
	}
}

func TestNoTopology(t *testing.T) {
	if _, _, err := minHop(context.Background(), nil, 0, config{}); err == nil {
		t.Fatal("nil topology accepted")
	}
}

func BenchmarkFatTree36(b *testing.B) {
	topo, err := testfab.FatTree3(36)
	if err != nil {
		b.Fatal(err)
	}
	testfab.Bench(b, func() error {
		_, _, err := minHop(context.Background(), topo, 0, config{})
		return err
	})
}

func BenchmarkFatTree36LMC2(b *testing.B) {
	topo, err := testfab.FatTree3(36)
	if err != nil {
		b.Fatal(err)
	}
	testfab.Bench(b, func() error {
		_, _, err := minHop(context.Background(), topo, 2, config{})
		return err
	})
}
