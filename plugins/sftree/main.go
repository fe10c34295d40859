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
	"sync"
	"time"

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
	// incremental keeps the last routing (last, for LMC lastLMC) and
	// repairs it when the next topology differs by switch cables only.
	incremental bool
	mu          sync.Mutex
	last        *sftree.State
	lastLMC     uint8
}

var _ sdk.RoutingEngine = (*engine)(nil)

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: "sftree", Version: version, Kind: sdk.KindRouting, Capabilities: []string{sdk.CapLMC, sdk.CapStablePlanes}}
}

func (e *engine) Schema() schema.Block {
	attrs := []schema.Attribute{
		schema.Attr("subtree_root", cty.String,
			`Node GUID ("0x...") of the leaf switch all down-to-up turns of switch-to-switch routes happen under. Unset, the first leaf (in ftree's leaf order) that reaches every switch on an up/down path is chosen, avoiding the leaf the SM is cabled to. Set, it is used unless it leaves switch pairs without a route (its pod lost a cable to a top switch) that the unset choice routes: then the unset choice is used for as long as that lasts, with a warning.`),
		schema.Attr("max_subtree_roots", cty.Number,
			fmt.Sprintf("Subtree roots at most: 1 is the paper's single root; more let a degraded tree, where no leaf reaches every switch on an up/down path, add leaves as roots for the pairs the first cannot route. Each added root is kept only if the channel dependency graph stays acyclic. 1 to %d.", 64)).
			WithDefault(cty.NumberIntVal(sftree.DefaultMaxRoots)),
		schema.Attr("incremental", cty.Bool,
			"Keep the last routing in memory and, when the next topology differs from it by switch-to-switch cables only, repair the routes that crossed a cable that went down (keeping the subtree root) instead of routing the fabric again, and restore the earlier routes when cables come back up. Where switches no longer reach the root on an up/down path (a cable between a top switch and the root's pod, or the root's own uplink), their routes go through a child of the one whose own way died. Where a second switch's way dies (the root's other uplinks) or the change is anything else, the fabric is routed in full and the log says why. Costs the memory of up to two routings.").
			WithDefault(cty.False),
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
	incremental, err := settings.Bool(v, "incremental", false)
	if err != nil {
		return fmt.Errorf("sftree: %w", err)
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
	e.mu.Lock()
	e.incremental, e.last = incremental, nil
	e.mu.Unlock()
	return nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	if req.Topo == nil {
		return nil, fmt.Errorf("sftree: no topology in the request")
	}
	e.mu.Lock()
	if !e.incremental {
		// Nothing kept between calls: concurrent calls run side by side.
		e.mu.Unlock()
		res, err := e.routeFull(ctx, req)
		if err != nil {
			return nil, err
		}
		return res.Routes, nil
	}
	defer e.mu.Unlock()
	if e.last != nil && e.lastLMC == req.LMC {
		return e.reroute(ctx, req)
	}
	res, err := e.routeFull(ctx, req)
	if err != nil {
		return nil, err
	}
	e.last, e.lastLMC = res.State, req.LMC
	return res.Routes, nil
}

// routeFull routes req's fabric in full and logs what it did.
func (e *engine) routeFull(ctx context.Context, req sdk.RouteRequest) (*sftree.Result, error) {
	start := time.Now()
	res, err := sftree.RouteFatTree(ctx, req.Topo, req.LMC, e.base.ftree, e.opt)
	if err != nil {
		return nil, err
	}
	e.logFull(res, time.Since(start))
	return res, nil
}

// reroute repairs the last routing for req's topology (e.mu held).
func (e *engine) reroute(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	g := route.NewGraph(req.Topo)
	next, rep, err := e.last.RerouteTo(ctx, g)
	if err != nil {
		e.last = nil
		return nil, err
	}
	e.last = next
	e.log.Info("incremental re-route", "how", rep.How, "routings_back", rep.Back, "cable_ports_down", rep.Removed, "cable_ports_up", rep.Added,
		"ca_destinations", rep.CADests, "switch_destinations", rep.SwitchDests, "entries", rep.Entries,
		"subtree_root", fmt.Sprintf("0x%016x", next.Root()), "time", rep.Time.String())
	if rep.Lost != 0 {
		e.log.Info("the subtree root no longer reaches some switches on up*/down* paths; their routes go through a child of the one whose own way died",
			"switches", rep.LostSwitches, "switch", fmt.Sprintf("0x%016x", rep.Lost), "via", fmt.Sprintf("0x%016x", rep.Via))
	}
	if rep.How == sftree.HowFull {
		e.log.Info("incremental re-route fell back to a full route", "why", rep.Fallback)
		e.logSwitches(rep.Full)
	}
	return next.Routes(), nil
}

// logFull logs what a full routing did and how long the engine took (the
// rest of a route call is the SDK's and the host's).
func (e *engine) logFull(res *sftree.Result, took time.Duration) {
	t := res.Tree
	if len(t.Missing) > 0 {
		e.log.Warn("configured GUIDs not found in the fabric", "guids", t.Missing)
	}
	e.log.Info("fat tree", "levels", t.Levels, "roots_by", t.How, "leaves", len(t.Leaves), "engine_time", took.String())
	if rep := res.CAs; rep.CAPairs > 0 || rep.SwitchPairs > 0 {
		e.log.Warn("ftree left some CA destinations unrouted (kept as ftree has them)",
			"ca_pairs", rep.CAPairs, "switch_to_ca_pairs", rep.SwitchPairs, "detached", rep.Detached, "examples", rep.Examples)
	}
	e.logSwitches(res.Switches)
}

// logSwitches logs sFtree's report on switch destinations.
func (e *engine) logSwitches(rep *sftree.Report) {
	e.log.Info("switch-to-switch routes", "subtree_root", fmt.Sprintf("0x%016x", rep.Root), "why", rep.RootHow,
		"roots", len(rep.Roots), "pairs", rep.Pairs, "up_down", rep.UpDown, "via_subtree", rep.ViaSubtree, "via_sibling", rep.ViaSibling,
		"via_extra_roots", rep.ViaExtraRoots, "backed_off", rep.BackedOff,
		"reachable_pct", fmt.Sprintf("%.3f", rep.Reachability()), "cdg_checked", rep.CDGChecked, "cdg_edges", rep.CDGEdges,
		"updown_time", rep.UpDownTime.String(), "combine_time", rep.CombineTime.String(), "verify_time", rep.VerifyTime.String(), "extend_time", rep.ExtendTime.String())
	if rep.ConfiguredRootReplaced {
		e.log.Warn("the configured subtree_root cannot route every switch pair on this fabric; Algorithm 1's root is used until it can (fix the cabling into its pod or change subtree_root)",
			"why", rep.RootHow, "subtree_root", fmt.Sprintf("0x%016x", rep.Root))
	}
	if rep.Unreachable > 0 {
		e.log.Warn("some switch pairs have no deadlock-free sFtree route; they are left unrouted, not routed another way",
			"unreachable_pairs", rep.Unreachable, "withdrawn_for_credit_loops", rep.Withdrawn, "examples", rep.Examples)
	}
}
