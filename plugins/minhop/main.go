// Command minhop is the first-party min-hop routing engine plugin: shortest
// paths (in switch hops over links that are up) from every switch to every
// endpoint, balanced over equal-cost ports like OpenSM's minhop. It makes no
// deadlock-freedom promise; pair it with a VL assigner that proves or
// establishes one.
package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

func main() {
	sdk.Serve(&engine{log: sdk.Logger("minhop")})
}

type config struct {
	// countSwitches mirrors OpenSM's port_profile_switch_nodes.
	countSwitches bool
}

type engine struct {
	log hclog.Logger
	cfg config
}

var _ sdk.RoutingEngine = (*engine)(nil)

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: "minhop", Version: version, Kind: sdk.KindRouting, Capabilities: []string{"lmc"}}
}

func (e *engine) Schema() schema.Block {
	return schema.Object(
		schema.Attr("count_switch_destinations", cty.Bool,
			"Count switch management LIDs in the per-port load used to balance equal-cost ports (OpenSM port_profile_switch_nodes). Off: only CA and router destinations count.").
			WithDefault(cty.False),
	)
}

func (e *engine) Configure(v cty.Value) error {
	cs, err := settings.Bool(v, "count_switch_destinations", false)
	if err != nil {
		return fmt.Errorf("minhop: %w", err)
	}
	e.cfg = config{countSwitches: cs}
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	r, rep, err := minHop(ctx, req.Topo, req.LMC, e.cfg)
	if err != nil {
		return nil, err
	}
	if rep.NoRoute > 0 {
		// Not an error: a partitioned fabric still routes what it can; the
		// host's verifier decides whether that is acceptable.
		e.log.Warn("some destinations are unreachable", "unrouted_pairs", rep.NoRoute, "detached_endpoints", rep.Detached, "examples", rep.Examples)
	}
	return r, nil
}

// minHop computes min-hop planes for topo.
func minHop(ctx context.Context, topo *topology.Topology, lmc uint8, cfg config) (*plan.Routes, *route.Report, error) {
	if topo == nil {
		return nil, nil, fmt.Errorf("minhop: no topology in the request")
	}
	r, rep, err := route.MinHopRoutes(ctx, route.NewGraph(topo), route.Options{LMC: lmc, CountSwitches: cfg.countSwitches})
	if err != nil {
		return nil, nil, fmt.Errorf("minhop: %w", err)
	}
	return r, rep, nil
}
