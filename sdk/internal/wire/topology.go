package wire

import (
	"fmt"

	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
)

// maxNodes bounds a declared node count (far above the 49,151 LIDs a subnet
// can address, so no real fabric is refused).
const maxNodes = 1 << 20

// SendTopology streams t as a header and node batches of about BatchBytes.
func SendTopology(send Send, t *topology.Topology) error { return sendTopology(send, t, BatchBytes) }

func sendTopology(send Send, t *topology.Topology, batchBytes int) error {
	h := &pb.TopologyHeader{NumNodes: uint32(len(t.Nodes)), SmNode: t.SM.Node, SmPort: uint32(t.SM.Port), Hash: t.Hash()}
	if !t.SM.Connected() {
		h.SmNode, h.SmPort = -1, 0
	}
	if err := send(&pb.Chunk{Part: &pb.Chunk_TopologyHeader{TopologyHeader: h}}); err != nil {
		return err
	}
	// Columns: per node 8+1+4 bytes plus its description, per port 8+4+5.
	for first := 0; first < len(t.Nodes); {
		end, ports, descs := first, 0, 0
		for end < len(t.Nodes) && (end == first || 13*(end-first)+descs+17*ports < batchBytes) {
			ports += len(t.Nodes[end].Ports)
			descs += len(t.Nodes[end].Desc)
			end++
		}
		nn := end - first
		b := &pb.NodeBatch{
			Guid: make([]uint64, nn), Type: make([]byte, nn), Desc: make([]byte, 0, descs), DescLen: make([]uint32, nn), NumPorts: make([]byte, nn),
			PortGuid: make([]uint64, 0, ports), PortState: make([]byte, 0, ports), Width: make([]byte, 0, ports), Speed: make([]byte, 0, ports),
			VlCap: make([]byte, 0, ports), PeerNode: make([]int32, 0, ports), PeerPort: make([]byte, 0, ports),
		}
		for i := first; i < end; i++ {
			n := &t.Nodes[i]
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

// RecvTopology reads a streamed topology, rebuilds it with topology.Builder
// and checks that its canonical hash matches the sender's.
func RecvTopology(recv Recv) (*topology.Topology, error) {
	c, err := next(recv, "topology_header")
	if err != nil {
		return nil, err
	}
	h := c.GetTopologyHeader()
	if h == nil {
		return nil, unexpected(c, "topology_header")
	}
	if h.NumNodes > maxNodes {
		return nil, fmt.Errorf("topology: %d nodes declared, limit is %d", h.NumNodes, maxNodes)
	}
	type peer struct {
		node int32
		port uint8
	}
	nodes := make([]topology.Node, 0, prealloc(h.NumNodes))
	peers := make([][]peer, 0, prealloc(h.NumNodes))
	for uint32(len(nodes)) < h.NumNodes {
		c, err := next(recv, fmt.Sprintf("nodes (have %d of %d)", len(nodes), h.NumNodes))
		if err != nil {
			return nil, err
		}
		b := c.GetNodes()
		if b == nil {
			return nil, unexpected(c, "nodes")
		}
		nn := len(b.Guid)
		if nn == 0 {
			return nil, fmt.Errorf("topology: empty node batch after %d of %d nodes", len(nodes), h.NumNodes)
		}
		if uint32(len(nodes)+nn) > h.NumNodes {
			return nil, fmt.Errorf("topology: more nodes sent than the %d declared", h.NumNodes)
		}
		if len(b.Type) != nn || len(b.DescLen) != nn || len(b.NumPorts) != nn {
			return nil, fmt.Errorf("topology: node batch after node %d has %d GUIDs but %d types, %d description lengths and %d port counts",
				len(nodes), nn, len(b.Type), len(b.DescLen), len(b.NumPorts))
		}
		ports, descs := 0, uint64(0)
		for k := 0; k < nn; k++ {
			ports += int(b.NumPorts[k])
			descs += uint64(b.DescLen[k])
		}
		if descs != uint64(len(b.Desc)) {
			return nil, fmt.Errorf("topology: node batch after node %d has %d description bytes, lengths say %d", len(nodes), len(b.Desc), descs)
		}
		if len(b.PortGuid) != ports || len(b.PortState) != ports || len(b.Width) != ports || len(b.Speed) != ports ||
			len(b.VlCap) != ports || len(b.PeerNode) != ports || len(b.PeerPort) != ports {
			return nil, fmt.Errorf("topology: node batch after node %d: per-port columns do not all have the %d entries the port counts say", len(nodes), ports)
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
				return nil, fmt.Errorf("topology: node %d (0x%016x) has %d port entries, want 2..255", idx, guid, np)
			}
			if t := topology.NodeType(b.Type[k]); t != topology.CA && t != topology.Switch && t != topology.Router {
				return nil, fmt.Errorf("topology: node %d (0x%016x) has node type %d", idx, guid, b.Type[k])
			}
			if idx > 0 && nodes[idx-1].GUID >= guid {
				return nil, fmt.Errorf("topology: node %d (0x%016x) is not in ascending GUID order", idx, guid)
			}
			dl := int(b.DescLen[k])
			n := topology.Node{GUID: guid, Type: topology.NodeType(b.Type[k]), Desc: desc[doff : doff+dl], Ports: portArr[off : off+np : off+np]}
			doff += dl
			pp := peerArr[off : off+np : off+np]
			for p := 0; p < np; p++ {
				j := off + p
				n.Ports[p] = topology.Port{GUID: b.PortGuid[j], State: topology.PortState(b.PortState[j]), Width: b.Width[j], Speed: b.Speed[j], VLCap: b.VlCap[j]}
				pn := b.PeerNode[j]
				if pn < -1 || pn >= int32(h.NumNodes) {
					return nil, fmt.Errorf("topology: node 0x%016x port %d names peer node %d of %d", guid, p, pn, h.NumNodes)
				}
				pp[p] = peer{pn, b.PeerPort[j]}
			}
			off += np
			nodes = append(nodes, n)
			peers = append(peers, pp)
		}
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
	t, err := b.Build()
	if err != nil {
		return nil, err
	}
	if got := t.Hash(); got != h.Hash {
		return nil, fmt.Errorf("topology: rebuilt snapshot hashes to %016x, sender said %016x (encoder and decoder disagree; check SDK versions)", got, h.Hash)
	}
	return t, nil
}
