package vl

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

// Version is the version every multi-VL assigner reports.
const Version = "0.1.0"

// Kind is which multi-VL assigner a binary serves; its string is the plugin
// name operators write in HCL and the logger's name.
type Kind string

const (
	KindLayered Kind = "layered" // Layered: LASH-style, lowest acyclic layer per route
	KindDFSSSP  Kind = "dfsssp"  // DFSSSP: break each cycle at its weakest dependency
	KindACRO    Kind = "acro"    // ACRO: channels settled in reverse order, per hop
)

// Kinds lists the multi-VL assigners, for error messages.
var Kinds = []Kind{KindLayered, KindDFSSSP, KindACRO}

// algorithm is k's layering, nil for an unknown kind.
func (k Kind) algorithm() Algorithm {
	switch k {
	case KindLayered:
		return Layered
	case KindDFSSSP:
		return DFSSSP
	case KindACRO:
		return ACRO
	}
	return nil
}

// Main is the whole main function of the layered, dfsssp and acro binaries.
func Main(k Kind) {
	if k.algorithm() == nil {
		// A binary built with an unknown kind is a programming error;
		// failing at start names it instead of failing every AssignVLs.
		panic(fmt.Sprintf("vl.Main: unknown VL assigner %q (want one of %v)", k, Kinds))
	}
	sdk.Serve(NewPlugin(k, sdk.Logger(string(k))))
}

// Plugin is the VL assigner the multi-VL binaries serve, one Kind each.
type Plugin struct {
	kind Kind
	log  hclog.Logger
}

var _ sdk.VLAssigner = (*Plugin)(nil)

// NewPlugin returns the assigner of kind k; a nil log discards.
func NewPlugin(k Kind, log hclog.Logger) *Plugin {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Plugin{kind: k, log: log}
}

func (p *Plugin) Info() sdk.Info {
	return sdk.Info{Name: string(p.kind), Version: Version, Kind: sdk.KindVLAssign}
}

// Schema is empty: layers are bounded by the fabric (VLCap, 16 SLs).
func (p *Plugin) Schema() schema.Block { return schema.Object() }

func (p *Plugin) Configure(v cty.Value) error { return NoConfig(string(p.kind), v) }

func (p *Plugin) AssignVLs(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	algo := p.kind.algorithm()
	if algo == nil {
		return nil, fmt.Errorf("unknown VL assigner %q (want one of %v)", p.kind, Kinds)
	}
	return Assign(ctx, p.log, string(p.kind), req, algo)
}
