package lids

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// link is one up inter-switch cable seen from a switch: leaving by port
// Out reaches switch index Peer.
type link struct {
	Out  uint8
	Peer int32
}

// graph is the switch graph Assign needs for checking paths and completing
// trees, plus scratch space (not safe for concurrent use).
type graph struct {
	adj   [][]link // by switch index, ascending port
	stamp []int32  // per switch: the mark of the last path that visited it
	mark  int32
}

func newGraph(t *topology.Topology) *graph {
	sw := t.Switches()
	g := &graph{adj: make([][]link, len(sw)), stamp: make([]int32, len(sw))}
	for s, node := range sw {
		n := &t.Nodes[node]
		for p := 1; p < len(n.Ports); p++ {
			r := topology.PortRef{Node: node, Port: uint8(p)}
			if !t.IsLinkUp(r) {
				continue
			}
			if ps := t.SwitchIndex(n.Ports[p].Peer.Node); ps >= 0 {
				g.adj[s] = append(g.adj[s], link{Out: uint8(p), Peer: ps})
			}
		}
	}
	return g
}

// attach returns the switch index and port through which endpoint e is
// reached (its own index and port 0 for a switch), or ok=false for a port
// with no up link to a switch.
func attach(t *topology.Topology, e topology.PortRef) (sw int32, port uint8, ok bool) {
	if s := t.SwitchIndex(e.Node); s >= 0 {
		return s, 0, e.Port == 0
	}
	if !t.IsLinkUp(e) {
		return -1, 0, false
	}
	peer := t.Port(e).Peer
	s := t.SwitchIndex(peer.Node)
	return s, peer.Port, s >= 0
}

// checkPath verifies that p is a contiguous walk over up links from its
// source to its destination that visits no switch twice, and returns its
// steps.
func checkPath(t *topology.Topology, g *graph, p *plan.Path) ([]Step, error) {
	eps := t.Endpoints()
	if p.Src < 0 || int(p.Src) >= len(eps) || p.Dst < 0 || int(p.Dst) >= len(eps) {
		return nil, fmt.Errorf("names an endpoint outside 0..%d", len(eps)-1)
	}
	if p.Src == p.Dst {
		return nil, fmt.Errorf("source and destination are the same port")
	}
	src, dst := eps[p.Src], eps[p.Dst]
	if len(p.Hops) == 0 {
		if t.Port(src).Peer == dst && t.IsLinkUp(src) {
			return nil, nil // two CAs cabled to each other: no switch involved
		}
		return nil, fmt.Errorf("has no hops")
	}
	steps := make([]Step, len(p.Hops))
	g.mark++
	mark := g.mark
	for k, h := range p.Hops {
		if h.Switch < 0 || int(h.Switch) >= len(t.Nodes) || t.SwitchIndex(h.Switch) < 0 {
			return nil, fmt.Errorf("hop %d names node %d, which is not a switch", k, h.Switch)
		}
		s := t.SwitchIndex(h.Switch)
		if g.stamp[s] == mark {
			return nil, fmt.Errorf("visits switch 0x%016x twice (a loop)", t.Nodes[h.Switch].GUID)
		}
		g.stamp[s] = mark
		steps[k] = Step{Switch: s, Out: h.Out}
		if k+1 < len(p.Hops) {
			r := topology.PortRef{Node: h.Switch, Port: h.Out}
			if h.Out == 0 || int(h.Out) >= len(t.Nodes[h.Switch].Ports) || !t.IsLinkUp(r) {
				return nil, fmt.Errorf("hop %d leaves switch 0x%016x by port %d, which is not an up link", k, t.Nodes[h.Switch].GUID, h.Out)
			}
			next := p.Hops[k+1]
			if peer := t.Port(r).Peer; peer.Node != next.Switch || peer.Port != next.In {
				return nil, fmt.Errorf("hop %d: switch 0x%016x port %d does not lead to hop %d's switch and in-port", k, t.Nodes[h.Switch].GUID, h.Out, k+1)
			}
		}
	}
	first, last := p.Hops[0], p.Hops[len(p.Hops)-1]
	if s, port, ok := attach(t, src); !ok || t.Switches()[s] != first.Switch || (port != 0 && port != first.In) {
		return nil, fmt.Errorf("does not start at the source's switch port")
	}
	if s, port, ok := attach(t, dst); !ok || t.Switches()[s] != last.Switch || port != last.Out {
		return nil, fmt.Errorf("does not end at the destination (last hop leaves switch 0x%016x by port %d)", t.Nodes[last.Switch].GUID, last.Out)
	}
	return steps, nil
}

// complete fills the switches a tree has no entry for so that every LID
// routes from everywhere: a breadth-first search backwards from the
// switches the tree already holds (the destination's own switch when it
// holds none) gives each missing switch the port toward a switch found
// earlier. Walks from filled switches enter the tree and then follow one of
// its paths, so they arrive without a loop.
func (g *graph) complete(t *topology.Topology, tree plan.Plane, dst topology.PortRef) {
	queue := make([]int32, 0, len(tree))
	for s, o := range tree {
		if o != plan.NoPort {
			queue = append(queue, int32(s))
		}
	}
	if len(queue) == 0 {
		s, port, ok := attach(t, dst)
		if !ok {
			return // unreachable port: nothing routes it
		}
		tree[s] = port
		queue = append(queue, s)
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, l := range g.adj[v] {
			if tree[l.Peer] != plan.NoPort {
				continue
			}
			// The peer's port back to v: links are symmetric, so find
			// it in the peer's list.
			for _, back := range g.adj[l.Peer] {
				if back.Peer == v {
					tree[l.Peer] = back.Out
					break
				}
			}
			queue = append(queue, l.Peer)
		}
	}
}

// pathsFromPlanes turns planes-form routes into the path each source uses
// under the DLIDSpread rule (plane source mod planes), walking the plane.
func pathsFromPlanes(t *topology.Topology, g *graph, r *plan.Routes) ([]plan.Path, error) {
	eps := t.Endpoints()
	sw := t.Switches()
	if len(r.Planes) != len(eps) {
		return nil, fmt.Errorf("routes cover %d destinations but the topology has %d endpoints; the routing engine answered for a different topology", len(r.Planes), len(eps))
	}
	var out []plan.Path
	for d, dp := range r.Planes {
		dsw, dport, ok := attach(t, eps[d])
		if !ok {
			continue
		}
		if len(dp.Planes) == 0 {
			return nil, fmt.Errorf("destination %s has no plane", epName(t, int32(d)))
		}
		for s := range eps {
			if s == d {
				continue
			}
			ssw, sport, ok := attach(t, eps[s])
			if !ok {
				continue
			}
			pl := dp.Planes[s%len(dp.Planes)]
			if len(pl) != len(sw) {
				return nil, fmt.Errorf("destination %s: plane has %d entries, want one per switch (%d)", epName(t, int32(d)), len(pl), len(sw))
			}
			p := plan.Path{Src: int32(s), Dst: int32(d)}
			cur, in := ssw, sport
			for {
				if len(p.Hops) > len(sw) {
					return nil, fmt.Errorf("destination %s: the plane loops (walk from %s)", epName(t, int32(d)), epName(t, int32(s)))
				}
				o := pl[cur]
				p.Hops = append(p.Hops, plan.Hop{Switch: sw[cur], In: in, Out: o})
				if cur == dsw && o == dport {
					break
				}
				ref := topology.PortRef{Node: sw[cur], Port: o}
				if o == plan.NoPort || o == 0 || int(o) >= len(t.Nodes[sw[cur]].Ports) || !t.IsLinkUp(ref) {
					return nil, fmt.Errorf("destination %s: switch 0x%016x routes to port %d, which is not an up link (walk from %s)", epName(t, int32(d)), t.Nodes[sw[cur]].GUID, o, epName(t, int32(s)))
				}
				peer := t.Port(ref).Peer
				next := t.SwitchIndex(peer.Node)
				if next < 0 {
					return nil, fmt.Errorf("destination %s: switch 0x%016x port %d leads off the switch fabric before the destination", epName(t, int32(d)), t.Nodes[sw[cur]].GUID, o)
				}
				cur, in = next, peer.Port
			}
			out = append(out, p)
		}
	}
	return out, nil
}
