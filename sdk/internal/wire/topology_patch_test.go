package wire

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// cut returns t with the cable at node n, port p taken down at both ends
// (as discovery's copy-on-write snapshot does).
func cut(tb testing.TB, t *topology.Topology, n int32, p uint8) *topology.Topology {
	tb.Helper()
	peer := t.Nodes[n].Ports[p].Peer
	var nodes []topology.Node
	for _, r := range []topology.PortRef{{Node: n, Port: p}, peer} {
		nd := t.Nodes[r.Node]
		nd.Ports = slices.Clone(nd.Ports)
		nd.Ports[r.Port].Peer = topology.PortRef{Node: topology.NoNode}
		nd.Ports[r.Port].State = topology.StateDown
		nodes = append(nodes, nd)
	}
	out, err := t.Patch(nodes)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// restate returns t with node n's port p in state st.
func restate(tb testing.TB, t *topology.Topology, n int32, p uint8, st topology.PortState) *topology.Topology {
	tb.Helper()
	nd := t.Nodes[n]
	nd.Ports = slices.Clone(nd.Ports)
	nd.Ports[p].State = st
	out, err := t.Patch([]topology.Node{nd})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestTopologyPatch sends a topology named against a base the receiver
// holds: what arrives must equal what was sent (nodes, endpoints, hash),
// as a patch of the changed nodes where that is the smaller message and
// whole otherwise.
func TestTopologyPatch(t *testing.T) {
	base, err := testfab.FatTree2(4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	sw := base.Switches()
	ca := base.Endpoints()[len(base.Endpoints())-1] // a CA port
	other, err := testfab.FatTree2(4, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	many := base
	for _, s := range sw {
		many = restate(t, many, s, 1, topology.StateArmed)
	}
	tests := []struct {
		name    string
		to      *topology.Topology
		nodes   int // nodes in the patch; -1: sent whole
		wantEps bool
	}{
		{name: "switch cable down", to: cut(t, base, sw[0], 1), nodes: 2},
		{name: "CA cable down (endpoints change)", to: cut(t, base, ca.Node, ca.Port), nodes: 2, wantEps: true},
		{name: "port state only", to: restate(t, base, sw[1], 2, topology.StateArmed), nodes: 1},
		{name: "nothing changed", to: base, nodes: 0},
		{name: "another fabric", to: other, nodes: -1},
		{name: "too many nodes changed", to: many, nodes: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var chunks []*pb.Chunk
			patched, err := SendNamedTopology(func(c *pb.Chunk) error { chunks = append(chunks, c); return nil }, tc.to, 7, base, 3)
			if err != nil {
				t.Fatal(err)
			}
			h := chunks[0].GetTopologyHeader()
			if patched != (tc.nodes >= 0) || (patched && (int(h.NumNodes) != tc.nodes || h.Since != 3)) {
				t.Fatalf("patched %v with %d nodes since %d, want %d nodes (-1: whole)", patched, h.NumNodes, h.Since, tc.nodes)
			}
			held := func(tok uint64) *topology.Topology {
				if tok == 3 {
					return base
				}
				return nil
			}
			got, tok, err := RecvNamedTopology(unframe(frame(chunks)), held)
			if err != nil {
				t.Fatal(err)
			}
			if tok != 7 || got.Hash() != tc.to.Hash() || !reflect.DeepEqual(got.Nodes, tc.to.Nodes) || !reflect.DeepEqual(got.Endpoints(), tc.to.Endpoints()) {
				t.Fatalf("received token %d, hash %x, want 7, %x (or nodes/endpoints differ)", tok, got.Hash(), tc.to.Hash())
			}
			if tc.wantEps && len(got.Endpoints()) == len(base.Endpoints()) {
				t.Fatal("a CA cable went down but the endpoints did not change")
			}
		})
	}
}

// TestTopologyPatchRefused: a patch against a topology the receiver does
// not hold, or one altered on the way, is an error naming what to do; it
// never yields a topology other than the sender's.
func TestTopologyPatchRefused(t *testing.T) {
	base, err := testfab.FatTree2(4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	sw := base.Switches()
	to := cut(t, base, sw[0], 1)
	send := func() []*pb.Chunk {
		var chunks []*pb.Chunk
		if _, err := SendNamedTopology(func(c *pb.Chunk) error { chunks = append(chunks, c); return nil }, to, 7, base, 3); err != nil {
			t.Fatal(err)
		}
		return chunks
	}
	elsewhere := cut(t, base, sw[1], 2) // a base the sender did not mean
	tests := []struct {
		name string
		held *topology.Topology
		edit func([]*pb.Chunk)
		want string
	}{
		{name: "base not held", want: "does not hold"},
		{name: "another base held", held: elsewhere, want: "hashes to"},
		{name: "one end of the cable only", held: base, edit: func(c []*pb.Chunk) {
			h := c[0].GetTopologyHeader()
			h.NumNodes = 1
			b := c[1].GetNodes()
			b.Guid, b.Type, b.DescLen, b.NumPorts = b.Guid[:1], b.Type[:1], b.DescLen[:1], b.NumPorts[:1]
			n, d := int(b.NumPorts[0]), 0
			for _, l := range b.DescLen {
				d += int(l)
			}
			b.Desc = b.Desc[:d]
			b.PortGuid, b.PortState, b.Width, b.Speed, b.VlCap, b.PeerNode, b.PeerPort = b.PortGuid[:n], b.PortState[:n], b.Width[:n], b.Speed[:n], b.VlCap[:n], b.PeerNode[:n], b.PeerPort[:n]
		}, want: "not its other end"},
		{name: "peer beyond the base's nodes", held: base, edit: func(c []*pb.Chunk) {
			c[1].GetNodes().PeerNode[2] = int32(len(base.Nodes))
		}, want: "names peer node"},
		{name: "SM port moved", held: base, edit: func(c []*pb.Chunk) { c[0].GetTopologyHeader().SmPort++ }, want: "SM port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chunks := send()
			if tc.edit != nil {
				tc.edit(chunks)
			}
			got, _, err := RecvNamedTopology(unframe(frame(chunks)), func(uint64) *topology.Topology { return tc.held })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, error %v; want an error saying %q", got != nil, err, tc.want)
			}
			if tc.held == nil && !errors.Is(err, ErrUnknownBase) {
				t.Fatalf("error %v is not ErrUnknownBase", err)
			}
		})
	}
	// Holding nothing refuses every patch.
	if _, err := recvTopology(unframe(frame(send()))); !errors.Is(err, ErrUnknownBase) {
		t.Fatalf("holding nothing, a patch was taken: %v", err)
	}
}

// recvTopology is RecvNamedTopology holding nothing.
func recvTopology(recv Recv) (*topology.Topology, error) {
	t, _, err := RecvNamedTopology(recv, nil)
	return t, err
}
