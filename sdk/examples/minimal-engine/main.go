// Command minimal-engine is a complete ibsm routing engine built against
// the ibsm SDK alone (its own Go module; it imports nothing of the host):
// min-hop routes balanced over equal-cost ports (sdk/route), an optional
// refusal of routes whose channel dependency graph is cyclic (sdk/cdg),
// settings decoded into a struct by tags (sdk/settings), and the logger
// sdk.Serve hands over, which logs at the host's level.
//
// Build it, name it in a plugin block, choose it as routing.engine: see
// sdk/README.md.
package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

// version is the plugin's own version (the lock file pins it); the SDK
// version it was built with is reported by the SDK.
const version = "1.0.0"

func main() { sdk.Serve(&engine{log: hclog.NewNullLogger()}) }

// config is the plugin's HCL block, decoded by settings.Decode.
type config struct {
	CountSwitches  bool `ibsm:"count_switch_destinations"`
	RequireAcyclic bool `ibsm:"require_acyclic"`
}

type engine struct {
	log hclog.Logger
	cfg config
}

var (
	_ sdk.RoutingEngine = (*engine)(nil)
	_ sdk.LoggerSetter  = (*engine)(nil)
)

// SetLogger receives sdk.Serve's logger before the host's first call.
func (e *engine) SetLogger(l hclog.Logger) { e.log = l.Named("minimal-engine") }

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: "minimal-engine", Version: version, Kind: sdk.KindRouting,
		Capabilities: []string{sdk.CapLMC, sdk.CapPlanes}}
}

func (e *engine) Schema() schema.Block {
	return schema.Object(
		schema.Attr("count_switch_destinations", cty.Bool,
			"Count switch LIDs in the per-port load that balances equal-cost ports.").WithDefault(cty.False),
		schema.Attr("require_acyclic", cty.Bool,
			"Refuse routes whose channel dependency graph has a cycle (they could deadlock on one VL), so the host falls back to the next engine.").WithDefault(cty.False),
	)
}

// Configure keeps the old settings when the new block does not decode.
func (e *engine) Configure(v cty.Value) error {
	var c config
	if err := settings.Decode(v, &c); err != nil {
		return fmt.Errorf("minimal-engine: %w", err)
	}
	e.cfg = c
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	if req.Topo == nil {
		return nil, errors.New("minimal-engine: no topology in the request")
	}
	g := route.NewGraph(req.Topo)
	r, rep, err := route.MinHopRoutes(ctx, g, route.Options{LMC: req.LMC, CountSwitches: e.cfg.CountSwitches})
	if err != nil {
		return nil, fmt.Errorf("minimal-engine: %w", err)
	}
	if rep.NoRoute > 0 {
		e.log.Warn("some destinations are unreachable", "unrouted_pairs", rep.NoRoute, "examples", rep.Examples)
	}
	acyclic := "not checked"
	if e.cfg.RequireAcyclic {
		var planes []plan.Plane
		for _, d := range r.Planes {
			planes = append(planes, d.Planes...)
		}
		dep, err := cdg.BuildPlanes(ctx, g, planes)
		if err != nil {
			return nil, fmt.Errorf("minimal-engine: %w", err)
		}
		if cyc := dep.FindCycle(); cyc != nil {
			return nil, fmt.Errorf("minimal-engine: min-hop routes can deadlock on this fabric (require_acyclic): %s", cdg.Format(dep, cyc, 8))
		}
		acyclic = "yes"
	}
	e.log.Debug("routed", "switches", len(req.Topo.Switches()), "endpoints", len(req.Topo.Endpoints()), "lmc", req.LMC, "acyclic", acyclic)
	return r, nil
}
