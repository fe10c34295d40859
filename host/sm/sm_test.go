package sm_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/lidstore"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/zclconf/go-cty/cty"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ---- in-process plugins ----

type base struct{ name string }

func (b base) Info() sdk.Info            { return sdk.Info{Name: b.name, Version: "test"} }
func (b base) Schema() schema.Block      { return schema.Block{} }
func (b base) Configure(cty.Value) error { return nil }

// updn routes Up*/Down* from switch index 0; loop=true instead sends every
// destination out of port 1 on every switch (switch-to-switch loops, which
// the verifier must reject).
type updn struct {
	base
	loop  bool
	calls atomic.Int64
	gate  func() // when set, called before answering
}

func (e *updn) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	e.calls.Add(1)
	if e.gate != nil {
		e.gate()
	}
	r := analysistest.UpDown(req.Topo, 0)
	if e.loop {
		for i := range r.Planes {
			for _, pl := range r.Planes[i].Planes {
				for s := range pl {
					pl[s] = uint8(len(req.Topo.Nodes[req.Topo.Switches()[s]].Ports) - 1)
				}
			}
		}
	}
	return r, nil
}

// seqLIDs keeps persisted LIDs and numbers the other endpoints from first
// upward, so a test can tell reused LIDs from fresh ones.
type seqLIDs struct {
	base
	first uint16
	calls atomic.Int64
}

func (s *seqLIDs) AssignLIDs(_ context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	s.calls.Add(1)
	eps := req.Topo.Endpoints()
	l := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps))}
	used := map[uint16]bool{}
	for i, ep := range eps {
		if b, ok := req.Previous[req.Topo.Port(ep).GUID]; ok {
			l.Ports[i].Base = b
			used[b] = true
		}
	}
	next := s.first
	for i := range eps {
		if l.Ports[i].Base != 0 {
			continue
		}
		for used[next] {
			next++
		}
		l.Ports[i].Base = next
		used[next] = true
	}
	return l, nil
}

type oneVL struct {
	base
	calls atomic.Int64
}

func (o *oneVL) AssignVLs(context.Context, sdk.VLRequest) (*plan.VLPlan, error) {
	o.calls.Add(1)
	return &plan.VLPlan{VLs: 1}, nil
}

func verifier(t *topology.Topology, r *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
	_, err := check.Check(check.Plan{Topo: t, Routes: r, LIDs: l, VLs: v, Realized: rz}, check.Options{})
	return err
}

func runner(engines []sdk.RoutingEngine, firstLID uint16) *pipeline.Runner {
	r := &pipeline.Runner{
		LID:    pipeline.LIDStage{Identity: pipeline.Identity{Name: "seq"}, Impl: &seqLIDs{base: base{"seq"}, first: firstLID}},
		VL:     pipeline.VLStage{Identity: pipeline.Identity{Name: "one"}, Impl: &oneVL{base: base{"one"}}},
		Cache:  pipeline.NewCache(""),
		Verify: verifier,
	}
	for _, e := range engines {
		r.Engines = append(r.Engines, pipeline.Engine{Identity: pipeline.Identity{Name: e.Info().Name}, Impl: e})
	}
	return r
}

// ---- fabric ----

func fatTree(t *testing.T) *netfile.File {
	f, err := topogen.FatTree{Radix: 4, Levels: 2}.Generate()
	must(t, err)
	return f
}

func attach(t *testing.T, f *netfile.File) (*sim.Fabric, transport.Transport) {
	t.Helper()
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	g, p := fab.DefaultSMPort()
	conn, err := fab.Attach(g, p)
	must(t, err)
	tr := transport.New(conn, transport.Options{Timeout: 50 * time.Millisecond, Window: 32})
	t.Cleanup(func() { tr.Close() })
	return fab, tr
}

// lfts snapshots every switch's table.
func lfts(t *testing.T, fab *sim.Fabric, f *netfile.File) map[uint64][]byte {
	t.Helper()
	m := map[uint64][]byte{}
	for _, n := range f.Nodes {
		if n.Type == topology.Switch {
			l, err := fab.LFT(n.GUID)
			must(t, err)
			m[n.GUID] = l
		}
	}
	return m
}

// checkProgrammed asserts the fabric holds the applied plan.
func checkProgrammed(t *testing.T, fab *sim.Fabric, s *sm.SM) {
	t.Helper()
	a := s.Applied()
	if a == nil {
		t.Fatal("no plan applied")
	}
	topo, rz := a.Topo, a.Result.Realized
	for i, node := range topo.Switches() {
		got, err := fab.LFT(topo.Nodes[node].GUID)
		must(t, err)
		if !bytes.Equal(got, rz.LFT[i]) {
			t.Fatalf("switch %#x holds %v, plan %v", topo.Nodes[node].GUID, got, rz.LFT[i])
		}
	}
	for i, ep := range topo.Endpoints() {
		snap, err := fab.PortInfo(topo.Nodes[ep.Node].GUID, ep.Port)
		must(t, err)
		if snap.LID != rz.LIDs.Ports[i].Base {
			t.Fatalf("endpoint %#x/%d LID %d, plan %d", topo.Nodes[ep.Node].GUID, ep.Port, snap.LID, rz.LIDs.Ports[i].Base)
		}
	}
}

// interSwitchLink returns one switch-to-switch cable.
func interSwitchLink(t *testing.T, f *netfile.File) netfile.Link {
	for _, l := range f.Links() {
		if l.A.Type == topology.Switch && l.B.Type == topology.Switch {
			return l
		}
	}
	t.Fatal("no switch-to-switch link")
	return netfile.Link{}
}

func TestSweeps(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	eng := &updn{base: base{"updn"}}
	pipe := runner([]sdk.RoutingEngine{eng}, 100)
	s := sm.New(tr, pipe, sm.Options{Parallel: 8}, nil)
	ctx := context.Background()

	if need, err := s.LightSweep(ctx); err != nil || !need {
		t.Fatalf("light sweep before any heavy sweep = %v, %v; want true", need, err)
	}

	rep, err := s.HeavySweep(ctx)
	must(t, err)
	if !rep.Rerouted || rep.PluginCalls != 3 || rep.Engine != "updn" || rep.Switches != 6 || rep.CAs != 8 || rep.Links != 16 {
		t.Fatalf("first sweep: %+v", rep)
	}
	if rep.Program.LFTBlocksSent != rep.Program.LFTBlocksTotal || rep.Distribution.Sets == 0 || len(rep.Warnings) != 0 {
		t.Fatalf("first sweep program stats %+v, distribution %+v", rep.Program, rep.Distribution)
	}
	checkProgrammed(t, fab, s)

	// Unchanged fabric: no re-route, no plugin call, no Set at all.
	sets0 := tr.Stats().Sets
	rep, err = s.HeavySweep(ctx)
	must(t, err)
	if rep.Rerouted || rep.PluginCalls != 0 || rep.Program.Sets() != 0 || rep.Distribution.Sets != 0 {
		t.Fatalf("second sweep: rerouted %v, %d plugin calls, program %+v", rep.Rerouted, rep.PluginCalls, rep.Program)
	}
	if d := tr.Stats().Sets - sets0; d != 0 {
		t.Fatalf("second sweep sent %d Sets", d)
	}
	if eng.calls.Load() != 1 {
		t.Fatalf("engine called %d times", eng.calls.Load())
	}

	tests := []struct {
		name string
		act  func() error
		want bool
	}{
		{"unchanged", func() error { return nil }, false},
		{"still unchanged", func() error { return nil }, false},
		{"link down", func() error { l := interSwitchLink(t, f); return fab.LinkDown(l.A.GUID, uint8(l.PA)) }, true},
	}
	for _, tc := range tests {
		must(t, tc.act())
		need, err := s.LightSweep(ctx)
		must(t, err)
		if need != tc.want {
			t.Fatalf("%s: light sweep says %v, want %v", tc.name, need, tc.want)
		}
	}

	// The heavy sweep after the link loss re-routes and sends only the
	// blocks that changed.
	before := s.Applied().Result.Key
	rep, err = s.HeavySweep(ctx)
	must(t, err)
	if !rep.Rerouted || rep.Links != 15 || s.Applied().Result.Key == before {
		t.Fatalf("after link down: %+v", rep)
	}
	if p := rep.Program; p.LFTBlocksSent == 0 || p.LFTBlocksSent >= p.LFTBlocksTotal || p.PortInfoSets != 0 {
		t.Fatalf("after link down: program %+v; want some but not all LFT blocks, no PortInfo", p)
	}
	checkProgrammed(t, fab, s)
	if need, err := s.LightSweep(ctx); err != nil || need {
		t.Fatalf("light sweep after re-routing = %v, %v; want false", need, err)
	}
}

func TestFailedPipelineKeepsTables(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{}, nil)
	ctx := context.Background()
	_, err := s.HeavySweep(ctx)
	must(t, err)
	good := s.Applied()
	snap := lfts(t, fab, f)

	tests := []struct {
		name  string
		fault func() error
	}{
		{"unchanged fabric", func() error { return nil }},
		{"after a link loss", func() error { l := interSwitchLink(t, f); return fab.LinkDown(l.A.GUID, uint8(l.PA)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			must(t, tc.fault())
			bad1, bad2 := &updn{base: base{"loop1"}, loop: true}, &updn{base: base{"loop2"}, loop: true}
			s.Reconfigure(runner([]sdk.RoutingEngine{bad1, bad2}, 100), 0)
			sets0 := tr.Stats().Sets
			rep, err := s.HeavySweep(ctx)
			var pe *pipeline.PlanError
			if !errors.As(err, &pe) || len(pe.Attempts) != 2 || rep == nil || len(rep.Attempts) != 2 {
				t.Fatalf("err = %v, report %+v; want a PlanError with two attempts", err, rep)
			}
			if rep.Rerouted || tr.Stats().Sets != sets0 {
				t.Fatalf("a rejected plan reached the fabric: rerouted %v, %d Sets", rep.Rerouted, tr.Stats().Sets-sets0)
			}
			after := lfts(t, fab, f)
			for g, l := range snap {
				if !bytes.Equal(after[g], l) {
					t.Fatalf("switch %#x LFT changed by a failed sweep", g)
				}
			}
			if s.Applied() != good {
				t.Fatal("the plan in force was replaced by a failed sweep")
			}
		})
	}
}

func TestLIDFileReused(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	dir := t.TempDir()
	lidFile := filepath.Join(dir, "guid2lid")
	ctx := context.Background()

	sweep := func(file string, first uint16) (*sm.SM, *sim.Fabric) {
		fab, tr := attach(t, f)
		s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, first), sm.Options{LIDFile: file}, nil)
		_, err := s.HeavySweep(ctx)
		must(t, err)
		checkProgrammed(t, fab, s)
		return s, fab
	}
	lidsOf := func(s *sm.SM) map[uint64]uint16 {
		a := s.Applied()
		m := map[uint64]uint16{}
		for i, ep := range a.Topo.Endpoints() {
			m[a.Topo.Port(ep).GUID] = a.Result.LIDs.Ports[i].Base
		}
		return m
	}

	s1, _ := sweep(lidFile, 100)
	want := lidsOf(s1)
	stored, err := lidstore.Load(lidFile)
	must(t, err)
	if len(stored) != len(want) {
		t.Fatalf("LID file has %d ports, plan %d", len(stored), len(want))
	}
	for g, lid := range want {
		if r := stored[g]; r.Min != lid || r.Max != lid {
			t.Fatalf("LID file: port %#x = %+v, plan %d", g, r, lid)
		}
	}

	tests := []struct {
		name  string
		file  string
		reuse bool
	}{
		{"fresh SM with the LID file", lidFile, true},
		{"fresh SM without it", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A new SM with a new cache on a new fabric; left alone its
			// assigner would start at LID 300.
			s2, _ := sweep(tc.file, 300)
			got := lidsOf(s2)
			same := true
			for g, lid := range want {
				if got[g] != lid {
					same = false
					if tc.reuse {
						t.Fatalf("port %#x got LID %d, had %d", g, got[g], lid)
					}
				}
			}
			if same != tc.reuse {
				t.Fatalf("LIDs reused = %v, want %v", same, tc.reuse)
			}
		})
	}

	// A corrupt LID file stops the sweep with an error naming the file.
	bad := filepath.Join(dir, "bad")
	must(t, os.WriteFile(bad, []byte("0x1 zero 0x2\n"), 0o644))
	_, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{LIDFile: bad}, nil)
	if _, err := s.HeavySweep(ctx); err == nil || !strings.Contains(err.Error(), "LID file") || !strings.Contains(err.Error(), "bad:1") {
		t.Fatalf("err = %v", err)
	}
}

// TestFabricLIDsKept: an SM without guid2lid (a lost state directory, a
// takeover) keeps the LIDs the fabric's ports already hold, except where
// two ports claim the same LID: those get new ones.
func TestFabricLIDsKept(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	ctx := context.Background()
	newSM := func(tr transport.Transport) *sm.SM {
		// Left alone the assigner would number from 300.
		return sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 300), sm.Options{}, nil)
	}
	first := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{}, nil)
	_, err := first.HeavySweep(ctx)
	must(t, err)
	lidsOf := func(s *sm.SM) map[uint64]uint16 {
		a := s.Applied()
		m := map[uint64]uint16{}
		for i, ep := range a.Topo.Endpoints() {
			m[a.Topo.PortGUID(ep)] = a.Result.LIDs.Ports[i].Base
		}
		return m
	}
	want := lidsOf(first)
	reattach := func() transport.Transport {
		tr = reattach(t, fab, tr)
		return tr
	}

	s := newSM(reattach())
	rep, err := s.HeavySweep(ctx)
	must(t, err)
	checkProgrammed(t, fab, s)
	// A new SM over the programmed fabric reads the tables back and finds
	// nothing to send but the CA ports' ClientReregister (a new master).
	if p := rep.Program; p.LFTBlocksRead == 0 || p.Sets() != p.Reregistered || p.Reregistered == 0 {
		t.Fatalf("second SM over the programmed fabric: %+v; want blocks read back and only re-registration Sets", p)
	}
	for g, lid := range lidsOf(s) {
		if want[g] != lid {
			t.Fatalf("port %#x renumbered %d -> %d although the fabric held its LID", g, want[g], lid)
		}
	}

	// Two CAs claim one LID: neither keeps it; everyone else does.
	var cas []*netfile.Node
	smGUID, _ := fab.DefaultSMPort()
	for _, n := range f.Nodes {
		if n.Type == topology.CA && n.GUID != smGUID {
			cas = append(cas, n)
		}
	}
	a, b := cas[0], cas[1]
	must(t, fab.SetPortLID(b.GUID, 1, want[a.Ports[1].GUID], 0))
	s = newSM(reattach())
	_, err = s.HeavySweep(ctx)
	must(t, err)
	checkProgrammed(t, fab, s)
	got := lidsOf(s)
	for g, lid := range got {
		conflicted := g == a.Ports[1].GUID || g == b.Ports[1].GUID
		if conflicted && lid < 300 || !conflicted && lid != want[g] {
			t.Errorf("port %#x: LID %d (had %d, conflicted %v)", g, lid, want[g], conflicted)
		}
	}
}

// TestRunEndsWithItsTransport: a transport that ends under the SM (umad:
// the HCA was removed) ends Run with its error instead of leaving an SM
// that sweeps nothing.
func TestRunEndsWithItsTransport(t *testing.T) {
	t.Parallel()
	_, tr := attach(t, fatTree(t))
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{SweepInterval: time.Hour}, nil)
	up := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(context.Background(), nil, func(*sm.Report, error) { up <- struct{}{} })
	}()
	<-up
	tr.Close()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "transport ended") {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run kept going after its transport ended")
	}
}

// reattach closes the SM's transport tr and attaches a new one at the SM
// port, as a restarted SM would.
func reattach(t *testing.T, fab *sim.Fabric, tr transport.Transport) transport.Transport {
	t.Helper()
	tr.Close()
	g, p := fab.DefaultSMPort()
	conn, err := fab.Attach(g, p)
	must(t, err)
	tr = transport.New(conn, transport.Options{Timeout: 50 * time.Millisecond, Window: 32})
	t.Cleanup(func() { tr.Close() })
	return tr
}
