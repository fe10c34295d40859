package lids

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

// Version is the version every first-party path LID assigner reports.
const Version = "0.1.0"

// Plugin is the LID assigner the six first-party binaries serve, one
// heuristic each.
type Plugin struct {
	H   Heuristic
	Log hclog.Logger

	maxLMC    uint8
	switchLMC bool
}

var _ sdk.LIDAssigner = (*Plugin)(nil)

// NewPlugin returns the assigner for h with default config.
func NewPlugin(h Heuristic, log hclog.Logger) *Plugin {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Plugin{H: h, Log: log, maxLMC: 7}
}

func (p *Plugin) Info() sdk.Info {
	return sdk.Info{Name: string(p.H), Version: Version, Kind: sdk.KindLIDAssign, Capabilities: []string{"lmc", "paths"}}
}

func (p *Plugin) Schema() schema.Block {
	return schema.Object(
		schema.Attr("max_lmc", cty.Number,
			"Largest LMC any port may get (0..7). Each CA port gets the smallest LMC covering the LIDs its incoming paths need (at least the SM's lmc); a destination needing more than 2^max_lmc is an error.").
			WithDefault(cty.NumberIntVal(7)),
		schema.Attr("switch_lmc", cty.Bool,
			"Let switch management ports (port 0) take several LIDs like CA ports (OpenSM lmc_esp0; needs enhanced port 0). Off: one LID per switch, and paths toward a switch that conflict with its largest configuration follow that configuration's tree instead (logged).").
			WithDefault(cty.False),
	)
}

func (p *Plugin) Configure(v cty.Value) error {
	sl, err := settings.Bool(v, "switch_lmc", false)
	if err != nil {
		return fmt.Errorf("%s: %w", p.H, err)
	}
	m, err := settings.Int(v, "max_lmc", 7)
	if err != nil {
		return fmt.Errorf("%s: %w", p.H, err)
	}
	if m < 0 || m > 7 {
		return fmt.Errorf("%s: max_lmc = %d; the LID mask control is 0..7 (up to 128 LIDs per port)", p.H, m)
	}
	p.maxLMC, p.switchLMC = uint8(m), sl
	return nil
}

func (p *Plugin) AssignLIDs(ctx context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	res, err := Assign(ctx, req.Topo, req.Routes, Options{
		Heuristic: p.H,
		MinLMC:    req.LMC,
		MaxLMC:    p.maxLMC,
		SwitchLMC: p.switchLMC,
		Previous:  req.Previous,
		Log:       p.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.H, err)
	}
	total, maxK, conflicted := 0, 0, 0
	for e, pl := range res.Plan.Ports {
		total += pl.Count()
		maxK = max(maxK, res.Configs[e])
		if res.Configs[e] > 1 {
			conflicted++
		}
	}
	p.Log.Info("LIDs assigned", "heuristic", p.H, "lids", total, "endpoints", len(res.Plan.Ports),
		"destinations_with_several_lids", conflicted, "max_configurations", maxK, "overrides", len(res.Plan.Overrides))
	return res.Plan, nil
}
