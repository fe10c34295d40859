package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// TestIncremental routes ft3-k8 with incremental = true through a sequence
// of cable changes and checks, per step, how the engine says it routed
// (from its log) and that the host's verifier accepts the routes.
func TestIncremental(t *testing.T) {
	var buf bytes.Buffer
	e := &engine{log: hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})}
	if err := e.Configure(cty.ObjectVal(map[string]cty.Value{"incremental": cty.True})); err != nil {
		t.Fatal(err)
	}
	const k, h = 8, 4
	// Switch indices of sdktest.FatTree3: h*h cores, then per pod h
	// aggregations and h leaves. Algorithm 1's root is a leaf of pod 0.
	lastLeaf := int32(h*h + k*2*h - 1)
	firstAgg := int32(h * h)
	// The first up cable of a switch (up ports are h+1..2h on both levels).
	upPort := func(topo *topology.Topology, s int32) uint8 {
		for _, l := range route.NewGraph(topo).Links(s) {
			if l.Port > h {
				return l.Port
			}
		}
		t.Fatalf("switch %d has no up cable", s)
		return 0
	}
	leafCable, podCable := lastLeaf, firstAgg
	for _, step := range []struct {
		name string
		down []int32 // switches whose first up cable is down
		want string  // in the log of this step
	}{
		{"full fabric", nil, "fat tree"},
		{"leaf cable in the last pod down", []int32{leafCable}, "how=repaired"},
		{"aggregation cable in the root's pod down", []int32{leafCable, podCable}, "no longer reaches some switches"},
		{"another leaf cable down", []int32{leafCable, podCable, leafCable - 1}, "how=repaired"},
		{"a second aggregation cable in the root's pod down", []int32{leafCable, podCable, leafCable - 1, podCable + 1}, "incremental re-route fell back to a full route"},
		{"that aggregation cable back up", []int32{leafCable, podCable, leafCable - 1}, "how=restored"},
		{"that leaf cable back up", []int32{leafCable, podCable}, "how=restored"},
		{"aggregation cable back up", []int32{leafCable}, "how=restored"},
		{"leaf cable back up", nil, "how=restored"},
	} {
		buf.Reset()
		topo, err := sdktest.FatTree3(k)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range step.down {
			testfab.SetLinkState(topo, s, upPort(topo, s), topology.StateDown)
		}
		r, err := e.Route(context.Background(), sdk.RouteRequest{Topo: topo})
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !strings.Contains(buf.String(), step.want) {
			t.Fatalf("%s: log does not say %q:\n%s", step.name, step.want, buf.String())
		}
		if _, err := check.Check(check.Plan{Topo: topo, Routes: r, LIDs: testfab.SequentialLIDs(topo, 0)}, check.Options{}); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
}
