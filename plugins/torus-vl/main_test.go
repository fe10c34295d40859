package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/torus"
	"github.com/ibsm/ibsm/plugins/lib/torus/torustest"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/zclconf/go-cty/cty"
)

// TestOverTheWire: the assigner, served over gRPC like the host runs it,
// gives the torus engine's routes a plan the host's verifier accepts, and
// refuses a budget too small with the reason. (The kit's VL test routes its
// own fabrics by BFS, which are neither tori nor dimension-order.)
func TestOverTheWire(t *testing.T) {
	a := &assigner{log: hclog.NewNullLogger()}
	c := sdktest.InProcess(t, a, sdk.KindVLAssign)
	ctx := context.Background()
	cfg := func(maxVLs int) cty.Value {
		v := a.Schema().Defaults()
		m := v.AsValueMap()
		m["max_vls"] = cty.NumberIntVal(int64(maxVLs))
		return cty.ObjectVal(m)
	}
	for _, tc := range []struct {
		name    string
		dims    []int
		cut     bool
		maxVLs  int
		wantVLs int
		refuse  string
	}{
		{"torus", []int{5, 5, 5}, false, 0, 2, ""},
		{"torus-4-rings", []int{4, 4, 4}, false, 0, 1, ""},
		{"torus-budget-1", []int{5, 5, 5}, false, 1, 0, "budget is 1"},
		{"torus-link", []int{5, 5, 5}, true, 0, 3, ""},
		{"torus-link-budget-2", []int{5, 5, 5}, true, 2, 0, "first hops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := torustest.Grid(t, tc.dims, false, 2)
			if tc.cut {
				torustest.CutLink(t, topo, "switch (0,0,0)", 5)
			}
			if err := c.Configure(ctx, cfg(tc.maxVLs)); err != nil {
				t.Fatal(err)
			}
			g, err := torus.NewGrid(topo, torus.Config{Pattern: regexp.MustCompile(torus.DefaultPattern)})
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := g.Route(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.refuse != "" {
				real, err := plan.Realize(topo, r, testfab.SequentialLIDs(topo, 0))
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.AssignVLs(ctx, sdk.VLRequest{Topo: topo, Routes: r, LIDs: real.LIDs, Realized: real, MaxVLs: 8})
				if err == nil || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("AssignVLs: %v, want a refusal containing %q", err, tc.refuse)
				}
				return
			}
			_, _, rep := torustest.Verify(t, topo, r, func(real *plan.Realized) *plan.VLPlan {
				v, err := c.AssignVLs(ctx, sdk.VLRequest{Topo: topo, Routes: r, LIDs: real.LIDs, Realized: real, MaxVLs: 8})
				if err != nil {
					t.Fatal(err)
				}
				if v.VLs != tc.wantVLs {
					t.Errorf("plan uses %d VLs, want %d", v.VLs, tc.wantVLs)
				}
				return v
			})
			if !rep.DeadlockFree {
				t.Fatal("not deadlock-free")
			}
		})
	}
}

// TestREADME: the README names this plugin and its kind, and its config
// table is the schema the plugin declares (IBSM_UPDATE_README=1 rewrites it).
func TestREADME(t *testing.T) {
	sdktest.CheckREADME(t, &assigner{log: hclog.NewNullLogger()}, "README.md")
}
