// Command torus-vl is the VL assigner of the torus routing engine: one SL
// bit per wrapped dimension of 5 or more switches, set by the destination's
// coordinate (plugins/lib/torus), and SL2VL tables that put a hop in that
// dimension on VL base+bit. With faults, hops leaving a switch from a CA or
// its own port take one more VL, so the torus engine's detour hops close no
// credit loop. The SL of a path depends on its destination alone, so it
// does not change when links or switches fail. QoS levels get disjoint
// copies of the SLs and VLs.
package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/torus"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

func main() {
	sdk.Serve(&assigner{log: sdk.Logger("torus-vl")})
}

type assigner struct {
	log            hclog.Logger
	cfg            torus.Config
	levels, maxVLs int
}

var _ sdk.VLAssigner = (*assigner)(nil)

func (a *assigner) Info() sdk.Info {
	return sdk.Info{Name: "torus-vl", Version: version, Kind: sdk.KindVLAssign}
}

func (a *assigner) Schema() schema.Block {
	return schema.Object(append(torus.Attributes(),
		schema.Attr("qos_levels", cty.Number,
			"QoS levels, each with its own SLs and VLs (level l uses SLs l·2^b..(l+1)·2^b−1, b = wrapped dimensions of 5+ switches). DLIDs get level 0's SL.").
			WithDefault(cty.NumberIntVal(1)),
		schema.Attr("max_vls", cty.Number,
			"VL budget: at most this many data VLs (0: the fabric's smallest VLCap).").
			WithDefault(cty.NumberIntVal(0)),
	)...)
}

func (a *assigner) Configure(v cty.Value) error {
	c, err := torus.Decode(v)
	if err != nil {
		return fmt.Errorf("torus-vl: %w", err)
	}
	levels, err := settings.Int(v, "qos_levels", 1)
	if err != nil {
		return fmt.Errorf("torus-vl: %w", err)
	}
	maxVLs, err := settings.Int(v, "max_vls", 0)
	if err != nil {
		return fmt.Errorf("torus-vl: %w", err)
	}
	if levels < 1 || levels > 8 {
		return fmt.Errorf("torus-vl: qos_levels = %d; give 1 to 8", levels)
	}
	if maxVLs < 0 || maxVLs > 15 {
		return fmt.Errorf("torus-vl: max_vls = %d; give 0 (the fabric's VLCap) or 1 to 15", maxVLs)
	}
	a.cfg, a.levels, a.maxVLs = c, levels, maxVLs
	return nil
}

func (a *assigner) AssignVLs(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	g, err := torus.NewGrid(req.Topo, a.cfg)
	if err != nil {
		return nil, err
	}
	real := req.Realized
	if real == nil {
		if real, err = plan.Realize(req.Topo, req.Routes, req.LIDs); err != nil {
			return nil, fmt.Errorf("torus-vl: %w", err)
		}
	}
	budget := req.MaxVLs
	if a.maxVLs > 0 && (budget == 0 || a.maxVLs < budget) {
		budget = a.maxVLs
	}
	v, st, err := g.VLPlan(real, budget, a.levels)
	if err != nil {
		return nil, err
	}
	a.log.Info("dateline VLs", "vls", st.VLs, "sls", st.SLs, "per_level", st.PerLevel, "dateline_dims", st.Datelines, "first_hop_vl", st.FirstHop, "faults", g.Faults)
	return v, nil
}
