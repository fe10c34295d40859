package main

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/zclconf/go-cty/cty"
)

// TestConformance: the kit's fabrics with the default budget, and with one
// VL, where the host requires the routes alone to be deadlock-free.
func TestConformance(t *testing.T) {
	for _, lmc := range []uint8{0, 2} {
		sdktest.RoutingEngine(t, newTestEngine(), sdktest.Options{LMC: lmc})
	}
	one := cty.ObjectVal(map[string]cty.Value{"vls": cty.NumberIntVal(1)})
	for _, lmc := range []uint8{0, 1} {
		sdktest.RoutingEngine(t, newTestEngine(), sdktest.Options{LMC: lmc, Config: one, SingleVL: true})
	}
}

func newTestEngine() *engine { return &engine{log: hclog.NewNullLogger()} }
