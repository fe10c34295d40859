// Package netfile reads and writes fabric topology files in the format that
// ibnetdiscover prints and ibsim loads (a "net" file), and offers a builder so
// that topology generators can produce such files programmatically.
//
// # Format
//
// A file is a sequence of node records separated by blank lines, plus
// directives that start at the beginning of a line:
//
//	vendid=0x2c9
//	devid=0xc738
//	sysimgguid=0x2c90300000100
//	switchguid=0x2c90300000100(2c90300000100)
//	Switch	36 "S-0002c90300000100"	# "leaf1" enhanced port 0 lid 3 lmc 0
//	[1]	"H-0002c90300001000"[1](2c90300001001)	# "host1 mlx5_0" lid 5 4xEDR
//	[2]	"S-0002c90300000200"[7]	w=2 s=4	# "spine1" lid 4 4xQDR
//
//	caguid=0x2c90300001000
//	Ca	1 "H-0002c90300001000"	# "host1 mlx5_0"
//	[1](2c90300001001)	"S-0002c90300000100"[1]	# lid 5 lmc 0 "leaf1" lid 3 4xEDR
//
// Header keywords are Switch, Ca, Hca and Rt. Port lines are
// "[p] [(own port GUID)] "peer-id"[q] [(peer port GUID)] [w=N s=N e=N] [# comment]";
// [q] defaults to 1. The comment is what ibnetdiscover appends; this package
// reads from it the CA port's own "lid N lmc N" (first lid in the comment on
// a CA/router port line) and the trailing active link "<width>x<SPEED>"
// (for example 4xQDR). Lines that are neither headers, port lines nor
// directives (ibnetdiscover's "Non-Chassis Nodes", "Chassis 1 ..." headings)
// are ignored, as ibsim ignores them; a port line outside a record is an error.
//
// Lines "include", "do", "module=" and port aliases "@[p]" are ibsim
// extensions this package rejects with an error: flatten the file first.
//
// # GUIDs
//
// GUIDs are assigned exactly as ibsim 0.10 assigns them, so that the embedded
// fabric and a real ibsim loaded with the same file agree: node GUIDs never
// come from the node id, only from the directives switchguid=, caguid= (or
// hcaguids=) and rtguid=, each of which sets the base for the next nodes of
// that type. A switch consumes one GUID (every switch port reports the node
// GUID); a CA or router with N ports consumes N+1 (PortGUID(p) = NodeGUID+p,
// unless the port line gives "(guid)", which this package honours and ibsim
// ignores). Without directives the bases are 0x100000 for CAs, 0x200000 for
// switches and 0 for routers. sysimgguid= and vendid= apply to the next node
// only (the system image GUID defaults to the node GUID); devid= is sticky.
//
// # Links
//
// A link may be declared from both ends (as ibnetdiscover prints and as ibsim
// requires) or from one end only; the parser completes it. Declaring a port
// twice, naming a port out of range, an unknown peer, two different peers
// for one port, or two different explicit speeds/widths for one link is an
// error reported as "file:line: message".
//
// Link width and speed: every port has enabled width and speed sets. They
// default to 4x and SDR (ibsim's defaults; change them with the width=,
// speed= and extspeed= directives), w=/s=/e= on a port line set them as
// PortInfo bit masks, and the ibnetdiscover trailer (4xQDR) sets them to
// exactly that value. The active value of a link is the fastest common one.
package netfile

import (
	"fmt"
	"math/bits"
	"sort"

	"github.com/ibsm/ibsm/sdk/topology"
)

// Width is a PortInfo LinkWidth bit: one bit for an active width, several for
// an enabled set.
type Width uint8

// Link widths as PortInfo encodes them.
const (
	Width1x  Width = 1
	Width4x  Width = 2
	Width8x  Width = 4
	Width12x Width = 8
	Width2x  Width = 16
)

// widthOrder lists widths slowest first (the bit values are not ordered).
var widthOrder = [...]struct {
	w    Width
	name string
}{{Width1x, "1x"}, {Width2x, "2x"}, {Width4x, "4x"}, {Width8x, "8x"}, {Width12x, "12x"}}

func (w Width) String() string {
	for _, o := range widthOrder {
		if o.w == w {
			return o.name
		}
	}
	return fmt.Sprintf("Width(%#x)", uint8(w))
}

// fastest returns the widest single width in the set w, or 0.
func (w Width) fastest() Width {
	for i := len(widthOrder) - 1; i >= 0; i-- {
		if w&widthOrder[i].w != 0 {
			return widthOrder[i].w
		}
	}
	return 0
}

// Speed is a link speed packed in one byte: the low nibble is PortInfo
// LinkSpeed (SDR 1, DDR 2, QDR 4), the high nibble PortInfo LinkSpeedExt
// (FDR 1, EDR 2, HDR 4, NDR 8). One bit is an active speed, several an enabled
// set; the highest bit is the fastest. topology.Port.Speed uses this encoding.
type Speed uint8

// Link speeds.
const (
	SDR Speed = 0x01
	DDR Speed = 0x02
	QDR Speed = 0x04
	FDR Speed = 0x10
	EDR Speed = 0x20
	HDR Speed = 0x40
	NDR Speed = 0x80
)

var speedNames = [...]struct {
	s    Speed
	name string
}{{SDR, "SDR"}, {DDR, "DDR"}, {QDR, "QDR"}, {FDR, "FDR"}, {EDR, "EDR"}, {HDR, "HDR"}, {NDR, "NDR"}}

func (s Speed) String() string {
	for _, o := range speedNames {
		if o.s == s {
			return o.name
		}
	}
	return fmt.Sprintf("Speed(%#x)", uint8(s))
}

// Base returns the PortInfo LinkSpeed nibble (SDR/DDR/QDR bits).
func (s Speed) Base() uint8 { return uint8(s) & 0x0F }

// Ext returns the PortInfo LinkSpeedExt nibble (FDR/EDR/HDR/NDR bits).
func (s Speed) Ext() uint8 { return uint8(s) >> 4 }

func (s Speed) fastest() Speed {
	if s == 0 {
		return 0
	}
	return Speed(1 << (7 - bits.LeadingZeros8(uint8(s))))
}

// Port is one port of a node. Ports[0] of a switch is its management port
// and never has a peer.
type Port struct {
	// GUID is the port GUID: the node GUID on switches, NodeGUID+p on CAs
	// unless set explicitly.
	GUID uint64
	// Peer and PeerPort name the other end of the cable; Peer is nil for an
	// unconnected port.
	Peer     *Node
	PeerPort int
	// Width and Speed are the link's active width and speed (0 if unconnected).
	Width Width
	Speed Speed
	// LID and LMC preset a CA or router port's addressing (ibsim honours
	// them); 0 means "not yet assigned". Unused on switch ports.
	LID uint16
	LMC uint8
}

// Node is a switch, CA or router.
type Node struct {
	Type topology.NodeType
	// Name is the node id in quotes on the header line ("S-0002c9..." or any
	// unique name without '"', '#' or '@'). ibsim's SIM_HOST and console use it.
	Name string
	// Desc is the NodeDescription (defaults to Name), at most 64 bytes on the wire.
	Desc         string
	GUID         uint64
	SysImageGUID uint64
	VendorID     uint32
	DeviceID     uint32
	// Enhanced marks a switch whose port 0 is enhanced (SwitchInfo EnhancedPort0).
	Enhanced bool
	// LID and LMC preset a switch's port 0 addressing; 0 = unassigned.
	LID uint16
	LMC uint8
	// Ports is indexed by port number; len(Ports) = NumPorts+1.
	Ports []Port

	line int
}

// NumPorts is the node's number of external ports.
func (n *Node) NumPorts() int { return len(n.Ports) - 1 }

// File is a parsed or built topology file. Nodes keep file (or insertion)
// order; the first node's first connected port is ibsim's default attach point.
type File struct {
	Nodes  []*Node
	byName map[string]*Node
	byGUID map[uint64]*Node
}

// New returns an empty File for building a topology programmatically.
func New() *File {
	return &File{byName: map[string]*Node{}, byGUID: map[uint64]*Node{}}
}

// Node returns the node with this id, or nil.
func (f *File) Node(name string) *Node { return f.byName[name] }

// NodeByGUID returns the node with this GUID, or nil.
func (f *File) NodeByGUID(guid uint64) *Node { return f.byGUID[guid] }

// MaxPorts is the largest port count a node may have (NodeInfo NumPorts is
// 8 bits and port 255 is reserved).
const MaxPorts = 254

// AddSwitch adds a switch with nports external ports. Its port GUIDs are the
// node GUID and its description defaults to the name.
func (f *File) AddSwitch(name string, guid uint64, nports int) (*Node, error) {
	return f.add(topology.Switch, name, guid, nports)
}

// AddCA adds a channel adapter with nports ports; PortGUID(p) = guid+p, so
// leave nports+1 GUIDs free per CA (as ibsim does).
func (f *File) AddCA(name string, guid uint64, nports int) (*Node, error) {
	return f.add(topology.CA, name, guid, nports)
}

// AddRouter adds a router; port GUIDs follow the CA rule.
func (f *File) AddRouter(name string, guid uint64, nports int) (*Node, error) {
	return f.add(topology.Router, name, guid, nports)
}

func (f *File) add(t topology.NodeType, name string, guid uint64, nports int) (*Node, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if nports < 1 || nports > MaxPorts {
		return nil, fmt.Errorf("netfile: node %q: %d ports, want 1..%d", name, nports, MaxPorts)
	}
	if guid == 0 {
		return nil, fmt.Errorf("netfile: node %q: GUID 0 is not valid; give every node a non-zero GUID", name)
	}
	if o := f.byName[name]; o != nil {
		return nil, fmt.Errorf("netfile: duplicate node id %q", name)
	}
	if o := f.byGUID[guid]; o != nil {
		return nil, fmt.Errorf("netfile: node %q: GUID 0x%016x already used by %q", name, guid, o.Name)
	}
	n := &Node{Type: t, Name: name, Desc: name, GUID: guid, SysImageGUID: guid, Ports: make([]Port, nports+1)}
	for p := range n.Ports {
		n.Ports[p].GUID = guid
		if t != topology.Switch && p > 0 {
			n.Ports[p].GUID = guid + uint64(p)
		}
	}
	f.Nodes = append(f.Nodes, n)
	f.byName[name] = n
	f.byGUID[guid] = n
	return n, nil
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("netfile: empty node id")
	}
	for _, c := range name {
		switch c {
		case '"', '#', '@', '\n', '\r':
			return fmt.Errorf("netfile: node id %q contains %q; ibsim cannot load it", name, c)
		}
	}
	return nil
}

// Connect cables port pa of a to port pb of b with the given active width
// and speed (one bit each).
func (f *File) Connect(a *Node, pa int, b *Node, pb int, w Width, s Speed) error {
	if a == nil || b == nil || f.byName[a.Name] != a || f.byName[b.Name] != b {
		return fmt.Errorf("netfile: Connect: node not in this file")
	}
	if err := checkPort(a, pa); err != nil {
		return err
	}
	if err := checkPort(b, pb); err != nil {
		return err
	}
	if a == b && pa == pb {
		return fmt.Errorf("netfile: Connect: %q[%d] cabled to itself", a.Name, pa)
	}
	if w == 0 || w&(w-1) != 0 || w > Width2x {
		return fmt.Errorf("netfile: Connect %q[%d]: width %#x is not a single PortInfo width bit", a.Name, pa, uint8(w))
	}
	if s == 0 || s&(s-1) != 0 || s == 0x08 {
		return fmt.Errorf("netfile: Connect %q[%d]: speed %#x is not a single speed bit", a.Name, pa, uint8(s))
	}
	for _, e := range [...]struct {
		n *Node
		p int
	}{{a, pa}, {b, pb}} {
		if pt := &e.n.Ports[e.p]; pt.Peer != nil {
			return fmt.Errorf("netfile: Connect: %q[%d] is already cabled to %q[%d]", e.n.Name, e.p, pt.Peer.Name, pt.PeerPort)
		}
	}
	link(a, pa, b, pb, w, s)
	return nil
}

func link(a *Node, pa int, b *Node, pb int, w Width, s Speed) {
	a.Ports[pa].Peer, a.Ports[pa].PeerPort, a.Ports[pa].Width, a.Ports[pa].Speed = b, pb, w, s
	b.Ports[pb].Peer, b.Ports[pb].PeerPort, b.Ports[pb].Width, b.Ports[pb].Speed = a, pa, w, s
}

func checkPort(n *Node, p int) error {
	if p < 1 || p > n.NumPorts() {
		return fmt.Errorf("netfile: port %d out of range: %s %q has %d ports", p, typeWord(n.Type), n.Name, n.NumPorts())
	}
	return nil
}

func typeWord(t topology.NodeType) string {
	switch t {
	case topology.Switch:
		return "switch"
	case topology.Router:
		return "router"
	}
	return "CA"
}

// Topology converts the file into a snapshot: link structure, active width
// and speed, VLCap 8 on every port. Connected ports are in Init (a trained
// link the SM has not yet activated, as in ibsim at start), unconnected ports
// Down, switch port 0 Active. The SM port is left unset.
func (f *File) Topology() (*topology.Topology, error) {
	b := topology.NewBuilder()
	for _, n := range f.Nodes {
		tn := topology.Node{GUID: n.GUID, Type: n.Type, Desc: n.Desc, Ports: make([]topology.Port, len(n.Ports))}
		for p := range n.Ports {
			src := &n.Ports[p]
			tp := &tn.Ports[p]
			if p == 0 {
				if n.Type == topology.Switch {
					tp.GUID, tp.State, tp.VLCap = n.GUID, topology.StateActive, 8
					tp.Width, tp.Speed = uint8(Width4x), uint8(SDR)
				}
				continue
			}
			tp.GUID, tp.VLCap, tp.State = src.GUID, 8, topology.StateDown
			if src.Peer != nil {
				tp.State = topology.StateInit
				tp.Width, tp.Speed = uint8(src.Width), uint8(src.Speed)
			}
		}
		if err := b.AddNode(tn); err != nil {
			return nil, fmt.Errorf("netfile: %w", err)
		}
	}
	for _, n := range f.Nodes {
		for p := 1; p < len(n.Ports); p++ {
			pt := &n.Ports[p]
			// Record each link once, from its lower (GUID, port) end.
			if pt.Peer == nil || pt.Peer.GUID < n.GUID || (pt.Peer == n && pt.PeerPort < p) {
				continue
			}
			b.Link(n.GUID, uint8(p), pt.Peer.GUID, uint8(pt.PeerPort))
		}
	}
	t, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("netfile: %w", err)
	}
	return t, nil
}

// Links returns every link once, ordered by (node order, port), for writers
// and tests.
func (f *File) Links() []Link {
	pos := make(map[*Node]int, len(f.Nodes))
	for i, n := range f.Nodes {
		pos[n] = i
	}
	var out []Link
	for i, n := range f.Nodes {
		for p := 1; p < len(n.Ports); p++ {
			pt := &n.Ports[p]
			if pt.Peer == nil {
				continue
			}
			j := pos[pt.Peer]
			if j < i || (j == i && pt.PeerPort < p) {
				continue
			}
			out = append(out, Link{A: n, PA: p, B: pt.Peer, PB: pt.PeerPort, Width: pt.Width, Speed: pt.Speed})
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if pos[out[a].A] != pos[out[b].A] {
			return pos[out[a].A] < pos[out[b].A]
		}
		return out[a].PA < out[b].PA
	})
	return out
}

// Link is one cable.
type Link struct {
	A     *Node
	PA    int
	B     *Node
	PB    int
	Width Width
	Speed Speed
}
