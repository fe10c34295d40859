package route

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Tie says how MinHopRoutes picks among a switch's equally short out-ports
// toward a destination.
type Tie uint8

const (
	// LeastLoad is Balance's choice, the least-loaded port: the minhop
	// engine.
	LeastLoad Tie = iota
	// LowestPort takes the lowest-numbered port: one plain tree per
	// destination, the simplest reference routing.
	LowestPort
	// ByDestination takes candidate e mod (number of candidates) for
	// destination endpoint e: a spread that does not depend on load, so a
	// test can predict it.
	ByDestination
)

// MinHopRoutes is min-hop routing: every shortest path a candidate, one
// picked per switch and destination as opt.Tie says (balanced by Balance
// by default). It is the minhop engine and the reference routing tests
// use (MinHop for the whole of it on a topology).
func MinHopRoutes(ctx context.Context, g *Graph, opt Options) (*plan.Routes, *Report, error) {
	hops, err := g.HopMatrix(ctx)
	if err != nil {
		return nil, nil, err
	}
	cand := g.MinHop(hops)
	if opt.Tie == LeastLoad {
		return Balance(ctx, g, cand, opt)
	}
	if opt.LMC != 0 {
		return nil, nil, fmt.Errorf("route: tie %d gives one plane per destination: LMC %d needs LeastLoad", opt.Tie, opt.LMC)
	}
	eps := g.Topo.Endpoints()
	routes := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	rep := &Report{}
	var buf []uint8
	for e := range eps {
		pl := make(plan.Plane, g.N)
		fill(pl, plan.NoPort)
		routes.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{pl}}
		a := g.attach[e]
		if a.Switch < 0 {
			rep.Detached++
			rep.NoRoute += int64(g.N)
			continue
		}
		for s := int32(0); s < int32(g.N); s++ {
			if s == a.Switch {
				pl[s] = a.Port
				continue
			}
			if buf = cand(s, a.Switch, buf[:0]); len(buf) == 0 {
				rep.NoRoute++
				continue
			}
			if opt.Tie == ByDestination {
				pl[s] = buf[e%len(buf)]
			} else {
				pl[s] = buf[0]
			}
		}
	}
	return routes, rep, nil
}

// MinHop is MinHopRoutes on t with tie for a test or an example: it panics
// where MinHopRoutes fails (a diameter over MaxHops, a bad tie).
func MinHop(t *topology.Topology, tie Tie) *plan.Routes {
	r, _, err := MinHopRoutes(context.Background(), NewGraph(t), Options{Tie: tie})
	if err != nil {
		panic(err)
	}
	return r
}
