// Command acro is seed 001's ACRO (Assignment of Channels in Reverse
// Order) as a VL assigner: on each destination's channel dependency tree,
// channels are settled from the destination backwards, layer by layer, so a
// packet may drop to a lower VL along its path. The switch SL2VL tables
// (in, out, SL) carry those drops. The plan gives each DLID one SL (no
// per-source overrides unless a DLID fits no SL class whole): DLIDs share
// an SL class whose hops agree on their VL, VLs never rise along a route
// and same-VL hops follow ACRO's channel order, so the plan is
// deadlock-free by construction (see vl.HopPlan). It may use a few more
// VLs than ACRO's layers to fit 16 SLs, never more than the links carry,
// and refuses when even that is not enough.
package main

import (
	"context"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/internal/pcfg"
	"github.com/ibsm/ibsm/plugins/internal/vl"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

func main() {
	sdk.Serve(&assigner{log: pcfg.Logger("acro")})
}

type assigner struct {
	log hclog.Logger
}

var _ sdk.VLAssigner = (*assigner)(nil)

func (a *assigner) Info() sdk.Info {
	return sdk.Info{Name: "acro", Version: version, Kind: sdk.KindVLAssign}
}

// Schema is empty: layers are bounded by the fabric (VLCap, 16 SLs).
func (a *assigner) Schema() schema.Block { return schema.Object() }

func (a *assigner) Configure(v cty.Value) error { return vl.NoConfig("acro", v) }

func (a *assigner) AssignVLs(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	return vl.Assign(ctx, a.logger(), "acro", req, vl.ACRO)
}

func (a *assigner) logger() hclog.Logger {
	if a.log == nil {
		return hclog.NewNullLogger()
	}
	return a.log
}
