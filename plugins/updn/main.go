// Command updn is the first-party Up*/Down* routing engine plugin (the
// algorithm is in plugins/lib/updn). Switches
// are ranked by hop distance from root switches (ties broken by GUID, giving
// a strict total order); a route may climb toward lower keys any number of
// times and then descend, never climb after descending. That makes the
// channel dependency graph acyclic on a single VL, switch-to-switch traffic
// included. Among the legal routes it balances ports like minhop.
//
// It never falls back to unrestricted min-hop: a pair it cannot route
// legally is left at NoPort and logged, and the host's verifier decides.
package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/updn"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

func main() {
	sdk.Serve(&engine{log: sdk.Logger("updn")})
}

type engine struct {
	log hclog.Logger
	cfg updn.Config
}

var _ sdk.RoutingEngine = (*engine)(nil)

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: "updn", Version: version, Kind: sdk.KindRouting, Capabilities: []string{"lmc"}}
}

func (e *engine) Schema() schema.Block {
	return schema.Object(
		schema.Attr("root_guids", cty.List(cty.String),
			`Node GUIDs ("0x...") of the root switches. Components without a listed switch get roots by auto_roots. More than one root per component leaves root-to-root pairs without a legal route unless the roots are cabled to each other.`),
		schema.Attr("auto_roots", cty.String,
			`How to pick roots where root_guids names none: "spines" (OpenSM-like: the switches farthest from CAs; CA routes shortest and balanced, but spine-to-spine and some other switch-to-switch pairs have no legal route and stay unrouted), "leaf" (the default: one CA-carrying switch per component, so every pair, switch-to-switch included, has a legal route, and on full fat trees CA routes are still shortest and balanced) or "centre" (the least-eccentric switch).`).
			WithDefault(cty.StringVal(string(updn.AutoLeaf))),
		schema.Attr("count_switch_destinations", cty.Bool,
			"Count switch management LIDs in the per-port load used to balance equal-cost ports (OpenSM port_profile_switch_nodes).").
			WithDefault(cty.False),
	)
}

func (e *engine) Configure(v cty.Value) error {
	roots, err := settings.GUIDs(v, "root_guids")
	if err != nil {
		return fmt.Errorf("updn: %w", err)
	}
	cs, err := settings.Bool(v, "count_switch_destinations", false)
	if err != nil {
		return fmt.Errorf("updn: %w", err)
	}
	auto, err := settings.String(v, "auto_roots", string(updn.AutoLeaf))
	if err != nil {
		return fmt.Errorf("updn: %w", err)
	}
	switch a := updn.AutoRoots(auto); a {
	case updn.AutoSpines, updn.AutoLeaf, updn.AutoCentre:
	default:
		return fmt.Errorf("updn: auto_roots = %q: use \"spines\", \"leaf\" or \"centre\"", auto)
	}
	e.cfg = updn.Config{Roots: roots, Auto: updn.AutoRoots(auto), CountSwitches: cs}
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	r, res, err := updn.Route(ctx, req.Topo, req.LMC, e.cfg)
	if err != nil {
		return nil, err
	}
	roots := make([]string, len(res.Roots))
	for i, g := range res.Roots {
		roots[i] = fmt.Sprintf("0x%016x", g)
	}
	e.log.Info("up/down roots", "how", res.How, "roots", roots)
	if len(res.Missing) > 0 {
		e.log.Warn("configured root_guids not found as switches in the fabric", "guids", res.Missing)
	}
	if res.Report.NoRoute > 0 {
		e.log.Warn("some destinations have no legal up/down route; they are left unrouted, not routed min-hop",
			"unrouted_pairs", res.Report.NoRoute, "detached_endpoints", res.Report.Detached, "examples", res.Report.Examples)
	}
	return r, nil
}
