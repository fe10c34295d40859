// Command pathselection is the path-selection routing engine of seed 000
// (Nienaber, Yuan and Duan, §5.1), plugin name "path-selection": Up*/Down*
// from a random (seeded) or configured root; Yen's algorithm finds up to k
// shortest legal paths per switch pair on the legal-turn graph; then the
// most loaded channel repeatedly gives up a path of a pair that still has
// more than one, until every pair has one. A "pair" is an ordered switch
// pair by default (granularity = "switch": its machine pairs share the
// path, so machines of one switch never split toward a destination at
// their own switch), or each machine pair (granularity = "machine"). It
// answers explicit per-pair paths, so it must be paired with a
// path-partitioning LID assigner (color/L is seed 000's "separate"
// scheme), not sequential.
//
// Cost: Yen is O(S²·k·h·E) for S switches, h hops, E channels; selection
// O(U·k·h·log E) for U selection units (S² switch pairs or P machine
// pairs); memory about 4·U·k·h bytes.
package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/internal/paths"
	"github.com/ibsm/ibsm/plugins/internal/pcfg"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

const (
	name    = "path-selection"
	version = "0.1.0"
)

func main() {
	sdk.Serve(newEngine(pcfg.Logger(name)))
}

func newEngine(log hclog.Logger) *engine { return &engine{log: log, cfg: paths.DefaultConfig()} }

type engine struct {
	log hclog.Logger
	cfg paths.Config
}

var _ sdk.RoutingEngine = (*engine)(nil)

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: name, Version: version, Kind: sdk.KindRouting}
}

func (e *engine) Schema() schema.Block { return schema.Object(paths.SchemaAttrs(true)...) }

func (e *engine) Configure(v cty.Value) error {
	c, err := paths.ParseConfig(v, true)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	e.cfg = c
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	if req.Topo == nil {
		return nil, fmt.Errorf("%s: no topology in the request", name)
	}
	o, rng, err := e.cfg.Options(req.Topo)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r, err := paths.PathSelectionOpts(req.Topo, rng, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.log.Info("selected explicit up/down paths", "root", fmt.Sprintf("0x%016x", req.Topo.Nodes[req.Topo.Switches()[r.Root]].GUID),
		"paths", len(r.Paths), "k", o.K, "max_stretch", o.MaxStretch, "granularity", o.Granularity.String())
	if r.Unrouted > 0 {
		e.log.Warn("some pairs have no legal up/down path (different components or detached); they are left without a path",
			"unrouted_pairs", r.Unrouted)
	}
	return &plan.Routes{Paths: r.Paths}, nil
}
