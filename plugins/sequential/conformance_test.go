package main

import (
	"testing"

	"github.com/ibsm/ibsm/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	for _, lmc := range []uint8{0, 3} {
		sdktest.LIDAssigner(t, &assigner{}, sdktest.Options{LMC: lmc})
	}
}
