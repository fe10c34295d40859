package torus

import (
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk/topology"
)

// Grid is the fabric's switches placed on a torus or mesh.
type Grid struct {
	T    *topology.Topology
	Dims []int
	Wrap []bool
	// Coord[s] are the coordinates of switch index s.
	Coord [][]int
	// at[pos] is the switch index at linear position pos (dimension 0
	// least significant), -1 where the switch is missing.
	at     []int32
	stride []int
	// nb[s][2d] / nb[s][2d+1] are the live ports of switch s toward its
	// "+" / "−" neighbour in dimension d (several for parallel cables).
	nb [][][]uint8
	// Faults counts missing switches, plus each grid neighbour without a
	// live link from either end (a cut cable counts twice).
	Faults int
}

// NewGrid places t's switches with c.
func NewGrid(t *topology.Topology, c Config) (*Grid, error) {
	sw := t.Switches()
	if len(sw) == 0 {
		return nil, fmt.Errorf("torus: the fabric has no switches")
	}
	g := &Grid{T: t, Coord: make([][]int, len(sw))}
	nd := len(c.Dims)
	var inferred [][]int
	if len(c.Coords) == 0 && !slices.ContainsFunc(sw, func(n int32) bool { return c.Pattern.MatchString(t.Nodes[n].Desc) }) {
		var err error
		if inferred, err = infer(t); err != nil {
			return nil, err
		}
	}
	for s, n := range sw {
		node := &t.Nodes[n]
		xs, ok := c.Coords[node.GUID]
		if inferred != nil {
			xs, ok = inferred[s], true
		}
		if !ok {
			m := c.Pattern.FindStringSubmatch(node.Desc)
			if m == nil {
				return nil, fmt.Errorf("torus: switch 0x%016x %q: no coordinates: its NodeDescription does not match node_desc_pattern %q and coordinates {} does not list it; give one of them", node.GUID, node.Desc, c.Pattern)
			}
			var err error
			if xs, err = parseCoords(m[1]); err != nil {
				return nil, fmt.Errorf("torus: switch 0x%016x %q: %v", node.GUID, node.Desc, err)
			}
		}
		if nd == 0 {
			nd = len(xs)
		}
		if len(xs) != nd {
			return nil, fmt.Errorf("torus: switch 0x%016x %q has %d coordinates, want %d (one per dimension)", node.GUID, node.Desc, len(xs), nd)
		}
		g.Coord[s] = xs
	}
	g.Dims = c.Dims
	if g.Dims == nil {
		g.Dims = make([]int, nd)
		for _, xs := range g.Coord {
			for d, x := range xs {
				g.Dims[d] = max(g.Dims[d], x+1)
			}
		}
	}
	total := 1
	g.stride = make([]int, nd)
	for d, k := range g.Dims {
		g.stride[d] = total
		total *= k
		if total > 1<<24 {
			return nil, fmt.Errorf("torus: grid %v is too large", g.Dims)
		}
	}
	g.at = make([]int32, total)
	for i := range g.at {
		g.at[i] = -1
	}
	for s, xs := range g.Coord {
		for d, x := range xs {
			if x >= g.Dims[d] {
				return nil, fmt.Errorf("torus: switch 0x%016x at %v is outside dims %v", t.Nodes[sw[s]].GUID, xs, g.Dims)
			}
		}
		p := g.pos(xs)
		if o := g.at[p]; o >= 0 {
			return nil, fmt.Errorf("torus: switches 0x%016x and 0x%016x both sit at %v; fix coordinates or node_desc_pattern", t.Nodes[sw[o]].GUID, t.Nodes[sw[s]].GUID, xs)
		}
		g.at[p] = int32(s)
	}
	if err := g.links(c.Wrap); err != nil {
		return nil, err
	}
	g.Faults = total - len(sw)
	for s := range g.Coord {
		for d := range g.Dims {
			for dir := 0; dir < 2; dir++ {
				if n := g.neighbour(int32(s), d, dir); n >= 0 && len(g.nb[s][2*d+dir]) == 0 {
					g.Faults++
				}
			}
		}
	}
	return g, nil
}

func (g *Grid) pos(xs []int) int {
	p := 0
	for d, x := range xs {
		p += x * g.stride[d]
	}
	return p
}

// step is the coordinate one hop from x in direction dir (0 "+", 1 "−")
// of dimension d, -1 off the edge of a mesh.
func (g *Grid) step(x, d, dir int) int {
	k := g.Dims[d]
	if dir == 0 {
		x++
	} else {
		x--
	}
	switch {
	case x >= 0 && x < k:
		return x
	case !g.Wrap[d] || k <= 2:
		return -1 // a 2-ring is a line with doubled cables
	case x < 0:
		return k - 1
	}
	return 0
}

// neighbour is the switch index one hop from s (-1: off the grid or
// missing). Parallel "+" and "−" neighbours of a 2-ring are the same.
func (g *Grid) neighbour(s int32, d, dir int) int32 {
	x := g.step(g.Coord[s][d], d, dir)
	if x < 0 || x == g.Coord[s][d] {
		return -1
	}
	p := g.pos(g.Coord[s]) + (x-g.Coord[s][d])*g.stride[d]
	return g.at[p]
}

// links classifies every live switch-to-switch link by dimension and
// direction, detecting wrap-around where it is not configured.
func (g *Grid) links(wrap []bool) error {
	t, sw := g.T, g.T.Switches()
	nd := len(g.Dims)
	g.Wrap = wrap
	if g.Wrap == nil {
		g.Wrap = make([]bool, nd)
		for s, n := range sw {
			g.eachLink(n, func(_ uint8, q int32) {
				d, ok := g.differ(int32(s), q)
				if ok && g.Dims[d] > 2 && absDiff(g.Coord[s][d], g.Coord[q][d]) == g.Dims[d]-1 {
					g.Wrap[d] = true
				}
			})
		}
	}
	if len(g.Wrap) != nd {
		return fmt.Errorf("torus: wrap has %d entries, the grid %d dimensions", len(g.Wrap), nd)
	}
	g.nb = make([][][]uint8, len(sw))
	for s, n := range sw {
		g.nb[s] = make([][]uint8, 2*nd)
		var err error
		g.eachLink(n, func(p uint8, q int32) {
			if err != nil {
				return
			}
			d, ok := g.differ(int32(s), q)
			dir := -1
			if ok {
				for r := 0; r < 2; r++ {
					if g.step(g.Coord[s][d], d, r) == g.Coord[q][d] {
						dir = r
						break
					}
				}
			}
			if dir < 0 {
				err = fmt.Errorf("torus: link 0x%016x/%d - 0x%016x joins %v and %v, which are not neighbours on grid %v (wrap %v); fix coordinates, dims or wrap, or use another engine", t.Nodes[n].GUID, p, t.Nodes[sw[q]].GUID, g.Coord[s], g.Coord[q], g.Dims, g.Wrap)
				return
			}
			g.nb[s][2*d+dir] = append(g.nb[s][2*d+dir], p)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eachLink calls f for every live port of node n cabled to a switch.
func (g *Grid) eachLink(n int32, f func(p uint8, peer int32)) {
	t := g.T
	for p := 1; p < len(t.Nodes[n].Ports); p++ {
		r := topology.PortRef{Node: n, Port: uint8(p)}
		if !t.IsLinkUp(r) {
			continue
		}
		if q := t.SwitchIndex(t.Port(r).Peer.Node); q >= 0 {
			f(uint8(p), q)
		}
	}
}

// differ is the one dimension in which switches a and b differ.
func (g *Grid) differ(a, b int32) (int, bool) {
	d := -1
	for i := range g.Dims {
		if g.Coord[a][i] != g.Coord[b][i] {
			if d >= 0 {
				return 0, false
			}
			d = i
		}
	}
	return d, d >= 0
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

// Dateline lists the dimensions whose rings need two VLs: wrapped, with 5
// or more switches. On 3 a minimal leg is one hop; on 4 only the legs to
// the antipode are two hops, "+" toward even and "−" toward odd
// coordinates (plusReach), whose dependencies c2→c3, c0→c1 (and d3→d2,
// d1→d0) close no loop.
func (g *Grid) Dateline() []int {
	var ds []int
	for d, k := range g.Dims {
		if g.Wrap[d] && k >= 5 {
			ds = append(ds, d)
		}
	}
	return ds
}

// plusReach is how far "+" legs toward coordinate b of dimension d reach
// on a whole ring: half the ring, where a tie (an even ring's antipode)
// goes "+" toward even b and "−" toward odd b, so tie traffic is split
// over both directions.
func (g *Grid) plusReach(d, b int) int {
	k := g.Dims[d]
	if k%2 == 0 && b%2 == 1 {
		return k/2 - 1
	}
	return k / 2
}

// dir is the direction dimension-order routing takes in dimension d from
// coordinate a toward b (a != b): the shorter way round a ring, ties
// split as plusReach says.
func (g *Grid) dir(d, a, b int) int {
	k := g.Dims[d]
	if !g.Wrap[d] || k <= 2 {
		if b > a {
			return 0
		}
		return 1
	}
	if ((b-a)%k+k)%k <= g.plusReach(d, b) {
		return 0
	}
	return 1
}
