package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/nue"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

func newTestAssigner() *assigner { return &assigner{log: hclog.NewNullLogger()} }

func vls(n int) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"vls": cty.NumberIntVal(int64(n))})
}

// TestConformance: the kit's BFS routes are not nue's; they are layered
// first-fit within the kit's 4 VLs.
func TestConformance(t *testing.T) {
	sdktest.VLAssigner(t, newTestAssigner(), sdktest.Options{})
}

// assign runs the assigner over gRPC with budget b on routes r.
func assign(t *testing.T, topo *topology.Topology, r *plan.Routes, b int) (*plan.VLPlan, *plan.LIDPlan, error) {
	t.Helper()
	c := sdktest.InProcess(t, newTestAssigner(), sdk.KindVLAssign)
	ctx := context.Background()
	if err := c.Configure(ctx, vls(b)); err != nil {
		t.Fatal(err)
	}
	lids := testfab.SequentialLIDs(topo, 0)
	v, err := c.AssignVLs(ctx, sdk.VLRequest{Topo: topo, Routes: r, LIDs: lids, MaxVLs: topo.MinLinkVLs()})
	return v, lids, err
}

// TestPairedWithEngine: the engine's routes get the engine's layers (no
// more VLs than its budget) and the host accepts the plan; with a larger
// vls than the engine's the assigner still finds the engine's layout.
func TestPairedWithEngine(t *testing.T) {
	rnd, err := sdktest.Random(5, 40, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := testfab.Ring(12, 2)
	if err != nil {
		t.Fatal(err)
	}
	for name, topo := range map[string]*topology.Topology{"random": rnd, "ring": ring} {
		for _, c := range []struct{ engine, assigner int }{{1, 1}, {2, 2}, {3, 3}, {2, 4}} {
			planes, _, _, err := nue.Route(context.Background(), topo, nue.Options{Budget: c.engine})
			if err != nil {
				t.Fatal(err)
			}
			r := &plan.Routes{Planes: planes}
			v, lids, err := assign(t, topo, r, c.assigner)
			if err != nil {
				t.Fatalf("%s %+v: %v", name, c, err)
			}
			if v.VLs > c.engine {
				t.Errorf("%s %+v: plan uses %d VLs, more than the engine's budget", name, c, v.VLs)
			}
			if _, err := check.Check(check.Plan{Topo: topo, Routes: r, LIDs: lids, VLs: v}, check.Options{}); err != nil {
				t.Errorf("%s %+v: the host refuses the plan: %v", name, c, err)
			}
		}
	}
}

// TestRefusesOtherRoutes: min-hop routes on a ring close a dependency
// cycle on one VL; with vls = 1 the assigner refuses and says what to use.
func TestRefusesOtherRoutes(t *testing.T) {
	ring, err := testfab.Ring(9, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := route.MinHopRoutes(context.Background(), route.NewGraph(ring), route.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = assign(t, ring, r, 1)
	if err == nil || !strings.Contains(err.Error(), "not nue's") || !strings.Contains(err.Error(), "acro") {
		t.Fatalf("AssignVLs on cyclic min-hop routes with vls = 1: %v, want a refusal naming the way out", err)
	}
	if _, _, err := assign(t, ring, r, 2); err != nil {
		t.Errorf("with 2 VLs the min-hop ring routes layer first-fit, got %v", err)
	}
}
