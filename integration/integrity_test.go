package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/lidstore"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// bringUp builds an App for cfg (logging into log), runs one heavy sweep
// and returns both.
func bringUp(t *testing.T, cfg string, log *lockedBuffer) (*app.App, int) {
	t.Helper()
	a, err := app.New(context.Background(), loadConfig(t, cfg), hclog.New(&hclog.LoggerOptions{Output: log, Level: hclog.Info}))
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(a.Close)
	rep, err := a.SM.HeavySweep(context.Background())
	if err != nil {
		t.Fatalf("heavy sweep: %v\nlog:\n%s", err, log)
	}
	return a, rep.PluginCalls
}

// readBackVerified reads what the embedded fabric holds — every switch's
// LFT and SL2VL tables, every port's LID — and runs the host's own
// analysis on it. Only the path SLs come from the plan (the fabric keeps
// none; SA hands them out). It fails the test unless the programmed state
// is complete, loop-free and deadlock-free.
func readBackVerified(t *testing.T, a *app.App) {
	t.Helper()
	ap := a.SM.Applied()
	topo := ap.Topo
	eps := topo.Endpoints()
	lids := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps)), Rule: ap.Result.LIDs.Rule, Overrides: ap.Result.LIDs.Overrides}
	var top uint16
	for i, ep := range eps {
		pi, err := a.Sim.PortInfo(topo.Nodes[ep.Node].GUID, ep.Port)
		if err != nil {
			t.Fatal(err)
		}
		lids.Ports[i] = plan.PortLID{Base: pi.LID, LMC: pi.LMC}
		top = max(top, pi.LID+uint16(1)<<pi.LMC-1)
	}
	rz := &plan.Realized{Topo: topo, TopLID: top, LIDOwner: make([]int32, int(top)+1), LIDs: lids}
	for i, p := range lids.Ports {
		for l := int(p.Base); p.Base != 0 && l < int(p.Base)+p.Count(); l++ {
			if rz.LIDOwner[l] != 0 {
				t.Fatalf("the fabric holds LID %d twice", l)
			}
			rz.LIDOwner[l] = int32(i) + 1
		}
	}
	vls := &plan.VLPlan{SLByDLID: ap.Result.VLs.SLByDLID, Overrides: ap.Result.VLs.Overrides, VLs: ap.Result.VLs.VLs}
	for _, sw := range topo.Switches() {
		n := &topo.Nodes[sw]
		lft, err := a.Sim.LFT(n.GUID)
		if err != nil {
			t.Fatal(err)
		}
		row := make([]uint8, int(top)+1)
		for l := range row {
			row[l] = plan.NoPort
			if l < len(lft) {
				row[l] = lft[l]
			}
		}
		rz.LFT = append(rz.LFT, row)
		for in := 0; in < len(n.Ports); in++ {
			for out := 1; out < len(n.Ports); out++ {
				if !n.Ports[out].Peer.Connected() {
					continue
				}
				tab, err := a.Sim.SL2VL(n.GUID, uint8(in), uint8(out))
				if err != nil {
					t.Fatal(err)
				}
				vls.SL2VL = append(vls.SL2VL, plan.SL2VLEntry{Node: sw, In: uint8(in), Out: uint8(out), VL: tab})
			}
		}
	}
	for _, ep := range eps {
		if topo.Nodes[ep.Node].Type == topology.Switch {
			continue
		}
		tab, err := a.Sim.SL2VL(topo.Nodes[ep.Node].GUID, ep.Port, ep.Port)
		if err != nil {
			t.Fatal(err)
		}
		vls.SL2VL = append(vls.SL2VL, plan.SL2VLEntry{Node: ep.Node, In: ep.Port, Out: ep.Port, VL: tab})
	}
	rep, err := analysis.Analyse(rz, vls, analysis.Options{})
	if err != nil {
		t.Fatalf("read-back analysis: %v", err)
	}
	if !rep.OK() {
		var b strings.Builder
		rep.Text(&b)
		t.Fatalf("the programmed fabric fails the host's own check:\n%s", b.String())
	}
}

// TestPermutedLIDsUnderWarmCache: guid2lid rewritten (LIDs reversed) while
// the plan cache is warm — what seeding guid2lid from OpenSM does. The new
// LIDs are programmed, the VL plan is recomputed for them and verified, and
// the fabric read back passes the host's own check. sssp on rrg16 needs
// dfsssp's VLs, so stale path SLs would close a credit loop.
func TestPermutedLIDsUnderWarmCache(t *testing.T) {
	dir := t.TempDir()
	cfg := writeMVConfig(t, dir, mvSetup{net: rrg16Net, engine: "sssp", lid: "sequential", v: "dfsssp"})
	log := &lockedBuffer{}
	a, _ := bringUp(t, cfg, log)
	readBackVerified(t, a)
	a.Close()

	lidFile := filepath.Join(dir, "state", "guid2lid")
	m, err := lidstore.Load(lidFile)
	if err != nil {
		t.Fatal(err)
	}
	var guids []uint64
	var bases []uint16
	for g, r := range m {
		guids = append(guids, g)
		bases = append(bases, r.Min)
	}
	rev := map[uint64]lidstore.Range{}
	for i, g := range guids { // reversed pairing: every port gets another's LID
		b := bases[len(bases)-1-i]
		rev[g] = lidstore.Range{Min: b, Max: b}
	}
	if err := lidstore.Save(lidFile, rev); err != nil {
		t.Fatal(err)
	}

	b, calls := bringUp(t, cfg, log)
	if calls < 2 {
		t.Fatalf("new LIDs under a warm cache made %d plugin calls; the LID and VL stages must be recomputed", calls)
	}
	ap := b.SM.Applied()
	for i, ep := range ap.Topo.Endpoints() {
		if got, want := ap.Result.LIDs.Ports[i].Base, rev[ap.Topo.PortGUID(ep)].Min; got != want {
			t.Fatalf("endpoint %d got LID %d, guid2lid says %d", i, got, want)
		}
	}
	readBackVerified(t, b)
	b.Close()

	// A restart with the LIDs it left asks no plugin.
	if _, calls := bringUp(t, cfg, log); calls != 0 {
		t.Fatalf("restart on an unchanged fabric made %d plugin calls", calls)
	}
}

// TestCorruptCacheIsRecomputed: one byte changed in every cached stage
// result: each is a logged miss, the plan is recomputed, and the fabric
// read back passes the host's own check.
func TestCorruptCacheIsRecomputed(t *testing.T) {
	dir := t.TempDir()
	cfg := writeMVConfig(t, dir, mvSetup{net: rrg16Net, engine: "sssp", lid: "sequential", v: "dfsssp"})
	log := &lockedBuffer{}
	a, _ := bringUp(t, cfg, log)
	want := a.SM.Applied().Result.Key
	a.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "state", "cache", "*.gob"))
	if len(files) < 4 {
		t.Fatalf("cache holds %v", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0x20
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, calls := bringUp(t, cfg, log)
	if calls != 3 || b.SM.Applied().Result.Key != want {
		t.Fatalf("after corrupting the cache: %d plugin calls (want 3), plan %v (want %v)", calls, b.SM.Applied().Result.Key, want)
	}
	if !strings.Contains(log.String(), "is corrupt") {
		t.Fatalf("corruption not logged:\n%s", log)
	}
	readBackVerified(t, b)
}

// TestUnwritableCacheStillRoutes: the cache directory cannot be created (a
// file is in its way; chmod does not stop root): the subnet comes up, the
// operator is told, and a later sweep routes as well.
func TestUnwritableCacheStillRoutes(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, setup{net: ft2Net, engine: "updn"})
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state", "cache"), []byte("in the way\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	a, _ := bringUp(t, cfg, log)
	readBackVerified(t, a)
	if !strings.Contains(log.String(), "plan cache: cannot write") || !strings.Contains(log.String(), "not a directory") {
		t.Fatalf("the operator was not told why the cache is not written:\n%s", log)
	}
}

// TestReadOnlyStateDirStillRoutes: the whole state directory on a
// read-only mount (a full or remounted disk): the subnet comes up and the
// operator is told nothing is persisted.
func TestReadOnlyStateDirStillRoutes(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, setup{net: ft2Net, engine: "updn"})
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", "-o", "ro", state, state).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a read-only state directory here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", state).Run() })
	log := &lockedBuffer{}
	a, _ := bringUp(t, cfg, log)
	readBackVerified(t, a)
	for _, want := range []string{"state directory is read-only", "plan cache: cannot write"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}
