// Command capsplugin is a plugin whose only job is to declare capabilities,
// for the host's plugin-pair checks; what it is depends on the name it is
// installed under:
//
//   - ibsm-plugin-pathsengine: a routing engine declaring "paths";
//   - ibsm-plugin-nolmc: a LID assigner declaring no capability (planes
//     only, no LMC).
//
// It fails every kind call: the host must refuse the pairing before any.
package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

var errCalled = errors.New("capsplugin: called; the host should have refused this pairing before asking for a plan")

type base struct{ info sdk.Info }

func (b *base) Info() sdk.Info              { return b.info }
func (b *base) Schema() schema.Block        { return schema.Object() }
func (b *base) Configure(v cty.Value) error { return nil }

type engine struct{ base }

func (e *engine) Route(context.Context, sdk.RouteRequest) (*plan.Routes, error) {
	return nil, errCalled
}

type assigner struct{ base }

func (a *assigner) AssignLIDs(context.Context, sdk.LIDRequest) (*plan.LIDPlan, error) {
	return nil, errCalled
}

func main() {
	switch filepath.Base(os.Args[0]) {
	case "ibsm-plugin-nolmc":
		sdk.Serve(&assigner{base{sdk.Info{Name: "nolmc", Version: "0.0.1", Kind: sdk.KindLIDAssign}}})
	default:
		sdk.Serve(&engine{base{sdk.Info{Name: "pathsengine", Version: "0.0.1", Kind: sdk.KindRouting, Capabilities: []string{sdk.CapPaths}}}})
	}
}
