package cdg

import (
	"context"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/plugins/internal/route"
	"github.com/ibsm/ibsm/plugins/internal/testfab"
	"github.com/ibsm/ibsm/sdk/plan"
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
	g := route.NewGraph(topo)
	m, err := g.HopMatrix(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := route.Balance(context.Background(), g, g.MinHop(m), route.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
