package sm

import (
	"slices"
	"testing"

	"github.com/ibsm/ibsm/sdk/topology"
)

// TestEndpointChanges: a CA that appears is "in", one that goes is "out";
// the switch (port 0, the node GUID) stays.
func TestEndpointChanges(t *testing.T) {
	t.Parallel()
	build := func(cas ...uint64) *topology.Topology {
		b := topology.NewBuilder()
		up := topology.Port{State: topology.StateActive, VLCap: 1}
		sw := topology.Node{GUID: 0x100, Type: topology.Switch, Ports: []topology.Port{{GUID: 0x100}, up, up, up}}
		if err := b.AddNode(sw); err != nil {
			t.Fatal(err)
		}
		for i, g := range cas {
			ca := topology.Node{GUID: g, Type: topology.CA, Ports: []topology.Port{{}, up}}
			ca.Ports[1].GUID = g + 1
			if err := b.AddNode(ca); err != nil {
				t.Fatal(err)
			}
			b.Link(0x100, uint8(i+1), g, 1)
		}
		topo, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	in, out := endpointChanges(build(0x200, 0x300), build(0x300, 0x400))
	if !slices.Equal(in, []uint64{0x401}) || !slices.Equal(out, []uint64{0x201}) {
		t.Fatalf("in %#x out %#x; want in [0x401] out [0x201]", in, out)
	}
	if in, out := endpointChanges(build(0x200), build(0x200)); len(in)+len(out) != 0 {
		t.Fatalf("unchanged fabric: in %#x out %#x", in, out)
	}
	// Patched (a cable event): only the nodes b does not share with a
	// are looked at, in either direction.
	a := build(0x200, 0x300)
	var cut []topology.Node
	for _, end := range []struct {
		guid uint64
		port int
	}{{0x100, 2}, {0x300, 1}} {
		n := a.Nodes[a.NodeByGUID(end.guid)]
		n.Ports = slices.Clone(n.Ports)
		n.Ports[end.port].Peer = topology.PortRef{Node: topology.NoNode}
		cut = append(cut, n)
	}
	b, err := a.Patch(cut)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, to *topology.Topology
		in, out  []uint64
	}{{a, b, nil, []uint64{0x301}}, {b, a, []uint64{0x301}, nil}, {a, a, nil, nil}} {
		if in, out := endpointChanges(tc.from, tc.to); !slices.Equal(in, tc.in) || !slices.Equal(out, tc.out) {
			t.Fatalf("patched: in %#x out %#x; want in %#x out %#x", in, out, tc.in, tc.out)
		}
	}
	// Patched with the same endpoints (a port state; a port GUID): only
	// a GUID that changed is in and out.
	edit := func(from *topology.Topology, f func(p *topology.Port)) *topology.Topology {
		n := from.Nodes[from.NodeByGUID(0x300)]
		n.Ports = slices.Clone(n.Ports)
		f(&n.Ports[1])
		out, err := from.Patch([]topology.Node{n})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	state := edit(a, func(p *topology.Port) { p.State = topology.StateInit })
	if in, out := endpointChanges(a, state); len(in)+len(out) != 0 {
		t.Fatalf("a port state changed: in %#x out %#x", in, out)
	}
	guid := edit(a, func(p *topology.Port) { p.GUID = 0x999 })
	if in, out := endpointChanges(a, guid); !slices.Equal(in, []uint64{0x999}) || !slices.Equal(out, []uint64{0x301}) {
		t.Fatalf("a port GUID changed: in %#x out %#x; want in [0x999] out [0x301]", in, out)
	}
}

// TestNoticeQueue: without a running queue the notifier is called at
// once; with one, calls return before the notifier is done and reach it
// in order, all of them before stop returns.
func TestNoticeQueue(t *testing.T) {
	s := &SM{}
	var got []int
	s.notify(func() { got = append(got, 0) })
	if len(got) != 1 {
		t.Fatal("no queue running: not called at once")
	}
	stop := s.notices.start()
	block := make(chan struct{})
	s.notify(func() { <-block; got = append(got, 1) })
	s.notify(func() { got = append(got, 2) }) // returns while the first waits
	close(block)
	stop()
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("calls %v, want [0 1 2]", got)
	}
	s.notify(func() { got = append(got, 3) })
	if len(got) != 4 {
		t.Fatal("queue stopped: not called at once")
	}
}
