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
