package lids

import (
	"math/rand/v2"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// RandomShortest gives every ordered pair of CAs one uniformly random
// shortest switch path, ignoring deadlock: a reference routing for tests
// (like sdktest.BFSRoutes for planes). O(CAs^2 x hops + switches x links).
func RandomShortest(t *topology.Topology, seed uint64) []plan.Path {
	rng := rand.New(rand.NewPCG(seed, 7))
	g := newGraph(t)
	sw := t.Switches()
	n := len(sw)
	dist := make([][]int, n)
	for s := range dist {
		dist[s] = make([]int, n)
		for i := range dist[s] {
			dist[s][i] = -1
		}
		dist[s][s] = 0
		q := []int32{int32(s)}
		for len(q) > 0 {
			v := q[0]
			q = q[1:]
			for _, l := range g.adj[v] {
				if dist[s][l.Peer] < 0 {
					dist[s][l.Peer] = dist[s][v] + 1
					q = append(q, l.Peer)
				}
			}
		}
	}
	var cas []int32
	for e, ep := range t.Endpoints() {
		if t.SwitchIndex(ep.Node) < 0 {
			cas = append(cas, int32(e))
		}
	}
	var out []plan.Path
	for _, s := range cas {
		for _, d := range cas {
			if s == d {
				continue
			}
			ss, sin, _ := attach(t, t.Endpoints()[s])
			ds, dport, _ := attach(t, t.Endpoints()[d])
			p := plan.Path{Src: s, Dst: d}
			cur, in := ss, sin
			for cur != ds {
				var next []link
				for _, l := range g.adj[cur] {
					if dist[ds][l.Peer] == dist[ds][cur]-1 {
						next = append(next, l)
					}
				}
				l := next[rng.IntN(len(next))]
				p.Hops = append(p.Hops, plan.Hop{Switch: sw[cur], In: in, Out: l.Out})
				in = t.Port(topology.PortRef{Node: sw[cur], Port: l.Out}).Peer.Port
				cur = l.Peer
			}
			p.Hops = append(p.Hops, plan.Hop{Switch: sw[cur], In: in, Out: dport})
			out = append(out, p)
		}
	}
	return out
}
