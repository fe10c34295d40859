package vl

import (
	"fmt"
	"math/rand"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// RandomMinimal routes every endpoint on a fixed, seeded random
// shortest-path tree per destination: each switch picks uniformly one of its
// minimal next hops. It is the "one minimal path per pair from a given
// routing table" of Kawano et al.'s evaluation, as planes.
func RandomMinimal(t *topology.Topology, seed int64) (*plan.Routes, error) {
	rng := rand.New(rand.NewSource(seed))
	sws := t.Switches()
	n := len(sws)
	type link struct {
		port uint8
		peer int32
	}
	links := make([][]link, n)
	for s, node := range sws {
		for p := 1; p < len(t.Nodes[node].Ports); p++ {
			ref := topology.PortRef{Node: node, Port: uint8(p)}
			if !t.IsLinkUp(ref) {
				continue
			}
			if ps := t.SwitchIndex(t.Port(ref).Peer.Node); ps >= 0 && int(ps) != s {
				links[s] = append(links[s], link{uint8(p), ps})
			}
		}
	}
	eps := t.Endpoints()
	r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	dist := make([]int32, n)
	queue := make([]int32, 0, n)
	cand := make([]uint8, 0, 16)
	for e, ep := range eps {
		home, port := t.SwitchIndex(ep.Node), uint8(0)
		if home < 0 {
			peer := t.Port(ep).Peer
			home, port = t.SwitchIndex(peer.Node), peer.Port
			if home < 0 {
				return nil, fmt.Errorf("endpoint %d is not cabled to a switch", e)
			}
		}
		for i := range dist {
			dist[i] = -1
		}
		dist[home] = 0
		queue = append(queue[:0], home)
		for i := 0; i < len(queue); i++ {
			for _, l := range links[queue[i]] {
				if dist[l.peer] < 0 {
					dist[l.peer] = dist[queue[i]] + 1
					queue = append(queue, l.peer)
				}
			}
		}
		pl := make(plan.Plane, n)
		for s := range pl {
			pl[s] = plan.NoPort
			if int32(s) == home {
				pl[s] = port
				continue
			}
			if dist[s] < 0 {
				continue
			}
			cand = cand[:0]
			for _, l := range links[s] {
				if dist[l.peer] == dist[s]-1 {
					cand = append(cand, l.port)
				}
			}
			pl[s] = cand[rng.Intn(len(cand))]
		}
		r.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{pl}}
	}
	return r, nil
}
