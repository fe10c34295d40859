package vl

import (
	"fmt"
	"math/rand"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// RandomRegular builds a connected random deg-regular graph of n switches
// (stubs paired at random among simple choices, redrawn until connected;
// seeded) with
// casPer CAs per switch, every port with the given VLCap. Switch ports
// 1..deg are links, deg+1.. CAs. It is the fabric of seed 001's evaluation
// and of the benchmarks.
func RandomRegular(n, deg, casPer int, vlcap uint8, seed int64) (*topology.Topology, error) {
	if n*deg%2 != 0 || deg >= n || deg < 2 {
		return nil, fmt.Errorf("no simple connected %d-regular graph on %d switches", deg, n)
	}
	rng := rand.New(rand.NewSource(seed))
	adj := make([][]int, n)
	for try := 0; ; try++ {
		if try == 10000 {
			return nil, fmt.Errorf("no simple connected %d-regular graph on %d switches after %d draws", deg, n, try)
		}
		if randomPairing(rng, n, deg, adj) && connectedAdj(adj) {
			break
		}
	}
	b := topology.NewBuilder()
	swGUID := func(i int) uint64 { return 0x0002_c900_0000_0001 + uint64(i) }
	caGUID := func(i int) uint64 { return 0x0008_f100_0000_0001 + uint64(i) }
	for i := 0; i < n; i++ {
		node := topology.Node{GUID: swGUID(i), Type: topology.Switch, Desc: fmt.Sprintf("sw%d", i), Ports: make([]topology.Port, deg+casPer+1)}
		for p := range node.Ports {
			node.Ports[p] = topology.Port{GUID: swGUID(i), State: topology.StateActive, Width: 2, Speed: 1, VLCap: vlcap}
		}
		if err := b.AddNode(node); err != nil {
			return nil, err
		}
		for c := 0; c < casPer; c++ {
			g := caGUID(i*casPer + c)
			ca := topology.Node{GUID: g, Type: topology.CA, Desc: fmt.Sprintf("ca%d", i*casPer+c), Ports: make([]topology.Port, 2)}
			ca.Ports[1] = topology.Port{GUID: g | 1<<32, State: topology.StateActive, Width: 2, Speed: 1, VLCap: vlcap}
			if err := b.AddNode(ca); err != nil {
				return nil, err
			}
		}
	}
	next := make([]int, n)
	for i := range adj {
		for _, j := range adj[i] {
			if i < j {
				next[i]++
				next[j]++
				b.Link(swGUID(i), uint8(next[i]), swGUID(j), uint8(next[j]))
			}
		}
		for c := 0; c < casPer; c++ {
			b.Link(swGUID(i), uint8(deg+1+c), caGUID(i*casPer+c), 1)
		}
	}
	return b.Build()
}

// randomPairing pairs stubs uniformly among the pairs that keep the graph
// simple (Steger & Wormald), restarting when it gets stuck.
func randomPairing(rng *rand.Rand, n, deg int, adj [][]int) bool {
	stubs := make([]int, 0, n*deg)
	for i := 0; i < n; i++ {
		adj[i] = adj[i][:0]
		for k := 0; k < deg; k++ {
			stubs = append(stubs, i)
		}
	}
	seen := make(map[[2]int]bool, len(stubs)/2)
	for fails := 0; len(stubs) > 0; {
		i, j := rng.Intn(len(stubs)), rng.Intn(len(stubs))
		a, b := stubs[i], stubs[j]
		if a > b {
			a, b = b, a
		}
		if i == j || a == b || seen[[2]int{a, b}] {
			if fails++; fails > 100*n*deg {
				return false
			}
			continue
		}
		seen[[2]int{a, b}] = true
		adj[a] = append(adj[a], b)
		adj[b] = append(adj[b], a)
		if i < j {
			i, j = j, i
		}
		last := len(stubs) - 1
		stubs[i] = stubs[last]
		stubs = stubs[:last]
		last--
		stubs[j] = stubs[last]
		stubs = stubs[:last]
	}
	return true
}

func connectedAdj(adj [][]int) bool {
	seen := make([]bool, len(adj))
	q := []int{0}
	seen[0] = true
	for i := 0; i < len(q); i++ {
		for _, j := range adj[q[i]] {
			if !seen[j] {
				seen[j] = true
				q = append(q, j)
			}
		}
	}
	return len(q) == len(adj)
}

// RandomMinimal routes every endpoint on a fixed, seeded random
// shortest-path tree per destination: each switch picks uniformly one of its
// minimal next hops. It is the "one minimal path per pair from a given
// routing table" of seed 001's evaluation, as planes.
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
