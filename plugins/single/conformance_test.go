package main

import (
	"testing"

	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestConformance runs the SDK kit over gRPC in-process. The kit routes
// with plain BFS, so only cycle-free fabrics (trees) can pass a single-VL
// check; its built-in ring would rightly be refused.
func TestConformance(t *testing.T) {
	line, err := testfab.Line(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	sdktest.VLAssigner(t, &assigner{}, sdktest.Options{Fabrics: map[string]*topology.Topology{"line": line}})
}
