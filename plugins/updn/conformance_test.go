package main

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/zclconf/go-cty/cty"
)

// TestConformance uses auto_roots = "leaf": the kit demands every switch
// pair routed, which spine roots cannot give on its fat tree.
func TestConformance(t *testing.T) {
	cfg := cty.ObjectVal(map[string]cty.Value{
		"root_guids":                cty.NullVal(cty.List(cty.String)),
		"auto_roots":                cty.StringVal("leaf"),
		"count_switch_destinations": cty.False,
	})
	sdktest.RoutingEngine(t, &engine{log: hclog.NewNullLogger()}, sdktest.Options{Config: cfg, LMC: 1})
}
