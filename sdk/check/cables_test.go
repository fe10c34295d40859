package check

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/topology"
)

// naiveCableChanges is cableChanges reading every port of every node.
func naiveCableChanges(a, b *topology.Topology) ([]topology.PortRef, bool) {
	var out []topology.PortRef
	for i := range a.Nodes {
		for q := range a.Nodes[i].Ports {
			r := topology.PortRef{Node: int32(i), Port: uint8(q)}
			pa, pb := a.Port(r), b.Port(r)
			if pa.Peer == pb.Peer && a.IsLinkUp(r) == b.IsLinkUp(r) {
				continue
			}
			if a.Nodes[i].Type != topology.Switch || !switchOrNone(a, pa.Peer) || !switchOrNone(b, pb.Peer) {
				return nil, false
			}
			out = append(out, r)
		}
	}
	return out, true
}

// TestCableChanges: looking only at the nodes a patch replaced and their
// ports' peers finds what reading every port finds, through random
// patches: cables cut at both ends, one end's state changed alone (the
// other end's link changes with it), CA cables, nothing.
func TestCableChanges(t *testing.T) {
	base, err := analysistest.FatTree3(8, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	edit := func(t *topology.Topology, nodes map[int32]topology.Node, r topology.PortRef, f func(*topology.Port)) {
		n, ok := nodes[r.Node]
		if !ok {
			n = t.Nodes[r.Node]
			n.Ports = slices.Clone(n.Ports)
		}
		f(&n.Ports[r.Port])
		nodes[r.Node] = n
	}
	for step := range 300 {
		nodes := map[int32]topology.Node{}
		for range 1 + rng.IntN(3) {
			i := int32(rng.IntN(len(base.Nodes)))
			q := uint8(1 + rng.IntN(len(base.Nodes[i].Ports)-1))
			r := topology.PortRef{Node: i, Port: q}
			peer := base.Port(r).Peer
			switch rng.IntN(3) {
			case 0: // a cable cut at both ends
				if peer.Connected() {
					cut := func(p *topology.Port) { p.Peer, p.State = topology.PortRef{Node: topology.NoNode}, topology.StateDown }
					edit(base, nodes, r, cut)
					edit(base, nodes, peer, cut)
				}
			case 1: // one end's state alone
				edit(base, nodes, r, func(p *topology.Port) { p.State = topology.StateDown })
			case 2: // a width change: not a link change
				edit(base, nodes, r, func(p *topology.Port) { p.Width ^= 1 })
			}
		}
		var patch []topology.Node
		for _, n := range nodes {
			patch = append(patch, n)
		}
		next, err := base.Patch(patch)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := naiveCableChanges(base, next)
		got, why := cableChanges(base, next)
		if ok != (why == "") || !slices.Equal(got, want) {
			t.Fatalf("step %d: got %v (%q), reading every port %v (%v)", step, got, why, want, ok)
		}
	}
}
