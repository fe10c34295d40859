package wire

import (
	"errors"
	"fmt"
	"slices"

	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
)

// maxNodes bounds a declared node count (far above the 49,151 LIDs a subnet
// can address, so no real fabric is refused).
const maxNodes = 1 << 20

// SendTopology streams t whole as a header and node batches of about
// BatchBytes, unnamed (the receiver keeps nothing of it).
func SendTopology(send Send, t *topology.Topology) error { return sendTopology(send, t, BatchBytes) }

func sendTopology(send Send, t *topology.Topology, batchBytes int) error {
	_, err := sendNamedTopology(send, t, 0, nil, 0, batchBytes)
	return err
}

// patchShare bounds the nodes a patch may carry, as a share of the
// topology's: beyond it the topology is sent whole (a patch saves little
// and the receiver's copy-on-write shares little).
const patchShare = 4

// SendNamedTopology streams t under token (0: unnamed). When base, sent
// earlier to the same receiver under baseToken, has the same nodes in the
// same order and the same SM port, and t differs from it in at most a
// quarter of its nodes, only those nodes are sent (a patch: at the edge of
// the LID space a cable's change is two of 47,824 nodes, where the whole
// topology is ~12 MB to encode, decode and rebuild). It reports whether it
// sent a patch.
func SendNamedTopology(send Send, t *topology.Topology, token uint64, base *topology.Topology, baseToken uint64) (patched bool, err error) {
	return sendNamedTopology(send, t, token, base, baseToken, BatchBytes)
}

func sendNamedTopology(send Send, t *topology.Topology, token uint64, base *topology.Topology, baseToken uint64, batchBytes int) (patched bool, err error) {
	h := &pb.TopologyHeader{NumNodes: uint32(len(t.Nodes)), SmNode: t.SM.Node, SmPort: uint32(t.SM.Port), Hash: t.Hash(), Token: token}
	if !t.SM.Connected() {
		h.SmNode, h.SmPort = -1, 0
	}
	var idx []int32
	if baseToken != 0 {
		var ok bool
		if idx, ok = ChangedNodes(base, t); ok && len(idx) <= len(t.Nodes)/patchShare {
			h.NumNodes, h.Since, patched = uint32(len(idx)), baseToken, true
		} else {
			idx = nil
		}
	}
	if err := send(&pb.Chunk{Part: &pb.Chunk_TopologyHeader{TopologyHeader: h}}); err != nil {
		return false, err
	}
	if !patched {
		idx = nil // every node, in order
	}
	return patched, sendNodes(send, t, idx, int(h.NumNodes), batchBytes)
}

// ChangedNodes returns the indices of t's nodes that differ from base's
// (description or ports), ascending, or false when t is not base with some
// nodes replaced: another node count, another node at an index (GUID, type,
// port count) or another SM port. Nodes a copy-on-write patch shares with
// base (topology.Patch) compare by their ports' address.
func ChangedNodes(base, t *topology.Topology) ([]int32, bool) {
	if base == nil || t == nil || len(base.Nodes) != len(t.Nodes) || base.SM != t.SM {
		return nil, false
	}
	var out []int32
	for i := range t.Nodes {
		a, b := &base.Nodes[i], &t.Nodes[i]
		if a.GUID != b.GUID || a.Type != b.Type || len(a.Ports) != len(b.Ports) {
			return nil, false
		}
		if a.Desc == b.Desc && (len(a.Ports) == 0 || &a.Ports[0] == &b.Ports[0] || slices.Equal(a.Ports, b.Ports)) {
			continue
		}
		out = append(out, int32(i))
	}
	return out, true
}

// sendNodes streams n nodes of t in batches of about batchBytes: those
// idx names, or every node when idx is nil.
func sendNodes(send Send, t *topology.Topology, idx []int32, n int, batchBytes int) error {
	at := func(k int) *topology.Node {
		if idx == nil {
			return &t.Nodes[k]
		}
		return &t.Nodes[idx[k]]
	}
	// Columns: per node 8+1+4 bytes plus its description, per port 8+4+5.
	for first := 0; first < n; {
		end, ports, descs := first, 0, 0
		for end < n && (end == first || 13*(end-first)+descs+17*ports < batchBytes) {
			ports += len(at(end).Ports)
			descs += len(at(end).Desc)
			end++
		}
		nn := end - first
		b := &pb.NodeBatch{
			Guid: make([]uint64, nn), Type: make([]byte, nn), Desc: make([]byte, 0, descs), DescLen: make([]uint32, nn), NumPorts: make([]byte, nn),
			PortGuid: make([]uint64, 0, ports), PortState: make([]byte, 0, ports), Width: make([]byte, 0, ports), Speed: make([]byte, 0, ports),
			VlCap: make([]byte, 0, ports), PeerNode: make([]int32, 0, ports), PeerPort: make([]byte, 0, ports),
		}
		for i := first; i < end; i++ {
			n := at(i)
			if len(n.Ports) > 255 {
				return fmt.Errorf("topology: node 0x%016x has %d port entries, at most 255 can be sent", n.GUID, len(n.Ports))
			}
			k := i - first
			b.Guid[k], b.Type[k], b.DescLen[k], b.NumPorts[k] = n.GUID, byte(n.Type), uint32(len(n.Desc)), byte(len(n.Ports))
			b.Desc = append(b.Desc, n.Desc...)
			for p := range n.Ports {
				pt := &n.Ports[p]
				b.PortGuid = append(b.PortGuid, pt.GUID)
				b.PortState = append(b.PortState, byte(pt.State))
				b.Width = append(b.Width, pt.Width)
				b.Speed = append(b.Speed, pt.Speed)
				b.VlCap = append(b.VlCap, pt.VLCap)
				b.PeerNode = append(b.PeerNode, pt.Peer.Node)
				b.PeerPort = append(b.PeerPort, pt.Peer.Port)
			}
		}
		if err := send(&pb.Chunk{Part: &pb.Chunk_Nodes{Nodes: b}}); err != nil {
			return err
		}
		first = end
	}
	return nil
}

// ErrUnknownBase is RecvNamedTopology's error for a patch against a
// topology the receiver does not hold (any more): the sender should send
// the topology whole.
var ErrUnknownBase = errors.New("topology: patch against a topology this plugin does not hold (it restarted or forgot it); send it whole")

// RecvNamedTopology reads a streamed topology, rebuilds it with
// topology.Builder and checks that its canonical hash matches the
// sender's. It returns the topology's token (0: unnamed) and accepts a
// patch against a topology held (which returns; nil: not held, and a nil
// held refuses every patch with ErrUnknownBase). A patched topology is
// checked like a whole one: every replaced node and its links, and the
// canonical hash of the result.
func RecvNamedTopology(recv Recv, held func(token uint64) *topology.Topology) (*topology.Topology, uint64, error) {
	c, err := next(recv, "topology_header")
	if err != nil {
		return nil, 0, err
	}
	h := c.GetTopologyHeader()
	if h == nil {
		return nil, 0, unexpected(c, "topology_header")
	}
	if h.NumNodes > maxNodes {
		return nil, 0, fmt.Errorf("topology: %d nodes declared, limit is %d", h.NumNodes, maxNodes)
	}
	var t *topology.Topology
	if h.Since != 0 {
		var base *topology.Topology
		if held != nil {
			base = held(h.Since)
		}
		if base == nil {
			return nil, 0, ErrUnknownBase
		}
		t, err = recvPatch(recv, h, base)
	} else {
		t, err = recvWhole(recv, h)
	}
	if err != nil {
		return nil, 0, err
	}
	if got := t.Hash(); got != h.Hash {
		return nil, 0, fmt.Errorf("topology: rebuilt snapshot hashes to %016x, sender said %016x (encoder and decoder disagree; check SDK versions)", got, h.Hash)
	}
	return t, h.Token, nil
}

// peer is a decoded port's peer as sent: a node index (-1: none) and port.
type peer struct {
	node int32
	port uint8
}

// recvNodes reads the node batches of n nodes whose peer indices are below
// bound, in strictly ascending GUID order.
func recvNodes(recv Recv, n, bound uint32) ([]topology.Node, [][]peer, error) {
	nodes := make([]topology.Node, 0, prealloc(n))
	peers := make([][]peer, 0, prealloc(n))
	for uint32(len(nodes)) < n {
		c, err := next(recv, fmt.Sprintf("nodes (have %d of %d)", len(nodes), n))
		if err != nil {
			return nil, nil, err
		}
		b := c.GetNodes()
		if b == nil {
			return nil, nil, unexpected(c, "nodes")
		}
		nn := len(b.Guid)
		if nn == 0 {
			return nil, nil, fmt.Errorf("topology: empty node batch after %d of %d nodes", len(nodes), n)
		}
		if uint32(len(nodes)+nn) > n {
			return nil, nil, fmt.Errorf("topology: more nodes sent than the %d declared", n)
		}
		if len(b.Type) != nn || len(b.DescLen) != nn || len(b.NumPorts) != nn {
			return nil, nil, fmt.Errorf("topology: node batch after node %d has %d GUIDs but %d types, %d description lengths and %d port counts",
				len(nodes), nn, len(b.Type), len(b.DescLen), len(b.NumPorts))
		}
		ports, descs := 0, uint64(0)
		for k := 0; k < nn; k++ {
			ports += int(b.NumPorts[k])
			descs += uint64(b.DescLen[k])
		}
		if descs != uint64(len(b.Desc)) {
			return nil, nil, fmt.Errorf("topology: node batch after node %d has %d description bytes, lengths say %d", len(nodes), len(b.Desc), descs)
		}
		if len(b.PortGuid) != ports || len(b.PortState) != ports || len(b.Width) != ports || len(b.Speed) != ports ||
			len(b.VlCap) != ports || len(b.PeerNode) != ports || len(b.PeerPort) != ports {
			return nil, nil, fmt.Errorf("topology: node batch after node %d: per-port columns do not all have the %d entries the port counts say", len(nodes), ports)
		}
		// One string, one port array and one peer array per batch; nodes
		// slice them (capped, so nothing appends into a neighbour).
		desc := string(b.Desc)
		portArr := make([]topology.Port, ports)
		peerArr := make([]peer, ports)
		off, doff := 0, 0
		for k := 0; k < nn; k++ {
			idx := len(nodes)
			guid := b.Guid[k]
			np := int(b.NumPorts[k])
			if np < 2 {
				return nil, nil, fmt.Errorf("topology: node %d (0x%016x) has %d port entries, want 2..255", idx, guid, np)
			}
			if t := topology.NodeType(b.Type[k]); t != topology.CA && t != topology.Switch && t != topology.Router {
				return nil, nil, fmt.Errorf("topology: node %d (0x%016x) has node type %d", idx, guid, b.Type[k])
			}
			if idx > 0 && nodes[idx-1].GUID >= guid {
				return nil, nil, fmt.Errorf("topology: node %d (0x%016x) is not in ascending GUID order", idx, guid)
			}
			dl := int(b.DescLen[k])
			n := topology.Node{GUID: guid, Type: topology.NodeType(b.Type[k]), Desc: desc[doff : doff+dl], Ports: portArr[off : off+np : off+np]}
			doff += dl
			pp := peerArr[off : off+np : off+np]
			for p := 0; p < np; p++ {
				j := off + p
				n.Ports[p] = topology.Port{GUID: b.PortGuid[j], State: topology.PortState(b.PortState[j]), Width: b.Width[j], Speed: b.Speed[j], VLCap: b.VlCap[j]}
				pn := b.PeerNode[j]
				if pn < -1 || pn >= int32(bound) {
					return nil, nil, fmt.Errorf("topology: node 0x%016x port %d names peer node %d of %d", guid, p, pn, bound)
				}
				pp[p] = peer{pn, b.PeerPort[j]}
			}
			off += np
			nodes = append(nodes, n)
			peers = append(peers, pp)
		}
	}
	return nodes, peers, nil
}

// recvWhole reads every node of the topology h opens and builds it.
func recvWhole(recv Recv, h *pb.TopologyHeader) (*topology.Topology, error) {
	nodes, peers, err := recvNodes(recv, h.NumNodes, h.NumNodes)
	if err != nil {
		return nil, err
	}
	b := topology.NewBuilder()
	for i := range nodes {
		if err := b.AddNode(nodes[i]); err != nil {
			return nil, err
		}
	}
	for i, pp := range peers {
		for p, r := range pp {
			if r.node < 0 {
				continue
			}
			if int(r.port) >= len(peers[r.node]) {
				return nil, fmt.Errorf("topology: node 0x%016x port %d names missing port %d of node 0x%016x", nodes[i].GUID, p, r.port, nodes[r.node].GUID)
			}
			back := peers[r.node][r.port]
			if back.node != int32(i) || int(back.port) != p {
				return nil, fmt.Errorf("topology: link 0x%016x/%d -> 0x%016x/%d is not symmetric", nodes[i].GUID, p, nodes[r.node].GUID, r.port)
			}
			if r.node > int32(i) || (r.node == int32(i) && int(r.port) > p) {
				b.Link(nodes[i].GUID, uint8(p), nodes[r.node].GUID, r.port)
			}
		}
	}
	if h.SmNode >= 0 {
		if h.SmNode >= int32(len(nodes)) || int(h.SmPort) >= len(nodes[h.SmNode].Ports) {
			return nil, fmt.Errorf("topology: SM port %d/%d does not exist", h.SmNode, h.SmPort)
		}
		b.SetSM(nodes[h.SmNode].GUID, uint8(h.SmPort))
	} else if h.SmNode != -1 {
		return nil, fmt.Errorf("topology: SM node %d invalid", h.SmNode)
	}
	return b.Build()
}

// recvPatch reads the nodes of the patch h opens and replaces base's nodes
// of the same GUIDs with them (topology.Patch checks each replaced node and
// that its links are symmetric). The patch keeps base's SM port.
func recvPatch(recv Recv, h *pb.TopologyHeader, base *topology.Topology) (*topology.Topology, error) {
	sm := base.SM
	if !sm.Connected() {
		sm = topology.PortRef{Node: -1}
	}
	if h.SmNode != sm.Node || h.SmPort != uint32(sm.Port) {
		return nil, fmt.Errorf("topology: patch moves the SM port to %d/%d (a patch keeps its base's)", h.SmNode, h.SmPort)
	}
	nodes, peers, err := recvNodes(recv, h.NumNodes, uint32(len(base.Nodes)))
	if err != nil {
		return nil, err
	}
	for i := range nodes {
		for p, r := range peers[i] {
			nodes[i].Ports[p].Peer = topology.PortRef{Node: r.node, Port: r.port}
		}
	}
	return base.Patch(nodes)
}
