// Package route holds the building blocks of destination-based routing
// engines (the first-party minhop, updn, ftree and sftree use them): the
// switch graph over links that are up, hop distances, and OpenSM-style
// balanced port selection over a caller-supplied set of allowed next hops
// (MinHopRoutes is a complete min-hop engine on top of it).
package route

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/ibsm/ibsm/sdk/topology"
)

// Unreachable marks "no path" in a distance row.
const Unreachable uint8 = 0xFF

// MaxHops is the largest distance a uint8 row can hold.
const MaxHops = 254

// Link is one switch-to-switch link that is up, seen from its near end.
type Link struct {
	Port uint8 // out-port on the near switch
	Peer int32 // switch index of the far end
}

// Attach says where an endpoint hangs off the switch graph.
type Attach struct {
	// Switch is the switch index the endpoint is reached through, -1 if it
	// is not attached to any switch by a link that is up.
	Switch int32
	// Port is the out-port of Switch that delivers to the endpoint: 0 for
	// the switch's own management port.
	Port uint8
	// IsSwitch marks a switch's port 0.
	IsSwitch bool
}

// Graph is the switch graph of a topology restricted to links that are up
// (both ends at least Init).
type Graph struct {
	Topo *topology.Topology
	// N is the number of switches.
	N     int
	links [][]Link
	// nbr is a CSR of distinct neighbour switches, for BFS.
	nbrOff []int32
	nbr    []int32
	// peer[s][p] is the switch index behind port p of switch s, or -1.
	peer   [][]int32
	attach []Attach
	// groups[s] lists endpoint indices attached to switch s, CAs first (in
	// endpoint order), then the switch's own port 0.
	groups [][]int32
}

// NewGraph indexes t.
func NewGraph(t *topology.Topology) *Graph {
	sws := t.Switches()
	g := &Graph{Topo: t, N: len(sws), links: make([][]Link, len(sws)), peer: make([][]int32, len(sws)), nbrOff: make([]int32, len(sws)+1)}
	seen := make([]int32, len(sws))
	for i := range seen {
		seen[i] = -1
	}
	for s := range sws {
		g.peer[s], g.links[s] = switchRow(t, int32(s))
		g.nbr = appendNeighbors(g.nbr, g.links[s], seen, int32(s))
		g.nbrOff[s+1] = int32(len(g.nbr))
	}
	eps := t.Endpoints()
	g.attach = make([]Attach, len(eps))
	g.groups = make([][]int32, len(sws))
	for e := range eps {
		a := attachment(t, int32(e))
		g.attach[e] = a
		if a.Switch >= 0 && !a.IsSwitch {
			g.groups[a.Switch] = append(g.groups[a.Switch], int32(e))
		}
	}
	for s := range g.groups {
		g.groups[s] = append(g.groups[s], int32(t.EndpointIndex(topology.PortRef{Node: sws[s], Port: 0})))
	}
	return g
}

// switchRow is switch s's row of peer and its up links.
func switchRow(t *topology.Topology, s int32) ([]int32, []Link) {
	node := t.Switches()[s]
	n := &t.Nodes[node]
	peer := make([]int32, len(n.Ports))
	var links []Link
	for p := range n.Ports {
		peer[p] = -1
		if p == 0 {
			continue
		}
		if !t.IsLinkUp(topology.PortRef{Node: node, Port: uint8(p)}) {
			continue
		}
		ps := t.SwitchIndex(n.Ports[p].Peer.Node)
		if ps < 0 || ps == s {
			continue // CA/router port, or a loopback cable that carries no route
		}
		peer[p] = ps
		links = append(links, Link{Port: uint8(p), Peer: ps})
	}
	return peer, links
}

// appendNeighbors appends the distinct far ends of switch s's links, in
// link order; seen[x] == s marks those appended (seen is shared across
// calls with distinct s).
func appendNeighbors(nbr []int32, links []Link, seen []int32, s int32) []int32 {
	for _, l := range links {
		if seen[l.Peer] != s {
			seen[l.Peer] = s
			nbr = append(nbr, l.Peer)
		}
	}
	return nbr
}

// attachment is where endpoint e of t hangs off the switch graph.
func attachment(t *topology.Topology, e int32) Attach {
	ep := t.Endpoints()[e]
	if s := t.SwitchIndex(ep.Node); s >= 0 {
		return Attach{Switch: s, Port: 0, IsSwitch: true}
	}
	if t.IsLinkUp(ep) {
		pr := t.Port(ep).Peer
		if s := t.SwitchIndex(pr.Node); s >= 0 {
			return Attach{Switch: s, Port: pr.Port}
		}
	}
	return Attach{Switch: -1}
}

// Patch returns the graph of t, a snapshot patched from g's (topology
// Patch), without indexing it whole: only the switches with a port at a
// node t changed or cabled to one (a link is up only if both ends are)
// get new rows, and only the endpoints at or cabled to a changed node
// are attached again; the rest is g's (a cable event at ft3-56: a few
// switches and CAs, not 223 k switch ports and 47,824 endpoints). The
// result equals NewGraph(t), which it returns when t holds other nodes
// or numbers its endpoints otherwise. g is left as it was.
func (g *Graph) Patch(t *topology.Topology) *Graph {
	old := g.Topo
	changed, ok := t.Unshared(old)
	if !ok || !slices.Equal(old.Endpoints(), t.Endpoints()) {
		return NewGraph(t)
	}
	rows := map[int32]bool{}
	eps := map[int32]bool{}
	endpointsOf := func(tt *topology.Topology, node int32) {
		for _, ep := range tt.NodeEndpoints(node) {
			eps[tt.EndpointIndex(ep)] = true
		}
	}
	for _, i := range changed {
		for _, tt := range []*topology.Topology{old, t} {
			if s := tt.SwitchIndex(i); s >= 0 {
				rows[s] = true
			} else {
				endpointsOf(tt, i)
			}
			n := &tt.Nodes[i]
			for p := 1; p < len(n.Ports); p++ {
				pr := n.Ports[p].Peer
				if !pr.Connected() {
					continue
				}
				if s := tt.SwitchIndex(pr.Node); s >= 0 {
					rows[s] = true
				} else {
					endpointsOf(tt, pr.Node)
				}
			}
		}
	}
	c := &Graph{Topo: t, N: g.N, links: slices.Clone(g.links), peer: slices.Clone(g.peer), nbrOff: make([]int32, g.N+1),
		attach: slices.Clone(g.attach), groups: slices.Clone(g.groups)}
	seen := make([]int32, g.N)
	for i := range seen {
		seen[i] = -1
	}
	for s := int32(0); s < int32(g.N); s++ {
		if rows[s] {
			c.peer[s], c.links[s] = switchRow(t, s)
			c.nbr = appendNeighbors(c.nbr, c.links[s], seen, s)
		} else {
			c.nbr = append(c.nbr, g.Neighbors(s)...)
		}
		c.nbrOff[s+1] = int32(len(c.nbr))
	}
	regroup := map[int32]bool{}
	for e := range eps {
		a := attachment(t, e)
		if a == g.attach[e] {
			continue
		}
		for _, x := range []Attach{g.attach[e], a} {
			if x.Switch >= 0 && !x.IsSwitch {
				regroup[x.Switch] = true
			}
		}
		c.attach[e] = a
	}
	for s := range regroup {
		old := g.groups[s]
		var members []int32
		for _, e := range old[:len(old)-1] { // the last is the switch's port 0
			if c.attach[e].Switch == s {
				members = append(members, e)
			}
		}
		for e := range eps {
			if a := c.attach[e]; a.Switch == s && !a.IsSwitch && !slices.Contains(members, e) {
				members = append(members, e)
			}
		}
		slices.Sort(members)
		c.groups[s] = append(members, old[len(old)-1])
	}
	return c
}

// Links returns the up links of switch s in port order.
func (g *Graph) Links(s int32) []Link { return g.links[s] }

// Components returns the switches of each connected component (over up
// links), components in order of their lowest switch, members ascending.
func (g *Graph) Components() [][]int32 {
	label := make([]bool, g.N)
	var comps [][]int32
	queue := make([]int32, 0, g.N)
	for s := int32(0); s < int32(g.N); s++ {
		if label[s] {
			continue
		}
		label[s] = true
		queue = append(queue[:0], s)
		for h := 0; h < len(queue); h++ {
			for _, y := range g.Neighbors(queue[h]) {
				if !label[y] {
					label[y] = true
					queue = append(queue, y)
				}
			}
		}
		members := append([]int32(nil), queue...)
		slices.Sort(members)
		comps = append(comps, members)
	}
	return comps
}

// Neighbors returns the distinct switches adjacent to s.
func (g *Graph) Neighbors(s int32) []int32 { return g.nbr[g.nbrOff[s]:g.nbrOff[s+1]] }

// PeerSwitch is the switch behind port p of switch s, or -1.
func (g *Graph) PeerSwitch(s int32, p uint8) int32 {
	if int(p) >= len(g.peer[s]) {
		return -1
	}
	return g.peer[s][p]
}

// Attachment tells where endpoint e is attached.
func (g *Graph) Attachment(e int32) Attach { return g.attach[e] }

// Group lists the endpoints attached to switch s (CAs, then its port 0).
func (g *Graph) Group(s int32) []int32 { return g.groups[s] }

// SwitchGUID is the node GUID of switch s.
func (g *Graph) SwitchGUID(s int32) uint64 { return g.Topo.Nodes[g.Topo.Switches()[s]].GUID }

// Workers is how many goroutines to use for n independent work items.
func Workers(n int) int {
	w := runtime.GOMAXPROCS(0)
	if w > n {
		w = n
	}
	if w < 1 {
		w = 1
	}
	return w
}

// HopMatrix returns the N×N hop distances between switches as one slice:
// row d (m[d*N:(d+1)*N]) holds every switch's distance to switch d.
// Links are undirected, so this is also the distance from d. Unreachable
// pairs hold Unreachable. It fails if the fabric's diameter exceeds MaxHops.
func (g *Graph) HopMatrix(ctx context.Context) ([]uint8, error) {
	n := g.N
	m := make([]uint8, n*n)
	err := ForEach(ctx, n, func() func(int32) error {
		queue := make([]int32, n)
		return func(d int32) error { return g.bfs(d, m[int(d)*n:(int(d)+1)*n], queue) }
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// bfs fills row with hop counts from src; queue has room for N entries.
func (g *Graph) bfs(src int32, row []uint8, queue []int32) error {
	return g.BFS([]int32{src}, row, queue)
}

// BFS fills row with the hop count from the nearest of srcs to every switch
// (Unreachable where none reaches); queue needs room for N entries. It fails
// past MaxHops.
func (g *Graph) BFS(srcs []int32, row []uint8, queue []int32) error {
	for i := range row {
		row[i] = Unreachable
	}
	tail := 0
	for _, s := range srcs {
		if row[s] != 0 {
			row[s] = 0
			queue[tail] = s
			tail++
		}
	}
	for head := 0; head < tail; head++ {
		x := queue[head]
		dx := row[x]
		if dx >= MaxHops {
			return fmt.Errorf("switch 0x%016x is more than %d hops from the nearest start switch: the fabric is too deep; check for a mis-cabled chain", g.SwitchGUID(x), MaxHops)
		}
		for _, y := range g.nbr[g.nbrOff[x]:g.nbrOff[x+1]] {
			if row[y] == Unreachable {
				row[y] = dx + 1
				queue[tail] = y
				tail++
			}
		}
	}
	return nil
}
