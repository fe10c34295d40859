// Package topology holds the immutable fabric snapshot that the host hands to
// every plugin. Nodes are stored sorted by node GUID so that indices, and the
// canonical hash, do not depend on the order in which discovery found them.
package topology

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
)

// NodeType is the NodeInfo NodeType field.
type NodeType uint8

const (
	CA     NodeType = 1
	Switch NodeType = 2
	Router NodeType = 3
)

func (t NodeType) String() string {
	switch t {
	case CA:
		return "CA"
	case Switch:
		return "Switch"
	case Router:
		return "Router"
	}
	return fmt.Sprintf("NodeType(%d)", uint8(t))
}

// PortState is the PortInfo PortState field.
type PortState uint8

const (
	StateNoChange PortState = 0
	StateDown     PortState = 1
	StateInit     PortState = 2
	StateArmed    PortState = 3
	StateActive   PortState = 4
)

// NoNode marks an unconnected PortRef.
const NoNode int32 = -1

// PortRef names a port by node index (into Topology.Nodes) and port number.
type PortRef struct {
	Node int32
	Port uint8
}

// Connected reports whether r names a port.
func (r PortRef) Connected() bool { return r.Node >= 0 }

// Port is one physical port (or, at index 0 of a switch, its management port).
type Port struct {
	GUID  uint64
	State PortState
	// Width and Speed are PortInfo LinkWidthActive / LinkSpeedActive encodings.
	Width uint8
	Speed uint8
	// VLCap is the number of data VLs the port supports (1, 2, 4, 8 or 15).
	VLCap uint8
	// Peer is the port at the other end of the link; Node == NoNode if none.
	Peer PortRef
}

// Node is one switch, CA or router.
type Node struct {
	GUID uint64
	Type NodeType
	Desc string
	// Ports is indexed by port number; Ports[0] is a switch's management
	// port and is unused (zero) for CAs.
	Ports []Port
}

// NumPorts is the number of external ports (NodeInfo NumPorts).
func (n *Node) NumPorts() int { return len(n.Ports) - 1 }

// Topology is an immutable, canonically ordered fabric snapshot. Build one
// with a Builder; do not mutate it afterwards.
type Topology struct {
	Nodes []Node
	// SM is the port through which the SM reaches the fabric.
	SM PortRef

	switches  []int32 // node indices of switches, ascending
	switchIdx []int32 // node index -> switch index, -1 for non-switches
	endpoints []PortRef
	epIdx     map[PortRef]int32
}

// Switches returns the node indices of all switches in ascending order. The
// position of a node in this slice is its switch index, used by plane tables.
func (t *Topology) Switches() []int32 { return t.switches }

// SwitchIndex maps a node index to its switch index, or -1.
func (t *Topology) SwitchIndex(node int32) int32 { return t.switchIdx[node] }

// Endpoints lists every port that gets a LID: each switch's port 0 and each
// connected CA/router port, ordered by (node index, port).
func (t *Topology) Endpoints() []PortRef { return t.endpoints }

// EndpointIndex returns the position of p in Endpoints(), or -1.
func (t *Topology) EndpointIndex(p PortRef) int32 {
	if i, ok := t.epIdx[p]; ok {
		return i
	}
	return -1
}

// Port returns the port r names.
func (t *Topology) Port(r PortRef) *Port { return &t.Nodes[r.Node].Ports[r.Port] }

// PortGUID is the GUID a port's LID is persisted under (the keys of
// LIDRequest.Previous): the port GUID, or a switch's node GUID for port 0
// when the snapshot left the port GUID unset; 0 when there is none.
func (t *Topology) PortGUID(r PortRef) uint64 {
	if g := t.Port(r).GUID; g != 0 {
		return g
	}
	if r.Port == 0 {
		return t.Nodes[r.Node].GUID
	}
	return 0
}

// NodeByGUID finds a node by GUID with a binary search.
func (t *Topology) NodeByGUID(guid uint64) int32 {
	i := sort.Search(len(t.Nodes), func(i int) bool { return t.Nodes[i].GUID >= guid })
	if i < len(t.Nodes) && t.Nodes[i].GUID == guid {
		return int32(i)
	}
	return NoNode
}

// IsLinkUp reports whether the port has a peer and both ends are at least Init
// (a link that trained; the SM may still have to arm and activate it).
func (t *Topology) IsLinkUp(r PortRef) bool {
	p := t.Port(r)
	if !p.Peer.Connected() || p.State < StateInit {
		return false
	}
	return t.Port(p.Peer).State >= StateInit
}

// LinkVLs is the number of data VLs traffic may use leaving through port r:
// the smaller VLCap of the two ends of its link (of r alone if unlinked). An
// unreported VLCap (0) counts as VL0 only.
func (t *Topology) LinkVLs(r PortRef) int {
	vls := func(c uint8) int { return max(int(c), 1) }
	p := t.Port(r)
	n := vls(p.VLCap)
	if p.Peer.Connected() {
		n = min(n, vls(t.Port(p.Peer).VLCap))
	}
	return n
}

// MinLinkVLs is the smallest LinkVLs over the fabric's cabled ports (15
// when nothing is cabled): the most VLs a plan can use on every link.
func (t *Topology) MinLinkVLs() int {
	m := 15
	for i := range t.Nodes {
		for p := 1; p < len(t.Nodes[i].Ports); p++ {
			r := PortRef{Node: int32(i), Port: uint8(p)}
			if t.Port(r).Peer.Connected() {
				m = min(m, t.LinkVLs(r))
			}
		}
	}
	return m
}

// index (re)builds the derived lookups. Called by the builder and decoders.
func (t *Topology) index() {
	t.switches = t.switches[:0]
	t.switchIdx = make([]int32, len(t.Nodes))
	t.endpoints = t.endpoints[:0]
	for i := range t.Nodes {
		n := &t.Nodes[i]
		t.switchIdx[i] = -1
		if n.Type == Switch {
			t.switchIdx[i] = int32(len(t.switches))
			t.switches = append(t.switches, int32(i))
			t.endpoints = append(t.endpoints, PortRef{int32(i), 0})
			continue
		}
		for p := 1; p < len(n.Ports); p++ {
			if n.Ports[p].Peer.Connected() {
				t.endpoints = append(t.endpoints, PortRef{int32(i), uint8(p)})
			}
		}
	}
	t.epIdx = make(map[PortRef]int32, len(t.endpoints))
	for i, e := range t.endpoints {
		t.epIdx[e] = int32(i)
	}
}

// validateNode checks node i's port count and that its links are
// symmetric and in range.
func (t *Topology) validateNode(i int32) error {
	n := &t.Nodes[i]
	if len(n.Ports) < 2 || len(n.Ports) > 255 {
		return fmt.Errorf("topology: node 0x%016x has %d ports, want 1..254", n.GUID, len(n.Ports)-1)
	}
	for p := range n.Ports {
		peer := n.Ports[p].Peer
		if !peer.Connected() {
			continue
		}
		if p == 0 {
			return fmt.Errorf("topology: node 0x%016x port 0 has a link", n.GUID)
		}
		if int(peer.Node) >= len(t.Nodes) || int(peer.Port) >= len(t.Nodes[peer.Node].Ports) || peer.Port == 0 {
			return fmt.Errorf("topology: node 0x%016x port %d links to a missing port", n.GUID, p)
		}
		back := t.Nodes[peer.Node].Ports[peer.Port].Peer
		if back.Node != i || int(back.Port) != p {
			return fmt.Errorf("topology: link 0x%016x/%d is not symmetric", n.GUID, p)
		}
	}
	return nil
}

// Validate checks structural invariants: sorted unique GUIDs, symmetric links,
// port numbers in range. Decoders of untrusted input call it.
func (t *Topology) Validate() error {
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if i > 0 && t.Nodes[i-1].GUID >= n.GUID {
			return fmt.Errorf("topology: nodes not sorted by unique GUID at index %d (0x%016x)", i, n.GUID)
		}
		if err := t.validateNode(int32(i)); err != nil {
			return err
		}
	}
	if len(t.Nodes) > 0 && t.SM.Connected() && int(t.SM.Node) >= len(t.Nodes) {
		return fmt.Errorf("topology: SM port names node %d of %d", t.SM.Node, len(t.Nodes))
	}
	return nil
}

// Unshared lists, ascending, the nodes of t whose ports t does not share
// with prev, and reports whether the two hold the same nodes at the same
// indices (false: any node may differ). A snapshot patched from prev
// (Patch) shares every node it was not given, so the list is what the
// patch changed: callers compare those instead of every node. O(nodes)
// pointer compares.
func (t *Topology) Unshared(prev *Topology) ([]int32, bool) {
	if prev == nil || len(t.Nodes) != len(prev.Nodes) {
		return nil, false
	}
	var out []int32
	for i := range t.Nodes {
		a, b := &prev.Nodes[i], &t.Nodes[i]
		if a.GUID != b.GUID || a.Type != b.Type {
			return nil, false
		}
		if len(a.Ports) != len(b.Ports) || len(a.Ports) > 0 && &a.Ports[0] != &b.Ports[0] {
			out = append(out, int32(i))
		}
	}
	return out, true
}

// NodeEndpoints lists node i's endpoints in Endpoints() order: a
// switch's port 0, a CA's or router's cabled ports. It is the part of
// Endpoints() (ordered by node) that names node i, found by a binary
// search: shared, do not change it.
func (t *Topology) NodeEndpoints(i int32) []PortRef {
	eps := t.endpoints
	lo, _ := slices.BinarySearchFunc(eps, i, func(r PortRef, n int32) int { return cmp.Compare(r.Node, n) })
	hi := lo
	for hi < len(eps) && eps[hi].Node == i {
		hi++
	}
	return eps[lo:hi:hi]
}
