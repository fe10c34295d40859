// Command nue-vl is the VL assigner of the nue routing engine (plugin name
// "nue-vl", kind vl_assigner). The engine puts every destination in a layer
// chosen from the topology and the VL budget alone; this assigner
// recomputes that layout, checks that every layer's channel dependency
// graph of the realised tables is acyclic, and gives each DLID its
// layer's SL (SL k on VL k). It tries the layouts of budgets 1, 2, … up to
// its own vls, so it also finds the engine's when that was configured
// lower. Routes no layout fits (another engine's) are placed first-fit,
// each destination in the lowest layer that stays acyclic, with a warning;
// if one fits no layer it refuses and says which VL assigner to use.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/nue"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

const (
	name    = "nue-vl"
	version = "0.1.0"
)

func main() {
	sdk.Serve(&assigner{log: sdk.Logger(name)})
}

type assigner struct {
	log hclog.Logger
	vls int
}

var _ sdk.VLAssigner = (*assigner)(nil)

func (a *assigner) Info() sdk.Info {
	return sdk.Info{Name: name, Version: version, Kind: sdk.KindVLAssign}
}

func (a *assigner) Schema() schema.Block { return nue.AssignerSchema() }

func (a *assigner) Configure(v cty.Value) error {
	c, err := nue.Configure(v, a.Schema())
	if err != nil {
		return err
	}
	a.vls = c.VLs
	return nil
}

func (a *assigner) AssignVLs(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	start := time.Now()
	real := req.Realized
	if real == nil {
		if req.Topo == nil || req.LIDs == nil {
			return nil, fmt.Errorf("nue: the request has neither realised forwarding tables nor topology, routes and LIDs to realise them from")
		}
		var err error
		if real, err = plan.Realize(req.Topo, req.Routes, req.LIDs); err != nil {
			return nil, fmt.Errorf("nue: cannot realise the forwarding tables: %w", err)
		}
	}
	budget, err := nue.Budget(a.vls, real.Topo)
	if err != nil {
		return nil, err
	}
	if req.MaxVLs > 0 && budget > req.MaxVLs {
		if a.vls != 0 {
			return nil, fmt.Errorf("nue: vls = %d but the host allows at most %d data VLs; set vls to at most %d", a.vls, req.MaxVLs, req.MaxVLs)
		}
		budget = req.MaxVLs
	}
	v, as, err := nue.Assign(ctx, real, budget)
	if err != nil {
		return nil, err
	}
	if as.FirstFit {
		a.log.Warn("the routes do not fit nue's layer layout for any budget up to vls (they are not the nue routing engine's, or it ran with a larger vls); layered first-fit instead",
			"vls", budget, "layers", as.Layers)
	}
	a.log.Info("VLs assigned", "vls", budget, "layout_budget", as.Budget, "layers", as.Layers, "took", time.Since(start).Round(time.Millisecond).String())
	return v, nil
}
