package main

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/torus/torustest"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestConformance runs the kit on tori and meshes (the kit's own fabrics
// carry no coordinates): whole, with a failed link and with a failed
// switch. Deadlock freedom on tori is torus-vl's (its tests); a whole mesh
// must be deadlock-free on one VL.
func TestConformance(t *testing.T) {
	link := torustest.Grid(t, []int{4, 3, 5}, false, 1)
	torustest.CutLink(t, link, "switch (1,1,1)", 2)
	fabrics := map[string]*topology.Topology{
		"torus":        torustest.Grid(t, []int{4, 4, 4}, false, 2),
		"torus-link":   link,
		"torus-switch": torustest.Without(t, torustest.Grid(t, []int{5, 4}, false, 1), "switch (2,2)"),
	}
	sdktest.RoutingEngine(t, &engine{log: hclog.NewNullLogger()}, sdktest.Options{Fabrics: fabrics})
	mesh := map[string]*topology.Topology{"mesh": torustest.Grid(t, []int{4, 3, 2}, true, 2)}
	sdktest.RoutingEngine(t, &engine{log: hclog.NewNullLogger()}, sdktest.Options{Fabrics: mesh, SingleVL: true})
}

// TestREADME: the README names this plugin and its kind, and its config
// table is the schema the plugin declares (IBSM_UPDATE_README=1 rewrites it).
func TestREADME(t *testing.T) {
	sdktest.CheckREADME(t, &engine{log: hclog.NewNullLogger()}, "README.md")
}
