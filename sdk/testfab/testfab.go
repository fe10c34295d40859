// Package testfab builds synthetic fabrics (fat trees, rings, tori, lines,
// random graphs) as topology snapshots, and walks and realises plans on
// them, for plugin tests and benchmarks. It is the one fabric kit: sdktest
// and analysistest build their shapes here and differ only in Options
// (GUID numbering, names, VLCap, SM placement). Use it from tests: it is
// not tuned for production fabrics.
package testfab

import (
	"fmt"
	"math/rand/v2"

	"github.com/ibsm/ibsm/sdk/topology"
)

// GUID bases keep switches and CAs in disjoint, recognisable ranges.
const (
	SwitchGUIDBase = 0x0002_c900_0000_0000
	CAGUIDBase     = 0x0008_f100_0000_0000
)

// Option changes how a Fabric numbers, names and equips its nodes, or how
// a shape orders them.
type Option func(*style)

type style struct {
	vlcap       uint8
	switchGUID  func(n int) uint64 // n counts from 1
	caGUID      func(n int) uint64
	caPortGUID  func(node uint64, port int) uint64
	switchName  string // fmt format taking the switch's number
	caName      string
	smOnFirstCA bool
	leavesFirst bool
}

func newStyle(opts []Option) style {
	s := style{
		vlcap:      8,
		switchGUID: func(n int) uint64 { return SwitchGUIDBase + uint64(n) },
		caGUID:     func(n int) uint64 { return CAGUIDBase + uint64(n) },
		caPortGUID: func(node uint64, _ int) uint64 { return CAPortGUID(node) },
		switchName: "sw%d",
		caName:     "ca%d",
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// VLCap gives every port vlcap data VLs (default 8).
func VLCap(vlcap uint8) Option { return func(s *style) { s.vlcap = vlcap } }

// GUIDs numbers the n-th switch and CA (n from 1) and the CAs' port GUIDs
// (default: the bases above plus n, port GUID as CAPortGUID).
func GUIDs(sw, ca func(n int) uint64, caPort func(node uint64, port int) uint64) Option {
	return func(s *style) { s.switchGUID, s.caGUID, s.caPortGUID = sw, ca, caPort }
}

// Names formats node descriptions from the node's number (default "sw%d",
// "ca%d").
func Names(sw, ca string) Option { return func(s *style) { s.switchName, s.caName = sw, ca } }

// SMOnFirstCA puts the SM on port 1 of the first CA built, if any.
func SMOnFirstCA() Option { return func(s *style) { s.smOnFirstCA = true } }

// LeavesFirst makes FatTree2 number its leaves before its spines (by
// default the spines come first, as the upper levels do in FatTree3).
func LeavesFirst() Option { return func(s *style) { s.leavesFirst = true } }

// Fabric accumulates nodes and links for a Builder.
type Fabric struct {
	b        *topology.Builder
	st       style
	switches int
	cas      int
	firstCA  uint64
}

// New starts an empty fabric.
func New(opts ...Option) *Fabric { return &Fabric{b: topology.NewBuilder(), st: newStyle(opts)} }

// Switch adds a switch with ports 1..ports and returns its GUID.
func (f *Fabric) Switch(ports int) uint64 {
	f.switches++
	guid := f.st.switchGUID(f.switches)
	n := topology.Node{GUID: guid, Type: topology.Switch, Desc: fmt.Sprintf(f.st.switchName, f.switches), Ports: make([]topology.Port, ports+1)}
	for p := range n.Ports {
		n.Ports[p] = topology.Port{GUID: guid, State: topology.StateActive, Width: 2, Speed: 1, VLCap: f.st.vlcap}
	}
	// A switch has one port GUID, carried on port 0.
	if err := f.b.AddNode(n); err != nil {
		panic(err) // GUIDs are generated uniquely above
	}
	return guid
}

// CA adds a one-port CA and returns its node GUID.
func (f *Fabric) CA() uint64 {
	f.cas++
	guid := f.st.caGUID(f.cas)
	n := topology.Node{GUID: guid, Type: topology.CA, Desc: fmt.Sprintf(f.st.caName, f.cas), Ports: make([]topology.Port, 2)}
	n.Ports[1] = topology.Port{GUID: f.st.caPortGUID(guid, 1), State: topology.StateActive, Width: 2, Speed: 1, VLCap: f.st.vlcap}
	if err := f.b.AddNode(n); err != nil {
		panic(err)
	}
	if f.firstCA == 0 {
		f.firstCA = guid
	}
	return guid
}

// CAOn adds a one-port CA cabled to port of switch sw and returns its GUID.
func (f *Fabric) CAOn(sw uint64, port int) uint64 {
	g := f.CA()
	f.Link(g, 1, sw, port)
	return g
}

// CAPortGUID is the port GUID the default numbering gives port 1 of CA
// node guid.
func CAPortGUID(guid uint64) uint64 { return guid | 1<<32 }

// Link cables two ports.
func (f *Fabric) Link(a uint64, pa int, b uint64, pb int) { f.b.Link(a, uint8(pa), b, uint8(pb)) }

// Build returns the snapshot.
func (f *Fabric) Build() (*topology.Topology, error) {
	if f.st.smOnFirstCA && f.firstCA != 0 {
		f.b.SetSM(f.firstCA, 1)
	}
	return f.b.Build()
}

// FatTree2 builds a two-level fat tree: leaves leaf switches with hosts CAs
// each on ports 1..hosts, and one cable from port hosts+1+s of every leaf
// to port leaf+1 of every spine s.
func FatTree2(leaves, spines, hosts int, opts ...Option) (*topology.Topology, error) {
	if leaves < 1 || spines < 1 || hosts < 0 || hosts+spines > 254 || leaves > 254 {
		return nil, fmt.Errorf("fat tree %dx%d with %d hosts per leaf does not fit 254-port switches", leaves, spines, hosts)
	}
	f := New(opts...)
	sp := make([]uint64, spines)
	ls := make([]uint64, leaves)
	if f.st.leavesFirst {
		for l := range ls {
			ls[l] = f.Switch(hosts + spines)
		}
	}
	for s := range sp {
		sp[s] = f.Switch(leaves)
	}
	for l := range ls {
		if !f.st.leavesFirst {
			ls[l] = f.Switch(hosts + spines)
		}
		for h := 0; h < hosts; h++ {
			f.CAOn(ls[l], h+1)
		}
		for s, sg := range sp {
			f.Link(ls[l], hosts+s+1, sg, l+1)
		}
	}
	return f.Build()
}

// FatTree3 builds the classic three-level fat tree of radix-k switches
// (k even): k pods of k/2 leaves and k/2 aggregation switches, (k/2)^2 core
// switches, k/2 CAs per leaf. k=36 gives the reference fabric (1,620
// switches, 11,664 CAs).
func FatTree3(k int, opts ...Option) (*topology.Topology, error) {
	if k < 2 || k%2 != 0 || k > 254 {
		return nil, fmt.Errorf("testfab: fat tree radix %d must be even and in 2..254", k)
	}
	h := k / 2
	f := New(opts...)
	core := make([]uint64, h*h)
	for i := range core {
		core[i] = f.Switch(k)
	}
	for pod := 0; pod < k; pod++ {
		aggs := make([]uint64, h)
		for j := range aggs {
			aggs[j] = f.Switch(k)
			// Aggregation j, up-port m (h+1+m) -> core j*h+m, down-port pod+1.
			for m := 0; m < h; m++ {
				f.Link(aggs[j], h+1+m, core[j*h+m], pod+1)
			}
		}
		for i := 0; i < h; i++ {
			leaf := f.Switch(k)
			for j := 0; j < h; j++ {
				f.Link(leaf, h+1+j, aggs[j], i+1)
			}
			for c := 0; c < h; c++ {
				f.CAOn(leaf, c+1)
			}
		}
	}
	return f.Build()
}

// Ring builds n switches in a ring (port 1 to the next switch's port 2),
// each with casPer CAs on ports 3...
func Ring(n, casPer int, opts ...Option) (*topology.Topology, error) {
	f := New(opts...)
	sw := make([]uint64, n)
	for i := range sw {
		sw[i] = f.Switch(2 + casPer)
	}
	for i := range sw {
		f.Link(sw[i], 1, sw[(i+1)%n], 2)
		for c := 0; c < casPer; c++ {
			f.CAOn(sw[i], 3+c)
		}
	}
	return f.Build()
}

// Torus2D builds an x-by-y torus (ports 1..4: +x, -x, +y, -y; switch
// (i, j) is the i*y+j-th) with casPer CAs per switch on ports 5...
func Torus2D(x, y, casPer int, opts ...Option) (*topology.Topology, error) {
	f := New(opts...)
	sw := make([]uint64, x*y)
	for i := range sw {
		sw[i] = f.Switch(4 + casPer)
	}
	at := func(i, j int) uint64 { return sw[((i+x)%x)*y+(j+y)%y] }
	for i := 0; i < x; i++ {
		for j := 0; j < y; j++ {
			f.Link(at(i, j), 1, at(i+1, j), 2)
			f.Link(at(i, j), 3, at(i, j+1), 4)
			for c := 0; c < casPer; c++ {
				f.CAOn(at(i, j), 5+c)
			}
		}
	}
	return f.Build()
}

// Line builds n switches in a chain with casPer CAs each (ports as in Ring).
func Line(n, casPer int, opts ...Option) (*topology.Topology, error) {
	f := New(opts...)
	sw := make([]uint64, n)
	for i := range sw {
		sw[i] = f.Switch(2 + casPer)
	}
	for i := range sw {
		if i+1 < n {
			f.Link(sw[i], 1, sw[i+1], 2)
		}
		for c := 0; c < casPer; c++ {
			f.CAOn(sw[i], 3+c)
		}
	}
	return f.Build()
}

// Random builds a connected random fabric from seed: a random spanning tree
// over switches plus extra random cables until no switch has a free
// inter-switch port left or the tries run out; every switch gets hosts CAs
// on ports 1..hosts.
func Random(seed uint64, switches, radix, hosts int, opts ...Option) (*topology.Topology, error) {
	if switches < 1 || radix-hosts < 2 || radix > 254 || hosts < 0 {
		return nil, fmt.Errorf("random fabric of %d switches, radix %d, %d hosts each is not buildable", switches, radix, hosts)
	}
	rng := rand.New(rand.NewPCG(seed, 0x1b5f))
	f := New(opts...)
	sw := make([]uint64, switches)
	free := make([]int, switches) // next free inter-switch port
	for i := range sw {
		sw[i] = f.Switch(radix)
		free[i] = hosts + 1
		for j := 0; j < hosts; j++ {
			f.CAOn(sw[i], j+1)
		}
	}
	link := func(a, b int) {
		f.Link(sw[a], free[a], sw[b], free[b])
		free[a]++
		free[b]++
	}
	for i := 1; i < switches; i++ {
		// Attach to a random earlier switch with a free port; the previous
		// switch always has one (it used one of its >= 2), so the tree
		// spans every switch.
		j := rng.IntN(i)
		for free[j] > radix {
			j = (j + 1) % i
		}
		link(i, j)
	}
	for try := 0; try < switches*radix; try++ {
		a, b := rng.IntN(switches), rng.IntN(switches)
		if a != b && free[a] <= radix && free[b] <= radix {
			link(a, b)
		}
	}
	return f.Build()
}
