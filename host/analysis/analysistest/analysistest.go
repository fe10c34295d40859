// Package analysistest is the host's name for sdk/analysis/analysistest
// (small fabrics, reference routings and an exact dependency graph for
// tests); it forwards so that host tests keep their imports.
package analysistest

import (
	at "github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

type (
	ExactCDG = at.ExactCDG
	Fab      = at.Fab
	Hop      = at.Hop
)

// GUID bases of the fabrics built here.
const (
	SwitchGUID = at.SwitchGUID
	CAGUID     = at.CAGUID
)

func NewFab(vlcap uint8) *Fab { return at.NewFab(vlcap) }

func Exact(r *plan.Realized, v *plan.VLPlan, allLIDs bool) ExactCDG { return at.Exact(r, v, allLIDs) }

func FatTree2(leaves, spines, casPerLeaf int, vlcap uint8) (*topology.Topology, error) {
	return at.FatTree2(leaves, spines, casPerLeaf, vlcap)
}

func FatTree3(k int, vlcap uint8) (*topology.Topology, error) { return at.FatTree3(k, vlcap) }

func MinHop(t *topology.Topology) *plan.Routes { return at.MinHop(t) }

func Realize(t *topology.Topology, r *plan.Routes, lmc uint8, rule plan.DLIDRule) (*plan.Realized, error) {
	return at.Realize(t, r, lmc, rule)
}

func Ring(n, casPerSwitch int, vlcap uint8) (*topology.Topology, error) {
	return at.Ring(n, casPerSwitch, vlcap)
}

func RingVLs(r *plan.Realized) *plan.VLPlan { return at.RingVLs(r) }

func SequentialLIDs(t *topology.Topology, lmc uint8, rule plan.DLIDRule) *plan.LIDPlan {
	return at.SequentialLIDs(t, lmc, rule)
}

func Torus2D(x, y, casPerSwitch int, vlcap uint8) (*topology.Topology, error) {
	return at.Torus2D(x, y, casPerSwitch, vlcap)
}

func UpDown(t *topology.Topology, root int32) *plan.Routes { return at.UpDown(t, root) }
