// Package fabtest builds seeded random switch fabrics as topology snapshots
// for the path and SSSP routing tests and benchmarks. Plugins may not
// import host/topogen (plugins build against sdk/ only), so this is a small
// stand-in with the same shapes: random regular graphs (Jellyfish) and
// random irregular graphs with machines placed uniformly. Not for
// production use.
package fabtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/ibsm/ibsm/sdk/topology"
)

const (
	switchGUIDBase = 0x0002_c900_0000_0000
	caGUIDBase     = 0x0008_f100_0000_0000
)

// Build turns a simple switch graph and per-switch CA counts into a
// topology: CAs on ports 1..h, neighbours after them in adjacency order.
func Build(adj [][]int32, hosts []int) (*topology.Topology, error) {
	b := topology.NewBuilder()
	nca := 0
	for s := range adj {
		ports := hosts[s] + len(adj[s])
		if ports < 1 {
			ports = 1
		}
		if ports > 254 {
			return nil, fmt.Errorf("fabtest: switch %d needs %d ports", s, ports)
		}
		g := uint64(switchGUIDBase + s + 1)
		n := topology.Node{GUID: g, Type: topology.Switch, Desc: fmt.Sprintf("sw%d", s), Ports: make([]topology.Port, ports+1)}
		for p := range n.Ports {
			n.Ports[p] = topology.Port{GUID: g, State: topology.StateActive, Width: 2, Speed: 1, VLCap: 8}
		}
		if err := b.AddNode(n); err != nil {
			return nil, err
		}
		for h := 0; h < hosts[s]; h++ {
			cg := uint64(caGUIDBase + nca + 1)
			nca++
			cn := topology.Node{GUID: cg, Type: topology.CA, Desc: fmt.Sprintf("ca%d", nca), Ports: make([]topology.Port, 2)}
			cn.Ports[1] = topology.Port{GUID: cg + 1<<32, State: topology.StateActive, Width: 2, Speed: 1, VLCap: 8}
			if err := b.AddNode(cn); err != nil {
				return nil, err
			}
			b.Link(g, uint8(h+1), cg, 1)
		}
	}
	for u := range adj {
		for i, v := range adj[u] {
			if int(v) <= u {
				continue
			}
			j := -1
			for k, w := range adj[v] {
				if int(w) == u {
					j = k
				}
			}
			b.Link(uint64(switchGUIDBase+u+1), uint8(hosts[u]+i+1), uint64(switchGUIDBase+int(v)+1), uint8(hosts[v]+j+1))
		}
	}
	return b.Build()
}

func connected(adj [][]int32) bool {
	seen := make([]bool, len(adj))
	stack := []int32{0}
	seen[0] = true
	n := 1
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, y := range adj[x] {
			if !seen[y] {
				seen[y] = true
				n++
				stack = append(stack, y)
			}
		}
	}
	return n == len(adj)
}

func has(adj [][]int32, a, b int32) bool {
	for _, x := range adj[a] {
		if x == b {
			return true
		}
	}
	return false
}

func drop(adj [][]int32, a, b int32) {
	for i, x := range adj[a] {
		if x == b {
			adj[a] = append(adj[a][:i], adj[a][i+1:]...)
			return
		}
	}
}

// RRGGraph draws a connected random d-regular simple graph on n switches
// (n·d even): random pairing with Jellyfish's edge swap when stuck.
func RRGGraph(seed uint64, n, d int) ([][]int32, error) {
	if d >= n || n*d%2 != 0 || d < 2 {
		return nil, fmt.Errorf("fabtest: no connected %d-regular graph on %d switches", d, n)
	}
	rng := rand.New(rand.NewPCG(seed, 0x7a11))
	for try := 0; try < 100; try++ {
		adj := make([][]int32, n)
		open := make([]int32, n)
		for i := range open {
			open[i] = int32(i)
		}
		for stuck := 0; len(open) > 0 && stuck < 100*n; {
			if len(open) >= 2 {
				i, j := rng.IntN(len(open)), rng.IntN(len(open))
				a, b := open[i], open[j]
				if a != b && !has(adj, a, b) {
					adj[a] = append(adj[a], b)
					adj[b] = append(adj[b], a)
					open = open[:0]
					for s := range adj {
						if len(adj[s]) < d {
							open = append(open, int32(s))
						}
					}
					continue
				}
			}
			stuck++
			// Swap: p with two free ports takes over a random edge (x, y).
			p := open[rng.IntN(len(open))]
			if d-len(adj[p]) < 2 {
				continue
			}
			x := int32(rng.IntN(n))
			if len(adj[x]) == 0 {
				continue
			}
			y := adj[x][rng.IntN(len(adj[x]))]
			if x == p || y == p || has(adj, p, x) || has(adj, p, y) {
				continue
			}
			drop(adj, x, y)
			drop(adj, y, x)
			adj[p] = append(adj[p], x, y)
			adj[x] = append(adj[x], p)
			adj[y] = append(adj[y], p)
			open = open[:0]
			for s := range adj {
				if len(adj[s]) < d {
					open = append(open, int32(s))
				}
			}
		}
		if len(open) == 0 && connected(adj) {
			return adj, nil
		}
	}
	return nil, fmt.Errorf("fabtest: could not draw a connected %d-regular graph on %d switches", d, n)
}

// RRG is a random d-regular fabric with h CAs per switch.
func RRG(seed uint64, n, d, h int) (*topology.Topology, error) {
	adj, err := RRGGraph(seed, n, d)
	if err != nil {
		return nil, err
	}
	hosts := make([]int, n)
	for i := range hosts {
		hosts[i] = h
	}
	return Build(adj, hosts)
}

// Irregular is seed 000's shape: a connected uniformly random simple graph
// of n switches and round(n·deg/2) cables, machines CAs placed uniformly.
func Irregular(seed uint64, n int, deg float64, machines int) (*topology.Topology, error) {
	m := int(deg*float64(n)/2 + 0.5)
	if m < n-1 || m > n*(n-1)/2 {
		return nil, fmt.Errorf("fabtest: %d cables cannot connect %d switches simply", m, n)
	}
	rng := rand.New(rand.NewPCG(seed, 0x1e6))
	for try := 0; try < 100; try++ {
		adj := make([][]int32, n)
		for e := 0; e < m; {
			a, b := int32(rng.IntN(n)), int32(rng.IntN(n))
			if a == b || has(adj, a, b) {
				continue
			}
			adj[a] = append(adj[a], b)
			adj[b] = append(adj[b], a)
			e++
		}
		if !connected(adj) {
			continue
		}
		hosts := make([]int, n)
		for i := 0; i < machines; i++ {
			hosts[rng.IntN(n)]++
		}
		return Build(adj, hosts)
	}
	return nil, fmt.Errorf("fabtest: 100 draws of %d switches with degree %g were disconnected", n, deg)
}
