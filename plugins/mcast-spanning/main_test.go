package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
)

// kitOptions gives the conformance kit its fabrics and a 3-level fat tree.
func kitOptions(t *testing.T) sdktest.Options {
	t.Helper()
	ft3, err := sdktest.FatTree3(4)
	if err != nil {
		t.Fatal(err)
	}
	fabrics, err := sdktest.BuiltinFabrics()
	if err != nil {
		t.Fatal(err)
	}
	fabrics["fattree3"] = ft3
	return sdktest.Options{Fabrics: fabrics}
}

func TestConformance(t *testing.T) {
	sdktest.MulticastRouter(t, &router{}, kitOptions(t))
}

// TestBinary builds the plugin binary and runs the kit on it through the
// go-plugin handshake the host uses, so its Serve and wire encoding are
// checked too.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary (make test runs it)")
	}
	bin := filepath.Join(t.TempDir(), "ibsm-plugin-mcast-spanning")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sdktest.RunMulticastRouter(t, bin, kitOptions(t))
}

// Broadcast-like groups over every leaf of a two-level fat tree are rooted
// at different spines, and a batch of them spreads over the spine links.
func TestGroupsSpreadOverSpines(t *testing.T) {
	topo, err := sdktest.FatTree2(6, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	all := sdktest.MulticastGroups(topo, 1)[0]
	var groups []sdk.MulticastGroup
	for i := range 6 {
		g := all
		g.MLID = uint16(sdk.MinMLID + i)
		groups = append(groups, g)
	}
	req := sdk.MulticastRequest{Topo: topo, Groups: groups}
	trees, err := route(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := sdktest.CheckTrees(&req, trees); err != nil {
		t.Fatal(err)
	}
	// A spine is in a tree iff it forwards to a leaf: count trees per spine.
	perSpine := map[int32]int{}
	for _, tr := range trees {
		for _, s := range tr.Switches {
			if isSpine(topo, s.Node) {
				perSpine[s.Node]++
			}
		}
	}
	if len(perSpine) != 3 {
		t.Fatalf("trees use spines %v, want all 3", perSpine)
	}
	for sp, n := range perSpine {
		if n != 2 {
			t.Errorf("spine %d carries %d of 6 trees, want 2 (%v)", sp, n, perSpine)
		}
	}
}

// isSpine: a switch with no CA attached.
func isSpine(t *topology.Topology, n int32) bool {
	for _, p := range t.Nodes[n].Ports[1:] {
		if p.Peer.Connected() && t.Nodes[p.Peer.Node].Type != topology.Switch {
			return false
		}
	}
	return true
}

// A member cut off from the others is an error, not a tree that misses it.
func TestDisconnectedMemberRefused(t *testing.T) {
	topo, err := sdktest.Ring(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Take a ring and drop two links so that switch 0 is alone.
	nodes := append([]topology.Node(nil), topo.Nodes...)
	for i := range nodes {
		nodes[i].Ports = append([]topology.Port(nil), nodes[i].Ports...)
	}
	cut := 0
	for _, sw := range topo.Switches()[:1] {
		for p := 1; p < len(nodes[sw].Ports); p++ {
			pr := nodes[sw].Ports[p].Peer
			if pr.Connected() && nodes[pr.Node].Type == topology.Switch {
				nodes[sw].Ports[p].State = topology.StateDown
				nodes[pr.Node].Ports[pr.Port].State = topology.StateDown
				cut++
			}
		}
	}
	if cut != 2 {
		t.Fatalf("cut %d links", cut)
	}
	cutTopo, err := rebuild(nodes, topo.SM)
	if err != nil {
		t.Fatal(err)
	}
	req := sdk.MulticastRequest{Topo: cutTopo, Groups: sdktest.MulticastGroups(cutTopo, 1)[:1]}
	if _, err := route(context.Background(), req); err == nil {
		t.Fatal("a group split by cut links got a tree")
	}
}

// rebuild builds a topology from nodes whose Peer fields are set.
func rebuild(nodes []topology.Node, sm topology.PortRef) (*topology.Topology, error) {
	b := topology.NewBuilder()
	for i := range nodes {
		n := nodes[i]
		n.Ports = append([]topology.Port(nil), n.Ports...)
		if err := b.AddNode(n); err != nil {
			return nil, err
		}
		for p, pt := range nodes[i].Ports {
			if pr := pt.Peer; pr.Connected() && (pr.Node > int32(i) || (pr.Node == int32(i) && int(pr.Port) > p)) {
				b.Link(n.GUID, uint8(p), nodes[pr.Node].GUID, pr.Port)
			}
		}
	}
	if sm.Connected() {
		b.SetSM(nodes[sm.Node].GUID, sm.Port)
	}
	return b.Build()
}

// A group's tree is the same whether it is routed alone (after a join) or
// with every other group (after a topology change).
func TestTreeIndependentOfBatch(t *testing.T) {
	topo, err := sdktest.FatTree3(4)
	if err != nil {
		t.Fatal(err)
	}
	req := sdk.MulticastRequest{Topo: topo, Groups: sdktest.MulticastGroups(topo, 5)}
	all, err := route(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range req.Groups {
		one, err := route(context.Background(), sdk.MulticastRequest{Topo: topo, Groups: []sdk.MulticastGroup{g}})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(one[0]) != fmt.Sprint(all[i]) {
			t.Fatalf("group %#x: alone %v, in the batch %v", g.MLID, one[0], all[i])
		}
	}
}
