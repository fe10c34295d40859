package route

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
)

// Candidates appends to buf, in ascending port order, the out-ports of
// switch s that lie on an allowed shortest path toward switch d (s != d) and
// returns the result; none means s cannot reach d. It is called
// concurrently for different s and must not write shared state.
type Candidates func(s, d int32, buf []uint8) []uint8

// Options tune Balance.
type Options struct {
	// LMC asks for 2^LMC planes per destination.
	LMC uint8
	// CountSwitches also counts switch port-0 destinations in the per-port
	// load (OpenSM's port_profile_switch_nodes). By default, like OpenSM,
	// only CA and router destinations load a port: switch management
	// traffic is negligible next to data traffic.
	CountSwitches bool
	// Tie picks among equally good ports in MinHopRoutes (LeastLoad, the
	// default, is Balance).
	Tie Tie
}

// Report summarises what Balance could not route.
type Report struct {
	// NoRoute counts (switch, destination endpoint) pairs left at NoPort.
	NoRoute int64
	// Detached counts endpoints that hang off no switch by a link that is up.
	Detached int
	// Examples names a few unrouted pairs, for logs.
	Examples []string
}

const maxExamples = 5

// Balance builds planes-form routes: for every destination endpoint and
// every switch it picks, among cand's ports, the one with the least load
// counted so far on that switch, like OpenSM's osm_switch_recommend_path.
// Destinations are taken grouped by the switch they hang off (switches in
// index order, CAs before the switch's own port 0), so that consecutive
// destinations spread over the equal-cost ports. With LMC > 0 each further
// plane first prefers a port toward a switch the destination's earlier
// planes did not use, then an unused port, then the least load.
//
// The choice at a switch depends only on that switch's own counters, so
// switches are processed in parallel and the result does not depend on
// scheduling.
func Balance(ctx context.Context, g *Graph, cand Candidates, opt Options) (*plan.Routes, *Report, error) {
	if opt.LMC > 7 {
		return nil, nil, fmt.Errorf("LMC %d out of range 0..7", opt.LMC)
	}
	eps := g.Topo.Endpoints()
	np := 1 << opt.LMC
	n := g.N
	back := make([]uint8, len(eps)*np*n)
	planes := make([]plan.Plane, len(eps)*np)
	routes := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e := range eps {
		for k := 0; k < np; k++ {
			i := e*np + k
			planes[i] = back[i*n : (i+1)*n : (i+1)*n]
		}
		routes.Planes[e].Planes = planes[e*np : (e+1)*np : (e+1)*np]
	}
	rep := &Report{}
	for e := range eps {
		if g.attach[e].Switch < 0 {
			for k := 0; k < np; k++ {
				fill(routes.Planes[e].Planes[k], plan.NoPort)
			}
			rep.Detached++
			rep.NoRoute += int64(n)
			if len(rep.Examples) < maxExamples {
				ep := eps[e]
				rep.Examples = append(rep.Examples, fmt.Sprintf("endpoint 0x%016x/%d is not linked to any switch by a link that is up", g.Topo.Nodes[ep.Node].GUID, ep.Port))
			}
		}
	}
	if n == 0 {
		return routes, rep, nil
	}
	// One item per worker, a range of switches each: a range walks the
	// destinations once, writing neighbouring entries of each plane.
	w := Workers(n)
	reps := make([]Report, w)
	if _, err := Each(ctx, w, w, func(_, k int) error {
		lo, hi := int32(k*n/w), int32((k+1)*n/w)
		return g.balanceRange(ctx, cand, opt, routes, lo, hi, &reps[k])
	}); err != nil {
		return nil, nil, err
	}
	for k := range reps {
		rep.NoRoute += reps[k].NoRoute
		for _, ex := range reps[k].Examples {
			if len(rep.Examples) < maxExamples {
				rep.Examples = append(rep.Examples, ex)
			}
		}
	}
	return routes, rep, nil
}

func fill(b []uint8, v uint8) {
	for i := range b {
		b[i] = v
	}
}

// balanceRange routes switches lo..hi-1 toward every destination.
func (g *Graph) balanceRange(ctx context.Context, cand Candidates, opt Options, routes *plan.Routes, lo, hi int32, rep *Report) error {
	np := 1 << opt.LMC
	// load[s-lo][p] counts destinations (times planes) routed out of port p.
	load := make([][]int32, hi-lo)
	for s := lo; s < hi; s++ {
		load[s-lo] = make([]int32, len(g.peer[s]))
	}
	buf := make([]uint8, 0, 256)
	usedPeer := make([]int32, 0, np)
	usedPort := make([]uint8, 0, np)
	stamp := make([]int32, g.N)
	for d := int32(0); d < int32(g.N); d++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		grp := g.groups[d]
		for s := lo; s < hi; s++ {
			if s == d {
				for _, e := range grp {
					out := g.attach[e].Port
					for _, pl := range routes.Planes[e].Planes {
						pl[s] = out
					}
				}
				continue
			}
			c := cand(s, d, buf[:0])
			if len(c) == 0 {
				for _, e := range grp {
					for _, pl := range routes.Planes[e].Planes {
						pl[s] = plan.NoPort
					}
				}
				rep.NoRoute += int64(len(grp))
				if len(rep.Examples) < maxExamples {
					rep.Examples = append(rep.Examples, fmt.Sprintf("switch 0x%016x has no allowed path to switch 0x%016x (%d endpoints)", g.SwitchGUID(s), g.SwitchGUID(d), len(grp)))
				}
				continue
			}
			ld := load[s-lo]
			if np == 1 {
				g.pickSingle(c, ld, grp, opt.CountSwitches, routes, s)
				continue
			}
			if np <= len(c) && g.distinctPeers(s, c, stamp) {
				g.pickSpread(c, ld, grp, opt.CountSwitches, routes, s, np)
				continue
			}
			for _, e := range grp {
				g.pickGeneral(c, ld, e, opt.CountSwitches, routes, s, usedPeer[:0], usedPort[:0])
			}
		}
	}
	return nil
}

// pickGeneral picks every plane of destination e at switch s the way
// OpenSM's LMC path spreading does: a port toward a switch this destination
// has not used yet, else a port it has not used yet, else the least load,
// lowest port on ties.
func (g *Graph) pickGeneral(c []uint8, ld []int32, e int32, countSwitches bool, routes *plan.Routes, s int32, usedPeer []int32, usedPort []uint8) {
	var wt int32 = 1
	if g.attach[e].IsSwitch && !countSwitches {
		wt = 0
	}
	for _, pl := range routes.Planes[e].Planes {
		best, bestKey := c[0], int64(-1)
		for _, p := range c {
			key := int64(ld[p])
			if containsPort(usedPort, p) {
				key += 1 << 40
			}
			if containsPeer(usedPeer, g.peer[s][p]) {
				key += 1 << 41
			}
			if bestKey < 0 || key < bestKey {
				best, bestKey = p, key
			}
		}
		pl[s] = best
		ld[best] += wt
		usedPort = append(usedPort, best)
		usedPeer = append(usedPeer, g.peer[s][best])
	}
}

// distinctPeers reports whether every candidate port leads to a different
// switch. stamp is per-worker scratch of N entries holding, for a switch,
// 1 + the last s that saw it.
func (g *Graph) distinctPeers(s int32, c []uint8, stamp []int32) bool {
	ok := true
	for _, p := range c {
		peer := g.peer[s][p]
		if stamp[peer] == s+1 {
			ok = false
		}
		stamp[peer] = s + 1
	}
	// Clear so the next call for the same s starts fresh.
	for _, p := range c {
		stamp[g.peer[s][p]] = 0
	}
	return ok
}

// pickSpread is pickGeneral for the common case of candidates toward
// distinct switches and no more planes than candidates: every plane then
// takes a port (and switch) the destination has not used, so its planes get
// the np smallest (load, port) candidates in order, found in one pass.
func (g *Graph) pickSpread(c []uint8, ld []int32, grp []int32, countSwitches bool, routes *plan.Routes, s int32, np int) {
	var sel [128]int64
	for _, e := range grp {
		k := 0
		for i, p := range c {
			key := int64(ld[p])<<8 | int64(i)
			if k == np && key >= sel[np-1] {
				continue
			}
			j := k
			if k < np {
				k++
			} else {
				j = np - 1
			}
			for j > 0 && sel[j-1] > key {
				sel[j] = sel[j-1]
				j--
			}
			sel[j] = key
		}
		inc := !g.attach[e].IsSwitch || countSwitches
		for j, pl := range routes.Planes[e].Planes {
			p := c[sel[j]&0xFF]
			pl[s] = p
			if inc {
				ld[p]++
			}
		}
	}
}

// pickSingle assigns one plane per destination of grp at switch s: each
// takes the least-loaded candidate, lowest port first on ties. Loads only
// grow by 0 or 1 per pick, so instead of rescanning the candidates for every
// destination it keeps a cursor on the first candidate at the minimum load
// m: after that one grows to m+1 the next pick is the next candidate still
// at m, or, when none is left, the first at m+1. This is the same choice as
// a full rescan at a fraction of the cost on wide fabrics.
func (g *Graph) pickSingle(c []uint8, ld []int32, grp []int32, countSwitches bool, routes *plan.Routes, s int32) {
	if len(c) == 1 {
		p := c[0]
		for _, e := range grp {
			routes.Planes[e].Planes[0][s] = p
			if !g.attach[e].IsSwitch || countSwitches {
				ld[p]++
			}
		}
		return
	}
	var cl [256]int32
	cl2 := cl[:len(c)]
	cur := 0
	for i, p := range c {
		cl2[i] = ld[p]
		if cl2[i] < cl2[cur] {
			cur = i
		}
	}
	m := cl2[cur]
	for _, e := range grp {
		routes.Planes[e].Planes[0][s] = c[cur]
		if g.attach[e].IsSwitch && !countSwitches {
			continue
		}
		cl2[cur]++
		next := -1
		for j := cur + 1; j < len(cl2); j++ {
			if cl2[j] == m {
				next = j
				break
			}
		}
		if next < 0 {
			m++
			for j := range cl2 {
				if cl2[j] == m {
					next = j
					break
				}
			}
		}
		cur = next
	}
	for i, p := range c {
		ld[p] = cl2[i]
	}
}

func containsPort(s []uint8, p uint8) bool {
	for _, x := range s {
		if x == p {
			return true
		}
	}
	return false
}

func containsPeer(s []int32, p int32) bool {
	for _, x := range s {
		if x == p {
			return true
		}
	}
	return false
}

// MinHop returns the Candidates of plain shortest-path routing over the hop
// matrix m (as returned by HopMatrix): the ports whose peer is one hop
// closer to d.
func (g *Graph) MinHop(m []uint8) Candidates {
	n := g.N
	return func(s, d int32, buf []uint8) []uint8 {
		row := m[int(d)*n : int(d)*n+n]
		ds := row[s]
		if ds == Unreachable || ds == 0 {
			return buf
		}
		want := ds - 1
		for _, l := range g.links[s] {
			if row[l.Peer] == want {
				buf = append(buf, l.Port)
			}
		}
		return buf
	}
}
