// Package analysistest builds small fabrics and simple routings for the
// tests and benchmarks of the analysis, verify and dump packages. It is a
// test helper: nothing in the SM's data path imports it.
package analysistest

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// GUID prefixes keep switches and CAs apart and readable in messages.
const (
	SwitchGUID uint64 = 0x0002c90000000000
	CAGUID     uint64 = 0x0008f10000000000
)

// Fab accumulates nodes and links and builds a Topology in this package's
// style (see Style).
type Fab = testfab.Fabric

// Style is how this package's fabrics look: ports with vlcap data VLs,
// switches SwitchGUID+n named "sw<n>", CAs CAGUID+n<<8 named "hca<n>" with
// port GUID node+1, the SM on the first CA. The shapes are testfab's.
func Style(vlcap uint8) []testfab.Option {
	return []testfab.Option{
		testfab.VLCap(vlcap),
		testfab.Names("sw%d", "hca%d"),
		testfab.GUIDs(
			func(n int) uint64 { return SwitchGUID + uint64(n) },
			func(n int) uint64 { return CAGUID + uint64(n)<<8 },
			func(node uint64, port int) uint64 { return node + uint64(port) }),
		testfab.SMOnFirstCA(),
	}
}

// NewFab returns an empty fabric whose ports carry vlcap data VLs.
func NewFab(vlcap uint8) *Fab { return testfab.New(Style(vlcap)...) }

// FatTree2 is a two-level folded Clos: leaves (numbered first) with
// casPerLeaf CAs each and one cable from every leaf to every spine.
func FatTree2(leaves, spines, casPerLeaf int, vlcap uint8) (*topology.Topology, error) {
	return testfab.FatTree2(leaves, spines, casPerLeaf, append(Style(vlcap), testfab.LeavesFirst())...)
}

// FatTree3 is the three-level k-ary fat tree of k-port switches: k pods of
// k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4 CAs. k = 36
// gives the reference fabric (1,620 switches, 11,664 CAs).
func FatTree3(k int, vlcap uint8) (*topology.Topology, error) {
	return testfab.FatTree3(k, Style(vlcap)...)
}

// Ring is n switches in a ring (port 1 to the next, port 2 to the previous)
// with casPerSwitch CAs on ports 3.. of each.
func Ring(n, casPerSwitch int, vlcap uint8) (*topology.Topology, error) {
	return testfab.Ring(n, casPerSwitch, Style(vlcap)...)
}

// MinHop routes every endpoint along shortest paths over up links, choosing
// among equal next hops by destination index (route.MinHop with
// route.ByDestination, a simple spread). On a fat tree shortest paths are
// up*/down*, so the result is deadlock-free; on a ring of five or more
// switches it has a credit loop.
func MinHop(t *topology.Topology) *plan.Routes { return route.MinHop(t, route.ByDestination) }

// UpDown is Up*/Down* routing from one root switch (index into
// Switches()): links toward the root (lower BFS rank, then lower GUID) are
// "up". A switch forwards down whenever a down-only path to the destination
// exists, otherwise up toward the best switch that has one, so every route
// is up* down* and the routing is deadlock-free for CA and switch traffic.
func UpDown(t *topology.Topology, root int32) *plan.Routes {
	sws := t.Switches()
	n := len(sws)
	rank := make([]int32, n)
	for i := range rank {
		rank[i] = -1
	}
	rank[root] = 0
	order := []int32{root}
	type link struct {
		port uint8
		peer int32
	}
	adj := make([][]link, n)
	for s := range sws {
		node := &t.Nodes[sws[s]]
		for p := 1; p < len(node.Ports); p++ {
			ref := topology.PortRef{Node: sws[s], Port: uint8(p)}
			if !t.IsLinkUp(ref) {
				continue // also an unconnected port: Peer.Node is -1
			}
			if ps := t.SwitchIndex(node.Ports[p].Peer.Node); ps >= 0 {
				adj[s] = append(adj[s], link{uint8(p), ps})
			}
		}
	}
	for qi := 0; qi < len(order); qi++ {
		for _, l := range adj[order[qi]] {
			if rank[l.peer] < 0 {
				rank[l.peer] = rank[order[qi]] + 1
				order = append(order, l.peer)
			}
		}
	}
	up := func(a, b int32) bool { // a -> b goes up
		return rank[b] < rank[a] || (rank[b] == rank[a] && b < a)
	}
	// Switches by increasing (rank, index): every up link points backwards.
	sorted := append([]int32(nil), order...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && (rank[sorted[j]] < rank[sorted[j-1]] || (rank[sorted[j]] == rank[sorted[j-1]] && sorted[j] < sorted[j-1])); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	const inf = int32(1 << 30)
	eps := t.Endpoints()
	r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	down := make([]int32, n)
	u := make([]int32, n)
	// The candidates of every switch depend on the destination switch
	// only (the CAs of a leaf share them; each picks its own by index):
	// candStart[s]..candStart[s+1] index cands, per destination switch.
	type cached struct {
		start []int32
		ports []uint8
	}
	cache := map[int32]cached{}
	for e, ref := range eps {
		dsw := t.SwitchIndex(ref.Node)
		last := uint8(0)
		if dsw < 0 {
			peer := t.Port(ref).Peer
			dsw = t.SwitchIndex(peer.Node)
			last = peer.Port
		}
		pl := make(plan.Plane, n)
		for i := range pl {
			pl[i] = plan.NoPort
		}
		r.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{pl}}
		if dsw < 0 {
			continue
		}
		c, ok := cache[dsw]
		if !ok {
			// down[s]: hops from s to dsw moving down only (reverse BFS
			// over links s->t with t below s).
			for i := range down {
				down[i] = inf
			}
			down[dsw] = 0
			q := []int32{dsw}
			for qi := 0; qi < len(q); qi++ {
				t := q[qi]
				for _, l := range adj[t] {
					if s := l.peer; down[s] == inf && up(t, s) {
						down[s] = down[t] + 1
						q = append(q, s)
					}
				}
			}
			for _, s := range sorted {
				u[s] = down[s]
				if u[s] == inf {
					for _, l := range adj[s] {
						if up(s, l.peer) && u[l.peer] < inf {
							u[s] = min(u[s], u[l.peer]+1)
						}
					}
				}
			}
			c.start = make([]int32, n+1)
			for s := int32(0); s < int32(n); s++ {
				for _, l := range adj[s] {
					if down[s] < inf {
						if !up(s, l.peer) && down[l.peer] == down[s]-1 {
							c.ports = append(c.ports, l.port)
						}
					} else if up(s, l.peer) && u[l.peer] == u[s]-1 {
						c.ports = append(c.ports, l.port)
					}
				}
				c.start[s+1] = int32(len(c.ports))
			}
			cache[dsw] = c
		}
		for s := int32(0); s < int32(n); s++ {
			if s == dsw {
				pl[s] = last
				continue
			}
			if cands := c.ports[c.start[s]:c.start[s+1]]; len(cands) > 0 {
				pl[s] = cands[e%len(cands)]
			}
		}
	}
	return r
}

// SequentialLIDs gives endpoints, switches too, consecutive, 2^lmc-aligned
// LID ranges from 1 (2^lmc when lmc > 0) in endpoint order.
func SequentialLIDs(t *topology.Topology, lmc uint8, rule plan.DLIDRule) *plan.LIDPlan {
	return testfab.SequentialLIDs(t, lmc, testfab.SwitchLMC(), testfab.DLIDRule(rule))
}

// Realize assigns sequential LIDs to routes and realises the forwarding
// tables.
func Realize(t *topology.Topology, r *plan.Routes, lmc uint8, rule plan.DLIDRule) (*plan.Realized, error) {
	return plan.Realize(t, r, SequentialLIDs(t, lmc, rule))
}

// RingVLs is a VL plan for a Ring: destinations on the first half of the
// ring use SL/VL 0, the others SL/VL 1, so no VL holds dependencies all the
// way around (deadlock-free with MinHop on two VLs).
func RingVLs(r *plan.Realized) *plan.VLPlan {
	t := r.Topo
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(r.TopLID)+1), VLs: 2}
	for i := range v.Default {
		v.Default[i] = uint8(i % 2)
	}
	n := len(t.Switches())
	for e, p := range t.Endpoints() {
		node := p.Node
		if t.SwitchIndex(node) < 0 {
			node = t.Port(p).Peer.Node
		}
		if int(t.SwitchIndex(node)) >= n/2 {
			for k := 0; k < r.LIDs.Ports[e].Count(); k++ {
				v.SLByDLID[int(r.LIDs.Ports[e].Base)+k] = 1
			}
		}
	}
	return v
}

// Torus2D is an x-by-y torus of switches (testfab.Torus2D: port 1 +x,
// 2 -x, 3 +y, 4 -y, wrapping around; x, y >= 3) with casPerSwitch CAs on
// ports 5.. of each.
func Torus2D(x, y, casPerSwitch int, vlcap uint8) (*topology.Topology, error) {
	if x < 3 || y < 3 {
		return nil, fmt.Errorf("torus %dx%d: want both sides >= 3 (smaller sides double the links)", x, y)
	}
	return testfab.Torus2D(x, y, casPerSwitch, Style(vlcap)...)
}
