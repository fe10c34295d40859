// Command layered is a LASH-style VL assigner: every (source switch,
// destination LID) route of the realised tables goes to the lowest virtual
// layer whose channel dependency graph stays acyclic with it (checked
// incrementally) and whose number every link on the route can carry. Layer
// k is SL k and VL k; sources whose route sits in another layer than the
// DLID's default get per-source SL overrides.
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
	sdk.Serve(&assigner{log: pcfg.Logger("layered")})
}

type assigner struct {
	log hclog.Logger
}

var _ sdk.VLAssigner = (*assigner)(nil)

func (a *assigner) Info() sdk.Info {
	return sdk.Info{Name: "layered", Version: version, Kind: sdk.KindVLAssign}
}

// Schema is empty: layers are bounded by the fabric (VLCap, 16 SLs).
func (a *assigner) Schema() schema.Block { return schema.Object() }

func (a *assigner) Configure(v cty.Value) error { return vl.NoConfig("layered", v) }

func (a *assigner) AssignVLs(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	return vl.Assign(ctx, a.logger(), "layered", req, vl.Layered)
}

func (a *assigner) logger() hclog.Logger {
	if a.log == nil {
		return hclog.NewNullLogger()
	}
	return a.log
}
