package topogen

import (
	"fmt"

	"github.com/ibsm/ibsm/transport/netfile"
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

// Vendor and device IDs written into NodeInfo: Mellanox, SwitchX and
// ConnectX-3, the hardware generation that 36-port QDR/FDR fabrics used.
const (
	vendorMellanox = 0x02c9
	devSwitch      = 0xc738
	devCA          = 0x1003
)

// Cable is the width and speed every generated link trains at.
type Cable struct {
	Width netfile.Width // zero means 4x
	Speed netfile.Speed // zero means QDR
}

func (c Cable) resolve() Cable {
	if c.Width == 0 {
		c.Width = netfile.Width4x
	}
	if c.Speed == 0 {
		c.Speed = netfile.QDR
	}
	return c
}

// graph is the generators' intermediate form: nodes with declared port
// counts and links by port number. CAs have one port.
type graph struct {
	switches []gnode
	cas      []gnode
	links    []glink
}

type gnode struct {
	name, desc string
	ports      int // declared port count (switches); CAs use 1
}

// ref names a node: switches are 0..len(switches)-1, CA j is -(j+1).
type ref int32

func swRef(i int) ref { return ref(i) }
func caRef(j int) ref { return ref(-(j + 1)) }

func (r ref) isCA() bool { return r < 0 }
func (r ref) index() int {
	if r < 0 {
		return int(-r) - 1
	}
	return int(r)
}

type glink struct {
	a, b   ref
	pa, pb int
}

func (g *graph) addSwitch(name, desc string, ports int) int {
	g.switches = append(g.switches, gnode{name, desc, ports})
	return len(g.switches) - 1
}

// addCA adds a one-port CA cabled by its port 1 to switch sw, port sp.
func (g *graph) addCA(name, desc string, sw, sp int) {
	g.cas = append(g.cas, gnode{name, desc, 1})
	g.links = append(g.links, glink{caRef(len(g.cas) - 1), swRef(sw), 1, sp})
}

func (g *graph) connect(a, pa, b, pb int) {
	g.links = append(g.links, glink{swRef(a), swRef(b), pa, pb})
}

// checkSize rejects fabrics that cannot exist: more nodes than unicast LIDs
// or more ports than NodeInfo can express.
func checkSize(switches, cas, ports int) error {
	if n := switches + cas; n > MaxNodes || switches < 0 || cas < 0 {
		return fmt.Errorf("topogen: %d switches + %d CAs need %d LIDs, more than the %d unicast LIDs; choose a smaller fabric", switches, cas, switches+cas, MaxNodes)
	}
	if ports > netfile.MaxPorts {
		return fmt.Errorf("topogen: switches would need %d ports, more than the %d a switch can have; lower the CAs or degree per switch", ports, netfile.MaxPorts)
	}
	return nil
}

// file emits g through the netfile builder. CAs come first so that the
// first node's port 1 (ibsim's default attach point, and the sim
// transport's) is a host, where an SM normally runs.
func (g *graph) file(c Cable) (*netfile.File, error) {
	c = c.resolve()
	if err := checkSize(len(g.switches), len(g.cas), 0); err != nil {
		return nil, err
	}
	f := netfile.New()
	cas := make([]*netfile.Node, len(g.cas))
	for j, n := range g.cas {
		nd, err := f.AddCA(n.name, CAGUIDBase+2*uint64(j), 1)
		if err != nil {
			return nil, fmt.Errorf("topogen: %w", err)
		}
		nd.Desc, nd.VendorID, nd.DeviceID = clipDesc(n.desc), vendorMellanox, devCA
		cas[j] = nd
	}
	sws := make([]*netfile.Node, len(g.switches))
	for i, n := range g.switches {
		nd, err := f.AddSwitch(n.name, SwitchGUIDBase+uint64(i), n.ports)
		if err != nil {
			return nil, fmt.Errorf("topogen: %w", err)
		}
		nd.Desc, nd.VendorID, nd.DeviceID = clipDesc(n.desc), vendorMellanox, devSwitch
		sws[i] = nd
	}
	node := func(r ref) *netfile.Node {
		if r.isCA() {
			return cas[r.index()]
		}
		return sws[r.index()]
	}
	for _, l := range g.links {
		if err := f.Connect(node(l.a), l.pa, node(l.b), l.pb, c.Width, c.Speed); err != nil {
			return nil, fmt.Errorf("topogen: internal error, generator cabled a bad port: %w", err)
		}
	}
	return f, nil
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
