package torus

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// RouteStats describes a routing for logs.
type RouteStats struct {
	// Detours counts (switch, destination) pairs that take a detour hop
	// because their dimension-order route meets a fault.
	Detours int64
}

// Home is the switch index an endpoint hangs off and the out-port that
// switch uses to deliver to it (0 for a switch's own port 0); -1 when the
// endpoint has no live link to a switch.
func Home(t *topology.Topology, e topology.PortRef) (int32, uint8) {
	if t.Nodes[e.Node].Type == topology.Switch {
		return t.SwitchIndex(e.Node), 0
	}
	if !t.IsLinkUp(e) {
		return -1, 0
	}
	peer := t.Port(e).Peer
	return t.SwitchIndex(peer.Node), peer.Port
}

// Route computes one dimension-order plane per destination endpoint. It
// fails, naming an example, when a switch has neither an intact
// dimension-order route nor a live neighbour with one.
func (g *Grid) Route(ctx context.Context) (*plan.Routes, RouteStats, error) {
	eps := g.T.Endpoints()
	out := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	var detours atomic.Int64
	err := route.ForEach(ctx, len(eps), func() func(int32) error {
		w := &walker{g: g, state: make([]uint8, len(g.Coord)), hops: make([]int32, len(g.Coord)), stack: make([]int32, 0, 64)}
		return func(e int32) error {
			pl, n, err := w.plane(e)
			if err != nil {
				return err
			}
			detours.Add(int64(n))
			out.Planes[e].Planes = []plan.Plane{pl}
			return nil
		}
	})
	return out, RouteStats{Detours: detours.Load()}, err
}

// walker owns one goroutine's scratch space.
type walker struct {
	g     *Grid
	state []uint8 // 0 unknown, 1 intact dimension-order route, 2 broken
	hops  []int32 // switch hops of the intact route
	stack []int32
}

// next is switch s's dimension-order hop toward switch t: the ports toward
// the next switch and that switch, q = -1 when the leg is blocked; at t, ok
// is false. A leg goes the shorter way round its ring unless that arc
// meets a fault, then the other way: a ring with a fault is a line, on
// which no VL can close a loop.
func (g *Grid) next(s, t int32) (ports []uint8, q int32, ok bool) {
	cs, ct := g.Coord[s], g.Coord[t]
	for d := range g.Dims {
		if cs[d] == ct[d] {
			continue
		}
		dir := g.dir(d, cs[d], ct[d])
		if g.clear(s, d, dir, ct[d]) {
			return g.nb[s][2*d+dir], g.neighbour(s, d, dir), true
		}
		if g.Wrap[d] && g.Dims[d] > 2 && g.clear(s, d, 1-dir, ct[d]) {
			return g.nb[s][2*d+1-dir], g.neighbour(s, d, 1-dir), true
		}
		return nil, -1, true
	}
	return nil, -1, false
}

// clear reports whether every hop from s along dimension d in direction
// dir up to coordinate x has a live link and a present switch.
func (g *Grid) clear(s int32, d, dir, x int) bool {
	for g.Coord[s][d] != x {
		q := g.neighbour(s, d, dir)
		if q < 0 || len(g.nb[s][2*d+dir]) == 0 {
			return false
		}
		s = q
	}
	return true
}

// intact settles whether s's dimension-order route to t meets no fault,
// memoising every switch on the way (state[t] is set by the caller). The
// walk ends: every hop brings the packet one hop nearer to t.
func (w *walker) intact(s, t int32) {
	w.stack = w.stack[:0]
	res, h := uint8(2), int32(0)
	for x := s; ; {
		if w.state[x] != 0 {
			res, h = w.state[x], w.hops[x]
			break
		}
		w.stack = append(w.stack, x)
		ports, q, _ := w.g.next(x, t)
		if q < 0 || len(ports) == 0 {
			break
		}
		x = q
	}
	for i := len(w.stack) - 1; i >= 0; i-- {
		h++
		w.state[w.stack[i]], w.hops[w.stack[i]] = res, h
	}
}

func (w *walker) plane(e int32) (plan.Plane, int, error) {
	g := w.g
	t, last := Home(g.T, g.T.Endpoints()[e])
	pl := make(plan.Plane, len(g.Coord))
	for i := range pl {
		pl[i] = plan.NoPort
	}
	if t < 0 {
		return pl, 0, nil // no live link: nothing reaches it, the verifier says so
	}
	clear(w.state)
	w.state[t], w.hops[t] = 1, 0
	for s := range g.Coord {
		w.intact(int32(s), t)
	}
	detours := 0
	for s := range g.Coord {
		s := int32(s)
		switch {
		case s == t:
			pl[s] = last
		case w.state[s] == 1:
			ports, _, _ := g.next(s, t)
			pl[s] = ports[int(e)%len(ports)]
		default:
			p, ok := w.detour(s, t, e)
			if !ok {
				return nil, 0, fmt.Errorf("torus: switch 0x%016x at %v has no fault-free dimension-order route toward %v, and no live neighbour has one; too many faults for dimension-order routing: use another engine (updn, or a dependency-graph engine)",
					g.T.Nodes[g.T.Switches()[s]].GUID, g.Coord[s], g.Coord[t])
			}
			pl[s] = p
			detours++
		}
	}
	return pl, detours, nil
}

// detour picks the live port of s toward the neighbour with an intact
// route that is nearest to t; ties rotate with the destination.
func (w *walker) detour(s, t, e int32) (uint8, bool) {
	g := w.g
	var cand []uint8
	best := -1
	for _, ports := range g.nb[s] {
		for _, p := range ports {
			q := g.T.SwitchIndex(g.T.Port(topology.PortRef{Node: g.T.Switches()[s], Port: p}).Peer.Node)
			if w.state[q] != 1 {
				continue
			}
			h := int(w.hops[q])
			switch {
			case best < 0 || h < best:
				best, cand = h, append(cand[:0], p)
			case h == best:
				cand = append(cand, p)
			}
		}
	}
	if best < 0 {
		return 0, false
	}
	return cand[int(e)%len(cand)], true
}
