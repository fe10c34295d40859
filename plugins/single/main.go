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
	"github.com/ibsm/ibsm/sdk/route"
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
	// The proof reads the destination trees as the routes hold them, not
	// the realised tables (tables-unread: the SDK does not realise them).
	return sdk.Info{Name: "single", Version: version, Kind: sdk.KindVLAssign, Capabilities: []string{sdk.CapTablesUnread, sdk.CapOneVL}}
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
	g, err := graph(ctx, req)
	if err != nil {
		return nil, err
	}
	if cyc := g.FindCycle(); cyc != nil {
		return nil, fmt.Errorf("single: the routing can deadlock on one VL: its channel dependency graph has a cycle of %d channels: %s; use a deadlock-free routing engine (e.g. updn) or a VL assigner that spreads routes over several VLs",
			len(cyc), cdg.Format(g, cyc, maxCyclePrint))
	}
	// Default maps every SL to VL 0; no per-port tables, no per-DLID SLs.
	return plan.OneVL(), nil
}

// graph builds the one-VL dependency graph of the tables the plan
// realises: from the realised tables when the request holds them, else
// from the trees every LID realises (the same graph, read in the order
// the routes hold it; the SDK realises nothing for this plugin).
func graph(ctx context.Context, req sdk.VLRequest) (*cdg.Graph, error) {
	if req.Realized != nil {
		g, err := cdg.Build(ctx, req.Realized)
		if err != nil {
			return nil, fmt.Errorf("single: %w", err)
		}
		return g, nil
	}
	if req.Topo == nil || req.LIDs == nil {
		return nil, fmt.Errorf("single: the request has neither realised forwarding tables nor topology, routes and LIDs to derive them from")
	}
	planes, err := plan.UsedPlanes(req.Topo, req.Routes, req.LIDs)
	if err != nil {
		return nil, fmt.Errorf("single: cannot realise the forwarding tables: %w", err)
	}
	g, err := cdg.BuildPlanes(ctx, route.NewGraph(req.Topo), planes)
	if err != nil {
		return nil, fmt.Errorf("single: %w", err)
	}
	return g, nil
}
