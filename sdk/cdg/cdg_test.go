package cdg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestHandmade builds tables by hand on a line of three switches
// (port 1 -> next switch's port 2) with one CA each on port 3.
func TestHandmade(t *testing.T) {
	topo, err := testfab.Line(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	// LIDs: switches 1..3, CAs 4..6 (CA i on switch i).
	tests := []struct {
		name      string
		edit      func(lft [][]uint8)
		wantEdges int
		wantCycle string
	}{
		{name: "correct tree routing", edit: func([][]uint8) {}, wantEdges: 2},
		{name: "ping-pong loop between switches 0 and 1", edit: func(l [][]uint8) {
			l[1][6] = 2 // switch 1 sends CA 2's LID back to switch 0, which sends it forward
		}, wantEdges: 4, wantCycle: "0x0002c90000000001/1 -> 0x0002c90000000002/2 -> 0x0002c90000000001/1"},
		{name: "unowned LIDs are ignored", edit: func(l [][]uint8) {
			for s := range l {
				l[s] = append(l[s], 1, 1) // LIDs beyond TopLID
			}
		}, wantEdges: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := testfab.Realize(topo, mustMinHop(t, topo), 0)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(r.LFT)
			g, err := Build(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Edges(); got != tc.wantEdges {
				t.Errorf("edges = %d, want %d", got, tc.wantEdges)
			}
			cyc := g.FindCycle()
			got := ""
			if cyc != nil {
				got = Format(g, cyc, 10)
			}
			if got != tc.wantCycle {
				t.Errorf("cycle = %q, want %q", got, tc.wantCycle)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	topo, err := testfab.Line(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), nil); err == nil {
		t.Error("nil tables accepted")
	}
	r, err := testfab.Realize(topo, mustMinHop(t, topo), 0)
	if err != nil {
		t.Fatal(err)
	}
	short := *r
	short.LFT = short.LFT[:2]
	if _, err := Build(context.Background(), &short); err == nil || !strings.Contains(err.Error(), "3") {
		t.Errorf("missing switch table: %v", err)
	}
	trunc := *r
	trunc.LFT = append([][]uint8(nil), r.LFT...)
	trunc.LFT[1] = trunc.LFT[1][:2]
	if _, err := Build(context.Background(), &trunc); err == nil {
		t.Error("truncated table accepted")
	}
}

// mustMinHop routes topo min-hop.
func mustMinHop(t *testing.T, topo *topology.Topology) *plan.Routes {
	t.Helper()
	r, _, err := route.MinHopRoutes(context.Background(), route.NewGraph(topo), route.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestPlanesMatchTables: the CDG built from the planes of a routing equals
// the one built from its realised tables (LMC 0, one LID per plane), so
// the plane-based check sftree runs and the table-based one single runs
// agree.
func TestPlanesMatchTables(t *testing.T) {
	ring, err := testfab.Ring(6, 1)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := testfab.FatTree3(4)
	if err != nil {
		t.Fatal(err)
	}
	for name, topo := range map[string]*topology.Topology{"ring": ring, "fattree": ft} {
		t.Run(name, func(t *testing.T) {
			routes := mustMinHop(t, topo)
			r, err := testfab.Realize(topo, routes, 0)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Build(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			var planes []plan.Plane
			for _, dp := range routes.Planes {
				planes = append(planes, dp.Planes...)
			}
			got, err := BuildPlanes(context.Background(), route.NewGraph(topo), planes)
			if err != nil {
				t.Fatal(err)
			}
			if want.Edges() == 0 {
				t.Fatal("no dependencies: the fabric does not exercise the check")
			}
			if !slices.Equal(got.succ, want.succ) {
				t.Errorf("planes give %d dependencies, tables %d, or other ones", got.Edges(), want.Edges())
			}
			if (got.FindCycle() == nil) != (want.FindCycle() == nil) {
				t.Errorf("cycle from planes %v, from tables %v", got.FindCycle(), want.FindCycle())
			}
		})
	}
}

// TestAddPlaneCloneCopyFrom builds planes by hand on a line of three
// switches (port 1 -> next switch's port 2, CA on port 3).
func TestAddPlaneCloneCopyFrom(t *testing.T) {
	topo, err := testfab.Line(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	g := route.NewGraph(topo)
	base := New(g)
	if err := base.AddPlane(plan.Plane{1, 1, 3}); err != nil { // toward switch 2's CA
		t.Fatal(err)
	}
	if base.Edges() != 1 || base.FindCycle() != nil {
		t.Fatalf("tree plane: %d edges, cycle %v; want 1, none", base.Edges(), base.FindCycle())
	}
	trial := base.Clone()
	if err := trial.AddPlane(plan.Plane{1, 2, plan.NoPort}); err != nil { // 0 -> 1 -> back to 0
		t.Fatal(err)
	}
	cyc := trial.FindCycle()
	if len(cyc) != 2 || cyc[0].Switch != 0 || cyc[0].Port != 1 || cyc[1].Switch != 1 || cyc[1].Port != 2 ||
		cyc[0].Node != topo.Switches()[0] || cyc[1].Node != topo.Switches()[1] {
		t.Errorf("ping-pong cycle = %+v", cyc)
	}
	if base.Edges() != 1 {
		t.Errorf("adding to a clone changed the original: %d edges", base.Edges())
	}
	trial.CopyFrom(base)
	if trial.Edges() != 1 || trial.FindCycle() != nil {
		t.Errorf("CopyFrom: %d edges, cycle %v", trial.Edges(), trial.FindCycle())
	}
	if err := base.AddPlane(plan.Plane{1, 1}); err == nil || !strings.Contains(err.Error(), "2 entries, want 3") {
		t.Errorf("short plane: %v", err)
	}
	other, err := testfab.Line(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "not the same fabric") {
			t.Errorf("CopyFrom another fabric: recover = %v", r)
		}
	}()
	base.CopyFrom(New(route.NewGraph(other)))
}
