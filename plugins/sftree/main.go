// Command sftree is the first-party sFtree routing engine plugin: the ftree
// engine's routes toward every CA, unchanged, plus switch-to-switch routes
// after Bogdanski et al. (ACM TACO 2012) that reach every switch from every
// switch and keep the channel dependency graph acyclic on one VL with
// switch traffic included (plugins/lib/sftree). Switch destinations get
// one plane (a switch's port 0 has LMC 0); CA destinations keep ftree's
// 2^LMC planes.
//
// Pairs it cannot route deadlock-free are left at NoPort and logged, never
// routed some other way; the host's verifier decides.
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/sftree"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

func main() {
	sdk.Serve(&engine{log: sdk.Logger("sftree")})
}

type engine struct {
	log  hclog.Logger
	opt  sftree.Options
	base baseConfig
}

var _ sdk.RoutingEngine = (*engine)(nil)

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: "sftree", Version: version, Kind: sdk.KindRouting, Capabilities: []string{"lmc"}}
}

func (e *engine) Schema() schema.Block {
	attrs := []schema.Attribute{
		schema.Attr("subtree_root", cty.String,
			`Node GUID ("0x...") of the leaf switch all down-to-up turns of switch-to-switch routes happen under. Unset, the first leaf (in ftree's leaf order) that reaches every switch on an up/down path is chosen, avoiding the leaf the SM is cabled to. Set, it is used unless it leaves switch pairs without a route (its pod lost a cable to a top switch) that the unset choice routes: then the unset choice is used for as long as that lasts, with a warning.`),
		schema.Attr("max_subtree_roots", cty.Number,
			fmt.Sprintf("Subtree roots at most: 1 is the paper's single root; more let a degraded tree, where no leaf reaches every switch on an up/down path, add leaves as roots for the pairs the first cannot route. Each added root is kept only if the channel dependency graph stays acyclic. 1 to %d.", 64)).
			WithDefault(cty.NumberIntVal(sftree.DefaultMaxRoots)),
		schema.Attr("verify_cdg", cty.Bool,
			"Also check the channel dependency graph of all routes, switch traffic included, where the paper's single-root argument covers them, and withdraw switch routes that would close a credit loop. The check runs anyway when extra subtree roots are tried, and the host's verifier checks every plan's dependency graph whatever this says.").
			WithDefault(cty.False),
	}
	return schema.Object(append(attrs, baseSchema()...)...)
}

func (e *engine) Configure(v cty.Value) error {
	root, err := settings.String(v, "subtree_root", "")
	if err != nil {
		return fmt.Errorf("sftree: %w", err)
	}
	var guid uint64
	if strings.TrimSpace(root) != "" {
		if guid, err = settings.GUID(root); err != nil {
			return fmt.Errorf("sftree: subtree_root: %w", err)
		}
	}
	verify, err := settings.Bool(v, "verify_cdg", false)
	if err != nil {
		return fmt.Errorf("sftree: %w", err)
	}
	maxRoots, err := settings.Int(v, "max_subtree_roots", sftree.DefaultMaxRoots)
	if err != nil {
		return fmt.Errorf("sftree: %w", err)
	}
	if maxRoots < 1 || maxRoots > 64 {
		return fmt.Errorf("sftree: max_subtree_roots = %d: give 1 (the paper's single root) to 64", maxRoots)
	}
	bc, err := configureBase(v)
	if err != nil {
		return fmt.Errorf("sftree: %w", err)
	}
	e.opt = sftree.Options{Root: guid, MaxRoots: maxRoots}
	if verify {
		e.opt.CDG = sftree.CDGAlways
	}
	e.base = bc
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	if req.Topo == nil {
		return nil, fmt.Errorf("sftree: no topology in the request")
	}
	base, tree, err := baseRoutes(ctx, e.log, req, e.base)
	if err != nil {
		return nil, err
	}
	r, rep, err := sftree.Route(ctx, route.NewGraph(req.Topo), tree, base, e.opt)
	if err != nil {
		return nil, err
	}
	e.log.Info("switch-to-switch routes", "subtree_root", fmt.Sprintf("0x%016x", rep.Root), "why", rep.RootHow,
		"roots", len(rep.Roots), "pairs", rep.Pairs, "up_down", rep.UpDown, "via_subtree", rep.ViaSubtree, "via_sibling", rep.ViaSibling,
		"via_extra_roots", rep.ViaExtraRoots, "backed_off", rep.BackedOff,
		"reachable_pct", fmt.Sprintf("%.3f", rep.Reachability()), "cdg_checked", rep.CDGChecked, "cdg_edges", rep.CDGEdges,
		"updown_time", rep.UpDownTime, "combine_time", rep.CombineTime, "verify_time", rep.VerifyTime, "extend_time", rep.ExtendTime)
	if rep.ConfiguredRootReplaced {
		e.log.Warn("the configured subtree_root cannot route every switch pair on this fabric; Algorithm 1's root is used until it can (fix the cabling into its pod or change subtree_root)",
			"why", rep.RootHow, "subtree_root", fmt.Sprintf("0x%016x", rep.Root))
	}
	if rep.Unreachable > 0 {
		e.log.Warn("some switch pairs have no deadlock-free sFtree route; they are left unrouted, not routed another way",
			"unreachable_pairs", rep.Unreachable, "withdrawn_for_credit_loops", rep.Withdrawn, "examples", rep.Examples)
	}
	return r, nil
}
