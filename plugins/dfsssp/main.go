// Command dfsssp is a DFSSSP-style VL assigner: all routes of the
// realised tables start in layer 0; while a layer's channel dependency
// graph has a cycle, the routes through the cycle's weakest dependency (the
// one fewest routes use) move to the next layer. Layer k is SL k and VL k.
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
	sdk.Serve(&assigner{log: pcfg.Logger("dfsssp")})
}

type assigner struct {
	log hclog.Logger
}

var _ sdk.VLAssigner = (*assigner)(nil)

func (a *assigner) Info() sdk.Info {
	return sdk.Info{Name: "dfsssp", Version: version, Kind: sdk.KindVLAssign}
}

// Schema is empty: layers are bounded by the fabric (VLCap, 16 SLs).
func (a *assigner) Schema() schema.Block { return schema.Object() }

func (a *assigner) Configure(v cty.Value) error { return vl.NoConfig("dfsssp", v) }

func (a *assigner) AssignVLs(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	return vl.Assign(ctx, a.logger(), "dfsssp", req, vl.DFSSSP)
}

func (a *assigner) logger() hclog.Logger {
	if a.log == nil {
		return hclog.NewNullLogger()
	}
	return a.log
}
