package torus

import (
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk/topology"
)

// infer places the switches of a whole torus or mesh from the switch graph
// alone, for fabrics whose descriptions carry no coordinates. Two
// neighbours of a switch lie in the same dimension exactly when they share
// no neighbour but it (in other dimensions they close a square), which
// holds on lines of any length and on rings of 5 or more; from the origin
// (a switch of least degree, a corner on a mesh) the directions spread
// switch by switch: b's neighbour in direction D is the one common
// neighbour of b and v's D-neighbour other than v, for v the switch b was
// reached from. Anything that does not fit (faults, rings of 3 or 4) is
// refused: give node_desc_pattern or coordinates {} then.
func infer(t *topology.Topology) ([][]int, error) {
	sw := t.Switches()
	n := len(sw)
	adj := make([][]int32, n)
	for s, node := range sw {
		for p := 1; p < len(t.Nodes[node].Ports); p++ {
			r := topology.PortRef{Node: node, Port: uint8(p)}
			if !t.IsLinkUp(r) {
				continue
			}
			if q := t.SwitchIndex(t.Port(r).Peer.Node); q >= 0 && q != int32(s) && !slices.Contains(adj[s], q) {
				adj[s] = append(adj[s], q)
			}
		}
	}
	fail := func(format string, a ...any) ([][]int, error) {
		return nil, fmt.Errorf("torus: cannot infer coordinates from the switch graph ("+format+"); it works on whole tori with rings of 5 or more and on whole meshes: give node_desc_pattern or coordinates {}", a...)
	}
	o := int32(0)
	for s := range adj {
		if len(adj[s]) < len(adj[o]) {
			o = int32(s)
		}
	}
	common := func(a, b, not int32) []int32 {
		var c []int32
		for _, x := range adj[a] {
			if x != not && slices.Contains(adj[b], x) {
				c = append(c, x)
			}
		}
		return c
	}
	// Directions at the origin: dimension d has "+" = 2d, "−" = 2d+1.
	dirOf := make([][]int32, n) // dirOf[s][dir] = neighbour, -1 none
	var dims int
	{
		seen := map[int32]bool{}
		var dirs []int32
		for _, u := range adj[o] {
			if seen[u] {
				continue
			}
			seen[u] = true
			opp := int32(-1)
			for _, w := range adj[o] {
				if w != u && !seen[w] && len(common(u, w, o)) == 0 {
					if opp >= 0 {
						return fail("switch 0x%016x has more than one neighbour opposite 0x%016x", t.Nodes[sw[o]].GUID, t.Nodes[sw[u]].GUID)
					}
					opp = w
				}
			}
			if opp >= 0 {
				seen[opp] = true
			}
			dirs = append(dirs, u, opp)
		}
		dims = len(dirs) / 2
		dirOf[o] = dirs
	}
	coord := make([][]int, n)
	coord[o] = make([]int, dims)
	queue := []int32{o}
	for i := 0; i < len(queue); i++ {
		v := queue[i]
		for e, b := range dirOf[v] {
			if b < 0 || coord[b] != nil {
				continue
			}
			db := make([]int32, 2*dims)
			for k := range db {
				db[k] = -1
			}
			db[e^1] = v
			used := map[int32]bool{v: true}
			for k, a := range dirOf[v] {
				if k/2 == e/2 || a < 0 {
					continue
				}
				c := common(a, b, v)
				if len(c) > 1 {
					return fail("switches 0x%016x and 0x%016x share %d neighbours besides 0x%016x", t.Nodes[sw[a]].GUID, t.Nodes[sw[b]].GUID, len(c), t.Nodes[sw[v]].GUID)
				}
				if len(c) == 1 {
					db[k] = c[0]
					used[c[0]] = true
				}
			}
			var rest []int32
			for _, x := range adj[b] {
				if !used[x] {
					rest = append(rest, x)
				}
			}
			if len(rest) > 1 {
				return fail("switch 0x%016x has %d neighbours no direction explains", t.Nodes[sw[b]].GUID, len(rest))
			}
			if len(rest) == 1 {
				db[e] = rest[0]
			}
			dirOf[b] = db
			coord[b] = slices.Clone(coord[v])
			if e%2 == 0 {
				coord[b][e/2]++
			} else {
				coord[b][e/2]--
			}
			queue = append(queue, b)
		}
	}
	if len(queue) != n {
		return fail("%d of %d switches reached", len(queue), n)
	}
	// Rings: the walk "+" from the origin comes back; fold coordinates
	// into 0..k-1. Lines: shift so the least coordinate is 0.
	for d := 0; d < dims; d++ {
		k, x := 0, o
		for {
			x = dirOf[x][2*d]
			k++
			if x < 0 || x == o || k > n {
				break
			}
		}
		lo := 0
		for _, c := range coord {
			lo = min(lo, c[d])
		}
		for _, c := range coord {
			if x == o {
				c[d] = ((c[d] % k) + k) % k
			} else {
				c[d] -= lo
			}
		}
	}
	return coord, nil
}
