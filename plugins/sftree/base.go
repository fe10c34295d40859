package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/plugins/lib/sftree"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

// baseConfig is the ftree part of the configuration.
type baseConfig struct {
	ftree ftree.Config
}

func baseSchema() []schema.Attribute {
	return []schema.Attribute{
		schema.Attr("root_guids", cty.List(cty.String),
			`Node GUIDs ("0x...") of the fat tree's top switches, as for ftree. Unset: the switches farthest from any CA-carrying switch.`),
		schema.Attr("ca_order", cty.List(cty.String),
			`CA node or port GUIDs in application rank order, as for ftree: CA routes are spread in this order.`),
	}
}

func configureBase(v cty.Value) (baseConfig, error) {
	var bc baseConfig
	var err error
	if bc.ftree.Roots, err = settings.GUIDs(v, "root_guids"); err != nil {
		return bc, err
	}
	if bc.ftree.CAOrder, err = settings.GUIDs(v, "ca_order"); err != nil {
		return bc, err
	}
	return bc, nil
}

// baseRoutes is ftree's CA routing: the tree is recognised and CA planes
// routed exactly as the ftree engine does; switch destinations are left to
// sftree (ftree's own up*/down*-only switch planes are not computed).
func baseRoutes(ctx context.Context, log hclog.Logger, req sdk.RouteRequest, bc baseConfig) (*plan.Routes, sftree.Tree, error) {
	if req.LMC > 7 {
		return nil, nil, fmt.Errorf("sftree: LMC %d out of range 0..7", req.LMC)
	}
	t, err := ftree.Build(req.Topo, bc.ftree)
	if err != nil {
		return nil, nil, fmt.Errorf("sftree: %w", err)
	}
	if len(t.Missing) > 0 {
		log.Warn("configured GUIDs not found in the fabric", "guids", t.Missing)
	}
	r, err := ftree.NewRouter(ctx, t)
	if err != nil {
		return nil, nil, fmt.Errorf("sftree: %w", err)
	}
	routes := ftree.NewRoutes(t, 1<<req.LMC)
	rep, err := r.RouteCAs(ctx, routes)
	if err != nil {
		return nil, nil, fmt.Errorf("sftree: %w", err)
	}
	log.Info("fat tree", "levels", t.Levels, "roots_by", t.How, "leaves", len(t.Leaves))
	if rep != nil && (rep.CAPairs > 0 || rep.SwitchPairs > 0) {
		log.Warn("ftree left some CA destinations unrouted (kept as ftree has them)",
			"ca_pairs", rep.CAPairs, "switch_to_ca_pairs", rep.SwitchPairs, "detached", rep.Detached, "examples", rep.Examples)
	}
	return routes, sftree.FromFtree(t), nil
}
