// Command torus is dimension-order routing on tori and meshes (the
// algorithm is in plugins/lib/torus): any number of dimensions, each a ring
// or a line, switches placed from their NodeDescriptions or from the
// config. Legs go the shorter way round each ring; a ring with a failed
// link or switch is routed as the line that is left, and a switch whose
// route would still meet a fault sends its packets one hop to a neighbour
// whose route is intact. Pair it with the torus-vl VL assigner, which puts
// the routes on dateline VLs without changing any path's SL when faults
// come and go.
package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/torus"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

func main() {
	sdk.Serve(&engine{log: sdk.Logger("torus")})
}

type engine struct {
	log hclog.Logger
	cfg torus.Config
}

var _ sdk.RoutingEngine = (*engine)(nil)

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: "torus", Version: version, Kind: sdk.KindRouting, Capabilities: []string{sdk.CapPlanes}}
}

func (e *engine) Schema() schema.Block { return schema.Object(torus.Attributes()...) }

func (e *engine) Configure(v cty.Value) error {
	c, err := torus.Decode(v)
	if err != nil {
		return fmt.Errorf("torus: %w", err)
	}
	e.cfg = c
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	g, err := torus.NewGrid(req.Topo, e.cfg)
	if err != nil {
		return nil, err
	}
	r, st, err := g.Route(ctx)
	if err != nil {
		return nil, err
	}
	e.log.Info("dimension-order routes", "dims", g.Dims, "wrap", g.Wrap, "faults", g.Faults, "detour_hops", st.Detours)
	return r, nil
}
