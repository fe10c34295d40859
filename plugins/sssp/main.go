// Command sssp is the balanced shortest-path routing engine (Hoefler et
// al., HOTI'09; the first phase of DFSSSP): one shortest-path tree per
// destination LID under channel weights that grow with the routes already
// placed (algorithm in plugins/lib/sssp). Topology-agnostic, LMC
// capable (2^LMC planes per CA, each steered by the weight of the ones
// before). It does not make routes deadlock-free: pair it with a VL
// assigner that breaks cycles (DFSSSP-style layering, ACRO), not "single".
package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/sssp"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

const (
	name    = "sssp"
	version = "0.1.0"
)

func main() {
	sdk.Serve(&engine{log: sdk.Logger(name)})
}

type engine struct {
	log hclog.Logger
}

var _ sdk.RoutingEngine = (*engine)(nil)

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: name, Version: version, Kind: sdk.KindRouting, Capabilities: []string{"lmc"}}
}

// Schema: nothing to configure; weights and order are fixed by the
// algorithm so that the result depends on the fabric alone.
func (e *engine) Schema() schema.Block { return schema.Object() }

func (e *engine) Configure(v cty.Value) error {
	if v != cty.NilVal && !v.IsNull() && v.Type().IsObjectType() && len(v.Type().AttributeTypes()) > 0 {
		return fmt.Errorf("%s: takes no configuration; remove the attributes from its block", name)
	}
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	planes, rep, err := sssp.Route(ctx, req.Topo, req.LMC)
	if err != nil {
		return nil, err
	}
	e.log.Info("routed", "destinations", len(planes), "lmc", req.LMC, "max_channel_weight", rep.MaxWeight)
	if rep.Detached > 0 || rep.Unreached > 0 {
		e.log.Warn("some destinations are not reachable from every switch (split fabric or detached ports); those entries are left unrouted",
			"detached_endpoints", rep.Detached, "unreached_entries", rep.Unreached)
	}
	return &plan.Routes{Planes: planes}, nil
}
