package sdk_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	plugin "github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
)

// downCable returns t with switch s's port p and its peer down, sharing
// every other node with t (as the host's patched snapshots do).
func downCable(t *testing.T, topo *topology.Topology, s int32, p uint8) *topology.Topology {
	t.Helper()
	peer := topo.Nodes[s].Ports[p].Peer
	var nodes []topology.Node
	for _, r := range []topology.PortRef{{Node: s, Port: p}, peer} {
		n := topo.Nodes[r.Node]
		n.Ports = slices.Clone(n.Ports)
		n.Ports[r.Port].Peer, n.Ports[r.Port].State = topology.PortRef{Node: topology.NoNode}, topology.StateDown
		nodes = append(nodes, n)
	}
	out, err := topo.Patch(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTopologyPatches: over real gRPC, a plugin whose SDK takes patches is
// sent a call's topology as a patch of the last one it accepted (it then
// shares the unchanged nodes with that one), and a plugin that no longer
// holds that one (another host connection pushed it out) gets the
// topology whole on the same call. Every call's engine sees exactly the
// host's topology, once.
func TestTopologyPatches(t *testing.T) {
	base, err := sdktest.FatTree2(4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	sw := base.Switches()
	var mu sync.Mutex
	var seen []*topology.Topology
	f := &fakePlugin{kind: sdk.KindRouting, routes: func(r sdk.RouteRequest) (*plan.Routes, error) {
		mu.Lock()
		seen = append(seen, r.Topo)
		mu.Unlock()
		out := &plan.Routes{Planes: make([]plan.DestPlanes, len(r.Topo.Endpoints()))}
		for e := range out.Planes {
			pl := make(plan.Plane, len(r.Topo.Switches()))
			for s := range pl {
				pl[s] = plan.NoPort
			}
			out.Planes[e].Planes = []plan.Plane{pl}
		}
		return out, nil
	}}
	set, err := sdk.ServerPluginSet(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, server := plugin.TestPluginGRPCConn(t, false, set)
	t.Cleanup(func() { server.Stop(); conn.Close() })
	dispense := func() *sdk.RemoteClient {
		raw, err := conn.Dispense(string(sdk.KindRouting))
		if err != nil {
			t.Fatal(err)
		}
		c := raw.(*sdk.RemoteClient)
		if _, err := c.GetInfo(context.Background()); err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := dispense(), dispense()
	route := func(c *sdk.RemoteClient, topo *topology.Topology) *topology.Topology {
		t.Helper()
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if _, err := c.Route(context.Background(), sdk.RouteRequest{Topo: topo}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != n+1 {
			t.Fatalf("the engine was called %d times for one route call", len(seen)-n)
		}
		got := seen[n]
		if got.Hash() != topo.Hash() || len(got.Endpoints()) != len(topo.Endpoints()) {
			t.Fatalf("the engine got a topology hashing to %x, the host sent %x", got.Hash(), topo.Hash())
		}
		return got
	}
	shares := func(x, y *topology.Topology) bool {
		n := len(x.Nodes) - 1 // a CA, untouched by the switch cables cut here
		return &x.Nodes[n].Ports[0] == &y.Nodes[n].Ports[0]
	}

	first := route(a, base)
	second := route(a, downCable(t, base, sw[0], 1))
	if !shares(first, second) {
		t.Fatal("the second call's topology was sent whole: want a patch of the first")
	}
	// Another connection's four topologies push a's last one out of the
	// plugin; a's next call is a patch of a topology the plugin lost.
	for k := range 4 {
		route(b, downCable(t, base, sw[k%len(sw)], uint8(1+k/len(sw))))
	}
	third := route(a, downCable(t, downCable(t, base, sw[0], 1), sw[1], 2))
	if shares(second, third) {
		t.Fatal("the plugin patched a topology it should have lost")
	}
	fourth := route(a, base)
	if !shares(third, fourth) {
		t.Fatal("after sending whole, the next call is not a patch again")
	}
}
