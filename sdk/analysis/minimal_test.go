package analysis_test

import (
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// clockwise routes every destination of a ring the "+" way (port 1) only.
func clockwise(t *topology.Topology) *plan.Routes {
	eps := t.Endpoints()
	r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for d, e := range eps {
		pl := make(plan.Plane, len(t.Switches()))
		home := t.SwitchIndex(e.Node)
		last := uint8(0)
		if home < 0 {
			home, last = t.SwitchIndex(t.Port(e).Peer.Node), t.Port(e).Peer.Port
		}
		for s := range pl {
			pl[s] = 1
		}
		pl[home] = last
		r.Planes[d].Planes = []plan.Plane{pl}
	}
	return r
}

// TestMinimal: min-hop routes on a ring are all minimal; routing every
// destination clockwise round a 6-ring makes the pairs 4 and 5 hops away
// (2 and 1 the other way) non-minimal: 12 of 30 pairs, 6 extra switches per
// destination, at most 4.
func TestMinimal(t *testing.T) {
	topo, err := analysistest.Ring(6, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		routes *plan.Routes
		want   analysis.MinimalStats
	}{
		{"minhop", analysistest.MinHop(topo), analysis.MinimalStats{Pairs: 30, Minimal: 30}},
		{"clockwise", clockwise(topo), analysis.MinimalStats{Pairs: 30, Minimal: 18, ExtraHops: 36, MaxExtra: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			real, err := analysistest.Realize(topo, tc.routes, 0, plan.DLIDBase)
			if err != nil {
				t.Fatal(err)
			}
			if got := analysis.Minimal(real); got != tc.want {
				t.Fatalf("Minimal = %+v, want %+v", got, tc.want)
			}
		})
	}
	// A broken route counts as no pair, not as a minimal one.
	r := clockwise(topo)
	r.Planes[len(r.Planes)-1].Planes[0][0] = plan.NoPort
	real, err := analysistest.Realize(topo, r, 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	if got := analysis.Minimal(real); got.Pairs != 29 || got.Percent() >= 100 {
		t.Fatalf("with one unrouted pair: %+v", got)
	}
}
