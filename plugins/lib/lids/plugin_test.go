package lids

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/zclconf/go-cty/cty"
)

func TestPluginConfigure(t *testing.T) {
	obj := func(m map[string]cty.Value) cty.Value { return cty.ObjectVal(m) }
	tests := []struct {
		name      string
		v         cty.Value
		wantMax   uint8
		wantSwLMC bool
		wantErr   string
	}{
		{"defaults", NewPlugin(ColorL, nil).Schema().Defaults(), 7, false, ""},
		{"null", cty.NullVal(cty.DynamicPseudoType), 7, false, ""},
		{"set", obj(map[string]cty.Value{"max_lmc": cty.NumberIntVal(3), "switch_lmc": cty.True}), 3, true, ""},
		{"too big", obj(map[string]cty.Value{"max_lmc": cty.NumberIntVal(8)}), 0, false, "0..7"},
		{"fraction", obj(map[string]cty.Value{"max_lmc": cty.NumberFloatVal(2.5)}), 0, false, "whole number"},
		{"string", obj(map[string]cty.Value{"max_lmc": cty.StringVal("3")}), 0, false, "must be a number"},
		{"bool as number", obj(map[string]cty.Value{"switch_lmc": cty.NumberIntVal(1)}), 0, false, "bool"},
	}
	for _, tc := range tests {
		p := NewPlugin(ColorL, nil)
		err := p.Configure(tc.v)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || p.maxLMC != tc.wantMax || p.switchLMC != tc.wantSwLMC {
			t.Errorf("%s: %v max %d switch %v", tc.name, err, p.maxLMC, p.switchLMC)
		}
	}
	for _, h := range Heuristics {
		if i := NewPlugin(h, nil).Info(); i.Name != string(h) || i.Kind != sdk.KindLIDAssign || i.Version != Version {
			t.Errorf("Info = %+v", i)
		}
	}
}

func TestPluginMaxLMCFromConfig(t *testing.T) {
	h, paths := fig6(t)
	p := NewPlugin(Greedy, nil)
	if err := p.Configure(cty.ObjectVal(map[string]cty.Value{"max_lmc": cty.NumberIntVal(1)})); err != nil {
		t.Fatal(err)
	}
	_, err := p.AssignLIDs(context.Background(), sdk.LIDRequest{Topo: h.t, Routes: &plan.Routes{Paths: paths}})
	if err == nil || !strings.Contains(err.Error(), "greedy: destination") || !strings.Contains(err.Error(), "max_lmc is 1") {
		t.Errorf("err = %v", err)
	}
	_, err = p.AssignLIDs(context.Background(), sdk.LIDRequest{Topo: h.t, Routes: &plan.Routes{Paths: paths}, LMC: 2})
	if err == nil || !strings.Contains(err.Error(), "raise max_lmc or lower lmc") {
		t.Errorf("floor above cap: %v", err)
	}
}

func TestMainRefusesUnknownHeuristic(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `"colour"`) {
			t.Errorf("recover = %v, want a panic naming the heuristic", r)
		}
	}()
	Main("colour")
}
