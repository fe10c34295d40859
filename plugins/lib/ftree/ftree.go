package ftree

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Result is what Route reports besides the routes.
type Result struct {
	Tree *Tree
	// CAs covers CA and router destinations, Switches switch port-0
	// destinations.
	CAs, Switches *Report
}

// Route recognises the fat tree in topo and routes every destination:
// CAs with 2^lmc planes through different top switches, switch port-0
// LIDs over whatever up*/down* routes exist toward them.
func Route(ctx context.Context, topo *topology.Topology, lmc uint8, cfg Config) (*plan.Routes, *Result, error) {
	if lmc > 7 {
		return nil, nil, fmt.Errorf("ftree: LMC %d out of range 0..7", lmc)
	}
	t, err := Build(topo, cfg)
	if err != nil {
		return nil, nil, err
	}
	r, err := NewRouter(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	routes := NewRoutes(t, 1<<lmc)
	res := &Result{Tree: t}
	if res.CAs, err = r.RouteCAs(ctx, routes); err != nil {
		return nil, nil, err
	}
	if res.Switches, err = r.RouteSwitches(ctx, routes); err != nil {
		return nil, nil, err
	}
	return routes, res, nil
}
