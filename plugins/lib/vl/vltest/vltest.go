// Package vltest is the shared test of the multi-VL assigner binaries
// (layered, dfsssp, acro) and the helpers their tests and the vl package's
// own tests route with. Only tests import it.
package vltest

import (
	"context"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/vl"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/testfab/gen"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// MinHop routes topo on balanced minimum-hop planes (LMC 0). On tori and
// random regular graphs these close credit loops, so a VL assigner has
// something to break.
func MinHop(t testing.TB, topo *topology.Topology) *plan.Routes {
	t.Helper()
	r, _, err := route.MinHopRoutes(context.Background(), route.NewGraph(topo), route.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Realize realises r on topo with sequential LIDs.
func Realize(t testing.TB, topo *topology.Topology, r *plan.Routes) *plan.Realized {
	t.Helper()
	real, err := plan.Realize(topo, r, testfab.SequentialLIDs(topo, 0))
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// PlanCheck is a kind's own assertion on a plan Assign accepted.
type PlanCheck func(t *testing.T, real *plan.Realized, v *plan.VLPlan)

// Conformance is the whole test of one multi-VL assigner binary: the SDK
// kit over gRPC (its ring needs two layers), Assign, and Configure. extra,
// if not nil, is run on every plan Assign accepts.
func Conformance(t *testing.T, k vl.Kind, extra PlanCheck) {
	t.Run("kit", func(t *testing.T) {
		sdktest.VLAssigner(t, vl.NewPlugin(k, nil), sdktest.Options{})
	})
	t.Run("assign", func(t *testing.T) { Assign(t, k, extra) })
	t.Run("configure", func(t *testing.T) {
		Configure(t, vl.NewPlugin(k, nil), sdk.Info{Name: string(k), Version: vl.Version, Kind: sdk.KindVLAssign})
	})
}

// Assign runs kind k on cyclic min-hop routings within their links' VLs
// and checks that every plan is deadlock-free (with a checker shown to
// fail on the same routing squeezed onto VL 0) and that one available VL
// is refused by name.
func Assign(t *testing.T, k vl.Kind, extra PlanCheck) {
	cases := []struct {
		name  string
		build func() (*topology.Topology, error)
		cap   uint8
		fail  bool
	}{
		{"torus 4x4, 8 VLs", func() (*topology.Topology, error) { return testfab.Torus2D(4, 4, 1) }, 8, false},
		{"random 6-regular, 24 switches", func() (*topology.Topology, error) {
			return gen.Topology(gen.RRG{Switches: 24, NetPorts: 6, CAsPerSwitch: 2, Seed: 7})
		}, 8, false},
		{"torus 4x4, one VL: refused", func() (*topology.Topology, error) { return testfab.Torus2D(4, 4, 1) }, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			for i := range topo.Nodes {
				for p := range topo.Nodes[i].Ports {
					topo.Nodes[i].Ports[p].VLCap = c.cap
				}
			}
			real := Realize(t, topo, MinHop(t, topo))
			a := vl.NewPlugin(k, nil)
			v, err := a.AssignVLs(context.Background(), sdk.VLRequest{Topo: topo, LIDs: real.LIDs, Realized: real, MaxVLs: int(c.cap)})
			if c.fail {
				if err == nil || !strings.Contains(err.Error(), "only 1 are available") {
					t.Fatalf("want a refusal naming the one available VL, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := vl.NewFabric(real)
			if err != nil {
				t.Fatal(err)
			}
			if err := vl.Check(f, v); err != nil {
				t.Fatalf("plan is not deadlock-free: %v", err)
			}
			if v.VLs < 2 || v.VLs > int(c.cap) {
				t.Errorf("plan declares %d VLs on a cyclic routing with %d available", v.VLs, c.cap)
			}
			if extra != nil {
				extra(t, real, v)
			}
			// Breaking the SLs must be caught by the checker (it can fail).
			broken := *v
			broken.SLByDLID, broken.Overrides, broken.SL2VL, broken.Default = nil, nil, nil, [16]uint8{}
			if err := vl.Check(f, &broken); err == nil {
				t.Error("checker accepted every route on VL 0 of a cyclic routing")
			}
		})
	}
}

// Configure checks that a, a VL assigner with nothing to tune, accepts a
// null or empty configuration, refuses an attribute, and reports want.
func Configure(t *testing.T, a sdk.VLAssigner, want sdk.Info) {
	t.Helper()
	for _, v := range []cty.Value{cty.NilVal, cty.NullVal(cty.EmptyObject), cty.EmptyObjectVal, a.Schema().Defaults()} {
		if err := a.Configure(v); err != nil {
			t.Errorf("Configure(%#v): %v", v, err)
		}
	}
	if err := a.Configure(cty.ObjectVal(map[string]cty.Value{"x": cty.True})); err == nil {
		t.Error("unknown attribute accepted")
	}
	if i := a.Info(); i.Name != want.Name || i.Kind != want.Kind || i.Version != want.Version {
		t.Errorf("Info = %+v, want name %q, kind %q, version %q", i, want.Name, want.Kind, want.Version)
	}
}
