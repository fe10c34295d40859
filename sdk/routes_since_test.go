package sdk_test

import (
	"context"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// TestRouteAnswersChanges: over real gRPC, a route call naming the
// engine's last answer (RouteRequest.Since) gets only the destinations
// whose planes changed, even when the engine rewrote its planes' memory
// in place; a call naming anything else, or none, gets the whole answer.
func TestRouteAnswersChanges(t *testing.T) {
	topo, err := sdktest.FatTree2(4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	eps, sw := topo.Endpoints(), topo.Switches()
	// One set of planes, rewritten in place between answers.
	planes := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e := range planes.Planes {
		planes.Planes[e].Planes = []plan.Plane{make(plan.Plane, len(sw))}
	}
	set := func(e int, port uint8) {
		for s := range sw {
			planes.Planes[e].Planes[0][s] = port
		}
	}
	for e := range eps {
		set(e, 1)
	}
	f := &fakePlugin{kind: sdk.KindRouting, routes: func(sdk.RouteRequest) (*plan.Routes, error) { return planes, nil }}
	c := sdktest.InProcess(t, f, sdk.KindRouting)
	ctx := context.Background()
	ask := func(since uint64) *plan.Routes {
		t.Helper()
		r, err := c.Route(ctx, sdk.RouteRequest{Topo: topo, Since: since})
		if err != nil {
			t.Fatal(err)
		}
		if r.Token == 0 {
			t.Fatal("a planes answer came without a token")
		}
		return r
	}
	whole := func(r *plan.Routes) {
		t.Helper()
		if r.Base != 0 || r.Changed != nil {
			t.Fatalf("want the whole answer, got changes to %#x: %v", r.Base, r.Changed)
		}
		for e, dp := range r.Planes {
			if len(dp.Planes) != 1 || dp.Planes[0][0] != planes.Planes[e].Planes[0][0] {
				t.Fatalf("destination %d: planes %v", e, dp.Planes)
			}
		}
	}
	first := ask(0)
	whole(first)

	set(2, 0)
	set(5, 2)
	second := ask(first.Token)
	if second.Base != first.Token || !slices.Equal(second.Changed, []int32{2, 5}) || second.Token == first.Token {
		t.Fatalf("changes: base %#x (want %#x), changed %v (want [2 5]), token %#x", second.Base, first.Token, second.Changed, second.Token)
	}
	for e, dp := range second.Planes {
		if changed := e == 2 || e == 5; changed != (len(dp.Planes) == 1) {
			t.Fatalf("destination %d: %d planes sent", e, len(dp.Planes))
		}
	}
	if second.Planes[5].Planes[0][0] != 2 || second.Planes[2].Planes[0][0] != 0 {
		t.Fatalf("changed planes arrived as %v, %v", second.Planes[2].Planes, second.Planes[5].Planes)
	}

	unchanged := ask(second.Token)
	if unchanged.Base != second.Token || len(unchanged.Changed) != 0 {
		t.Fatalf("an unchanged answer: base %#x, changed %v", unchanged.Base, unchanged.Changed)
	}
	// An older answer is remembered too (the host may not have kept the
	// last one); one older than the last four is not.
	back := ask(first.Token)
	if back.Base != first.Token || !slices.Equal(back.Changed, []int32{2, 5}) {
		t.Fatalf("changes to an older answer: base %#x, changed %v", back.Base, back.Changed)
	}
	ask(0)
	ask(0)
	whole(ask(first.Token))
	whole(ask(0))
}
