package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// line builds CA(0x10) - SW(0x1) - SW(0x2) - CA(0x20).
func line(t *testing.T) *topology.Topology {
	b := topology.NewBuilder()
	port := topology.Port{State: topology.StateActive, VLCap: 8}
	sw := func(g uint64) topology.Node {
		return topology.Node{GUID: g, Type: topology.Switch, Ports: []topology.Port{{GUID: g}, port, port}}
	}
	ca := func(g uint64) topology.Node {
		p := port
		p.GUID = g + 1
		return topology.Node{GUID: g, Type: topology.CA, Ports: []topology.Port{{}, p}}
	}
	for _, n := range []topology.Node{sw(1), sw(2), ca(0x10), ca(0x20)} {
		if err := b.AddNode(n); err != nil {
			t.Fatal(err)
		}
	}
	b.Link(1, 1, 0x10, 1)
	b.Link(2, 1, 0x20, 1)
	b.Link(1, 2, 2, 2)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

type base struct{ name string }

func (b base) Info() sdk.Info            { return sdk.Info{Name: b.name} }
func (b base) Schema() schema.Block      { return schema.Block{} }
func (b base) Configure(cty.Value) error { return nil }

// lineEngine routes the line topology; broken=true returns a loop.
type lineEngine struct {
	base
	broken bool
	calls  int
}

func (e *lineEngine) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	e.calls++
	t := req.Topo
	r := &plan.Routes{Planes: make([]plan.DestPlanes, len(t.Endpoints()))}
	for i, ep := range t.Endpoints() {
		// switch index 0 = GUID 1, 1 = GUID 2; nodes sorted: 1,2,0x10,0x20
		var pl plan.Plane
		switch t.Nodes[ep.Node].GUID {
		case 1:
			pl = plan.Plane{0, 2}
		case 2:
			pl = plan.Plane{2, 0}
		case 0x10:
			pl = plan.Plane{1, 2}
		case 0x20:
			pl = plan.Plane{2, 1}
		}
		if e.broken {
			pl = plan.Plane{2, 2}
		}
		r.Planes[i] = plan.DestPlanes{Planes: []plan.Plane{pl}}
	}
	return r, nil
}

type seqLIDs struct {
	base
	calls int
}

func (s *seqLIDs) AssignLIDs(_ context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	s.calls++
	l := &plan.LIDPlan{}
	for i := range req.Topo.Endpoints() {
		l.Ports = append(l.Ports, plan.PortLID{Base: uint16(i + 1)})
	}
	return l, nil
}

type oneVL struct {
	base
	calls int
}

func (o *oneVL) AssignVLs(context.Context, sdk.VLRequest) (*plan.VLPlan, error) {
	o.calls++
	return &plan.VLPlan{VLs: 1}, nil
}

// loopCheck is a minimal verifier: every LID must be reached from every switch.
func loopCheck(t *topology.Topology, _ *plan.Routes, _ *plan.LIDPlan, _ *plan.VLPlan, rz *plan.Realized) error {
	sw := t.Switches()
	for lid := 1; lid <= int(rz.TopLID); lid++ {
		for s := range sw {
			cur := s
			for hops := 0; ; hops++ {
				out := rz.LFT[cur][lid]
				if hops > len(sw) {
					return errors.New("loop")
				}
				peer := t.Nodes[sw[cur]].Ports[out].Peer
				if out == 0 || t.Nodes[peer.Node].Type != topology.Switch {
					break
				}
				cur = int(t.SwitchIndex(peer.Node))
			}
		}
	}
	return nil
}

func TestRunCachesAndFallsBack(t *testing.T) {
	topo := line(t)
	bad, good := &lineEngine{base: base{"bad"}, broken: true}, &lineEngine{base: base{"good"}}
	lids, vls := &seqLIDs{base: base{"seq"}}, &oneVL{base: base{"single"}}
	dir := t.TempDir()
	mk := func() *Runner {
		return &Runner{
			Engines: []Engine{{Identity{Name: "bad"}, bad}, {Identity{Name: "good"}, good}},
			LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: lids},
			VL:      VLStage{Identity: Identity{Name: "single"}, Impl: vls},
			Cache:   NewCache(dir),
			Verify:  loopCheck,
		}
	}
	r := mk()
	res, err := r.Run(context.Background(), Input{Topo: topo})
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != "good" || len(res.Attempts) != 2 || res.Attempts[0].Err == nil {
		t.Fatalf("engine %s attempts %+v", res.Engine, res.Attempts)
	}
	if !strings.Contains(res.Attempts[0].Err.Error(), "loop") {
		t.Fatalf("bad engine rejected for %v, want loop", res.Attempts[0].Err)
	}
	first := r.Calls()
	// Same runner, same input: the bad engine is re-verified (and rejected)
	// from cache, the good plan comes from cache: no plugin calls.
	res2, err := r.Run(context.Background(), Input{Topo: topo})
	if err != nil || res2.Key != res.Key || r.Calls() != first {
		t.Fatalf("re-run: err %v key %v/%v calls %d→%d", err, res2.Key, res.Key, first, r.Calls())
	}
	// A fresh runner on the same state directory (a restart): no calls.
	r2 := mk()
	res3, err := r2.Run(context.Background(), Input{Topo: topo})
	if err != nil || r2.Calls() != 0 || res3.Key != res.Key {
		t.Fatalf("restart: err %v calls %d", err, r2.Calls())
	}
	if good.calls != 1 || bad.calls != 1 || lids.calls != 2 || vls.calls != 2 {
		t.Fatalf("plugin calls good=%d bad=%d lids=%d vls=%d", good.calls, bad.calls, lids.calls, vls.calls)
	}
	// A changed topology (a link down) misses the cache.
	topo2 := line(t)
	topo2.Nodes[2].Ports[1].State = topology.StateDown
	if topo2.Hash() == topo.Hash() {
		t.Fatal("hash ignores a link going down")
	}
}

func TestRunAllFail(t *testing.T) {
	bad := &lineEngine{base: base{"bad"}, broken: true}
	r := &Runner{
		Engines: []Engine{{Identity{Name: "bad"}, bad}},
		LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: &seqLIDs{}},
		VL:      VLStage{Identity: Identity{Name: "single"}, Impl: &oneVL{}},
		Cache:   NewCache(""),
		Verify:  loopCheck,
	}
	_, err := r.Run(context.Background(), Input{Topo: line(t)})
	var pe *PlanError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "last good plan") {
		t.Fatalf("err = %v", err)
	}
}

func TestHashIgnoresArmedActive(t *testing.T) {
	a, b := line(t), line(t)
	for i := range b.Nodes {
		for p := range b.Nodes[i].Ports {
			if b.Nodes[i].Ports[p].State == topology.StateActive {
				b.Nodes[i].Ports[p].State = topology.StateInit
			}
		}
	}
	if a.Hash() != b.Hash() {
		t.Fatal("Init vs Active changed the topology hash")
	}
}

// TestVerifyPolicy: a plan rejected under one verifier policy is accepted
// under a lenient one without asking a plugin again, its warnings are
// logged and survive a restart, and neither verdict leaks into the other
// policy's.
func TestVerifyPolicy(t *testing.T) {
	topo := line(t)
	dir := t.TempDir()
	eng := &lineEngine{base: base{"e"}}
	lids, vls := &seqLIDs{base: base{"seq"}}, &oneVL{base: base{"single"}}
	const warning = "1 of 2 switch->switch pairs unreachable"
	checks := 0
	// check stands for verify.Check: the plan lacks a switch->switch
	// route; "required" rejects it, "best_effort" accepts with a warning.
	check := func(policy string) Checker {
		return func(*topology.Topology, *plan.Routes, *plan.LIDPlan, *plan.VLPlan, *plan.Realized) ([]string, error) {
			checks++
			if policy == "required" {
				return nil, errors.New(warning)
			}
			return []string{warning}, nil
		}
	}
	steps := []struct {
		policy     string
		wantErr    string // substring; "" = accepted
		wantChecks int    // verifier calls in this step
		wantLog    bool   // the warning is logged
	}{
		{"required", warning, 1, false},
		{"best_effort", "", 1, true}, // same plan, new policy: verified again
		{"best_effort", "", 0, true}, // restart: remembered verdict, warnings kept
		{"required", "remembered", 0, false},
	}
	var keys []Key
	for i, st := range steps {
		var logBuf strings.Builder
		r := &Runner{
			Engines:      []Engine{{Identity{Name: "e"}, eng}},
			LID:          LIDStage{Identity: Identity{Name: "seq"}, Impl: lids},
			VL:           VLStage{Identity: Identity{Name: "single"}, Impl: vls},
			Cache:        NewCache(dir), // a fresh runner: a restart on the same state
			Check:        check(st.policy),
			VerifyPolicy: "switch_to_switch=" + st.policy,
			Verify: func(*topology.Topology, *plan.Routes, *plan.LIDPlan, *plan.VLPlan, *plan.Realized) error {
				t.Fatal("Verify called although Check is set")
				return nil
			},
			Log: hclog.New(&hclog.LoggerOptions{Output: &logBuf, Level: hclog.Warn}),
		}
		before := checks
		res, err := r.Run(context.Background(), Input{Topo: topo})
		switch {
		case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
			t.Fatalf("step %d (%s): err %v, want one containing %q", i, st.policy, err, st.wantErr)
		case st.wantErr == "" && err != nil:
			t.Fatalf("step %d (%s): %v", i, st.policy, err)
		case st.wantErr == "" && (len(res.Warnings) != 1 || res.Warnings[0] != warning):
			t.Errorf("step %d (%s): warnings %q", i, st.policy, res.Warnings)
		}
		if err == nil {
			keys = append(keys, res.Key)
		}
		if got := checks - before; got != st.wantChecks {
			t.Errorf("step %d (%s): %d verifier calls, want %d", i, st.policy, got, st.wantChecks)
		}
		logged := strings.Contains(logBuf.String(), "plan accepted with a warning") && strings.Contains(logBuf.String(), warning)
		if logged != st.wantLog {
			t.Errorf("step %d (%s): warning logged = %v, want %v; log:\n%s", i, st.policy, logged, st.wantLog, logBuf.String())
		}
	}
	// The policy changes verdicts, not plans: every accepted run is the same
	// plan, and the plugins were asked once.
	for _, k := range keys[1:] {
		if k != keys[0] {
			t.Errorf("plan keys differ across policies: %v", keys)
		}
	}
	if eng.calls != 1 || lids.calls != 1 || vls.calls != 1 {
		t.Errorf("plugin calls route=%d lids=%d vls=%d, want 1 each", eng.calls, lids.calls, vls.calls)
	}
}

// integrityRunner is a fresh runner (a restart) on dir with the line
// engine, sequential-by-Previous LIDs and loopCheck as verifier.
type integrityFixture struct {
	dir  string
	eng  *lineEngine
	lids *prevLIDs
	vls  *oneVL
	log  *strings.Builder
}

func newIntegrity(t *testing.T) *integrityFixture {
	return &integrityFixture{dir: t.TempDir(), eng: &lineEngine{base: base{"e"}}, lids: &prevLIDs{base: base{"seq"}}, vls: &oneVL{base: base{"single"}}}
}

func (f *integrityFixture) runner() *Runner {
	f.log = &strings.Builder{}
	return &Runner{
		Engines: []Engine{{Identity{Name: "e"}, f.eng}},
		LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: f.lids},
		VL:      VLStage{Identity: Identity{Name: "single"}, Impl: f.vls},
		Cache:   NewCache(f.dir),
		Verify:  loopCheck,
		Log:     hclog.New(&hclog.LoggerOptions{Output: f.log, Level: hclog.Warn}),
	}
}

// prevLIDs keeps every Previous LID and numbers the rest after the
// highest one, like the sequential plugin.
type prevLIDs struct {
	base
	calls int
}

func (s *prevLIDs) AssignLIDs(_ context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	s.calls++
	t := req.Topo
	l := &plan.LIDPlan{Ports: make([]plan.PortLID, len(t.Endpoints()))}
	next := uint16(1)
	for _, lid := range req.Previous {
		next = max(next, lid+1)
	}
	for i, ep := range t.Endpoints() {
		if lid, ok := req.Previous[t.PortGUID(ep)]; ok {
			l.Ports[i].Base = lid
		} else {
			l.Ports[i].Base = next
			next++
		}
	}
	return l, nil
}

// counted is loopCheck counting its calls in n.
func counted(n *int) Verifier {
	return func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
		*n++
		return loopCheck(t, rt, l, v, rz)
	}
}

func (f *integrityFixture) calls() int { return f.eng.calls + f.lids.calls + f.vls.calls }

// TestCacheFileCorruptionIsAMiss: one byte changed inside a cached result
// fails its checksum: the stage is recomputed, the problem logged, and the
// plan equals the one computed from scratch.
func TestCacheFileCorruptionIsAMiss(t *testing.T) {
	f := newIntegrity(t)
	topo := line(t)
	want, err := f.runner().Run(context.Background(), Input{Topo: topo})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(f.dir, "routing-*.gob"))
	if len(files) != 1 {
		t.Fatalf("routing cache files %v", files)
	}
	data, _ := os.ReadFile(files[0])
	data[len(data)-3] ^= 0x01
	if err := os.WriteFile(files[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := f.calls()
	got, err := f.runner().Run(context.Background(), Input{Topo: topo})
	if err != nil {
		t.Fatal(err)
	}
	if got.Key != want.Key || f.eng.calls != 2 {
		t.Fatalf("after corruption: key %v want %v, route calls %d (want 2)", got.Key, want.Key, f.eng.calls)
	}
	if f.calls()-before != 1 {
		t.Errorf("%d plugin calls after corrupting only the routes, want 1 (LIDs and VLs are keyed by content)", f.calls()-before)
	}
	if !strings.Contains(f.log.String(), "corrupt") {
		t.Errorf("corruption not logged:\n%s", f.log)
	}
}

// TestTamperedCacheIsVerified: a cached routing result replaced by a
// decodable, correctly checksummed but broken one is never accepted on
// the old verdict: the plan is verified, rejected, and recomputed.
func TestTamperedCacheIsVerified(t *testing.T) {
	f := newIntegrity(t)
	topo := line(t)
	want, err := f.runner().Run(context.Background(), Input{Topo: topo})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(f.dir, "routing-*.gob"))
	k, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(files[0]), "routing-"), ".gob"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	broken, _ := (&lineEngine{broken: true}).Route(context.Background(), sdk.RouteRequest{Topo: topo})
	Put(NewCache(f.dir), "routing", Key(k), broken) // a forger who knows the format
	checks := 0
	r := f.runner()
	r.Verify = counted(&checks)
	got, err := r.Run(context.Background(), Input{Topo: topo})
	if err != nil {
		t.Fatal(err)
	}
	// One verification: the forged plan's. The recomputed plan is the
	// original one, whose own content already carries a verdict.
	if got.Key != want.Key || checks != 1 || f.eng.calls != 2 {
		t.Fatalf("key %v want %v; %d verifications (want 1: the forged plan), %d route calls (want 2)", got.Key, want.Key, checks, f.eng.calls)
	}
	if !strings.Contains(f.log.String(), "recomputing every stage") {
		t.Errorf("retry not logged:\n%s", f.log)
	}
}

// TestPersistedLIDsAreInTheKey: a changed guid2lid under a warm cache gives
// the plan a fresh run would give (new LIDs, VLs recomputed for them,
// verified again), and a restart with the LIDs the plan itself left behind
// makes no plugin call.
func TestPersistedLIDsAreInTheKey(t *testing.T) {
	f := newIntegrity(t)
	topo := line(t)
	first, err := f.runner().Run(context.Background(), Input{Topo: topo})
	if err != nil {
		t.Fatal(err)
	}
	// The restart after programming: Previous is what the plan left.
	own := ownLIDs(topo, first.LIDs)
	before := f.calls()
	again, err := f.runner().Run(context.Background(), Input{Topo: topo, Previous: own})
	if err != nil || again.Key != first.Key || f.calls() != before {
		t.Fatalf("restart with own LIDs: err %v key %v/%v calls +%d", err, again.Key, first.Key, f.calls()-before)
	}
	// Reverse the LIDs.
	rev := map[uint64]uint16{}
	n := uint16(len(own))
	for g, lid := range own {
		rev[g] = n + 1 - lid
	}
	checks := 0
	r := f.runner()
	r.Verify = counted(&checks)
	got, err := r.Run(context.Background(), Input{Topo: topo, Previous: rev})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := newIntegrity(t).runner().Run(context.Background(), Input{Topo: topo, Previous: rev})
	if err != nil {
		t.Fatal(err)
	}
	if got.Key != fresh.Key || got.Key == first.Key || checks != 1 {
		t.Fatalf("reversed LIDs: key %v, fresh run %v, old %v; %d verifications", got.Key, fresh.Key, first.Key, checks)
	}
	for i, ep := range topo.Endpoints() {
		if got.LIDs.Ports[i].Base != rev[topo.PortGUID(ep)] {
			t.Fatalf("endpoint %d LID %d, guid2lid says %d", i, got.LIDs.Ports[i].Base, rev[topo.PortGUID(ep)])
		}
	}
}

// TestUnwritableCacheRoutesAnyway: a state directory that cannot be
// written costs the cache, never the plan; the operator is told once.
func TestUnwritableCacheRoutesAnyway(t *testing.T) {
	f := newIntegrity(t)
	f.dir = filepath.Join(f.dir, "file-not-dir")
	if err := os.WriteFile(f.dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runner().Run(context.Background(), Input{Topo: line(t)}); err != nil {
		t.Fatalf("routing failed because the cache could not be written: %v", err)
	}
	if n := strings.Count(f.log.String(), "plan cache:"); n == 0 || n > 3 {
		t.Errorf("want one warning per distinct problem, got %d:\n%s", n, f.log)
	}
}

// TestResultKeepsRoutesShape: a planes-form result carries the routes'
// shape only (the tables hold the forwarding), a paths-form one its paths.
func TestResultKeepsRoutesShape(t *testing.T) {
	topo := line(t)
	r := &Runner{
		Engines: []Engine{{Identity{Name: "good"}, &lineEngine{base: base{"good"}}}},
		LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: &seqLIDs{base: base{"seq"}}},
		VL:      VLStage{Identity: Identity{Name: "single"}, Impl: &oneVL{base: base{"single"}}},
		Cache:   NewCache(t.TempDir()),
		Verify:  loopCheck,
	}
	res, err := r.Run(context.Background(), Input{Topo: topo})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Routes.IsPlanes() || len(res.Routes.Planes) != len(topo.Endpoints()) {
		t.Fatalf("result routes: planes form %v, %d destinations, want %d", res.Routes.IsPlanes(), len(res.Routes.Planes), len(topo.Endpoints()))
	}
	for e, d := range res.Routes.Planes {
		if len(d.Planes) != 0 {
			t.Fatalf("destination %d keeps %d planes beside the realised tables", e, len(d.Planes))
		}
	}
	if res.Realized == nil || res.Realized.LFT[0][res.LIDs.Ports[len(topo.Endpoints())-1].Base] == plan.NoPort {
		t.Fatalf("realised tables lost: %+v", res.Realized)
	}

	paths := &plan.Routes{Paths: []plan.Path{{Src: 0, Dst: 1, Hops: []plan.Hop{{Switch: 0, Out: 2}}}}}
	for _, c := range []struct {
		name string
		in   *plan.Routes
		same bool
	}{{"paths kept whole", paths, true}, {"planes reduced to shape", &plan.Routes{Planes: []plan.DestPlanes{{Planes: []plan.Plane{{1, 2}}}}}, false}} {
		got := shapeOf(c.in)
		if (got == c.in) != c.same || len(got.Planes) != len(c.in.Planes) || len(got.Paths) != len(c.in.Paths) {
			t.Errorf("%s: got %+v from %+v", c.name, got, c.in)
		}
	}
}

// TestRoutingKeptOnDisk: once written, the routing stage's result leaves
// memory and a later run reads it back from its file without asking the
// engine; without a directory (or when the write fails) it stays in
// memory.
func TestRoutingKeptOnDisk(t *testing.T) {
	topo := line(t)
	for _, c := range []struct {
		name   string
		dir    func(t *testing.T) string
		inMem  bool
		second int // engine calls after the second run
	}{
		{"state directory", func(t *testing.T) string { return t.TempDir() }, false, 1},
		{"memory only", func(*testing.T) string { return "" }, true, 1},
		{"unwritable directory", func(t *testing.T) string {
			d := filepath.Join(t.TempDir(), "file-not-dir")
			if err := os.WriteFile(d, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := &lineEngine{base: base{"good"}}
			r := &Runner{
				Engines: []Engine{{Identity{Name: "good"}, eng}},
				LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: &seqLIDs{base: base{"seq"}}},
				VL:      VLStage{Identity: Identity{Name: "single"}, Impl: &oneVL{base: base{"single"}}},
				Cache:   NewCache(c.dir(t)),
				Verify:  loopCheck,
			}
			first, err := r.Run(context.Background(), Input{Topo: topo})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(r.Cache.mem["routing"]) > 0; got != c.inMem {
				t.Fatalf("routing result in memory %v, want %v", got, c.inMem)
			}
			second, err := r.Run(context.Background(), Input{Topo: topo})
			if err != nil {
				t.Fatal(err)
			}
			if eng.calls != c.second || second.Key != first.Key {
				t.Fatalf("engine called %d times (want %d), plan %v then %v", eng.calls, c.second, first.Key, second.Key)
			}
			if got := len(r.Cache.mem["routing"]) > 0; got != c.inMem {
				t.Fatalf("after a read back, routing result in memory %v, want %v", got, c.inMem)
			}
		})
	}
}

// seenVL records what a VL assigner was given.
type seenVL struct {
	base
	realized bool
	planes   int
	maxVLs   int
}

func (s *seenVL) AssignVLs(_ context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	s.realized = req.Realized != nil
	s.maxVLs = req.MaxVLs
	for _, d := range req.Routes.Planes {
		s.planes += len(d.Planes)
	}
	return &plan.VLPlan{VLs: 1}, nil
}

// TestRemoteVLRealisesAfter: a remote VL assigner is sent the planes but
// no tables (the host realises its own after the call), an in-process one
// gets both; either way the verifier and the result hold the tables and
// only the routes' shape.
func TestRemoteVLRealisesAfter(t *testing.T) {
	for _, remote := range []bool{false, true} {
		vls := &seenVL{base: base{"seen"}}
		var checked *plan.Routes
		r := &Runner{
			Engines: []Engine{{Identity{Name: "good"}, &lineEngine{base: base{"good"}}}},
			LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: &seqLIDs{base: base{"seq"}}},
			VL:      VLStage{Identity: Identity{Name: "seen"}, Impl: vls, Remote: remote},
			Cache:   NewCache(""),
			Verify: func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
				checked = rt
				return loopCheck(t, rt, l, v, rz)
			},
		}
		res, err := r.Run(context.Background(), Input{Topo: line(t)})
		if err != nil {
			t.Fatalf("remote %v: %v", remote, err)
		}
		if vls.realized == remote || vls.planes != 4 {
			t.Errorf("remote %v: the VL assigner got tables %v and %d planes, want tables %v and 4 planes", remote, vls.realized, vls.planes, !remote)
		}
		if want := line(t).MinLinkVLs(); vls.maxVLs != want || want == 0 {
			t.Errorf("remote %v: the VL assigner was told %d VLs, want the links' fewest (%d)", remote, vls.maxVLs, want)
		}
		if res.Realized == nil || checked == nil {
			t.Fatalf("remote %v: no tables in the result or nothing verified", remote)
		}
		for _, rt := range []*plan.Routes{checked, res.Routes} {
			for e, d := range rt.Planes {
				if len(d.Planes) != 0 {
					t.Errorf("remote %v: destination %d still holds its planes after realising", remote, e)
				}
			}
		}
	}
}

// gatedVL answers plan after the host's check has started when early is
// set (the check must then run beside the call), at once otherwise.
// countedVL answers its plan or error and counts the calls.
type countedVL struct {
	base
	plan  *plan.VLPlan
	err   error
	calls int
}

func (g *countedVL) AssignVLs(context.Context, sdk.VLRequest) (*plan.VLPlan, error) {
	g.calls++
	return g.plan, g.err
}

// TestOneVLProvenFirst: for an assigner that declared CapOneVL the host
// checks plan.OneVL() first and, when it passes, takes it without asking
// the assigner (and remembers it as the assigner's answer); when it fails
// the assigner is asked, any other answer is checked as answered and a
// refusal is reported as the assigner's. Undeclared, it is always asked.
func TestOneVLProvenFirst(t *testing.T) {
	two := &plan.VLPlan{VLs: 2, Default: [16]uint8{0, 1}}
	cases := []struct {
		name           string
		oneVL, remote  bool
		oneVLCyclic    bool // the check rejects every 1-VL plan
		answer         *plan.VLPlan
		refuse         error
		wantCalls      int
		wantVLs        int
		wantChecked    []int // VLs of each plan checked, in order
		wantErrContent string
	}{
		{name: "proven, remote", oneVL: true, remote: true, answer: plan.OneVL(), wantVLs: 1, wantChecked: []int{1}},
		{name: "proven, in process", oneVL: true, answer: plan.OneVL(), wantVLs: 1, wantChecked: []int{1}},
		{name: "not proven: another answer is checked as answered", oneVL: true, remote: true, oneVLCyclic: true, answer: two, wantCalls: 1, wantVLs: 2, wantChecked: []int{1, 2}},
		{name: "not proven: a one-VL answer keeps the check's verdict", oneVL: true, remote: true, oneVLCyclic: true, answer: plan.OneVL(), wantCalls: 1, wantChecked: []int{1}, wantErrContent: "credit loop"},
		{name: "not proven: refusal", oneVL: true, remote: true, oneVLCyclic: true, refuse: status.Error(codes.Unknown, "cycle"), wantCalls: 1, wantChecked: []int{1}, wantErrContent: "cycle"},
		{name: "not declared: asked, checked after", remote: true, answer: plan.OneVL(), wantCalls: 1, wantVLs: 1, wantChecked: []int{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var checked []int
			vls := &countedVL{base: base{"counted"}, plan: c.answer, err: c.refuse}
			r := &Runner{
				Engines: []Engine{{Identity{Name: "good"}, &lineEngine{base: base{"good"}}}},
				LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: &seqLIDs{base: base{"seq"}}},
				VL:      VLStage{Identity: Identity{Name: "counted"}, Impl: vls, Remote: c.remote, OneVL: c.oneVL},
				Cache:   NewCache(""),
				Verify: func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
					checked = append(checked, v.VLs)
					if c.oneVLCyclic && v.VLs == 1 {
						return errors.New("credit loop")
					}
					return loopCheck(t, rt, l, v, rz)
				},
			}
			for run := range 2 { // the second run finds everything remembered
				checked = checked[:0]
				res, err := r.Run(context.Background(), Input{Topo: line(t)})
				if c.wantErrContent != "" {
					if err == nil || !strings.Contains(err.Error(), c.wantErrContent) {
						t.Fatalf("run %d: err = %v, want it to name %q", run, err, c.wantErrContent)
					}
				} else if err != nil {
					t.Fatal(err)
				} else if res.VLs.VLs != c.wantVLs {
					t.Errorf("run %d: result holds a %d-VL plan, want %d", run, res.VLs.VLs, c.wantVLs)
				}
				if run == 0 && !slices.Equal(checked, c.wantChecked) {
					t.Errorf("plans checked (their VLs) %v, want %v", checked, c.wantChecked)
				}
				if run == 1 && len(checked) != 0 {
					t.Errorf("second run checked %v, want nothing (verdicts remembered)", checked)
				}
				if vls.calls != c.wantCalls {
					t.Errorf("run %d: VL assigner asked %d times, want %d", run, vls.calls, c.wantCalls)
				}
			}
		})
	}
}

// scriptEngine answers the next routing of its script for each call.
type scriptEngine struct {
	base
	script []func(*topology.Topology) *plan.Routes
	calls  int
}

func (e *scriptEngine) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	r := e.script[e.calls](req.Topo)
	e.calls++
	return r, nil
}

// TestDeltaSparesTheFullCheck: with Runner.Delta, a plan that differs
// from the last one accepted in a way Delta proves sound is not checked
// in full; one it cannot prove (a credit loop) is, and is refused; the
// first plan has nothing to be compared with.
func TestDeltaSparesTheFullCheck(t *testing.T) {
	topo, err := analysistest.Ring(6, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	upDown := func(root int32) func(*topology.Topology) *plan.Routes {
		return func(t *topology.Topology) *plan.Routes { return analysistest.UpDown(t, root) }
	}
	for _, remote := range []bool{false, true} {
		eng := &scriptEngine{base: base{"script"}, script: []func(*topology.Topology) *plan.Routes{upDown(0), upDown(3), analysistest.MinHop}}
		full := 0
		r := &Runner{
			Engines: []Engine{{Identity{Name: "script"}, eng}},
			LID:     LIDStage{Identity: Identity{Name: "seq"}, Impl: &seqLIDs{base: base{"seq"}}},
			VL:      VLStage{Identity: Identity{Name: "one"}, Impl: &oneVL{base: base{"one"}}, Remote: remote, OneVL: remote},
			Cache:   NewCache(""),
			Delta:   &check.Delta{},
			Verify: func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
				full++
				_, err := check.Check(check.Plan{Topo: t, Routes: rt, LIDs: l, VLs: v, Realized: rz}, check.Options{})
				return err
			},
		}
		for i, want := range []struct {
			full int
			ok   bool
		}{{1, true}, {1, true}, {2, false}} {
			r.Engines[0].ConfigHash = uint64(i) // each run's routes are new to the cache
			_, err := r.Run(context.Background(), Input{Topo: topo})
			if (err == nil) != want.ok || full != want.full {
				t.Fatalf("remote %v, run %d: err %v, full checks %d; want ok %v after %d full checks", remote, i+1, err, full, want.ok, want.full)
			}
		}
	}
}
