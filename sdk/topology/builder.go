package topology

import (
	"fmt"
	"sort"
)

// Builder assembles a Topology from nodes found in any order (discovery,
// topology files, decoders) and produces the canonical, GUID-sorted snapshot.
type Builder struct {
	nodes  []Node
	byGUID map[uint64]int
	links  []builderLink
	sm     struct {
		guid uint64
		port uint8
		set  bool
	}
}

type builderLink struct {
	a, b   uint64
	pa, pb uint8
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{byGUID: map[uint64]int{}} }

// AddNode adds a node; its Ports' Peer fields are ignored (use Link). It
// returns an error on a duplicate GUID.
func (b *Builder) AddNode(n Node) error {
	if _, dup := b.byGUID[n.GUID]; dup {
		return fmt.Errorf("topology: duplicate node GUID 0x%016x", n.GUID)
	}
	for i := range n.Ports {
		n.Ports[i].Peer = PortRef{Node: NoNode}
	}
	b.byGUID[n.GUID] = len(b.nodes)
	b.nodes = append(b.nodes, n)
	return nil
}

// Link records a cable between (a, pa) and (bb, pb), by node GUID.
func (b *Builder) Link(a uint64, pa uint8, bb uint64, pb uint8) {
	b.links = append(b.links, builderLink{a, bb, pa, pb})
}

// SetSM records the node GUID and port through which the SM is attached.
func (b *Builder) SetSM(guid uint64, port uint8) {
	b.sm.guid, b.sm.port, b.sm.set = guid, port, true
}

// Build sorts nodes by GUID, resolves links and validates the result.
func (b *Builder) Build() (*Topology, error) {
	nodes := append([]Node(nil), b.nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].GUID < nodes[j].GUID })
	idx := make(map[uint64]int32, len(nodes))
	for i := range nodes {
		idx[nodes[i].GUID] = int32(i)
	}
	t := &Topology{Nodes: nodes, SM: PortRef{Node: NoNode}}
	for _, l := range b.links {
		na, oka := idx[l.a]
		nb, okb := idx[l.b]
		if !oka || !okb {
			return nil, fmt.Errorf("topology: link 0x%016x/%d - 0x%016x/%d names an unknown node", l.a, l.pa, l.b, l.pb)
		}
		if int(l.pa) >= len(nodes[na].Ports) || int(l.pb) >= len(nodes[nb].Ports) || l.pa == 0 || l.pb == 0 {
			return nil, fmt.Errorf("topology: link 0x%016x/%d - 0x%016x/%d names a port out of range", l.a, l.pa, l.b, l.pb)
		}
		pa, pb := &nodes[na].Ports[l.pa], &nodes[nb].Ports[l.pb]
		ra, rb := PortRef{nb, l.pb}, PortRef{na, l.pa}
		if (pa.Peer.Connected() && pa.Peer != ra) || (pb.Peer.Connected() && pb.Peer != rb) {
			return nil, fmt.Errorf("topology: port 0x%016x/%d or 0x%016x/%d is cabled twice", l.a, l.pa, l.b, l.pb)
		}
		pa.Peer, pb.Peer = ra, rb
	}
	if b.sm.set {
		n, ok := idx[b.sm.guid]
		if !ok {
			return nil, fmt.Errorf("topology: SM node 0x%016x not in topology", b.sm.guid)
		}
		t.SM = PortRef{n, b.sm.port}
	}
	t.index()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// Patch returns a copy of t in which each of nodes replaces t's node of
// the same GUID: a fabric model that changed in a few nodes (a cable went
// down or up) gets its snapshot in O(changed nodes) instead of being
// built again. The replacements keep their GUID, type and port count; their
// Peer fields are node indices of t (indices do not move: the node set is
// the same). Every other node shares its ports with t, and t is left as it
// was. The links of the replaced nodes must be symmetric with their peers,
// replaced or not, so a cable must be patched at both ends. The result
// equals what a Builder makes of the same nodes and links, hash included.
func (t *Topology) Patch(nodes []Node) (*Topology, error) {
	out := &Topology{Nodes: append([]Node(nil), t.Nodes...), SM: t.SM,
		switches: t.switches, switchIdx: t.switchIdx, endpoints: t.endpoints, epIdx: t.epIdx}
	idx := make([]int32, len(nodes))
	reindex := false
	for k, n := range nodes {
		i := t.NodeByGUID(n.GUID)
		if i == NoNode {
			return nil, fmt.Errorf("topology: patch names node 0x%016x, which the topology does not hold", n.GUID)
		}
		old := &t.Nodes[i]
		if n.Type != old.Type || len(n.Ports) != len(old.Ports) {
			return nil, fmt.Errorf("topology: patch changes node 0x%016x's type or port count", n.GUID)
		}
		if n.Type != Switch {
			// A CA port is an endpoint only while it is cabled.
			for p := 1; p < len(n.Ports); p++ {
				reindex = reindex || n.Ports[p].Peer.Connected() != old.Ports[p].Peer.Connected()
			}
		}
		out.Nodes[i] = n
		idx[k] = i
	}
	for k, i := range idx {
		if err := out.validateNode(i); err != nil {
			return nil, err
		}
		// A peer that lost its link to this node must be patched too.
		for p, op := range t.Nodes[i].Ports {
			if op.Peer.Connected() && op.Peer != nodes[k].Ports[p].Peer {
				back := out.Nodes[op.Peer.Node].Ports[op.Peer.Port].Peer
				if back.Node == i && int(back.Port) == p {
					return nil, fmt.Errorf("topology: patch cuts 0x%016x/%d but not its other end", nodes[k].GUID, p)
				}
			}
		}
	}
	if reindex {
		out.switches, out.endpoints = nil, nil
		out.index()
	}
	return out, nil
}
