package main

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/internal/lids"
	"github.com/ibsm/ibsm/plugins/internal/lids/lidstest"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	for _, lmc := range []uint8{0, 3} {
		sdktest.LIDAssigner(t, lids.NewPlugin(lids.ColorL, hclog.NewNullLogger()), sdktest.Options{LMC: lmc})
	}
}

func TestPathsOverTheWire(t *testing.T) {
	for _, lmc := range []uint8{0, 1} {
		lidstest.Paths(t, lids.NewPlugin(lids.ColorL, hclog.NewNullLogger()), lmc)
	}
}
