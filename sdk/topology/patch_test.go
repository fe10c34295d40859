package topology_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/topology"
)

type cable struct {
	a, b   uint64
	pa, pb uint8
}

// small is two switches (0x10, 0x20: four ports, cabled twice to each
// other) with a CA (0x100, 0x200) on each: the links given, SM at 0x100.
func small(t *testing.T, links []cable) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	for _, n := range []topology.Node{
		{GUID: 0x10, Type: topology.Switch, Ports: make([]topology.Port, 5)},
		{GUID: 0x20, Type: topology.Switch, Ports: make([]topology.Port, 5)},
		{GUID: 0x100, Type: topology.CA, Ports: make([]topology.Port, 2)},
		{GUID: 0x200, Type: topology.CA, Ports: make([]topology.Port, 3)},
	} {
		for p := range n.Ports {
			n.Ports[p] = topology.Port{GUID: n.GUID + uint64(p), State: topology.StateActive, Width: 2, Speed: 4, VLCap: 4}
		}
		if err := b.AddNode(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range links {
		b.Link(l.a, l.pa, l.b, l.pb)
	}
	b.SetSM(0x100, 1)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

var all = []cable{{0x10, 0x20, 1, 1}, {0x10, 0x20, 2, 2}, {0x10, 0x100, 3, 1}, {0x20, 0x200, 3, 1}, {0x20, 0x200, 4, 2}}

func without(drop ...int) []cable {
	var out []cable
	for i, l := range all {
		keep := true
		for _, d := range drop {
			keep = keep && d != i
		}
		if keep {
			out = append(out, l)
		}
	}
	return out
}

// nodesOf copies the named nodes of want (with want's links and states) as
// a patch.
func nodesOf(want *topology.Topology, guids ...uint64) []topology.Node {
	var out []topology.Node
	for _, g := range guids {
		n := want.Nodes[want.NodeByGUID(g)]
		n.Ports = append([]topology.Port(nil), n.Ports...)
		out = append(out, n)
	}
	return out
}

func TestPatch(t *testing.T) {
	tests := []struct {
		name     string
		from, to []cable
		patch    []uint64 // nodes taken from the "to" topology
		edit     func([]topology.Node)
		err      string
	}{
		{name: "switch cable down", from: all, to: without(1), patch: []uint64{0x10, 0x20}},
		{name: "switch cable up", from: without(1), to: all, patch: []uint64{0x20, 0x10}},
		{name: "CA cable down (endpoints change)", from: all, to: without(4), patch: []uint64{0x20, 0x200}},
		{name: "CA cable up", from: without(2), to: all, patch: []uint64{0x10, 0x100}},
		{name: "port state only", from: all, to: all, patch: []uint64{0x200},
			edit: func(n []topology.Node) { n[0].Ports[2].State = topology.StateInit; n[0].Ports[2].Width = 1 }},
		{name: "nothing", from: all, to: all},
		{name: "one end only", from: all, to: without(1), patch: []uint64{0x10}, err: "not its other end"},
		{name: "new link to an unpatched end", from: without(1), to: all, patch: []uint64{0x10}, err: "not symmetric"},
		{name: "unknown node", from: all, to: all, patch: []uint64{0x10},
			edit: func(n []topology.Node) { n[0].GUID = 0x11 }, err: "does not hold"},
		{name: "type changes", from: all, to: all, patch: []uint64{0x100},
			edit: func(n []topology.Node) { n[0].Type = topology.Router }, err: "type or port count"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			from, want := small(t, tc.from), small(t, tc.to)
			before := from.Hash()
			patch := nodesOf(want, tc.patch...)
			if tc.edit != nil {
				tc.edit(patch)
			}
			got, err := from.Patch(patch)
			if from.Hash() != before || !reflect.DeepEqual(from, small(t, tc.from)) {
				t.Fatal("Patch changed the topology it patched")
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				// The edited nodes are the truth: build them afresh.
				for _, n := range patch {
					want.Nodes[want.NodeByGUID(n.GUID)] = n
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("patched topology differs from one built afresh:\n got %+v\nwant %+v", got, want)
			}
			if got.Hash() != want.Hash() {
				t.Fatalf("hash %x, built afresh %x", got.Hash(), want.Hash())
			}
			if len(tc.patch) > 0 && got.Hash() == from.Hash() && tc.edit == nil {
				t.Fatal("a changed topology kept its hash")
			}
			// Unshared names the patched nodes, and a snapshot built
			// afresh shares nothing.
			var wantIdx []int32
			for _, g := range tc.patch {
				wantIdx = append(wantIdx, from.NodeByGUID(g))
			}
			slices.Sort(wantIdx)
			if idx, ok := got.Unshared(from); !ok || !slices.Equal(idx, wantIdx) {
				t.Fatalf("Unshared = %v, %v; want the patched nodes %v", idx, ok, wantIdx)
			}
			if idx, ok := want.Unshared(from); !ok || len(idx) != len(from.Nodes) {
				t.Fatalf("a snapshot built afresh: Unshared = %v, %v; want every node", idx, ok)
			}
			// The endpoints of the nodes, in order, are Endpoints().
			var eps []topology.PortRef
			for i := range got.Nodes {
				eps = append(eps, got.NodeEndpoints(int32(i))...)
			}
			if !slices.Equal(eps, got.Endpoints()) {
				t.Fatalf("NodeEndpoints %v, Endpoints %v", eps, got.Endpoints())
			}
		})
	}
}

func TestUnsharedOtherNodes(t *testing.T) {
	a := small(t, all)
	b := topology.NewBuilder()
	if err := b.AddNode(topology.Node{GUID: 0x10, Type: topology.Switch, Ports: make([]topology.Port, 5)}); err != nil {
		t.Fatal(err)
	}
	other, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Unshared(a); ok {
		t.Fatal("Unshared compared snapshots of other nodes")
	}
	if idx, ok := a.Unshared(a); !ok || len(idx) != 0 {
		t.Fatalf("a snapshot against itself: %v, %v", idx, ok)
	}
}
