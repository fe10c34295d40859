// Package testfab builds synthetic fabrics (fat trees, rings, tori, lines)
// as topology snapshots, and walks and realises plans on them, for plugin
// tests and benchmarks. Use it from tests: it is not tuned for production
// fabrics.
package testfab

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/topology"
)

// GUID bases keep switches and CAs in disjoint, recognisable ranges.
const (
	SwitchGUIDBase = 0x0002_c900_0000_0000
	CAGUIDBase     = 0x0008_f100_0000_0000
)

// Fabric accumulates nodes and links for a Builder.
type Fabric struct {
	b        *topology.Builder
	switches int
	cas      int
}

// New starts an empty fabric.
func New() *Fabric { return &Fabric{b: topology.NewBuilder()} }

// Switch adds a switch with ports 1..ports and returns its GUID.
func (f *Fabric) Switch(ports int) uint64 {
	guid := uint64(SwitchGUIDBase + f.switches + 1)
	f.switches++
	n := topology.Node{GUID: guid, Type: topology.Switch, Desc: fmt.Sprintf("sw%d", f.switches), Ports: make([]topology.Port, ports+1)}
	for p := range n.Ports {
		n.Ports[p] = topology.Port{GUID: guid, State: topology.StateActive, Width: 2, Speed: 1, VLCap: 8}
	}
	// A switch has one port GUID, carried on port 0.
	if err := f.b.AddNode(n); err != nil {
		panic(err) // GUIDs are generated uniquely above
	}
	return guid
}

// CA adds a one-port CA and returns its GUID (node GUID; port GUID = GUID+1<<32).
func (f *Fabric) CA() uint64 {
	guid := uint64(CAGUIDBase + f.cas + 1)
	f.cas++
	n := topology.Node{GUID: guid, Type: topology.CA, Desc: fmt.Sprintf("ca%d", f.cas), Ports: make([]topology.Port, 2)}
	n.Ports[1] = topology.Port{GUID: CAPortGUID(guid), State: topology.StateActive, Width: 2, Speed: 1, VLCap: 8}
	if err := f.b.AddNode(n); err != nil {
		panic(err)
	}
	return guid
}

// CAPortGUID is the port GUID the generator gives port 1 of CA node guid.
func CAPortGUID(guid uint64) uint64 { return guid | 1<<32 }

// Link cables two ports.
func (f *Fabric) Link(a uint64, pa int, b uint64, pb int) { f.b.Link(a, uint8(pa), b, uint8(pb)) }

// Build returns the snapshot.
func (f *Fabric) Build() (*topology.Topology, error) { return f.b.Build() }

// FatTree3 builds the classic three-level fat tree of radix-k switches
// (k even): k pods of k/2 leaves and k/2 aggregation switches, (k/2)^2 core
// switches, k/2 CAs per leaf. k=36 gives the reference fabric (1,620
// switches, 11,664 CAs).
func FatTree3(k int) (*topology.Topology, error) {
	if k < 2 || k%2 != 0 {
		return nil, fmt.Errorf("testfab: fat tree radix %d must be even and >= 2", k)
	}
	h := k / 2
	f := New()
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
				f.Link(leaf, c+1, f.CA(), 1)
			}
		}
	}
	return f.Build()
}

// Ring builds n switches in a ring (port 1 to the next switch's port 2),
// each with casPer CAs on ports 3...
func Ring(n, casPer int) (*topology.Topology, error) {
	f := New()
	sw := make([]uint64, n)
	for i := range sw {
		sw[i] = f.Switch(2 + casPer)
	}
	for i := range sw {
		f.Link(sw[i], 1, sw[(i+1)%n], 2)
		for c := 0; c < casPer; c++ {
			f.Link(sw[i], 3+c, f.CA(), 1)
		}
	}
	return f.Build()
}

// Torus2D builds an x-by-y torus (ports 1..4: +x, -x, +y, -y) with casPer CAs
// per switch on ports 5...
func Torus2D(x, y, casPer int) (*topology.Topology, error) {
	f := New()
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
				f.Link(at(i, j), 5+c, f.CA(), 1)
			}
		}
	}
	return f.Build()
}

// Line builds n switches in a chain with casPer CAs each (ports as in Ring).
func Line(n, casPer int) (*topology.Topology, error) {
	f := New()
	sw := make([]uint64, n)
	for i := range sw {
		sw[i] = f.Switch(2 + casPer)
	}
	for i := range sw {
		if i+1 < n {
			f.Link(sw[i], 1, sw[i+1], 2)
		}
		for c := 0; c < casPer; c++ {
			f.Link(sw[i], 3+c, f.CA(), 1)
		}
	}
	return f.Build()
}
