// Package updn is the Up*/Down* algorithm behind the updn plugin, importable
// by other first-party plugins' tests.
package updn

import (
	"context"
	"fmt"
	"sort"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Cost rows pack a legal-route hop count (7 bits) and the phase a switch is
// in toward the destination: upPhase set means it must climb first.
const (
	upPhase  uint8 = 0x80
	costMask uint8 = 0x7F
	maxCost        = 126 // 0x7F|upPhase would collide with route.Unreachable
)

// AutoRoots names how roots are picked where none is configured.
type AutoRoots string

const (
	// AutoSpines picks the switches farthest from any CA-carrying switch
	// (the spines of a fat tree), as OpenSM's updn does. CA traffic gets
	// shortest, balanced routes, but several roots are several peaks: a
	// pair whose only paths dip and climb again (spine to spine, and
	// aggregation switches of different groups in different pods) has no
	// legal route and is left unrouted.
	AutoSpines AutoRoots = "spines"
	// AutoLeaf picks one CA-carrying switch per component, the lowest GUID
	// among those with the most CAs. One root is one peak, so every pair is
	// routable; on a full fat tree the ranking from a leaf puts every core
	// at the same depth, so CA routes stay shortest and balanced.
	AutoLeaf AutoRoots = "leaf"
	// AutoCentre picks the switch of least eccentricity, lowest GUID first.
	AutoCentre AutoRoots = "centre"
)

// Config selects roots and balancing.
type Config struct {
	// Roots are root switch node GUIDs; empty selects roots automatically.
	Roots []uint64
	// Auto is the automatic selection; "" means AutoSpines.
	Auto AutoRoots
	// CountSwitches mirrors OpenSM's port_profile_switch_nodes.
	CountSwitches bool
}

// Result is what Route reports besides the routes.
type Result struct {
	Roots   []uint64 // chosen root switch GUIDs, ascending
	How     string   // "configured", "farthest from CAs", "leaf", "centre", or a mix per component
	Missing []string // configured GUIDs not found as switches
	Report  *route.Report
}

// Route computes Up*/Down* planes for topo.
func Route(ctx context.Context, topo *topology.Topology, lmc uint8, cfg Config) (*plan.Routes, *Result, error) {
	if topo == nil {
		return nil, nil, fmt.Errorf("updn: no topology in the request")
	}
	g := route.NewGraph(topo)
	res := &Result{}
	roots, err := chooseRoots(g, cfg.Roots, cfg.Auto, res)
	if err != nil {
		return nil, nil, fmt.Errorf("updn: %w", err)
	}
	for _, r := range roots {
		res.Roots = append(res.Roots, g.SwitchGUID(r))
	}
	ord, err := rankOrder(g, roots)
	if err != nil {
		return nil, nil, fmt.Errorf("updn: %w", err)
	}
	costs, err := costMatrix(ctx, g, ord)
	if err != nil {
		return nil, nil, fmt.Errorf("updn: %w", err)
	}
	r, rep, err := route.Balance(ctx, g, candidates(g, ord, costs), route.Options{LMC: lmc, CountSwitches: cfg.CountSwitches})
	if err != nil {
		return nil, nil, fmt.Errorf("updn: %w", err)
	}
	res.Report = rep
	return r, res, nil
}

// chooseRoots returns root switch indices, at least one per connected
// component. Configured GUIDs win where present. Elsewhere, by auto (see
// AutoRoots); spines and leaf selection need a component with both
// CA-carrying and CA-free switches and otherwise (rings, tori, meshes)
// pick the centre.
func chooseRoots(g *route.Graph, configured []uint64, auto AutoRoots, res *Result) ([]int32, error) {
	switch auto {
	case "", AutoSpines, AutoLeaf, AutoCentre:
	default:
		return nil, fmt.Errorf("unknown automatic root selection %q: use spines, leaf or centre", auto)
	}
	isRoot := make([]bool, g.N)
	for _, guid := range configured {
		n := g.Topo.NodeByGUID(guid)
		if n == topology.NoNode || g.Topo.SwitchIndex(n) < 0 {
			res.Missing = append(res.Missing, fmt.Sprintf("0x%016x", guid))
			continue
		}
		isRoot[g.Topo.SwitchIndex(n)] = true
	}
	hows := map[string]bool{}
	row := make([]uint8, g.N)
	queue := make([]int32, g.N)
	var roots []int32
	for _, comp := range g.Components() {
		var have []int32
		for _, s := range comp {
			if isRoot[s] {
				have = append(have, s)
			}
		}
		if len(have) > 0 {
			roots = append(roots, have...)
			hows["configured"] = true
			continue
		}
		// Height above the CA-carrying switches.
		var leaves []int32
		for _, s := range comp {
			if len(g.Group(s)) > 1 { // more than the switch's own port 0
				leaves = append(leaves, s)
			}
		}
		var top []int32
		layered := len(leaves) > 0 && len(leaves) < len(comp)
		switch {
		case layered && auto == AutoLeaf:
			best := leaves[0]
			for _, s := range leaves {
				if len(g.Group(s)) > len(g.Group(best)) {
					best = s
				}
			}
			top = []int32{best}
			hows["leaf"] = true
		case layered && auto != AutoCentre:
			if err := g.BFS(leaves, row, queue); err != nil {
				return nil, err
			}
			var h uint8
			for _, s := range comp {
				if row[s] > h {
					h = row[s]
				}
			}
			for _, s := range comp {
				if row[s] == h {
					top = append(top, s)
				}
			}
			hows["farthest from CAs"] = true
		default:
			best, bestEcc := comp[0], 256
			for _, s := range comp {
				if err := g.BFS([]int32{s}, row, queue); err != nil {
					return nil, err
				}
				ecc := 0
				for _, x := range comp {
					ecc = max(ecc, int(row[x]))
				}
				if ecc < bestEcc {
					best, bestEcc = s, ecc
				}
			}
			top = []int32{best}
			hows["centre"] = true
		}
		roots = append(roots, top...)
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i] < roots[j] })
	for _, h := range []string{"configured", "farthest from CAs", "leaf", "centre"} {
		if hows[h] {
			if res.How != "" {
				res.How += "+"
			}
			res.How += h
		}
	}
	return roots, nil
}

// rankOrder ranks switches by hop distance from the roots and returns each
// switch's position in the strict order (rank, GUID): an edge s→n climbs
// ("up") iff ord[n] < ord[s]. Switch indices follow GUID order already.
func rankOrder(g *route.Graph, roots []int32) ([]int32, error) {
	rank := make([]uint8, g.N)
	if g.N > 0 {
		if err := g.BFS(roots, rank, make([]int32, g.N)); err != nil {
			return nil, err
		}
	}
	by := make([]int32, g.N)
	for i := range by {
		by[i] = int32(i)
	}
	sort.SliceStable(by, func(i, j int) bool { return rank[by[i]] < rank[by[j]] })
	ord := make([]int32, g.N)
	for pos, s := range by {
		ord[s] = int32(pos)
	}
	return ord, nil
}

// costMatrix returns, for each destination switch d, row d of N entries:
// the length of the route every switch uses toward d and its phase.
// Switches that can reach d by descending only do so (a packet may arrive
// there already descending, and a destination-based table cannot tell);
// the others climb to the up-neighbour with the cheapest route. Both sets
// are exact shortest lengths under that rule. Unreachable: no legal route.
func costMatrix(ctx context.Context, g *route.Graph, ord []int32) ([]uint8, error) {
	n := g.N
	m := make([]uint8, n*n)
	byOrd := make([]int32, n)
	for s, o := range ord {
		byOrd[o] = int32(s)
	}
	err := route.ForEach(ctx, n, func() func(int32) error {
		queue := make([]int32, n)
		return func(d int32) error { return costRow(g, ord, byOrd, d, m[int(d)*n:(int(d)+1)*n], queue) }
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func costRow(g *route.Graph, ord, byOrd []int32, d int32, row []uint8, queue []int32) error {
	for i := range row {
		row[i] = route.Unreachable
	}
	// Descending-only distances: walk down-edges x→y (ord[x] < ord[y])
	// backwards from d.
	row[d] = 0
	queue[0] = d
	tail := 1
	for h := 0; h < tail; h++ {
		y := queue[h]
		c := row[y] + 1
		for _, x := range g.Neighbors(y) {
			if ord[x] < ord[y] && row[x] == route.Unreachable {
				if c > maxCost {
					return tooLong(g, x, d)
				}
				row[x] = c
				queue[tail] = x
				tail++
			}
		}
	}
	// Climbing switches, in increasing order so every up-neighbour is done.
	for _, x := range byOrd {
		if row[x] != route.Unreachable {
			continue
		}
		best := route.Unreachable
		for _, u := range g.Neighbors(x) {
			if ord[u] < ord[x] && row[u] != route.Unreachable && row[u]&costMask < best {
				best = row[u] & costMask
			}
		}
		if best == route.Unreachable {
			continue
		}
		if best+1 > maxCost {
			return tooLong(g, x, d)
		}
		row[x] = (best + 1) | upPhase
	}
	return nil
}

func tooLong(g *route.Graph, s, d int32) error {
	return fmt.Errorf("the up/down route from switch 0x%016x to switch 0x%016x is longer than %d hops; choose roots nearer the middle of the fabric (root_guids)", g.SwitchGUID(s), g.SwitchGUID(d), maxCost)
}

// candidates allows, at a descending switch, the down-ports whose peer
// descends one step closer; at a climbing switch, the up-ports whose peer's
// route is one step shorter.
func candidates(g *route.Graph, ord []int32, m []uint8) route.Candidates {
	n := g.N
	return func(s, d int32, buf []uint8) []uint8 {
		row := m[int(d)*n : int(d)*n+n]
		v := row[s]
		if v == route.Unreachable || v&costMask == 0 {
			return buf
		}
		want := v&costMask - 1
		climbing := v&upPhase != 0
		for _, l := range g.Links(s) {
			pv := row[l.Peer]
			if pv == route.Unreachable || pv&costMask != want {
				continue
			}
			if climbing {
				if ord[l.Peer] < ord[s] {
					buf = append(buf, l.Port)
				}
			} else if ord[l.Peer] > ord[s] && pv&upPhase == 0 {
				buf = append(buf, l.Port)
			}
		}
		return buf
	}
}
