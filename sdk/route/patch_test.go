package route

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestGraphPatch patches a 3-level fat tree step by step (cables between
// switches and to CAs cut and made again, ports going Down, Init and
// Active at one end) and checks after each step that the patched graph
// equals one indexed whole.
func TestGraphPatch(t *testing.T) {
	topo, err := testfab.FatTree3(6)
	if err != nil {
		t.Fatal(err)
	}
	type cable struct{ a, b topology.PortRef }
	var cables []cable
	for i := range topo.Nodes {
		for p, pt := range topo.Nodes[i].Ports {
			if r := (topology.PortRef{Node: int32(i), Port: uint8(p)}); pt.Peer.Connected() && (pt.Peer.Node > r.Node || pt.Peer.Node == r.Node && pt.Peer.Port > r.Port) {
				cables = append(cables, cable{r, pt.Peer})
			}
		}
	}
	rng := rand.New(rand.NewPCG(16, 14))
	g := NewGraph(topo)
	cut := map[int]bool{}
	for step := 0; step < 200; step++ {
		nodes := map[int32]topology.Node{}
		edit := func(r topology.PortRef) *topology.Port {
			n, ok := nodes[r.Node]
			if !ok {
				n = topo.Nodes[r.Node]
				n.Ports = slices.Clone(n.Ports)
				nodes[r.Node] = n
			}
			return &n.Ports[r.Port]
		}
		k := rng.IntN(len(cables))
		c := cables[k]
		switch what := rng.IntN(3); {
		case what == 0 && !cut[k]:
			edit(c.a).Peer, edit(c.b).Peer = topology.PortRef{Node: topology.NoNode}, topology.PortRef{Node: topology.NoNode}
			cut[k] = true
		case what == 0:
			edit(c.a).Peer, edit(c.b).Peer = c.b, c.a
			cut[k] = false
		default:
			end := c.a
			if what == 2 {
				end = c.b
			}
			edit(end).State = []topology.PortState{topology.StateDown, topology.StateInit, topology.StateActive}[rng.IntN(3)]
		}
		var patch []topology.Node
		for _, n := range nodes {
			patch = append(patch, n)
		}
		next, err := topo.Patch(patch)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		topo = next
		g = g.Patch(topo)
		if want := NewGraph(topo); !reflect.DeepEqual(g, want) {
			t.Fatalf("step %d: the patched graph differs from one indexed whole", step)
		}
	}
}

// BenchmarkGraph indexes ft3-56 after one cable between two switches
// went down: whole (NewGraph) and patched from the graph before (Patch).
func BenchmarkGraph(b *testing.B) {
	topo, err := testfab.FatTree3(56)
	if err != nil {
		b.Fatal(err)
	}
	g := NewGraph(topo)
	s := topo.Switches()[len(topo.Switches())-1]
	var patch []topology.Node
	for p, pt := range topo.Nodes[s].Ports {
		if pt.Peer.Connected() && topo.SwitchIndex(pt.Peer.Node) >= 0 {
			a, c := topo.Nodes[s], topo.Nodes[pt.Peer.Node]
			a.Ports, c.Ports = slices.Clone(a.Ports), slices.Clone(c.Ports)
			a.Ports[p].Peer, c.Ports[pt.Peer.Port].Peer = topology.PortRef{Node: topology.NoNode}, topology.PortRef{Node: topology.NoNode}
			patch = []topology.Node{a, c}
			break
		}
	}
	down, err := topo.Patch(patch)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			NewGraph(down)
		}
	})
	b.Run("patch", func(b *testing.B) {
		for b.Loop() {
			g.Patch(down)
		}
	})
}
