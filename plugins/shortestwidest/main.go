// Command shortestwidest is the shortest-widest routing engine of seed 000
// (Nienaber, Yuan and Duan, §5.1), plugin name "shortest-widest": Up*/Down*
// from a random (seeded) or configured root; pairs are routed one by one,
// each on the least loaded (widest) of its shortest legal paths, whose
// channels then gain one unit of load. It answers explicit per-pair paths,
// so it must be paired with a path-partitioning LID assigner (greedy,
// color/L, destination renaming…), not sequential.
//
// Cost: O(N·E) legal distances plus one small DAG search per pair; 512
// machines on 64 switches (261,632 pairs) route in well under a second.
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
	name    = "shortest-widest"
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

func (e *engine) Schema() schema.Block { return schema.Object(paths.SchemaAttrs(false)...) }

func (e *engine) Configure(v cty.Value) error {
	c, err := paths.ParseConfig(v, false)
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
	r, err := paths.ShortestWidestOpts(req.Topo, rng, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	report(e.log, req.Topo.Nodes[req.Topo.Switches()[r.Root]].GUID, r)
	return &plan.Routes{Paths: r.Paths}, nil
}

func report(log hclog.Logger, root uint64, r *paths.Result) {
	log.Info("routed explicit up/down paths", "root", fmt.Sprintf("0x%016x", root), "paths", len(r.Paths))
	if r.Unrouted > 0 {
		log.Warn("some pairs have no legal up/down path (different components or detached); they are left without a path",
			"unrouted_pairs", r.Unrouted)
	}
}
