package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
)

// graph is the fabric's switches and their active switch-to-switch links.
type graph struct {
	topo *topology.Topology
	// adj[n] lists node n's links to other switches (nil for non-switches).
	adj [][]link
}

type link struct {
	port uint8 // our port
	peer topology.PortRef
}

func newGraph(t *topology.Topology) *graph {
	g := &graph{topo: t, adj: make([][]link, len(t.Nodes))}
	for _, n := range t.Switches() {
		node := &t.Nodes[n]
		for p := 1; p < len(node.Ports); p++ {
			pt := &node.Ports[p]
			if !t.IsLinkUp(topology.PortRef{Node: n, Port: uint8(p)}) || t.Nodes[pt.Peer.Node].Type != topology.Switch || pt.Peer.Node == n {
				continue
			}
			g.adj[n] = append(g.adj[n], link{port: uint8(p), peer: pt.Peer})
		}
	}
	return g
}

// bfs returns hop distances from src (-1: unreachable).
func (g *graph) bfs(src int32, dist []int32) []int32 {
	if dist == nil {
		dist = make([]int32, len(g.adj))
	}
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	q := []int32{src}
	for len(q) > 0 {
		n := q[0]
		q = q[1:]
		for _, l := range g.adj[n] {
			if dist[l.peer.Node] < 0 {
				dist[l.peer.Node] = dist[n] + 1
				q = append(q, l.peer.Node)
			}
		}
	}
	return dist
}

func route(ctx context.Context, req sdk.MulticastRequest) ([]sdk.MulticastTree, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	g := newGraph(req.Topo)
	trees := make([]sdk.MulticastTree, len(req.Groups))
	for i := range req.Groups {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, err := g.tree(&req.Groups[i])
		if err != nil {
			return nil, err
		}
		trees[i] = t
	}
	return trees, nil
}

// tree builds one group's tree. It depends on the group alone, never on
// the other groups of the request, so recomputing one group after a join
// gives the tree a computation of all groups would.
func (g *graph) tree(grp *sdk.MulticastGroup) (sdk.MulticastTree, error) {
	out := map[int32][]uint8{}
	var terms []int32
	for _, m := range grp.Members {
		sw, err := sdk.MemberSwitch(g.topo, m.Port)
		if err != nil {
			return sdk.MulticastTree{}, fmt.Errorf("group %#04x: %w", grp.MLID, err)
		}
		if !slices.Contains(terms, sw.Node) {
			terms = append(terms, sw.Node)
		}
		if _, ok := out[sw.Node]; !ok {
			out[sw.Node] = nil
		}
		if m.State.Receives() {
			out[sw.Node] = append(out[sw.Node], sw.Port)
		}
	}
	if len(terms) > 0 {
		root, err := g.root(grp.MLID, terms)
		if err != nil {
			return sdk.MulticastTree{}, err
		}
		dist := g.bfs(root, nil)
		in := map[int32]bool{root: true}
		if _, ok := out[root]; !ok {
			out[root] = nil
		}
		for _, t := range terms {
			if dist[t] < 0 {
				return sdk.MulticastTree{}, fmt.Errorf("group %#04x: switch %d cannot reach the group's root %d", grp.MLID, t, root)
			}
			// Climb toward the root, joining the tree as soon as possible;
			// among equal parents the MLID picks, so that groups spread
			// over parallel links and middle switches.
			for v := t; !in[v]; {
				var ups []int
				joins := false
				for j, l := range g.adj[v] {
					if dist[l.peer.Node] != dist[v]-1 {
						continue
					}
					switch j2 := in[l.peer.Node]; {
					case j2 && !joins:
						ups, joins = []int{j}, true
					case j2 == joins:
						ups = append(ups, j)
					}
				}
				l := g.adj[v][ups[(int(grp.MLID)+int(v))%len(ups)]] // dist[v] > 0: a parent exists
				out[v] = append(out[v], l.port)
				out[l.peer.Node] = append(out[l.peer.Node], l.peer.Port)
				in[v] = true
				v = l.peer.Node
			}
		}
	}
	tr := sdk.MulticastTree{MLID: grp.MLID}
	for n, ports := range out {
		slices.Sort(ports)
		tr.Switches = append(tr.Switches, sdk.TreeSwitch{Node: n, Out: slices.Compact(ports)})
	}
	slices.SortFunc(tr.Switches, func(a, b sdk.TreeSwitch) int { return int(a.Node - b.Node) })
	return tr, nil
}

// root picks the group's root: among the switches halfway along the
// longest shortest path between two member switches (found by a double
// sweep: farthest from any member, then farthest from that), the one the
// MLID selects, so that groups spread over equally central switches.
func (g *graph) root(mlid uint16, terms []int32) (int32, error) {
	if len(terms) == 1 {
		return terms[0], nil
	}
	far := func(d []int32) (int32, error) {
		best := terms[0]
		for _, t := range terms {
			if d[t] < 0 {
				return 0, fmt.Errorf("group %#04x: member switches %d and %d are not connected", mlid, terms[0], t)
			}
			if d[t] > d[best] {
				best = t
			}
		}
		return best, nil
	}
	a, err := far(g.bfs(terms[0], nil))
	if err != nil {
		return 0, err
	}
	da := g.bfs(a, nil)
	b, err := far(da)
	if err != nil {
		return 0, err
	}
	db := g.bfs(b, nil)
	d := da[b]
	var cands []int32
	for n := range da {
		if da[n] >= 0 && db[n] >= 0 && da[n]+db[n] == d && da[n] == (d+1)/2 {
			cands = append(cands, int32(n))
		}
	}
	return cands[int(mlid)%len(cands)], nil
}
