// Command single is the first-party VL assigner for routings that need no
// VL separation: it puts every SL on VL 0 after proving, from the realised
// forwarding tables, that the channel dependency graph on that one VL is
// acyclic. If it is not, it refuses with the cycle instead of shipping a
// routing that can deadlock.
package main

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

// maxCyclePrint bounds the channels named in an error.
const maxCyclePrint = 12

func main() {
	sdk.Serve(&assigner{})
}

type assigner struct{}

var _ sdk.VLAssigner = (*assigner)(nil)

func (a *assigner) Info() sdk.Info {
	return sdk.Info{Name: "single", Version: version, Kind: sdk.KindVLAssign}
}

// Schema is empty: there is nothing to tune.
func (a *assigner) Schema() schema.Block { return schema.Object() }

func (a *assigner) Configure(v cty.Value) error {
	if v == cty.NilVal || v.IsNull() {
		return nil
	}
	if !v.Type().IsObjectType() || len(v.Type().AttributeTypes()) != 0 {
		return fmt.Errorf("single: takes no configuration, got %s", v.Type().FriendlyName())
	}
	return nil
}

func (a *assigner) AssignVLs(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	return assign(ctx, req)
}

func assign(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	real := req.Realized
	if real == nil {
		// Hosts send the tables; realise them here when only routes and
		// LIDs came, through the same plan.Realize the host uses.
		if req.Topo == nil || req.LIDs == nil {
			return nil, fmt.Errorf("single: the request has neither realised forwarding tables nor topology, routes and LIDs to realise them from")
		}
		var err error
		if real, err = plan.Realize(req.Topo, req.Routes, req.LIDs); err != nil {
			return nil, fmt.Errorf("single: cannot realise the forwarding tables: %w", err)
		}
	}
	g, err := cdg.Build(ctx, real)
	if err != nil {
		return nil, fmt.Errorf("single: %w", err)
	}
	if cyc := g.FindCycle(); cyc != nil {
		return nil, fmt.Errorf("single: the routing can deadlock on one VL: its channel dependency graph has a cycle of %d channels: %s; use a deadlock-free routing engine (e.g. updn) or a VL assigner that spreads routes over several VLs",
			len(cyc), cdg.Format(g, cyc, maxCyclePrint))
	}
	// Default maps every SL to VL 0; no per-port tables, no per-DLID SLs.
	return &plan.VLPlan{VLs: 1}, nil
}
