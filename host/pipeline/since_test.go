package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// fatTree2 is a two-level fat tree (4 leaves with 3 CAs, 2 spines)
// without the leaf-spine cables named in cut ({leaf, spine}).
func fatTree2(t *testing.T, cut ...[2]int) *topology.Topology {
	t.Helper()
	f := testfab.New()
	spines := []uint64{f.Switch(4), f.Switch(4)}
	for l := range 4 {
		leaf := f.Switch(5)
		for c := range 3 {
			f.CAOn(leaf, 1+c)
		}
		for s, sp := range spines {
			if !slicesContains(cut, [2]int{l, s}) {
				f.Link(leaf, 4+s, sp, 1+l)
			}
		}
	}
	topo, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func slicesContains(cut [][2]int, c [2]int) bool {
	for _, x := range cut {
		if x == c {
			return true
		}
	}
	return false
}

// updnEngine routes Up*/Down* from switch 0, as a remote plugin would.
type updnEngine struct{ base }

func (updnEngine) Info() sdk.Info {
	return sdk.Info{Name: "updn", Kind: sdk.KindRouting, Capabilities: []string{sdk.CapPlanes}}
}
func (updnEngine) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	return analysistest.UpDown(req.Topo, 0), nil
}

// answers calls a remote engine and records what each call answered.
type answers struct {
	base
	remote interface {
		Route(context.Context, sdk.RouteRequest) (*plan.Routes, error)
	}
	got []*plan.Routes
}

// editsEngine routes as updnEngine and answers as the SDK does for an
// engine whose planes it keeps: a call that names its last answer and
// takes edits gets only the entries that changed.
type editsEngine struct {
	base
	last  *plan.Routes
	token uint64
}

func (e *editsEngine) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	r, prev, since := analysistest.UpDown(req.Topo, 0), e.last, e.token
	e.last, e.token = r, e.token+2|1
	out := *r
	out.Token = e.token
	if req.Since == 0 || req.Since != since || !req.Edits {
		return &out, nil
	}
	out.Base, out.Changed, out.Edits = req.Since, []int32{}, []plan.Edit{}
	out.Planes = make([]plan.DestPlanes, len(r.Planes))
	for d, dp := range r.Planes {
		n := len(out.Edits)
		for k, pl := range dp.Planes {
			for s, port := range pl {
				if port != prev.Planes[d].Planes[k][s] {
					out.Edits = append(out.Edits, plan.Edit{Dest: int32(d), Switch: int32(s), Plane: uint8(k), Port: port})
				}
			}
		}
		if len(out.Edits) > n {
			out.Changed = append(out.Changed, int32(d))
		}
	}
	return &out, nil
}

func (a *answers) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	r, err := a.remote.Route(ctx, req)
	a.got = append(a.got, r)
	return r, err
}

// shiftedLIDs numbers endpoints from first, which the test moves.
type shiftedLIDs struct {
	base
	first uint16
}

func (s *shiftedLIDs) AssignLIDs(_ context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	l := &plan.LIDPlan{}
	for i := range req.Topo.Endpoints() {
		l.Ports = append(l.Ports, plan.PortLID{Base: s.first + uint16(i)})
	}
	return l, nil
}

// wholeVL refuses routes without their planes and answers two VLs.
type wholeVL struct{ base }

func (wholeVL) AssignVLs(_ context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	for e, dp := range req.Routes.Planes {
		if req.Routes.Base != 0 || len(dp.Planes) == 0 {
			return nil, fmt.Errorf("destination %d came without planes", e)
		}
	}
	return &plan.VLPlan{VLs: 2, Default: [16]uint8{0, 1}}, nil
}

// TestRouteCallAnswersChanges: where nothing after the route call reads
// the planes (a routes-unread LID assigner, a one-VL VL assigner the host
// proves), a remote engine's route call after a cable change answers only
// the destinations that changed, and the tables realised from them equal
// those of its whole answer; elsewhere, or when the LIDs moved, the whole
// answer is used.
func TestRouteCallAnswersChanges(t *testing.T) {
	// Per step and case (the columns below), the route calls made: c an
	// answer of changes, w a whole answer; "" none (the whole answer was
	// filed before).
	steps := []struct {
		topo  *topology.Topology
		first uint16 // LIDs from
		calls [5]string
	}{
		{fatTree2(t), 1, [5]string{"w", "w", "w", "w", "w"}},
		{fatTree2(t, [2]int{0, 1}), 1, [5]string{"c", "c", "w", "w", "cw"}},
		{fatTree2(t, [2]int{0, 1}, [2]int{2, 0}), 1, [5]string{"c", "c", "w", "w", "cw"}},
		{fatTree2(t, [2]int{2, 0}), 5, [5]string{"cw", "cw", "w", "w", "cw"}}, // the changes were for tables with other LIDs
		{fatTree2(t, [2]int{1, 1}), 5, [5]string{"c", "c", "w", "w", "cw"}},
		{fatTree2(t, [2]int{1, 1}), 5, [5]string{"c", "c", "", "", ""}}, // an answer of changes is not filed
		{fatTree2(t), 5, [5]string{"", "", "", "", ""}},
		{fatTree2(t, [2]int{3, 1}), 5, [5]string{"c", "c", "w", "w", "cw"}},
	}
	for ci, c := range []struct {
		name                string
		routesUnread, oneVL bool
		refuseOne           bool // the check refuses every one-VL plan after the first
		edits               bool // the engine names changed entries
	}{
		{"changes", true, true, false, false},
		{"changed entries", true, true, false, true},
		{"the LID assigner reads routes", false, true, false, false},
		{"the VL assigner reads routes", true, false, false, false},
		{"the check refuses one VL: the VL assigner gets whole routes", true, true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := &answers{base: base{"updn"}, remote: sdktest.InProcess(t, updnEngine{}, sdk.KindRouting)}
			if c.edits {
				eng.remote = &editsEngine{base: base{"updn"}}
			}
			lids := &shiftedLIDs{base: base{"shifted"}}
			r := &Runner{
				Engines: []Engine{{Identity{Name: "updn"}, eng}},
				LID:     LIDStage{Identity: Identity{Name: "shifted"}, Impl: lids, RoutesUnread: c.routesUnread},
				VL:      VLStage{Identity: Identity{Name: "whole"}, Impl: &wholeVL{base: base{"whole"}}, Remote: true, OneVL: c.oneVL},
				Cache:   NewCache(""),
			}
			r.Cache.keep = len(steps) // every whole answer stays filed
			if !c.refuseOne {         // (Delta would prove what the test refuses)
				r.Delta = &check.Delta{}
			}
			r.Verify = func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
				if c.refuseOne && v.IsOneVL() && r.basis != nil {
					return errors.New("refused")
				}
				_, err := check.Check(check.Plan{Topo: t, Routes: rt, LIDs: l, VLs: v, Realized: rz}, check.Options{})
				return err
			}
			for i, s := range steps {
				lids.first = s.first
				before := len(eng.got)
				res, err := r.Run(context.Background(), Input{Topo: s.topo})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				for _, a := range eng.got[before:] {
					if c.edits && a.Base != 0 && a.Edits == nil {
						t.Fatalf("step %d: changes came as planes, not entries", i)
					}
				}
				if got := callKinds(eng.got[before:]); got != s.calls[ci] {
					t.Fatalf("step %d: route calls %q, want %q", i, got, s.calls[ci])
				}
				want := analysistest.UpDown(s.topo, 0)
				if b := r.basis; b != nil && len(eng.got) > before && !slices.Equal(b.hashes, destHashes(want.Planes)) {
					t.Fatalf("step %d: the plane hashes kept are not those of the whole answer", i)
				}
				sameTables(t, i, s.topo, want, res)
			}
		})
	}
}

// TestEndpointsOnlyLIDs: an endpoints-only LID assigner is asked once for
// a fabric whose cables change under the same endpoints; one that did not
// declare it is asked again.
func TestEndpointsOnlyLIDs(t *testing.T) {
	for _, only := range []bool{true, false} {
		lids := &seqLIDs{base: base{"seq"}}
		r := &Runner{
			Engines: []Engine{{Identity{Name: "updn"}, updnEngine{}}},
			LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: lids, RoutesUnread: true, EndpointsOnly: only},
			VL:      VLStage{Identity: Identity{Name: "one"}, Impl: &oneVL{base: base{"one"}}},
			Cache:   NewCache(""),
			Verify:  loopCheck,
		}
		for _, topo := range []*topology.Topology{fatTree2(t), fatTree2(t, [2]int{0, 1}), fatTree2(t, [2]int{3, 0})} {
			if _, err := r.Run(context.Background(), Input{Topo: topo}); err != nil {
				t.Fatal(err)
			}
		}
		if want := map[bool]int{true: 1, false: 3}[only]; lids.calls != want {
			t.Errorf("endpoints-only %v: LID assigner asked %d times, want %d", only, lids.calls, want)
		}
	}
}

// TestFiledAnswerRealisedAsChanges: when a cable comes back, the plan
// filed before it went down comes back without a route call; its tables
// are realised as its changes to the tables kept (those of the answer for
// the cable down), sharing every table that did not change, and equal the
// whole answer's.
func TestFiledAnswerRealisedAsChanges(t *testing.T) {
	full, err := analysistest.FatTree3(8, 1)
	if err != nil {
		t.Fatal(err)
	}
	cut, err := analysistest.FatTree3(8, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The switch cable fewest destinations' Up*/Down* planes use goes down.
	uses := map[topology.PortRef]int{}
	for _, dp := range analysistest.UpDown(full, 0).Planes {
		seen := map[topology.PortRef]bool{}
		for s, port := range dp.Planes[0] {
			r := topology.PortRef{Node: full.Switches()[s], Port: port}
			if port != 0 && port != plan.NoPort && !seen[r] {
				seen[r] = true
				uses[r]++
			}
		}
	}
	least, found := topology.PortRef{}, false
	for _, n := range full.Switches() {
		for p := 1; p < len(full.Nodes[n].Ports); p++ {
			r := topology.PortRef{Node: n, Port: uint8(p)}
			if peer := full.Port(r).Peer; peer.Connected() && full.Nodes[peer.Node].Type == topology.Switch &&
				(!found || uses[r]+uses[peer] < uses[least]+uses[full.Port(least).Peer]) {
				least, found = r, true
			}
		}
	}
	testfab.SetLinkState(cut, cut.SwitchIndex(least.Node), least.Port, topology.StateDown)
	eng := &answers{base: base{"updn"}, remote: sdktest.InProcess(t, &repairEngine{updnEngine: updnEngine{base{"updn"}}}, sdk.KindRouting)}
	r := &Runner{
		Engines: []Engine{{Identity{Name: "updn"}, eng}},
		LID:     LIDStage{Identity: Identity{Name: "shifted"}, Impl: &shiftedLIDs{base: base{"shifted"}, first: 1}, RoutesUnread: true},
		VL:      VLStage{Identity: Identity{Name: "one"}, Impl: &wholeVL{base: base{"one"}}, Remote: true, OneVL: true},
		Cache:   NewCache(""),
	}
	// The repaired routes mix two Up*/Down* orders, which may close a
	// credit loop: this test is about realising, not judging, them.
	r.Verify = func(*topology.Topology, *plan.Routes, *plan.LIDPlan, *plan.VLPlan, *plan.Realized) error { return nil }
	ref := &repairEngine{} // the engine's whole answers, for comparison
	var tables []*plan.Realized
	for i, topo := range []*topology.Topology{full, cut, full} {
		res, err := r.Run(context.Background(), Input{Topo: topo})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		whole, err := ref.Route(context.Background(), sdk.RouteRequest{Topo: topo})
		if err != nil {
			t.Fatal(err)
		}
		sameTables(t, i, topo, whole, res)
		tables = append(tables, res.Realized)
	}
	if len(eng.got) != 2 {
		t.Fatalf("%d route calls, want 2 (the cable's return is filed)", len(eng.got))
	}
	lids, ok := tables[2].ChangedSince(tables[1])
	if !ok {
		t.Fatal("the filed plan was realised in full, not as its changes to the tables kept")
	}
	shared := 0
	for sw := range tables[2].LFT {
		if &tables[2].LFT[sw][0] == &tables[1].LFT[sw][0] {
			shared++
		}
	}
	if len(lids) == 0 || shared == 0 || shared == len(tables[2].LFT) {
		t.Fatalf("%d LIDs changed, %d of %d tables shared: want some of each", len(lids), shared, len(tables[2].LFT))
	}
}

// repairEngine answers its first fabric's Up*/Down* routes, and later
// fabrics those routes with the destinations whose plane uses a link that
// is down re-routed (as an engine that repairs its routing does): a cable
// changes few destinations.
type repairEngine struct {
	updnEngine
	first *plan.Routes
}

func (e *repairEngine) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	fresh := analysistest.UpDown(req.Topo, 0)
	if e.first == nil {
		e.first = fresh
		return fresh, nil
	}
	out := &plan.Routes{Planes: slices.Clone(e.first.Planes)}
	sw := req.Topo.Switches()
	for d, dp := range out.Planes {
		for s, port := range dp.Planes[0] {
			r := topology.PortRef{Node: sw[s], Port: port}
			if peer := req.Topo.Port(r).Peer; port != 0 && port != plan.NoPort && peer.Connected() &&
				req.Topo.Nodes[peer.Node].Type == topology.Switch && !req.Topo.IsLinkUp(r) {
				out.Planes[d] = fresh.Planes[d]
				break
			}
		}
	}
	return out, nil
}

// besideEngine routes Up*/Down* once the LID assigner was asked, or after
// wait without it.
type besideEngine struct {
	updnEngine
	asked chan struct{}
	wait  time.Duration
	saw   bool
}

func (e *besideEngine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	select {
	case <-e.asked:
		e.saw = true
	case <-time.After(e.wait):
	}
	return e.updnEngine.Route(ctx, req)
}

// askedLIDs tells when it is first asked.
type askedLIDs struct {
	seqLIDs
	asked chan struct{}
	once  sync.Once
}

func (a *askedLIDs) AssignLIDs(ctx context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	a.once.Do(func() { close(a.asked) })
	return a.seqLIDs.AssignLIDs(ctx, req)
}

// TestLIDsBesideRoute: an endpoints-only assigner that does not read the
// routes is asked while the route call runs (the engine sees it asked
// before it answers); any other is asked after the routes came back.
func TestLIDsBesideRoute(t *testing.T) {
	for _, c := range []struct {
		only bool
		wait time.Duration
	}{{true, 20 * time.Second}, {false, 50 * time.Millisecond}} {
		asked := make(chan struct{})
		e := &besideEngine{asked: asked, wait: c.wait}
		lids := &askedLIDs{seqLIDs: seqLIDs{base: base{"seq"}}, asked: asked}
		r := &Runner{
			Engines: []Engine{{Identity{Name: "updn"}, e}},
			LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: lids, RoutesUnread: true, EndpointsOnly: c.only},
			VL:      VLStage{Identity: Identity{Name: "one"}, Impl: &oneVL{base: base{"one"}}},
			Cache:   NewCache(""),
			Verify:  loopCheck,
		}
		res, err := r.Run(context.Background(), Input{Topo: fatTree2(t)})
		if err != nil {
			t.Fatal(err)
		}
		if e.saw != c.only {
			t.Errorf("endpoints-only %v: LIDs asked during the route call %v", c.only, e.saw)
		}
		if lids.calls != 1 || res.Calls != 3 || len(res.LIDs.Ports) != len(fatTree2(t).Endpoints()) {
			t.Errorf("endpoints-only %v: %d LID calls, %d plugin calls, %d LIDs", c.only, lids.calls, res.Calls, len(res.LIDs.Ports))
		}
	}
}

// failing fails every route call while fail is set, as a crashed plugin.
type failing struct {
	answers
	fail bool
}

func (f *failing) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	if f.fail {
		return nil, errors.New("plugin exited")
	}
	return f.answers.Route(ctx, req)
}

// TestChangesBeforeTheFile: with a state directory, a fabric seen before
// (the cable came back) is routed by asking the engine for its changes
// since the answer the host holds, not by reading the whole answer filed
// for it; when that call fails the file serves.
func TestChangesBeforeTheFile(t *testing.T) {
	eng := &failing{answers: answers{base: base{"updn"}, remote: &editsEngine{base: base{"updn"}}}}
	r := &Runner{
		Engines: []Engine{{Identity{Name: "updn"}, eng}},
		LID:     LIDStage{Identity: Identity{Name: "shifted"}, Impl: &shiftedLIDs{base: base{"shifted"}, first: 1}, RoutesUnread: true},
		VL:      VLStage{Identity: Identity{Name: "one"}, Impl: &wholeVL{base: base{"one"}}, Remote: true, OneVL: true},
		Cache:   NewCache(t.TempDir()),
		Delta:   &check.Delta{},
		Verify:  loopCheck,
	}
	for i, s := range []struct {
		topo  *topology.Topology
		fail  bool
		calls string
	}{
		{fatTree2(t), false, "w"},
		{fatTree2(t, [2]int{0, 1}), false, "c"},
		{fatTree2(t), true, ""},                 // the call fails: filed
		{fatTree2(t, [2]int{0, 1}), false, "c"}, // (answers of changes are not filed)
		{fatTree2(t), false, "c"},               // filed, but asked
	} {
		eng.fail = s.fail
		before := len(eng.got)
		res, err := r.Run(context.Background(), Input{Topo: s.topo})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := callKinds(eng.got[before:]); got != s.calls {
			t.Fatalf("step %d: route calls %q, want %q", i, got, s.calls)
		}
		sameTables(t, i, s.topo, analysistest.UpDown(s.topo, 0), res)
	}
}

// twoPlanes routes Up*/Down* twice per destination (LMC 1), a fresh
// answer each call, and declares it never writes to planes it returned:
// the SDK answers a call that asks for edits with the entries changed.
type twoPlanes struct{ base }

func (twoPlanes) Info() sdk.Info {
	return sdk.Info{Name: "updn2", Kind: sdk.KindRouting, Capabilities: []string{sdk.CapPlanes, sdk.CapLMC, sdk.CapStablePlanes}}
}
func (twoPlanes) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	r := analysistest.UpDown(req.Topo, 0)
	for e, dp := range r.Planes {
		r.Planes[e].Planes = append(dp.Planes, slices.Clone(dp.Planes[0]))
	}
	return r, nil
}

// portLMC gives CAs LMC 1 and switches' port 0 LMC 0, as the sequential
// assigner does by default.
type portLMC struct{ base }

func (portLMC) AssignLIDs(_ context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	l := &plan.LIDPlan{}
	next := uint16(2)
	for _, ep := range req.Topo.Endpoints() {
		p := plan.PortLID{Base: next, LMC: 1}
		if req.Topo.Nodes[ep.Node].Type == topology.Switch {
			p.LMC = 0
		}
		l.Ports = append(l.Ports, p)
		next += 2
	}
	return l, nil
}

// TestEditsOnlyWherePlanesAreLIDs: with LMC 1 where switches keep LMC 0,
// an engine answering two planes per destination has a plane no LID
// realises alone: the host asks for changed planes, not entries, and a
// cable's tables equal those of the whole answer.
func TestEditsOnlyWherePlanesAreLIDs(t *testing.T) {
	eng := &answers{base: base{"updn2"}, remote: sdktest.InProcess(t, twoPlanes{}, sdk.KindRouting)}
	var asked []bool
	r := &Runner{
		Engines: []Engine{{Identity{Name: "updn2"}, &askLog{answers: eng, edits: &asked}}},
		LID:     LIDStage{Identity: Identity{Name: "portlmc"}, Impl: portLMC{base{"portlmc"}}, RoutesUnread: true},
		VL:      VLStage{Identity: Identity{Name: "one"}, Impl: &wholeVL{base: base{"one"}}, Remote: true, OneVL: true},
		Cache:   NewCache(""),
		Delta:   &check.Delta{},
		Verify: func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
			_, err := check.Check(check.Plan{Topo: t, Routes: rt, LIDs: l, VLs: v, Realized: rz}, check.Options{})
			return err
		},
	}
	for i, topo := range []*topology.Topology{fatTree2(t), fatTree2(t, [2]int{0, 1}), fatTree2(t, [2]int{0, 1}, [2]int{2, 0})} {
		res, err := r.Run(context.Background(), Input{Topo: topo, LMC: 1})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want, err := twoPlanes{}.Route(context.Background(), sdk.RouteRequest{Topo: topo})
		if err != nil {
			t.Fatal(err)
		}
		sameTables(t, i, topo, want, res)
	}
	if slices.Contains(asked, true) {
		t.Errorf("edits asked for (%v) where a destination's planes are not one per LID", asked)
	}
}

// askLog records whether each route call asked for edits.
type askLog struct {
	*answers
	edits *[]bool
}

func (a *askLog) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	*a.edits = append(*a.edits, req.Edits)
	return a.answers.Route(ctx, req)
}

// sameTables fails step i unless res's tables are those of the whole
// answer routes for topo.
func sameTables(t *testing.T, i int, topo *topology.Topology, routes *plan.Routes, res *Result) {
	t.Helper()
	whole, err := plan.Realize(topo, routes, res.LIDs)
	if err != nil {
		t.Fatal(err)
	}
	for sw := range whole.LFT {
		if string(res.Realized.LFT[sw]) != string(whole.LFT[sw]) {
			t.Fatalf("step %d: switch %d's table is not the whole answer's", i, sw)
		}
	}
}

// callKinds names each answer: c for changes, w for a whole answer.
func callKinds(answers []*plan.Routes) string {
	var b strings.Builder
	for _, a := range answers {
		b.WriteString(map[bool]string{true: "c", false: "w"}[a.Base != 0])
	}
	return b.String()
}
