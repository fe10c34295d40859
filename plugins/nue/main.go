// Command nue is a dependency-graph routing engine in the spirit of Nue
// (Domke, Hoefler and Matsuoka, HPDC 2016): every destination's tree is
// searched inside the channel dependency graph of its virtual layer, using
// only dependencies that keep that layer acyclic, so the routes are
// deadlock-free by construction on any topology within a VL budget of
// 1..8, 1 included (algorithm in plugins/lib/nue). Its layers are realised
// by the nue VL assigner (bin/ibsm-plugin-nue-vl), which derives each
// destination's layer from the topology and the budget and checks every
// layer's dependency graph before it assigns SLs.
package main

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/nue"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

const (
	name    = "nue"
	version = "0.1.0"
)

func main() {
	sdk.Serve(&engine{log: sdk.Logger(name)})
}

type engine struct {
	log hclog.Logger
	cfg nue.Config
}

var _ sdk.RoutingEngine = (*engine)(nil)

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: name, Version: version, Kind: sdk.KindRouting, Capabilities: []string{"lmc"}}
}

func (e *engine) Schema() schema.Block { return nue.EngineSchema() }

func (e *engine) Configure(v cty.Value) error {
	c, err := nue.Configure(v, e.Schema())
	if err != nil {
		return err
	}
	e.cfg = c
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	start := time.Now()
	budget, err := nue.Budget(e.cfg.VLs, req.Topo)
	if err != nil {
		return nil, err
	}
	planes, _, rep, err := nue.Route(ctx, req.Topo, nue.Options{LMC: req.LMC, Budget: budget, Trees: e.cfg.Trees, Reroute: e.cfg.Reroute})
	if err != nil {
		return nil, err
	}
	minimal := 1.0
	if rep.Pairs > 0 {
		minimal = float64(rep.MinimalPairs) / float64(rep.Pairs)
	}
	e.log.Info("routed", "destinations", len(planes), "lmc", req.LMC, "vls", budget, "trees", rep.Trees, "reroute_passes", e.cfg.Reroute,
		"trees_with_escape_paths", rep.Escaped, "escape_entries", rep.EscapedSwitches,
		"escaped_trees_by_layer", rep.EscapedByLayer, "trees_by_layer", rep.TreesByLayer,
		"balanced_escape_tree", rep.BalancedEscape, "minimal_ca_pairs", minimal, "turn_searches", rep.Searches, "turns_refused_at_bound", rep.Refused, "took", time.Since(start).Round(time.Millisecond).String())
	if rep.Detached > 0 || rep.Unreached > 0 {
		e.log.Warn("some destinations are not reachable from every switch (split fabric or detached ports); those entries are left unrouted",
			"detached_endpoints", rep.Detached, "unreached_entries", rep.Unreached)
	}
	return &plan.Routes{Planes: planes}, nil
}
