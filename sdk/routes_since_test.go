package sdk_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
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

// TestRouteAnswersEdits: over real gRPC, a stable engine's answer of
// changes (RouteRequest.Since) comes as edits of the named answer's
// planes when the call asks for them (RouteRequest.Edits), exactly the
// entries that differ, and as the changed destinations' whole planes
// when it does not, when the engine is not stable, or when a changed
// destination's number of planes changed; either, applied to the
// earlier answer, is the whole new one.
func TestRouteAnswersEdits(t *testing.T) {
	topo, err := sdktest.FatTree2(8, 4, 2) // 12 switches: a whole word and a tail
	if err != nil {
		t.Fatal(err)
	}
	neps, nsw := len(topo.Endpoints()), len(topo.Switches())
	// cur is the engine's answer; an edit copies the destination's planes
	// first (copy-on-write), as CapStablePlanes promises.
	cur := &plan.Routes{Planes: make([]plan.DestPlanes, neps)}
	for e := range cur.Planes {
		for k := range 2 {
			pl := make(plan.Plane, nsw)
			for s := range pl {
				pl[s] = uint8(1 + (e+k+s)%3)
			}
			cur.Planes[e].Planes = append(cur.Planes[e].Planes, pl)
		}
	}
	cow := func(e int) plan.DestPlanes {
		next := &plan.Routes{Planes: slices.Clone(cur.Planes)}
		var d plan.DestPlanes
		for _, pl := range cur.Planes[e].Planes {
			d.Planes = append(d.Planes, slices.Clone(pl))
		}
		next.Planes[e] = d
		cur = next
		return d
	}
	answer := func(sdk.RouteRequest) (*plan.Routes, error) { return cur, nil }
	stable := connect(t, capsPlugin{&fakePlugin{kind: sdk.KindRouting, routes: answer}, []string{sdk.CapLMC, sdk.CapStablePlanes}}, sdk.KindRouting)
	plain := connect(t, &fakePlugin{kind: sdk.KindRouting, routes: answer}, sdk.KindRouting)
	ctx := context.Background()
	ask := func(c *sdk.RemoteClient, since uint64, edits bool) *plan.Routes {
		t.Helper()
		r, err := c.Route(ctx, sdk.RouteRequest{Topo: topo, LMC: 1, Since: since, Edits: edits})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// same checks that prev with r applied is the engine's answer now.
	same := func(prev []plan.DestPlanes, r *plan.Routes) {
		t.Helper()
		got, err := sdktest.ApplyChanges(prev, r)
		if err != nil {
			t.Fatal(err)
		}
		for e := range cur.Planes {
			if !slices.EqualFunc(got[e].Planes, cur.Planes[e].Planes, func(a, b plan.Plane) bool { return slices.Equal(a, b) }) {
				t.Fatalf("destination %d: %v applied to the earlier answer gives %v, want %v", e, r.Edits, got[e].Planes, cur.Planes[e].Planes)
			}
		}
	}
	first := ask(stable, 0, true)
	if first.Base != 0 || first.Edits != nil {
		t.Fatalf("a call naming no answer got changes to %#x, edits %v", first.Base, first.Edits)
	}
	firstPlain := ask(plain, 0, true)

	cow(2).Planes[1][0] = plan.NoPort
	d := cow(5)
	d.Planes[0][1], d.Planes[0][nsw-1], d.Planes[0][8] = 4, plan.NoPort, 0
	cow(6) // new slices, the same planes: not a change
	want := []plan.Edit{
		{Dest: 2, Plane: 1, Switch: 0, Port: plan.NoPort},
		{Dest: 5, Plane: 0, Switch: 1, Port: 4},
		{Dest: 5, Plane: 0, Switch: 8, Port: 0},
		{Dest: 5, Plane: 0, Switch: int32(nsw - 1), Port: plan.NoPort},
	}
	edits := ask(stable, first.Token, true)
	if edits.Base != first.Token || !slices.Equal(edits.Changed, []int32{2, 5}) || !slices.Equal(edits.Edits, want) {
		t.Fatalf("edits: base %#x (want %#x), changed %v (want [2 5]), edits %v, want %v", edits.Base, first.Token, edits.Changed, edits.Edits, want)
	}
	for e, dp := range edits.Planes {
		if dp.Planes != nil {
			t.Fatalf("an answer of edits carries destination %d's planes", e)
		}
	}
	same(first.Planes, edits)
	dense := ask(stable, first.Token, false)
	if dense.Base != first.Token || !slices.Equal(dense.Changed, []int32{2, 5}) || dense.Edits != nil || len(dense.Planes[5].Planes) != 2 {
		t.Fatalf("changes not asked as edits: base %#x, changed %v, edits %v, destination 5 with %d planes", dense.Base, dense.Changed, dense.Edits, len(dense.Planes[5].Planes))
	}
	same(first.Planes, dense)
	// An engine that does not declare CapStablePlanes: the SDK keeps no
	// planes to diff against.
	notStable := ask(plain, firstPlain.Token, true)
	if notStable.Base != firstPlain.Token || !slices.Equal(notStable.Changed, []int32{2, 5}) || notStable.Edits != nil {
		t.Fatalf("a plain engine's changes: base %#x, changed %v, edits %v", notStable.Base, notStable.Changed, notStable.Edits)
	}
	same(firstPlain.Planes, notStable)
	// A destination whose number of planes changed: its planes go whole,
	// and so do the others'.
	cur = &plan.Routes{Planes: slices.Clone(cur.Planes)}
	cur.Planes[7].Planes = cur.Planes[7].Planes[:1]
	prev := edits.Token
	base, _ := sdktest.ApplyChanges(first.Planes, edits)
	fewer := ask(stable, prev, true)
	if fewer.Base != prev || !slices.Equal(fewer.Changed, []int32{7}) || fewer.Edits != nil {
		t.Fatalf("one plane fewer: base %#x, changed %v, edits %v", fewer.Base, fewer.Changed, fewer.Edits)
	}
	same(base, fewer)
}

// TestRouteRefusesUnaskedEdits: an answer of edits to a call that did not
// ask for them, or named no answer, is an error; one that asked takes it.
func TestRouteRefusesUnaskedEdits(t *testing.T) {
	topo, err := sdktest.FatTree2(2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	answer := []*pb.Chunk{
		{Part: &pb.Chunk_RoutesHeader{RoutesHeader: &pb.RoutesHeader{Form: pb.RoutesHeader_FORM_PLANES, NumDestinations: uint32(len(topo.Endpoints())),
			Token: 9, Base: 5, NumChanged: 1, Edits: true, NumEdits: 1}}},
		{Part: &pb.Chunk_Edits{Edits: &pb.PlaneEdits{Dest: []uint32{1}, Plane: []byte{0}, Switch: []uint32{2}, Port: []byte{1}}}},
	}
	for _, tc := range []struct {
		since uint64
		edits bool
		want  string
	}{
		{5, true, ""},
		{5, false, "the plugin answered edits to answer 0x5, the request did not ask for edits"},
		{0, true, "the plugin answered changes to answer 0x5, the request named 0x0"},
	} {
		raw := &rawPlugin{srv: &rawEngine{answer: answer}}
		client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{string(sdk.KindRouting): raw})
		d, err := client.Dispense(string(sdk.KindRouting))
		if err != nil {
			t.Fatal(err)
		}
		r, err := d.(*sdk.RemoteClient).Route(context.Background(), sdk.RouteRequest{Topo: topo, Since: tc.since, Edits: tc.edits})
		server.Stop()
		client.Close()
		switch {
		case tc.want == "" && (err != nil || !slices.Equal(r.Edits, []plan.Edit{{Dest: 1, Switch: 2, Plane: 0, Port: 1}})):
			t.Errorf("since %#x, edits %t: %v, %v", tc.since, tc.edits, r, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("since %#x, edits %t: error %v, want %q", tc.since, tc.edits, err, tc.want)
		}
	}
}

// TestPartialRoutesNotForwarded: routes that carry only an answer's
// changes, as planes or as edits, are never sent to a plugin that reads
// routes.
func TestPartialRoutesNotForwarded(t *testing.T) {
	topo, err := sdktest.FatTree2(2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	neps := len(topo.Endpoints())
	f := &fakePlugin{kind: sdk.KindLIDAssign,
		lids: func(sdk.LIDRequest) (*plan.LIDPlan, error) { return sequentialLIDs(neps, 0), nil },
		vls:  func(sdk.VLRequest) (*plan.VLPlan, error) { return &plan.VLPlan{}, nil }}
	lids, vls := connect(t, f, sdk.KindLIDAssign), connect(t, f, sdk.KindVLAssign)
	ctx := context.Background()
	for name, r := range map[string]*plan.Routes{
		"planes": {Planes: sdktest.BFSRoutes(topo).Planes, Base: 5, Changed: []int32{1}},
		"edits":  {Planes: make([]plan.DestPlanes, neps), Base: 5, Changed: []int32{1}, Edits: []plan.Edit{{Dest: 1, Port: 1}}},
	} {
		if _, err := lids.AssignLIDs(ctx, sdk.LIDRequest{Topo: topo, Routes: r}); err == nil || !strings.Contains(err.Error(), "a plugin that reads routes needs them whole") {
			t.Errorf("%s to a LID assigner: %v", name, err)
		}
		if _, err := vls.AssignVLs(ctx, sdk.VLRequest{Topo: topo, Routes: r, LIDs: sequentialLIDs(neps, 0)}); err == nil || !strings.Contains(err.Error(), "a plugin that reads routes needs them whole") {
			t.Errorf("%s to a VL assigner: %v", name, err)
		}
	}
}
