package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/plugins/internal/route"
	"github.com/ibsm/ibsm/plugins/internal/testfab"
	"github.com/ibsm/ibsm/plugins/internal/vl"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

func minHop(t testing.TB, topo *topology.Topology) *plan.Realized {
	t.Helper()
	g := route.NewGraph(topo)
	m, err := g.HopMatrix(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := route.Balance(context.Background(), g, g.MinHop(m), route.Options{})
	if err != nil {
		t.Fatal(err)
	}
	real, err := plan.Realize(topo, r, testfab.SequentialLIDs(topo, 0))
	if err != nil {
		t.Fatal(err)
	}
	return real
}

func TestAssign(t *testing.T) {
	cases := []struct {
		name  string
		build func() (*topology.Topology, error)
		cap   uint8
		fail  bool
	}{
		{"torus 4x4, 8 VLs", func() (*topology.Topology, error) { return testfab.Torus2D(4, 4, 1) }, 8, false},
		{"random 6-regular, 24 switches", func() (*topology.Topology, error) { return vl.RandomRegular(24, 6, 2, 8, 7) }, 8, false},
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
			real := minHop(t, topo)
			a := vl.NewPlugin(vl.KindLayered, nil)
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
			// Breaking the SLs must be caught by the checker (it can fail).
			broken := *v
			broken.SLByDLID, broken.Overrides, broken.SL2VL, broken.Default = nil, nil, nil, [16]uint8{}
			if err := vl.Check(f, &broken); err == nil {
				t.Error("checker accepted every route on VL 0 of a cyclic routing")
			}
		})
	}
}

func TestConfigure(t *testing.T) {
	a := vl.NewPlugin(vl.KindLayered, nil)
	for _, v := range []cty.Value{cty.NilVal, cty.NullVal(cty.EmptyObject), cty.EmptyObjectVal, a.Schema().Defaults()} {
		if err := a.Configure(v); err != nil {
			t.Errorf("Configure(%#v): %v", v, err)
		}
	}
	if err := a.Configure(cty.ObjectVal(map[string]cty.Value{"x": cty.True})); err == nil {
		t.Error("unknown attribute accepted")
	}
	if i := a.Info(); i.Name != "layered" || i.Kind != sdk.KindVLAssign {
		t.Errorf("Info = %+v", i)
	}
}
