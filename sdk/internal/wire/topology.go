package wire

import (
	"fmt"

	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
)

// maxNodes bounds a declared node count (far above the 49,151 LIDs a subnet
// can address, so no real fabric is refused).
const maxNodes = 1 << 20

// SendTopology streams t as a header and node batches.
func SendTopology(send Send, t *topology.Topology) error {
	h := &pb.TopologyHeader{NumNodes: uint32(len(t.Nodes)), SmNode: t.SM.Node, SmPort: uint32(t.SM.Port), Hash: t.Hash()}
	if !t.SM.Connected() {
		h.SmNode, h.SmPort = -1, 0
	}
	if err := send(&pb.Chunk{Part: &pb.Chunk_TopologyHeader{TopologyHeader: h}}); err != nil {
		return err
	}
	batch := &pb.NodeBatch{}
	size := 0
	for i := range t.Nodes {
		n := &t.Nodes[i]
		np := len(n.Ports)
		m := &pb.Node{
			Guid:      n.GUID,
			Type:      uint32(n.Type),
			Desc:      n.Desc,
			PortGuid:  make([]uint64, np),
			PortState: make([]byte, np),
			Width:     make([]byte, np),
			Speed:     make([]byte, np),
			VlCap:     make([]byte, np),
			PeerNode:  make([]int32, np),
			PeerPort:  make([]byte, np),
		}
		for p := range n.Ports {
			pt := &n.Ports[p]
			m.PortGuid[p] = pt.GUID
			m.PortState[p] = byte(pt.State)
			m.Width[p] = pt.Width
			m.Speed[p] = pt.Speed
			m.VlCap[p] = pt.VLCap
			m.PeerNode[p] = pt.Peer.Node
			m.PeerPort[p] = pt.Peer.Port
		}
		batch.Nodes = append(batch.Nodes, m)
		size += 24 + len(n.Desc) + np*16
		if size >= BatchBytes {
			if err := send(&pb.Chunk{Part: &pb.Chunk_Nodes{Nodes: batch}}); err != nil {
				return err
			}
			batch, size = &pb.NodeBatch{}, 0
		}
	}
	if len(batch.Nodes) > 0 {
		return send(&pb.Chunk{Part: &pb.Chunk_Nodes{Nodes: batch}})
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
	var peers [][]peer
	for uint32(len(nodes)) < h.NumNodes {
		c, err := next(recv, fmt.Sprintf("nodes (have %d of %d)", len(nodes), h.NumNodes))
		if err != nil {
			return nil, err
		}
		b := c.GetNodes()
		if b == nil {
			return nil, unexpected(c, "nodes")
		}
		if uint32(len(nodes)+len(b.Nodes)) > h.NumNodes {
			return nil, fmt.Errorf("topology: more nodes sent than the %d declared", h.NumNodes)
		}
		for _, m := range b.Nodes {
			idx := len(nodes)
			np := len(m.PortGuid)
			if np < 2 || np > 255 {
				return nil, fmt.Errorf("topology: node %d (0x%016x) has %d port entries, want 2..255", idx, m.Guid, np)
			}
			if len(m.PortState) != np || len(m.Width) != np || len(m.Speed) != np || len(m.VlCap) != np || len(m.PeerNode) != np || len(m.PeerPort) != np {
				return nil, fmt.Errorf("topology: node %d (0x%016x): per-port fields have different lengths", idx, m.Guid)
			}
			if t := topology.NodeType(m.Type); t != topology.CA && t != topology.Switch && t != topology.Router {
				return nil, fmt.Errorf("topology: node %d (0x%016x) has node type %d", idx, m.Guid, m.Type)
			}
			if idx > 0 && nodes[idx-1].GUID >= m.Guid {
				return nil, fmt.Errorf("topology: node %d (0x%016x) is not in ascending GUID order", idx, m.Guid)
			}
			n := topology.Node{GUID: m.Guid, Type: topology.NodeType(m.Type), Desc: m.Desc, Ports: make([]topology.Port, np)}
			pp := make([]peer, np)
			for p := 0; p < np; p++ {
				n.Ports[p] = topology.Port{GUID: m.PortGuid[p], State: topology.PortState(m.PortState[p]), Width: m.Width[p], Speed: m.Speed[p], VLCap: m.VlCap[p]}
				pn := m.PeerNode[p]
				if pn < -1 || pn >= int32(h.NumNodes) {
					return nil, fmt.Errorf("topology: node 0x%016x port %d names peer node %d of %d", m.Guid, p, pn, h.NumNodes)
				}
				pp[p] = peer{pn, m.PeerPort[p]}
			}
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
