package gen

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/topology"
)

// GUID ranges. Switch i gets SwitchGUIDBase+i; CA j gets CAGUIDBase+2j
// because a one-port CA also owns NodeGUID+1 as its port GUID (the ibsim
// rule). The two ranges cannot meet below 2^24 switches.
const (
	SwitchGUIDBase uint64 = 0x0002c90000000001
	CAGUIDBase     uint64 = 0x0002c90100000000
)

// MaxNodes is the number of unicast LIDs (0x0001..0xBFFF). Every switch and
// every CA port needs one, so a larger fabric cannot be brought up by any SM.
const MaxNodes = 0xBFFF

// MaxPorts is the largest port count a node may have (NodeInfo NumPorts is
// 8 bits and port 255 is reserved).
const MaxPorts = 254

// PortInfo encodings of the cable defaults and of a switch's port 0.
const (
	width4x  = 0x02 // LinkWidthActive 4x
	speedSDR = 0x01 // LinkSpeedActive 2.5 Gb/s
	speedQDR = 0x04 // LinkSpeedActive 10 Gb/s
)

// Cable is the width and speed every generated link trains at, as
// PortInfo encodes them (LinkWidthActive bit, LinkSpeedActive or
// LinkSpeedExtActive<<4 for FDR and faster).
type Cable struct {
	Width uint8 // zero means 4x
	Speed uint8 // zero means QDR
}

func (c Cable) resolve() Cable {
	if c.Width == 0 {
		c.Width = width4x
	}
	if c.Speed == 0 {
		c.Speed = speedQDR
	}
	return c
}

// Shape is any of FatTree, Torus, Random, RRG, Dragonfly, HyperX or Kautz.
type Shape interface {
	Graph() (*Graph, error)
}

// Graph is a generated fabric: nodes with declared port counts and links
// by port number. CAs have one port, cabled by port 1. Switch i has GUID
// SwitchGUIDBase+i and CA j CAGUIDBase+2j; a file or snapshot lists the
// CAs first, so the first node's port 1 (ibsim's default attach point, and
// the sim transport's) is a host, where an SM normally runs.
type Graph struct {
	Switches []Node
	CAs      []Node
	Links    []Link
	Cable    Cable // resolved: no zero fields
}

// Node is a switch or CA of a Graph.
type Node struct {
	Name  string // short unique id ("ft3-spine-40")
	Desc  string // NodeDescription, at most 64 bytes ("ft3 pod 2 spine 40")
	Ports int    // declared port count (switches); CAs have 1
}

// Ref names a node of a Graph: switches are 0..len(Switches)-1, CA j is
// -(j+1).
type Ref int32

// SwitchRef is switch i; CARef is CA j.
func SwitchRef(i int) Ref { return Ref(i) }
func CARef(j int) Ref     { return Ref(-(j + 1)) }

// IsCA reports whether r is a CA.
func (r Ref) IsCA() bool { return r < 0 }

// Index is r's position in Switches or CAs.
func (r Ref) Index() int {
	if r < 0 {
		return int(-r) - 1
	}
	return int(r)
}

// Link is a cable from port PA of A to port PB of B.
type Link struct {
	A, B   Ref
	PA, PB int
}

// GUID is r's node GUID.
func (r Ref) GUID() uint64 {
	if r.IsCA() {
		return CAGUIDBase + 2*uint64(r.Index())
	}
	return SwitchGUIDBase + uint64(r.Index())
}

func (g *Graph) addSwitch(name, desc string, ports int) int {
	g.Switches = append(g.Switches, Node{name, clipDesc(desc), ports})
	return len(g.Switches) - 1
}

// addCA adds a one-port CA cabled by its port 1 to switch sw, port sp.
func (g *Graph) addCA(name, desc string, sw, sp int) {
	g.CAs = append(g.CAs, Node{name, clipDesc(desc), 1})
	g.Links = append(g.Links, Link{CARef(len(g.CAs) - 1), SwitchRef(sw), 1, sp})
}

func (g *Graph) connect(a, pa, b, pb int) {
	g.Links = append(g.Links, Link{SwitchRef(a), SwitchRef(b), pa, pb})
}

// cabled sets the cable a generator's graph (or its error) is built with.
func cabled(g *Graph, err error) func(Cable) (*Graph, error) {
	return func(c Cable) (*Graph, error) {
		if err != nil {
			return nil, err
		}
		g.Cable = c.resolve()
		return g, nil
	}
}

// Topology generates s and converts it to a routing snapshot as the SM
// sees the fabric before activating it: cabled ports Init, free ports
// Down, 8 data VLs, a switch's port 0 Active. host/topogen writes the same
// graph as a topology file; that file read back has an equal snapshot.
func Topology(s Shape) (*topology.Topology, error) {
	g, err := s.Graph()
	if err != nil {
		return nil, err
	}
	return g.Topology()
}

// Topology converts g as the package function Topology does.
func (g *Graph) Topology() (*topology.Topology, error) {
	if err := checkSize(len(g.Switches), len(g.CAs), 0); err != nil {
		return nil, err
	}
	c := g.Cable.resolve()
	b := topology.NewBuilder()
	nodes := make([]topology.Node, 0, len(g.CAs)+len(g.Switches))
	for j, n := range g.CAs {
		guid := CARef(j).GUID()
		tn := topology.Node{GUID: guid, Type: topology.CA, Desc: n.Desc, Ports: make([]topology.Port, n.Ports+1)}
		for p := 1; p <= n.Ports; p++ {
			tn.Ports[p] = topology.Port{GUID: guid + uint64(p), VLCap: 8, State: topology.StateDown}
		}
		nodes = append(nodes, tn)
	}
	for i, n := range g.Switches {
		guid := SwitchRef(i).GUID()
		tn := topology.Node{GUID: guid, Type: topology.Switch, Desc: n.Desc, Ports: make([]topology.Port, n.Ports+1)}
		tn.Ports[0] = topology.Port{GUID: guid, State: topology.StateActive, VLCap: 8, Width: width4x, Speed: speedSDR}
		for p := 1; p <= n.Ports; p++ {
			tn.Ports[p] = topology.Port{GUID: guid, VLCap: 8, State: topology.StateDown}
		}
		nodes = append(nodes, tn)
	}
	at := func(r Ref) *topology.Node {
		if r.IsCA() {
			return &nodes[r.Index()]
		}
		return &nodes[len(g.CAs)+r.Index()]
	}
	for _, l := range g.Links {
		for _, end := range [2]struct {
			r Ref
			p int
		}{{l.A, l.PA}, {l.B, l.PB}} {
			n := at(end.r)
			if end.p < 1 || end.p >= len(n.Ports) || n.Ports[end.p].State != topology.StateDown {
				return nil, fmt.Errorf("gen: internal error, generator cabled %s port %d twice or out of range", n.Desc, end.p)
			}
			n.Ports[end.p].State, n.Ports[end.p].Width, n.Ports[end.p].Speed = topology.StateInit, c.Width, c.Speed
		}
	}
	for _, n := range nodes {
		if err := b.AddNode(n); err != nil {
			return nil, fmt.Errorf("gen: %w", err)
		}
	}
	for _, l := range g.Links {
		b.Link(l.A.GUID(), uint8(l.PA), l.B.GUID(), uint8(l.PB))
	}
	t, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("gen: %w", err)
	}
	return t, nil
}

// checkSize rejects fabrics that cannot exist: more nodes than unicast LIDs
// or more ports than NodeInfo can express.
func checkSize(switches, cas, ports int) error {
	if n := switches + cas; n > MaxNodes || switches < 0 || cas < 0 {
		return fmt.Errorf("topogen: %d switches + %d CAs need %d LIDs, more than the %d unicast LIDs; choose a smaller fabric", switches, cas, switches+cas, MaxNodes)
	}
	if ports > MaxPorts {
		return fmt.Errorf("topogen: switches would need %d ports, more than the %d a switch can have; lower the CAs or degree per switch", ports, MaxPorts)
	}
	return nil
}

// connected reports whether the switches of adj form one component.
func connected(adj [][]int32) bool {
	if len(adj) == 0 {
		return true
	}
	seen := make([]bool, len(adj))
	stack := []int32{0}
	seen[0] = true
	n := 1
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, v := range adj[u] {
			if !seen[v] {
				seen[v] = true
				n++
				stack = append(stack, v)
			}
		}
	}
	return n == len(adj)
}

// clipDesc keeps a description within NodeDescription's 64 bytes; the
// generated ones are ASCII, and the node id stays unique regardless.
func clipDesc(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}
