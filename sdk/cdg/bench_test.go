package cdg_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
)

// BenchmarkFatTree56 builds the one-VL graph of the largest full 3-level
// fat tree in the LID space (3,920 switches, 47,824 destinations, Up*/Down*
// routes) from the planes, as sftree and single do, looks for a cycle in
// it, and builds it from the realised tables.
func BenchmarkFatTree56(b *testing.B) {
	topo, err := analysistest.FatTree3(56, 1)
	if err != nil {
		b.Fatal(err)
	}
	routes := analysistest.UpDown(topo, 0)
	var planes []plan.Plane
	for _, d := range routes.Planes {
		planes = append(planes, d.Planes...)
	}
	g := route.NewGraph(topo)
	var c *cdg.Graph
	b.Run("planes", func(b *testing.B) {
		for b.Loop() {
			if c, err = cdg.BuildPlanes(context.Background(), g, planes); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cycle", func(b *testing.B) {
		for b.Loop() {
			if c.FindCycle() != nil {
				b.Fatal("Up*/Down* routes with a credit loop")
			}
		}
	})
	rz, err := analysistest.Realize(topo, routes, 0, plan.DLIDBase)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("tables", func(b *testing.B) {
		for b.Loop() {
			if _, err := cdg.Build(context.Background(), rz); err != nil {
				b.Fatal(err)
			}
		}
	})
}
