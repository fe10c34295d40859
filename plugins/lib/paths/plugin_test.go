package paths

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

var kinds = []Kind{KindShortestWidest, KindPathSelection}

func TestEngineConformance(t *testing.T) {
	for _, k := range kinds {
		for _, lmc := range []uint8{0, 2} {
			t.Run(fmt.Sprintf("%s/lmc=%d", k, lmc), func(t *testing.T) {
				sdktest.RoutingEngine(t, NewEngine(k, hclog.NewNullLogger()), sdktest.Options{LMC: lmc})
			})
		}
	}
}

func TestEngineInfoSchema(t *testing.T) {
	for _, k := range kinds {
		e := NewEngine(k, nil)
		if got := e.Info().Name; got != string(k) {
			t.Errorf("%s: Info().Name = %q", k, got)
		}
		_, hasK := e.Schema().Defaults().Type().AttributeTypes()["k"]
		if hasK != (k == KindPathSelection) {
			t.Errorf("%s: schema has k = %v; only path-selection takes k", k, hasK)
		}
	}
}

func TestEngineConfigure(t *testing.T) {
	obj := func(kv map[string]cty.Value) cty.Value { return cty.ObjectVal(kv) }
	ps, sw := KindPathSelection, KindShortestWidest
	tests := []struct {
		kind    Kind
		name    string
		v       cty.Value // nil: the kind's schema defaults
		wantErr string
		k, s    int
		root    uint64
		seed    uint64
		g       Granularity
	}{
		{ps, "defaults", cty.NilVal, "", 16, 0, 0, 1, PerSwitchPair},
		{ps, "null", cty.NullVal(cty.DynamicPseudoType), "", 16, 0, 0, 1, PerSwitchPair},
		{ps, "all set", obj(map[string]cty.Value{"k": cty.NumberIntVal(4), "max_stretch": cty.NumberIntVal(-1), "seed": cty.NumberIntVal(9), "root_guid": cty.StringVal("0x0002c90300000100"), "granularity": cty.StringVal("machine")}), "", 4, -1, 0x0002c90300000100, 9, PerMachinePair},
		{ps, "granularity switch", obj(map[string]cty.Value{"granularity": cty.StringVal("switch")}), "", 16, 0, 0, 1, PerSwitchPair},
		{ps, "granularity unknown", obj(map[string]cty.Value{"granularity": cty.StringVal("host")}), "use \"switch\"", 0, 0, 0, 0, 0},
		{ps, "granularity not a string", obj(map[string]cty.Value{"granularity": cty.NumberIntVal(1)}), "must be a string", 0, 0, 0, 0, 0},
		{ps, "k 0", obj(map[string]cty.Value{"k": cty.NumberIntVal(0)}), "1..32", 0, 0, 0, 0, 0},
		{ps, "k 33", obj(map[string]cty.Value{"k": cty.NumberIntVal(33)}), "1..32", 0, 0, 0, 0, 0},
		{ps, "k fractional", obj(map[string]cty.Value{"k": cty.NumberFloatVal(2.5)}), "whole number", 0, 0, 0, 0, 0},
		{ps, "k a string", obj(map[string]cty.Value{"k": cty.StringVal("4")}), "must be a number", 0, 0, 0, 0, 0},
		{ps, "stretch -2", obj(map[string]cty.Value{"max_stretch": cty.NumberIntVal(-2)}), "-1..64", 0, 0, 0, 0, 0},
		{ps, "seed negative", obj(map[string]cty.Value{"seed": cty.NumberIntVal(-1)}), "seed", 0, 0, 0, 0, 0},
		{ps, "root without 0x", obj(map[string]cty.Value{"root_guid": cty.StringVal("2c90300000100")}), "0x prefix", 0, 0, 0, 0, 0},
		{ps, "root zero", obj(map[string]cty.Value{"root_guid": cty.StringVal("0x0")}), "non-zero", 0, 0, 0, 0, 0},
		{sw, "defaults", cty.NilVal, "", 16, 0, 0, 1, PerSwitchPair},
		{sw, "null", cty.NullVal(cty.DynamicPseudoType), "", 16, 0, 0, 1, PerSwitchPair},
		// Seeds are 64-bit: a seed past 32 bits is kept whole.
		{sw, "seed large", obj(map[string]cty.Value{"seed": cty.NumberUIntVal(1 << 40)}), "", 16, 0, 0, 1 << 40, PerSwitchPair},
		{sw, "seed too large", obj(map[string]cty.Value{"seed": cty.NumberUIntVal(1 << 63)}), "seed", 0, 0, 0, 0, 0},
		{sw, "root spaced", obj(map[string]cty.Value{"root_guid": cty.StringVal(" 0x2C90300000100 ")}), "", 16, 0, 0x2c90300000100, 1, PerSwitchPair},
		{sw, "root blank", obj(map[string]cty.Value{"root_guid": cty.StringVal("  ")}), "", 16, 0, 0, 1, PerSwitchPair},
		{sw, "seed negative", obj(map[string]cty.Value{"seed": cty.NumberIntVal(-1)}), "seed", 0, 0, 0, 0, 0},
		{sw, "root without 0x", obj(map[string]cty.Value{"root_guid": cty.StringVal("2c90300000100")}), "root_guid", 0, 0, 0, 0, 0},
		{sw, "root zero", obj(map[string]cty.Value{"root_guid": cty.StringVal("0x0")}), "non-zero", 0, 0, 0, 0, 0},
	}
	for _, tc := range tests {
		e := NewEngine(tc.kind, nil)
		v := tc.v
		if v == cty.NilVal {
			v = e.Schema().Defaults()
		}
		err := e.Configure(v)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), string(tc.kind)+": ") {
				t.Errorf("%s %s: err = %v, want %q after the plugin name", tc.kind, tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", tc.kind, tc.name, err)
			continue
		}
		c := e.Config()
		if c.K != tc.k || c.MaxStretch != tc.s || c.RootGUID != tc.root || c.Seed != tc.seed || !c.Switches || c.Granularity != tc.g {
			t.Errorf("%s %s: config %+v", tc.kind, tc.name, c)
		}
	}
}

// TestEngineRoute: switch endpoints on by default (every ordered pair of
// all endpoints has a path); a root GUID that is not a switch is refused.
func TestEngineRoute(t *testing.T) {
	topo, err := sdktest.FatTree2(4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	var ca uint64
	for _, n := range topo.Nodes {
		if n.Type == topology.CA {
			ca = n.GUID
			break
		}
	}
	for _, k := range kinds {
		e := NewEngine(k, nil)
		r, err := e.Route(context.Background(), sdk.RouteRequest{Topo: topo})
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		n := len(topo.Endpoints())
		if r.IsPlanes() || len(r.Paths) != n*(n-1) {
			t.Fatalf("%s: %d paths, want %d explicit paths", k, len(r.Paths), n*(n-1))
		}
		if _, err := e.Route(context.Background(), sdk.RouteRequest{}); err == nil || !strings.Contains(err.Error(), "no topology") {
			t.Errorf("%s: no topology: err = %v", k, err)
		}
		if err := e.Configure(cty.ObjectVal(map[string]cty.Value{"root_guid": cty.StringVal(fmt.Sprintf("0x%x", ca))})); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Route(context.Background(), sdk.RouteRequest{Topo: topo}); err == nil || !strings.Contains(err.Error(), "not a switch") {
			t.Errorf("%s: root on a non-switch: err = %v", k, err)
		}
	}
}
