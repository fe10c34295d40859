package sdktest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

type bfs struct{}

func (bfs) Info() sdk.Info            { return sdk.Info{Name: "bfs", Version: "1", Kind: sdk.KindRouting} }
func (bfs) Schema() schema.Block      { return schema.Block{} }
func (bfs) Configure(cty.Value) error { return nil }
func (bfs) Route(_ context.Context, r sdk.RouteRequest) (*plan.Routes, error) {
	return BFSRoutes(r.Topo), nil
}

func TestBFSEngineConforms(t *testing.T) {
	RoutingEngine(t, bfs{}, Options{})
}

func TestFabricsShape(t *testing.T) {
	tests := []struct {
		name          string
		build         func() (*topology.Topology, error)
		switches, eps int
	}{
		{"fattree2", func() (*topology.Topology, error) { return FatTree2(6, 3, 4) }, 9, 9 + 24},
		{"fattree3 k=4", func() (*topology.Topology, error) { return FatTree3(4) }, 20, 20 + 16},
		{"ring", func() (*topology.Topology, error) { return Ring(5, 2) }, 5, 15},
		{"random", func() (*topology.Topology, error) { return Random(1, 12, 8, 2) }, 12, 36},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			if len(topo.Switches()) != tc.switches || len(topo.Endpoints()) != tc.eps {
				t.Fatalf("%d switches, %d endpoints; want %d, %d", len(topo.Switches()), len(topo.Endpoints()), tc.switches, tc.eps)
			}
			if err := CheckRoutes(topo, BFSRoutes(topo)); err != nil {
				t.Fatalf("reference routes fail the check (fabric not connected?): %v", err)
			}
		})
	}
}

func TestCheckRoutesCatchesBadPlanes(t *testing.T) {
	topo, err := Ring(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	caDest := 1 // endpoint 0 is switch 0's port 0; CAs follow switches by GUID
	for e, ep := range topo.Endpoints() {
		if topo.Nodes[ep.Node].Type == topology.CA {
			caDest = e
			break
		}
	}
	tests := []struct {
		name   string
		mutate func(r *plan.Routes)
		want   string
	}{
		{"no route", func(r *plan.Routes) {
			pl := r.Planes[0].Planes[0]
			for s := range pl {
				if pl[s] != 0 {
					pl[s] = plan.NoPort
					return
				}
			}
		}, "has no route on a connected fabric"},
		{"switch dest not port 0", func(r *plan.Routes) { r.Planes[0].Planes[0][0] = 1 }, "uses port 1, want 0"},
		{"loop", func(r *plan.Routes) {
			// Every switch other than the destination's bounces between
			// its ring neighbours on ports 1 and 2.
			pl := r.Planes[0].Planes[0]
			for s := 1; s < len(pl); s++ {
				pl[s] = uint8(1 + s%2)
			}
		}, "loops"},
		{"CA dest wrong port", func(r *plan.Routes) {
			pl := r.Planes[caDest].Planes[0]
			for s := range pl {
				if pl[s] == 3 {
					pl[s] = 1
				}
			}
		}, "want 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := BFSRoutes(topo)
			tc.mutate(r)
			if err := CheckRoutes(topo, r); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestCheckLIDsAndVLs(t *testing.T) {
	topo, _ := Ring(3, 1)
	r := BFSRoutes(topo)
	l := testfab.SequentialLIDs(topo, 0)
	if err := CheckLIDs(topo, r, l, 0); err != nil {
		t.Fatal(err)
	}
	l.Ports[1].Base = l.Ports[0].Base
	if err := CheckLIDs(topo, r, l, 0); err == nil || !strings.Contains(err.Error(), "assigned to endpoints 0 and 1") {
		t.Fatalf("duplicate LID: %v", err)
	}
	if err := CheckVLs(topo, &plan.VLPlan{Default: [16]uint8{2: 4}}, 4); err == nil || !strings.Contains(err.Error(), "maps SL 2 to VL 4") {
		t.Fatalf("VL beyond VLCap: %v", err)
	}
	if err := CheckVLs(topo, &plan.VLPlan{Default: [16]uint8{15: 15}}, 4); err != nil {
		t.Fatalf("VL 15 (drop) rejected: %v", err)
	}
}

// TestCheckPlanIsTheHostVerifier: CheckPlan refuses what the host refuses
// (a cyclic VL 0 on a min-hop ring) and lets routesOnly skip the VL checks
// as the host does before a VL assigner ran; planesFit holds engines to
// 2^LMC planes.
func TestCheckPlanIsTheHostVerifier(t *testing.T) {
	topo, err := Ring(5, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := check.Plan{Topo: topo, Routes: BFSRoutes(topo), LIDs: testfab.SequentialLIDs(topo, 0)}
	if err := CheckPlan(p, Options{}, false); err == nil || !strings.Contains(err.Error(), "VL0 channel dependency graph is cyclic") {
		t.Fatalf("single VL on a min-hop ring: %v, want the host's cyclic-CDG refusal", err)
	}
	if err := CheckPlan(p, Options{}, true); err != nil {
		t.Fatalf("routes only: %v", err)
	}
	two := BFSRoutes(topo)
	two.Planes[0].Planes = append(two.Planes[0].Planes, two.Planes[0].Planes[0])
	if err := planesFit(two, 0); err == nil || !strings.Contains(err.Error(), "2 planes but LMC 0") {
		t.Fatalf("two planes at LMC 0: %v", err)
	}
	if err := planesFit(two, 1); err != nil {
		t.Fatal(err)
	}
}

// cowEngine routes with BFSRoutes and keeps its last answer: it answers a
// later call with that answer's plane slices wherever the planes are
// equal (copy-on-write, as CapStablePlanes promises), or, lying, writes
// the new planes into the last answer's memory.
type cowEngine struct {
	bfs
	inPlace bool
	last    *plan.Routes
}

func (e *cowEngine) Info() sdk.Info {
	return sdk.Info{Name: "cow", Version: "1", Kind: sdk.KindRouting, Capabilities: []string{sdk.CapStablePlanes}}
}

func (e *cowEngine) Route(_ context.Context, r sdk.RouteRequest) (*plan.Routes, error) {
	next := BFSRoutes(r.Topo)
	if e.last != nil && len(e.last.Planes) == len(next.Planes) {
		for d, dp := range next.Planes {
			old := e.last.Planes[d]
			same := slices.EqualFunc(old.Planes, dp.Planes, func(a, b plan.Plane) bool { return slices.Equal(a, b) })
			switch {
			case same:
				next.Planes[d] = old
			case e.inPlace && len(old.Planes) == len(dp.Planes):
				for k := range dp.Planes {
					copy(old.Planes[k], dp.Planes[k])
				}
				next.Planes[d] = old
			}
		}
	}
	e.last = next
	return next, nil
}

// TestStablePlanes: the kit accepts an engine that keeps CapStablePlanes'
// promise and refuses one that changes returned planes in place (the SDK
// would then miss its changes).
func TestStablePlanes(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		c := InProcess(t, &cowEngine{inPlace: inPlace}, sdk.KindRouting)
		err := stablePlanes(context.Background(), c, 0)
		if inPlace != (err != nil) || (err != nil && !strings.Contains(err.Error(), "misses destination")) {
			t.Errorf("engine writing in place %v: %v", inPlace, err)
		}
	}
}
