package main

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	for _, lmc := range []uint8{0, 2} {
		sdktest.RoutingEngine(t, newTestEngine(), sdktest.Options{LMC: lmc})
	}
}

func newTestEngine() *engine { return newEngine(hclog.NewNullLogger()) }
