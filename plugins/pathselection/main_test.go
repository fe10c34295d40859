package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/plugins/internal/paths"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

func TestConfigure(t *testing.T) {
	e := newTestEngine()
	obj := func(kv map[string]cty.Value) cty.Value { return cty.ObjectVal(kv) }
	tests := []struct {
		name    string
		v       cty.Value
		wantErr string
		k, s    int
		root    uint64
		seed    uint64
		g       paths.Granularity
	}{
		{"defaults", e.Schema().Defaults(), "", 16, 0, 0, 1, paths.PerSwitchPair},
		{"null", cty.NullVal(e.Schema().ObjectType()), "", 16, 0, 0, 1, paths.PerSwitchPair},
		{"all set", obj(map[string]cty.Value{"k": cty.NumberIntVal(4), "max_stretch": cty.NumberIntVal(-1), "seed": cty.NumberIntVal(9), "root_guid": cty.StringVal("0x0002c90300000100"), "granularity": cty.StringVal("machine")}), "", 4, -1, 0x0002c90300000100, 9, paths.PerMachinePair},
		{"granularity switch", obj(map[string]cty.Value{"granularity": cty.StringVal("switch")}), "", 16, 0, 0, 1, paths.PerSwitchPair},
		{"granularity unknown", obj(map[string]cty.Value{"granularity": cty.StringVal("host")}), "use \"switch\"", 0, 0, 0, 0, 0},
		{"granularity not a string", obj(map[string]cty.Value{"granularity": cty.NumberIntVal(1)}), "must be a string", 0, 0, 0, 0, 0},
		{"k 0", obj(map[string]cty.Value{"k": cty.NumberIntVal(0)}), "1..32", 0, 0, 0, 0, 0},
		{"k 33", obj(map[string]cty.Value{"k": cty.NumberIntVal(33)}), "1..32", 0, 0, 0, 0, 0},
		{"k fractional", obj(map[string]cty.Value{"k": cty.NumberFloatVal(2.5)}), "whole number", 0, 0, 0, 0, 0},
		{"stretch -2", obj(map[string]cty.Value{"max_stretch": cty.NumberIntVal(-2)}), "-1..64", 0, 0, 0, 0, 0},
		{"seed negative", obj(map[string]cty.Value{"seed": cty.NumberIntVal(-1)}), "seed", 0, 0, 0, 0, 0},
		{"root without 0x", obj(map[string]cty.Value{"root_guid": cty.StringVal("2c90300000100")}), "0x prefix", 0, 0, 0, 0, 0},
		{"root zero", obj(map[string]cty.Value{"root_guid": cty.StringVal("0x0")}), "non-zero", 0, 0, 0, 0, 0},
	}
	for _, tc := range tests {
		err := e.Configure(tc.v)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if e.cfg.K != tc.k || e.cfg.MaxStretch != tc.s || e.cfg.RootGUID != tc.root || e.cfg.Seed != tc.seed || !e.cfg.Switches || e.cfg.Granularity != tc.g {
			t.Errorf("%s: config %+v", tc.name, e.cfg)
		}
	}
}

// TestRoute: switch endpoints on by default (every ordered pair of all
// endpoints has a path); a root GUID that is not a switch is refused.
func TestRoute(t *testing.T) {
	topo, err := sdktest.FatTree2(4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEngine()
	r, err := e.Route(context.Background(), sdk.RouteRequest{Topo: topo})
	if err != nil {
		t.Fatal(err)
	}
	n := len(topo.Endpoints())
	if r.IsPlanes() || len(r.Paths) != n*(n-1) {
		t.Fatalf("%d paths, want %d explicit paths", len(r.Paths), n*(n-1))
	}
	var ca uint64
	for _, n := range topo.Nodes {
		if n.Type == topology.CA {
			ca = n.GUID
			break
		}
	}
	if err := e.Configure(cty.ObjectVal(map[string]cty.Value{"root_guid": cty.StringVal(fmt.Sprintf("0x%x", ca))})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Route(context.Background(), sdk.RouteRequest{Topo: topo}); err == nil || !strings.Contains(err.Error(), "not a switch") {
		t.Errorf("root on a non-switch: err = %v", err)
	}
}
