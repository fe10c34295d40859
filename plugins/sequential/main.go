// Command sequential is the first-party plain LID assigner for planes-form
// routes: every endpoint keeps the base LID it held before when that still
// fits, everything else gets the next free 2^LMC-aligned range from LID 1
// upward, in Topology.Endpoints() order.
package main

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

func main() {
	sdk.Serve(&assigner{})
}

type config struct {
	// switchLMC gives switch port 0 the fabric LMC too (OpenSM lmc_esp0).
	switchLMC bool
}

type assigner struct {
	cfg config
}

var _ sdk.LIDAssigner = (*assigner)(nil)

func (a *assigner) Info() sdk.Info {
	return sdk.Info{Name: "sequential", Version: version, Kind: sdk.KindLIDAssign, Capabilities: []string{sdk.CapLMC, sdk.CapRoutesUnread, sdk.CapEndpointsOnly}}
}

func (a *assigner) Schema() schema.Block {
	return schema.Object(
		schema.Attr("switch_lmc", cty.Bool,
			"Give switch management ports (port 0) 2^LMC LIDs like CA ports (OpenSM lmc_esp0, for enhanced port 0). Off: one LID per switch.").
			WithDefault(cty.False),
	)
}

func (a *assigner) Configure(v cty.Value) error {
	sl, err := settings.Bool(v, "switch_lmc", false)
	if err != nil {
		return fmt.Errorf("sequential: %w", err)
	}
	a.cfg = config{switchLMC: sl}
	return nil
}

func (a *assigner) AssignLIDs(ctx context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	return assign(ctx, req, a.cfg)
}

func assign(ctx context.Context, req sdk.LIDRequest, cfg config) (*plan.LIDPlan, error) {
	t := req.Topo
	if t == nil {
		return nil, fmt.Errorf("sequential: no topology in the request")
	}
	if req.Routes == nil || !req.Routes.IsPlanes() {
		return nil, fmt.Errorf("sequential: the routes are explicit paths (or missing); sequential only numbers planes-form routes: configure a path-partitioning LID assigner for this routing engine")
	}
	eps := t.Endpoints()
	if len(req.Routes.Planes) != len(eps) {
		return nil, fmt.Errorf("sequential: routes cover %d destinations but the topology has %d endpoints; the routing engine answered for a different topology", len(req.Routes.Planes), len(eps))
	}
	if req.LMC > 7 {
		return nil, fmt.Errorf("sequential: LMC %d is out of range 0..7", req.LMC)
	}
	lp := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps))}
	if req.LMC > 0 {
		lp.Rule = plan.DLIDSpread
	}
	lmcOf := func(ep topology.PortRef) uint8 {
		if t.SwitchIndex(ep.Node) >= 0 && !cfg.switchLMC {
			return 0
		}
		return req.LMC
	}
	var taken [plan.MaxUnicastLID + 1]bool
	taken[0] = true
	free := func(base, n int) bool {
		if base < 1 || base+n-1 > plan.MaxUnicastLID {
			return false
		}
		for l := base; l < base+n; l++ {
			if taken[l] {
				return false
			}
		}
		return true
	}
	take := func(e int, base int, lmc uint8) {
		for l := base; l < base+1<<lmc; l++ {
			taken[l] = true
		}
		lp.Ports[e] = plan.PortLID{Base: uint16(base), LMC: lmc}
	}
	// Pass 1: keep previous LIDs that are still aligned, in range and not
	// claimed by an earlier endpoint.
	if len(req.Previous) > 0 {
		for e, ep := range eps {
			g := t.PortGUID(ep)
			prev, ok := req.Previous[g]
			if !ok || g == 0 {
				continue
			}
			lmc := lmcOf(ep)
			n := 1 << lmc
			if int(prev)&(n-1) != 0 || !free(int(prev), n) {
				continue
			}
			take(e, int(prev), lmc)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// Pass 2: first free aligned range. Ranges only ever fill up, so a
	// cursor per range size never has to look back.
	var cursor [8]int
	for e, ep := range eps {
		if lp.Ports[e].Base != 0 {
			continue
		}
		lmc := lmcOf(ep)
		n := 1 << lmc
		base := cursor[lmc]
		if base < n {
			base = n // LID 0 is reserved, so the first aligned range starts at n (1 for LMC 0)
		}
		base = (base + n - 1) &^ (n - 1)
		for base+n-1 <= plan.MaxUnicastLID && !free(base, n) {
			base += n
		}
		if base+n-1 > plan.MaxUnicastLID {
			done := 0
			for _, p := range lp.Ports {
				if p.Base != 0 {
					done++
				}
			}
			return nil, fmt.Errorf("sequential: the unicast LID space 1..0x%X is exhausted after %d of %d endpoints with LMC %d (%d LIDs per port); lower the LMC or split the subnet", plan.MaxUnicastLID, done, len(eps), req.LMC, 1<<req.LMC)
		}
		take(e, base, lmc)
		cursor[lmc] = base + n
	}
	return lp, nil
}
