package integration

// Staged rollout of a candidate plan (candidate {} block) on the embedded
// 3-level fat tree: updn in force, sftree in shadow. The status shows both
// plans; promotion goes in three stages, each step read back; every
// forwarding state the fabric passes through is caught from the fabric
// itself (the simulator's LFTs) and checked with host/analysis; the LFT
// blocks sent equal the blocks that differ. A link lost during stage 2
// fails the gate and everything rolls back; an SM that dies mid-rollout
// rolls back at restart. The 24-port tree (3,456 CAs) runs with
// IBSM_ROLLOUT_FULL=1; by default the 12-port tree (432 CAs).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/analysis"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/sim"
)

// rolloutRadix is the fat tree's switch radix.
func rolloutRadix() int {
	if os.Getenv("IBSM_ROLLOUT_FULL") != "" {
		return 24
	}
	return 12
}

// rolloutPlugins declares the engines the rollout tests use: updn with its
// default roots, updn rooted at the spines (auto_roots = "spines", another
// configuration of the same binary), ftree and sftree.
const rolloutPlugins = `
plugin "routing_engine" "updn-spines" {
  path = %q
  config {
    auto_roots = "spines"
  }
}
`

// writeRolloutConfig writes a 3-level fat tree of radix k and a config
// with active in force (routing_switch: its switch_to_switch policy, ""
// for the default) and the candidate {} block's body cand.
func writeRolloutConfig(t *testing.T, dir string, k int, active, policy, cand string) string {
	t.Helper()
	net := filepath.Join(dir, "fabric.net")
	f, err := os.Create(net)
	if err != nil {
		t.Fatal(err)
	}
	if err := topogen.Run([]string{"fat-tree", "--radix", fmt.Sprint(k), "--levels", "3"}, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "fabric {\n  transport = \"sim\"\n  topology = \"fabric.net\"\n}\n")
	fmt.Fprintf(&b, "sm {\n  state_dir = \"state\"\n  plugin_timeout = \"120s\"\n  mad_timeout = \"200ms\"\n  sweep_interval = \"200ms\"\n}\n")
	for _, p := range [][2]string{{"routing_engine", "updn"}, {"routing_engine", "sftree"}, {"routing_engine", "ftree"}, {"lid_assigner", "sequential"}, {"vl_assigner", "single"}} {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n}\n", p[0], p[1], filepath.Join(binDir, "ibsm-plugin-"+p[1]))
	}
	fmt.Fprintf(&b, rolloutPlugins, filepath.Join(binDir, "ibsm-plugin-updn"))
	fmt.Fprintf(&b, "routing {\n  engine = %q\n  lid_assigner = \"sequential\"\n  vl_assigner = \"single\"\n", active)
	if policy != "" {
		fmt.Fprintf(&b, "  switch_to_switch = %q\n", policy)
	}
	fmt.Fprintf(&b, "}\ncandidate {\n%s}\n", cand)
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The pair the rollout tests promote: updn rooted at the spines (OpenSM's
// choice of roots; it leaves some switch pairs unrouted, hence
// best_effort) in force, sftree the candidate. With updn's default roots
// (a leaf) no per-switch order exists: the old and new core-to-core routes
// close credit loops through the aggregation switches in every order
// tried, and the promotion is refused (TestRolloutRefusedNeverApplied).
const (
	rolloutActive    = "updn-spines"
	rolloutPolicy    = "best_effort"
	rolloutCandidate = "  engine = \"sftree\"\n"
)

// threeStages promotes a third of the changed switches, then half of the
// rest, then the rest, each watched for dwell.
func threeStages(dwell string) string {
	return fmt.Sprintf("  stage \"canary\" {\n    fraction = 0.34\n    dwell = %q\n  }\n  stage \"half\" {\n    fraction = 0.5\n    dwell = %q\n  }\n  stage \"rest\" {\n    fraction = 1\n    dwell = %q\n  }\n", dwell, dwell, dwell)
}

// rolloutRig runs an App's sweep loop and watches the fabric's LFTs.
type rolloutRig struct {
	t      *testing.T
	a      *app.App
	dir    string // state_dir/rollout
	cancel context.CancelFunc
	done   chan struct{}
}

func startRollout(t *testing.T, cfgPath string, f *sim.Fabric) *rolloutRig {
	t.Helper()
	cfg := loadConfig(t, cfgPath)
	var a *app.App
	var err error
	if f == nil {
		a, err = app.New(context.Background(), cfg, nil)
	} else {
		a, err = app.NewOnFabric(context.Background(), cfg, nil, f)
	}
	if err != nil {
		t.Fatalf("app: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &rolloutRig{t: t, a: a, dir: rollout.Dir(cfg.SM.StateDir), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		a.SM.Run(ctx, nil, func(rep *sm.Report, err error) {
			if err != nil {
				t.Logf("sweep: %v", err)
			}
		})
	}()
	t.Cleanup(r.stop)
	return r
}

// stop ends the sweep loop and closes the App without touching the
// rollout's files: to the rollout, an SM killed between two steps.
func (r *rolloutRig) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	// A shadow computation still running writes the status when it ends.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := r.a.SM.WaitShadow(ctx); err != nil {
		r.t.Errorf("shadow computation did not end: %v", err)
	}
	r.a.Close()
	r.cancel = nil
}

// waitStatus polls the SM's rollout status until ok holds.
func (r *rolloutRig) waitStatus(what string, d time.Duration, ok func(*rollout.Status) bool) *rollout.Status {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if st := r.a.SM.RolloutStatus(); st != nil && ok(st) {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := r.a.SM.RolloutStatus()
	if st != nil && st.Rollout != nil {
		r.t.Fatalf("timed out waiting for %s; rollout %+v (error %q)", what, *st.Rollout, st.Error)
	}
	r.t.Fatalf("timed out waiting for %s; status %+v", what, st)
	return nil
}

// fabricLFTs reads every switch's LFT from the simulator (not through
// ibsm), padded to top.
func fabricLFTs(t *testing.T, f *sim.Fabric, topo *topology.Topology, top int) [][]uint8 {
	t.Helper()
	out := make([][]uint8, len(topo.Switches()))
	for s, n := range topo.Switches() {
		l, err := f.LFT(topo.Nodes[n].GUID)
		if err != nil {
			t.Fatal(err)
		}
		row := make([]uint8, top+1)
		for i := range row {
			row[i] = plan.NoPort
		}
		copy(row, l)
		out[s] = row
	}
	return out
}

// checkHeld analyses the forwarding state the fabric holds (LFTs read from
// the simulator, LIDs of the plan): every pair delivered, no loop, no
// credit loop.
func checkHeld(t *testing.T, what string, res *app.App, lfts [][]uint8) {
	t.Helper()
	ap := res.SM.Applied()
	rz := *ap.Result.Realized
	rz.LFT = lfts
	rep, err := analysis.Analyse(&rz, ap.Result.VLs, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.CAPairs.Complete() || rep.LoopLIDs > 0 || !rep.DeadlockFree {
		t.Errorf("%s: the fabric's state is not sound: CA pairs %d/%d, loops %d, deadlock-free %v", what,
			rep.CAPairs.Reachable, rep.CAPairs.Total, rep.LoopLIDs, rep.DeadlockFree)
	}
}

func blocksDiffer(a, b [][]uint8) int {
	n := 0
	for s := range a {
		for blk := 0; blk*64 < len(a[s]); blk++ {
			hi := min((blk+1)*64, len(a[s]))
			if !slices.Equal(a[s][blk*64:hi], b[s][blk*64:hi]) {
				n++
			}
		}
	}
	return n
}

func TestRolloutFatTree(t *testing.T) {
	k := rolloutRadix()
	dir := t.TempDir()
	cfg := writeRolloutConfig(t, dir, k, rolloutActive, rolloutPolicy, rolloutCandidate+threeStages("300ms"))
	r := startRollout(t, cfg, nil)
	t0 := time.Now()
	st := r.waitStatus("the shadow plan", 5*time.Minute, func(s *rollout.Status) bool { return s.Candidate != nil || s.Error != "" })
	t.Logf("radix %d: SUBNET UP and first shadow computation in %s (shadow %.0f ms wall, %.0f ms CPU)", k, time.Since(t0).Round(time.Millisecond), st.ShadowMillis, st.ShadowCPUMillis)
	if st.Error != "" || st.Stageable != "" {
		t.Fatalf("candidate: %q, stageable: %q", st.Error, st.Stageable)
	}
	if st.Active.Engine != rolloutActive || st.Candidate.Engine != "sftree" {
		t.Errorf("engines: active %q, candidate %q", st.Active.Engine, st.Candidate.Engine)
	}
	cas := int64(k * k * k / 4)
	for _, m := range []*rollout.Metrics{st.Active, st.Candidate} {
		if m.CAPairs.Total != cas*(cas-1) || !m.CAPairs.Complete() || !m.DeadlockFree || m.MaxLoad == 0 || m.Shifts == 0 || m.EBB <= 0 || m.MaxHops == 0 {
			t.Errorf("%s metrics incomplete: %+v", m.Engine, m)
		}
	}
	if st.Changes == nil || st.Changes.LFTBlocks == 0 || st.Changes.LIDsChanged != 0 {
		t.Fatalf("changes: %+v; want LFT blocks and no LID change", st.Changes)
	}
	// The status is on disk for `ibsm rollout status` too.
	out, err := ibsmCmd(t, "rollout", "status", "--config", cfg)
	if err != nil || !strings.Contains(out, "sftree") || !strings.Contains(out, "updn") || !strings.Contains(out, "promotion would send") {
		t.Fatalf("ibsm rollout status: %v\n%s", err, out)
	}
	t.Logf("ibsm rollout status:\n%s", out)

	ap := r.a.SM.Applied()
	top := int(ap.Result.Realized.TopLID)
	before := fabricLFTs(t, r.a.Sim, ap.Topo, top)
	checkHeld(t, "before", r.a, before)

	// Watch the fabric while the rollout runs: every distinct state it
	// holds is analysed.
	var mu sync.Mutex
	var states [][][]uint8
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last := before
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(5 * time.Millisecond):
			}
			cur := fabricLFTs(t, r.a.Sim, ap.Topo, top)
			if blocksDiffer(cur, last) > 0 {
				mu.Lock()
				states = append(states, cur)
				mu.Unlock()
				last = cur
			}
		}
	}()
	if out, err := ibsmCmd(t, "rollout", "promote", "--config", cfg, "--wait", "30s"); err != nil {
		t.Fatalf("ibsm rollout promote: %v\n%s", err, out)
	}
	st = r.waitStatus("the promotion", 5*time.Minute, func(s *rollout.Status) bool {
		return s.Rollout != nil && !s.Rollout.InProgress() && s.Rollout.Phase != ""
	})
	close(stopWatch)
	<-watched
	ro := st.Rollout
	if ro.Phase != rollout.PhasePromoted {
		t.Fatalf("rollout ended %s: %s", ro.Phase, ro.Reason)
	}
	stages := map[string]bool{}
	for _, s := range ro.Steps {
		stages[s.Stage] = true
	}
	if len(stages) != 3 {
		t.Errorf("steps cover stages %v, want canary, half and rest", stages)
	}
	after := fabricLFTs(t, r.a.Sim, ap.Topo, top)
	cand := r.a.SM.Applied()
	if cand.Result.Engine != "sftree" || !slices.EqualFunc(after, cand.Result.Realized.LFT, func(a, b []uint8) bool { return slices.Equal(a, b) }) {
		t.Errorf("after promotion the plan in force is %s and the fabric holds it: %v", cand.Result.Engine, slices.EqualFunc(after, cand.Result.Realized.LFT, func(a, b []uint8) bool { return slices.Equal(a, b) }))
	}
	differ := blocksDiffer(before, after)
	if ro.BlocksSent != int64(differ) || ro.BlocksDiffer != differ {
		t.Errorf("LFT blocks: %d sent, %d planned to differ, %d differ on the fabric; want all equal", ro.BlocksSent, ro.BlocksDiffer, differ)
	}
	mu.Lock()
	for i, s := range states {
		checkHeld(t, fmt.Sprintf("state %d seen on the fabric", i+1), r.a, s)
	}
	t.Logf("%d steps in 3 stages, %d LFT blocks sent = differing, %d distinct fabric states seen and verified", len(ro.Steps), ro.BlocksSent, len(states))
	mu.Unlock()
	h, err := rollout.ReadHistory(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	var applied, gates int
	for _, e := range h {
		switch e.Event {
		case "step applied":
			applied++
		case "gate passed":
			gates++
		}
	}
	if applied != len(ro.Steps) || gates != 3 || h[len(h)-1].Outcome != rollout.PhasePromoted {
		t.Errorf("history: %d steps applied, %d gates passed, last %+v", applied, gates, h[len(h)-1])
	}
}

// A link lost during stage 2 fails its gate: every promoted switch goes
// back to the active plan (recomputed by the re-route for the fabric
// without the link) and the fabric reads back equal to it.
func TestRolloutLinkDownRollsBack(t *testing.T) {
	k := rolloutRadix()
	dir := t.TempDir()
	cfg := writeRolloutConfig(t, dir, k, rolloutActive, rolloutPolicy, rolloutCandidate+threeStages("3s"))
	r := startRollout(t, cfg, nil)
	r.waitStatus("the shadow plan", 5*time.Minute, func(s *rollout.Status) bool { return s.Candidate != nil })
	if err := rollout.WriteRequest(r.dir, rollout.RequestPromote); err != nil {
		t.Fatal(err)
	}
	st := r.waitStatus("stage 2", 5*time.Minute, func(s *rollout.Status) bool {
		ro := s.Rollout
		return ro != nil && ro.InProgress() && ro.Applied > 0 && ro.Steps[ro.Applied-1].Stage == "half"
	})
	// A leaf's up link, which both plans use.
	ap := r.a.SM.Applied()
	var leaf uint64
	var port uint8
	for _, n := range ap.Topo.Switches() {
		node := &ap.Topo.Nodes[n]
		if strings.Contains(node.Desc, "L1") || leaf == 0 {
			for p := len(node.Ports) - 1; p >= 1; p-- {
				if pr := node.Ports[p].Peer; pr.Connected() && ap.Topo.Nodes[pr.Node].Type == topology.Switch {
					leaf, port = node.GUID, uint8(p)
					break
				}
			}
		}
		if leaf != 0 {
			break
		}
	}
	t.Logf("stage 2 entered (%d of %d steps); taking down switch 0x%016x port %d", st.Rollout.Applied, len(st.Rollout.Steps), leaf, port)
	if err := r.a.Sim.LinkDown(leaf, port); err != nil {
		t.Fatal(err)
	}
	st = r.waitStatus("the rollback", 2*time.Minute, func(s *rollout.Status) bool {
		return s.Rollout != nil && s.Rollout.Phase == rollout.PhaseRolledBack
	})
	if !strings.Contains(st.Rollout.Reason, "health gate failed") || !strings.Contains(st.Rollout.Reason, "read-back equals the active plan") {
		t.Errorf("rollback reason: %s", st.Rollout.Reason)
	}
	now := r.a.SM.Applied()
	if now.Result.Engine != rolloutActive {
		t.Fatalf("plan in force after rollback: %s", now.Result.Engine)
	}
	got := fabricLFTs(t, r.a.Sim, now.Topo, int(now.Result.Realized.TopLID))
	if n := blocksDiffer(got, now.Result.Realized.LFT); n != 0 {
		t.Errorf("after the rollback %d LFT blocks on the fabric differ from the active plan", n)
	}
	checkHeld(t, "after rollback", r.a, got)
	t.Logf("rolled back: %s", st.Rollout.Reason)
}

// An SM that dies in the middle of a rollout (between two steps, its state
// file naming the steps applied) restarts over the same fabric and state
// directory, rolls every promoted switch back step by step before it
// programs anything else, and the fabric reads back equal to the active
// plan.
func TestRolloutRestartMidway(t *testing.T) {
	k := rolloutRadix()
	dir := t.TempDir()
	cfg := writeRolloutConfig(t, dir, k, rolloutActive, rolloutPolicy, rolloutCandidate+threeStages("1h"))
	r := startRollout(t, cfg, nil)
	r.waitStatus("the shadow plan", 5*time.Minute, func(s *rollout.Status) bool { return s.Candidate != nil })
	if err := rollout.WriteRequest(r.dir, rollout.RequestPromote); err != nil {
		t.Fatal(err)
	}
	st := r.waitStatus("stage 1 in dwell", 5*time.Minute, func(s *rollout.Status) bool {
		return s.Rollout != nil && s.Rollout.InProgress() && s.Rollout.Applied > 0
	})
	fab := r.a.Sim
	ap := r.a.SM.Applied()
	old := slices.Clone(ap.Result.Realized.LFT)
	mid := fabricLFTs(t, fab, ap.Topo, int(ap.Result.Realized.TopLID))
	if blocksDiffer(mid, old) == 0 {
		t.Fatal("stage 1 changed nothing on the fabric")
	}
	r.stop() // the rollout's files stay as they were between two steps
	saved, err := rollout.LoadRollout(r.dir)
	if err != nil || !saved.InProgress() || saved.Applied != st.Rollout.Applied {
		t.Fatalf("state file after the stop: %+v %v", saved, err)
	}

	r2 := startRollout(t, cfg, fab)
	st = r2.waitStatus("the restart's rollback", 5*time.Minute, func(s *rollout.Status) bool {
		return s.Rollout != nil && s.Rollout.Phase == rollout.PhaseRolledBack
	})
	if !strings.Contains(st.Rollout.Reason, "restarted") || !strings.Contains(st.Rollout.Reason, "read-back equals the active plan") {
		t.Errorf("rollback reason: %s", st.Rollout.Reason)
	}
	r2.waitStatus("SUBNET UP", time.Minute, func(*rollout.Status) bool { return r2.a.SM.Applied() != nil })
	now := r2.a.SM.Applied()
	got := fabricLFTs(t, fab, now.Topo, int(now.Result.Realized.TopLID))
	if now.Result.Engine != rolloutActive || blocksDiffer(got, old) != 0 {
		t.Errorf("after the restart: engine %s, %d blocks differ from the old plan", now.Result.Engine, blocksDiffer(got, old))
	}
}

// Leaf-rooted updn in force and sftree as the candidate: each plan is
// deadlock-free, but every order of the switches opens a credit loop for
// the packets of both (core-to-core routes turn at opposite aggregation
// switches). The promotion is refused with the cycle named and the fabric
// never holds a single candidate block.
func TestRolloutRefusedNeverApplied(t *testing.T) {
	k := rolloutRadix()
	dir := t.TempDir()
	cfg := writeRolloutConfig(t, dir, k, "updn", "", rolloutCandidate+threeStages("100ms"))
	r := startRollout(t, cfg, nil)
	r.waitStatus("the shadow plan", 5*time.Minute, func(s *rollout.Status) bool { return s.Candidate != nil })
	ap := r.a.SM.Applied()
	before := fabricLFTs(t, r.a.Sim, ap.Topo, int(ap.Result.Realized.TopLID))
	if err := rollout.WriteRequest(r.dir, rollout.RequestPromote); err != nil {
		t.Fatal(err)
	}
	st := r.waitStatus("the refusal", 5*time.Minute, func(s *rollout.Status) bool {
		return s.Rollout != nil && s.Rollout.Phase == rollout.PhaseRefused
	})
	if !strings.Contains(st.Rollout.Reason, "credit loop") || !strings.Contains(st.Rollout.Reason, "cycle 0x") {
		t.Errorf("refusal does not name the credit loop: %s", st.Rollout.Reason)
	}
	after := fabricLFTs(t, r.a.Sim, ap.Topo, int(ap.Result.Realized.TopLID))
	if n := blocksDiffer(before, after); n != 0 || r.a.SM.Applied().Result.Engine != "updn" {
		t.Errorf("a refused rollout changed %d LFT blocks (engine in force %s)", n, r.a.SM.Applied().Result.Engine)
	}
	t.Logf("refused: %.300s", st.Rollout.Reason)
}
