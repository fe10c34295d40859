package sdktest

import (
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Node GUID ranges of the generated fabrics; port GUIDs of CAs are the node
// GUID plus the port number, switch ports share the node GUID.
const (
	switchGUIDBase uint64 = 0x0002_c903_0000_0000
	caGUIDBase     uint64 = 0x0002_c904_0000_0000
)

// style is how the kit's fabrics look: ports with 4 VLs, OpenSM-like node
// descriptions, GUIDs 256 apart. The shapes are testfab's.
func style(sm bool) []testfab.Option {
	o := []testfab.Option{
		testfab.VLCap(4),
		testfab.Names("switch-%d", "host-%d HCA-1"),
		testfab.GUIDs(
			func(n int) uint64 { return switchGUIDBase + uint64(n-1)<<8 },
			func(n int) uint64 { return caGUIDBase + uint64(n-1)<<8 },
			func(node uint64, port int) uint64 { return node + uint64(port) }),
	}
	if sm {
		o = append(o, testfab.SMOnFirstCA())
	}
	return o
}

// FatTree2 builds a two-level fat tree: leaves leaf switches with hosts CAs
// each and one cable from every leaf to every one of spines spine switches.
// The SM sits on the first CA.
func FatTree2(leaves, spines, hosts int) (*topology.Topology, error) {
	return testfab.FatTree2(leaves, spines, hosts, style(true)...)
}

// FatTree3 builds the three-level fat tree of k-port switches (k even): k
// pods of k/2 edge and k/2 aggregation switches, (k/2)^2 core switches and
// k^3/4 hosts. k=36 is the 11,664-host, 1,620-switch reference fabric. The
// SM sits on the first CA.
func FatTree3(k int) (*topology.Topology, error) { return testfab.FatTree3(k, style(true)...) }

// Ring builds n switches in a ring (ports 1 and 2), each with hosts CAs.
func Ring(n, hosts int) (*topology.Topology, error) {
	if n < 3 || hosts < 0 || hosts > 252 {
		return nil, fmt.Errorf("ring of %d switches with %d hosts each is not buildable", n, hosts)
	}
	return testfab.Ring(n, hosts, style(false)...)
}

// ringCut is Ring(n, hosts) with, if cut, the cable from the last switch
// to the first left out: the same nodes and GUIDs, one cable fewer.
func ringCut(n, hosts int, cut bool) (*topology.Topology, error) {
	f := testfab.New(style(false)...)
	sw := make([]uint64, n)
	for i := range sw {
		sw[i] = f.Switch(2 + hosts)
	}
	for i := range sw {
		if !cut || i < n-1 {
			f.Link(sw[i], 1, sw[(i+1)%n], 2)
		}
		for c := 0; c < hosts; c++ {
			f.CAOn(sw[i], 3+c)
		}
	}
	return f.Build()
}

// Random builds a connected random fabric from seed: a random spanning tree
// over switches plus extra random cables until no switch has a free
// inter-switch port left or the tries run out; every switch gets hosts CAs.
func Random(seed uint64, switches, radix, hosts int) (*topology.Topology, error) {
	return testfab.Random(seed, switches, radix, hosts, style(false)...)
}

// cutFirstSwitchCable returns t with its first cable between two switches
// (in node order) taken down at both ends.
func cutFirstSwitchCable(t *topology.Topology) (*topology.Topology, error) {
	for _, s := range t.Switches() {
		for p, pt := range t.Nodes[s].Ports {
			if p == 0 || !pt.Peer.Connected() || t.Nodes[pt.Peer.Node].Type != topology.Switch {
				continue
			}
			var nodes []topology.Node
			for _, r := range []topology.PortRef{{Node: s, Port: uint8(p)}, pt.Peer} {
				n := t.Nodes[r.Node]
				n.Ports = slices.Clone(n.Ports)
				n.Ports[r.Port].Peer, n.Ports[r.Port].State = topology.PortRef{Node: topology.NoNode}, topology.StateDown
				nodes = append(nodes, n)
			}
			return t.Patch(nodes)
		}
	}
	return nil, fmt.Errorf("sdktest: no cable between two switches to cut")
}
