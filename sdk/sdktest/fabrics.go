package sdktest

import (
	"fmt"
	"math/rand/v2"

	"github.com/ibsm/ibsm/sdk/topology"
)

// Node GUID ranges of the generated fabrics; port GUIDs of CAs are the node
// GUID plus the port number, switch ports share the node GUID.
const (
	switchGUIDBase uint64 = 0x0002_c903_0000_0000
	caGUIDBase     uint64 = 0x0002_c904_0000_0000
)

// fabric accumulates nodes for a topology.Builder with uniform, active ports.
type fabric struct {
	b       *topology.Builder
	sw, cas int
}

func newFabric() *fabric { return &fabric{b: topology.NewBuilder()} }

func ports(n int, guid uint64, perPort bool) []topology.Port {
	p := make([]topology.Port, n+1)
	for i := range p {
		p[i] = topology.Port{GUID: guid, State: topology.StateActive, Width: 2, Speed: 1, VLCap: 4}
		if perPort {
			p[i].GUID = guid + uint64(i)
		}
	}
	if perPort {
		p[0] = topology.Port{}
	}
	return p
}

func (f *fabric) addSwitch(nports int) uint64 {
	g := switchGUIDBase + uint64(f.sw)<<8
	f.sw++
	if err := f.b.AddNode(topology.Node{GUID: g, Type: topology.Switch, Desc: fmt.Sprintf("switch-%d", f.sw), Ports: ports(nports, g, false)}); err != nil {
		panic(err) // unreachable: generated GUIDs are unique
	}
	return g
}

func (f *fabric) addCA(nports int) uint64 {
	g := caGUIDBase + uint64(f.cas)<<8
	f.cas++
	if err := f.b.AddNode(topology.Node{GUID: g, Type: topology.CA, Desc: fmt.Sprintf("host-%d HCA-1", f.cas), Ports: ports(nports, g, true)}); err != nil {
		panic(err)
	}
	return g
}

// FatTree2 builds a two-level fat tree: leaves leaf switches with hosts CAs
// each and one cable from every leaf to every one of spines spine switches.
func FatTree2(leaves, spines, hosts int) (*topology.Topology, error) {
	if leaves < 1 || spines < 1 || hosts < 0 || hosts+spines > 254 || leaves > 254 {
		return nil, fmt.Errorf("fat tree %dx%d with %d hosts per leaf does not fit 254-port switches", leaves, spines, hosts)
	}
	f := newFabric()
	sp := make([]uint64, spines)
	for s := range sp {
		sp[s] = f.addSwitch(leaves)
	}
	var first uint64
	for l := 0; l < leaves; l++ {
		lg := f.addSwitch(hosts + spines)
		for h := 0; h < hosts; h++ {
			ca := f.addCA(1)
			if first == 0 {
				first = ca
			}
			f.b.Link(lg, uint8(h+1), ca, 1)
		}
		for s, sg := range sp {
			f.b.Link(lg, uint8(hosts+s+1), sg, uint8(l+1))
		}
	}
	if first != 0 {
		f.b.SetSM(first, 1)
	}
	return f.b.Build()
}

// FatTree3 builds the three-level fat tree of k-port switches (k even): k
// pods of k/2 edge and k/2 aggregation switches, (k/2)^2 core switches and
// k^3/4 hosts. k=36 is the 11,664-host, 1,620-switch reference fabric.
func FatTree3(k int) (*topology.Topology, error) {
	if k < 2 || k%2 != 0 || k > 254 {
		return nil, fmt.Errorf("fat tree radix %d must be even and in 2..254", k)
	}
	h := k / 2
	f := newFabric()
	core := make([]uint64, h*h)
	for c := range core {
		core[c] = f.addSwitch(k)
	}
	var first uint64
	for p := 0; p < k; p++ {
		agg := make([]uint64, h)
		for a := range agg {
			agg[a] = f.addSwitch(k)
			for j := 0; j < h; j++ {
				f.b.Link(agg[a], uint8(h+j+1), core[a*h+j], uint8(p+1))
			}
		}
		for e := 0; e < h; e++ {
			eg := f.addSwitch(k)
			for j := 0; j < h; j++ {
				ca := f.addCA(1)
				if first == 0 {
					first = ca
				}
				f.b.Link(eg, uint8(j+1), ca, 1)
			}
			for a := 0; a < h; a++ {
				f.b.Link(eg, uint8(h+a+1), agg[a], uint8(e+1))
			}
		}
	}
	f.b.SetSM(first, 1)
	return f.b.Build()
}

// Ring builds n switches in a ring (ports 1 and 2), each with hosts CAs.
func Ring(n, hosts int) (*topology.Topology, error) {
	if n < 3 || hosts < 0 || hosts > 252 {
		return nil, fmt.Errorf("ring of %d switches with %d hosts each is not buildable", n, hosts)
	}
	f := newFabric()
	sw := make([]uint64, n)
	for i := range sw {
		sw[i] = f.addSwitch(2 + hosts)
	}
	for i := range sw {
		f.b.Link(sw[i], 1, sw[(i+1)%n], 2)
		for j := 0; j < hosts; j++ {
			f.b.Link(sw[i], uint8(3+j), f.addCA(1), 1)
		}
	}
	return f.b.Build()
}

// Random builds a connected random fabric from seed: a random spanning tree
// over switches plus extra random cables until no switch has a free
// inter-switch port left or the tries run out; every switch gets hosts CAs.
func Random(seed uint64, switches, radix, hosts int) (*topology.Topology, error) {
	if switches < 1 || radix-hosts < 2 || radix > 254 || hosts < 0 {
		return nil, fmt.Errorf("random fabric of %d switches, radix %d, %d hosts each is not buildable", switches, radix, hosts)
	}
	rng := rand.New(rand.NewPCG(seed, 0x1b5f))
	f := newFabric()
	sw := make([]uint64, switches)
	free := make([]int, switches) // next free inter-switch port
	for i := range sw {
		sw[i] = f.addSwitch(radix)
		free[i] = hosts + 1
		for j := 0; j < hosts; j++ {
			f.b.Link(sw[i], uint8(j+1), f.addCA(1), 1)
		}
	}
	link := func(a, b int) {
		f.b.Link(sw[a], uint8(free[a]), sw[b], uint8(free[b]))
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
	return f.b.Build()
}
