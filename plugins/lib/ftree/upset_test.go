package ftree

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestUpSetsMatchPerSwitch: switches sharing an up set climb exactly as
// each choosing on its own does (a router whose every switch is its own
// set), for CA and switch destinations, on full, degraded and
// parallel-cable trees and with LMC.
func TestUpSetsMatchPerSwitch(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func() (*topology.Topology, error)
		frac float64
		lmc  uint8
	}{
		{"ft3-k8", func() (*topology.Topology, error) { return sdktest.FatTree3(8) }, 0, 0},
		{"ft3-k12-lmc1", func() (*topology.Topology, error) { return sdktest.FatTree3(12) }, 0, 1},
		{"ft3-k12-5pct", func() (*topology.Topology, error) { return sdktest.FatTree3(12) }, 0.05, 0},
		{"ft3-k8-20pct", func() (*topology.Topology, error) { return sdktest.FatTree3(8) }, 0.2, 1},
		{"ft2-6x3-10pct", func() (*topology.Topology, error) { return sdktest.FatTree2(6, 3, 4) }, 0.1, 0},
		{"parallel-cables", func() (*topology.Topology, error) { return parallelTree([]int{8, 3, 8, 0, 5, 8}) }, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.make()
			if err != nil {
				t.Fatal(err)
			}
			degrade(topo, tc.frac, 11)
			tree, err := Build(topo, Config{})
			if err != nil {
				t.Fatal(err)
			}
			route := func(own bool) *plan.Routes {
				r, err := NewRouter(context.Background(), tree)
				if err != nil {
					t.Fatal(err)
				}
				if own {
					if r.upSets == tree.N {
						t.Fatalf("every switch is its own up set already: nothing is shared")
					}
					for s := range r.upSet {
						r.upSet[s] = int32(s)
					}
					r.upSets = tree.N
				}
				routes := NewRoutes(tree, 1<<tc.lmc)
				if _, err := r.RouteCAs(context.Background(), routes); err != nil {
					t.Fatal(err)
				}
				if _, err := r.RouteSwitches(context.Background(), routes); err != nil {
					t.Fatal(err)
				}
				return routes
			}
			shared, own := route(false), route(true)
			for e := range shared.Planes {
				a, b := shared.Planes[e].Planes, own.Planes[e].Planes
				if !slices.EqualFunc(a, b, func(x, y plan.Plane) bool { return slices.Equal(x, y) }) {
					t.Fatalf("endpoint %d: %s", e, fmt.Sprint(a, " vs ", b))
				}
			}
		})
	}
}
