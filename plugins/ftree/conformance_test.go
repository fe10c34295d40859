package main

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestConformance runs the kit on fat trees with a single top switch: the
// kit demands a route between every pair, switch to switch included, and
// pure up*/down* has none between two top switches (sftree adds those).
// The kit's ring and random fabrics are not fat trees; TestNotAFatTree
// checks that they are refused.
func TestConformance(t *testing.T) {
	fabrics := map[string]*topology.Topology{}
	for name, build := range map[string]func() (*topology.Topology, error){
		"fattree2-1spine": func() (*topology.Topology, error) { return sdktest.FatTree2(6, 1, 4) },
		"fattree3-k2":     func() (*topology.Topology, error) { return sdktest.FatTree3(2) },
	} {
		topo, err := build()
		if err != nil {
			t.Fatal(err)
		}
		fabrics[name] = topo
	}
	for _, lmc := range []uint8{0, 2} {
		sdktest.RoutingEngine(t, &engine{log: hclog.NewNullLogger()}, sdktest.Options{LMC: lmc, Fabrics: fabrics})
	}
}
