package main

import (
	"testing"

	"github.com/ibsm/ibsm/plugins/internal/vl"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// TestConformance runs the SDK kit over gRPC in-process, including its ring
// (BFS routes with a credit loop on one VL), which needs two layers.
func TestConformance(t *testing.T) {
	sdktest.VLAssigner(t, vl.NewPlugin(vl.KindACRO, nil), sdktest.Options{})
}
