package integration

// Staged rollout of a candidate plan (candidate {} block) on the embedded
// 3-level fat tree: updn in force, sftree in shadow. The status shows both
// plans; promotion goes in three stages, each step read back; every
// forwarding state the fabric passes through is caught from the fabric
// itself (the simulator's LFTs) and checked with sdk/analysis; the LFT
// blocks sent equal the blocks that differ. A link lost during stage 2
// fails the gate and everything rolls back; an SM that dies mid-rollout
// rolls back at restart. The 24-port tree (3,456 CAs) runs with
// IBSM_ROLLOUT_FULL=1; by default the 12-port tree (432 CAs).

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/control"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/integration/diags"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
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
	writeFatTree(t, filepath.Join(dir, "fabric.net"), k)
	return rolloutHCL(t, dir, "fabric {\n  transport = \"sim\"\n  topology = \"fabric.net\"\n}\n", active, policy, cand)
}

// writeFatTree writes the 3-level fat tree of radix k to net.
func writeFatTree(t *testing.T, net string, k int) {
	t.Helper()
	f, err := os.Create(net)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topogen.Write([]string{"fat-tree", "--radix", fmt.Sprint(k), "--levels", "3"}, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// rolloutHCL writes dir/ibsm.hcl: the fabric block, then the rollout
// tests' sm, plugin, routing and candidate blocks.
func rolloutHCL(t *testing.T, dir, fabric, active, policy, cand string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(fabric)
	fmt.Fprintf(&b, "sm {\n  state_dir = \"state\"\n  plugin_timeout = \"120s\"\n  mad_timeout = \"200ms\"\n  sweep_interval = \"200ms\"\n}\n")
	for _, p := range [][2]string{{"routing_engine", "updn"}, {"routing_engine", "sftree"}, {"routing_engine", "ftree"}, {"lid_assigner", "sequential"}, {"vl_assigner", "single"}} {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n}\n", p[0], p[1], filepath.Join(binDir, "ibsm-plugin-"+p[1]))
	}
	fmt.Fprintf(&b, rolloutPlugins, filepath.Join(binDir, "ibsm-plugin-updn"))
	fmt.Fprintf(&b, "routing {\n  engine = %q\n  lid_assigner = \"sequential\"\n  vl_assigner = \"single\"\n", active)
	if policy != "" {
		fmt.Fprintf(&b, "  switch_to_switch = %q\n", policy)
	}
	b.WriteString("}\n")
	if cand != "" {
		fmt.Fprintf(&b, "candidate {\n%s}\n", cand)
	}
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The pair the rollout tests promote: updn rooted at the spines (OpenSM's
// choice of roots; a core-to-core route would turn down-then-up, which
// updn forbids, so those pairs stay unrouted, hence best_effort) in force,
// sftree the candidate. With updn's default roots (a leaf) no order of
// forwarding states exists: the old and new core-to-core routes close
// credit loops through aggregation switches of different pods, and the
// promotion is refused (TestRolloutRefusedNeverApplied).
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
	srv    *control.Server
	cfg    string // the configuration file (promoting)
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
	// The daemon's control socket with the rollout commands, as ibsm run
	// serves it: `ibsm rollout status` asks it.
	srv, err := control.Listen(control.SocketPath(cfg.SM.StateDir), control.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a.RegisterRollout(srv)
	go srv.Serve()
	r.srv = srv
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
	r.srv.Close()
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
func checkHeld(t *testing.T, what string, ap *sm.Applied, lfts [][]uint8) {
	t.Helper()
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
	var viaSocket rollout.Status
	if err := control.Call(context.Background(), control.SocketPath(filepath.Join(dir, "state")), app.CmdRolloutStatus, nil, &viaSocket); err != nil || viaSocket.Candidate == nil {
		t.Errorf("rollout.status over the control socket: %v %+v", err, viaSocket)
	}
	// ibsm plan diff --candidate: the daemon reads every switch back and
	// finds what the status announced.
	t0 = time.Now()
	pd := planDiff(t, cfg, "--candidate")
	if pd.Source != rollout.SourceDaemon || pd.LFTBlocks != st.Changes.LFTBlocks || pd.SwitchesChanged != st.Changes.SwitchesChanged || pd.SL2VLTables != st.Changes.SL2VLTables || pd.LIDsChanged != 0 {
		t.Errorf("plan diff --candidate: %d LFT blocks, %d SL2VL tables on %d switches, %d LIDs; status: %+v", pd.LFTBlocks, pd.SL2VLTables, pd.SwitchesChanged, pd.LIDsChanged, st.Changes)
	}
	t.Logf("ibsm plan diff --candidate (daemon read-back) in %s: %d LFT blocks on %d switches", time.Since(t0).Round(time.Millisecond), pd.LFTBlocks, pd.SwitchesChanged)

	ap := r.a.SM.Applied()
	top := int(ap.Result.Realized.TopLID)
	before := fabricLFTs(t, r.a.Sim, ap.Topo, top)
	checkHeld(t, "before", ap, before)

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
		checkHeld(t, fmt.Sprintf("state %d seen on the fabric", i+1), ap, s)
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

// promoting starts the rollout rig on the fat tree with stages of the
// given dwell, waits for the shadow plan and asks for the promotion.
func promoting(t *testing.T, dwell string) *rolloutRig {
	t.Helper()
	cfg := writeRolloutConfig(t, t.TempDir(), rolloutRadix(), rolloutActive, rolloutPolicy, rolloutCandidate+threeStages(dwell))
	r := startRollout(t, cfg, nil)
	r.waitStatus("the shadow plan", 5*time.Minute, func(s *rollout.Status) bool { return s.Candidate != nil })
	if err := rollout.WriteRequest(r.dir, rollout.RequestPromote); err != nil {
		t.Fatal(err)
	}
	r.cfg = cfg
	return r
}

// switchUplink returns a switch port cabled to another switch: the
// first switch's highest such port.
func switchUplink(topo *topology.Topology) (uint64, uint8) {
	for _, n := range topo.Switches() {
		node := &topo.Nodes[n]
		for p := len(node.Ports) - 1; p >= 1; p-- {
			if pr := node.Ports[p].Peer; pr.Connected() && topo.Nodes[pr.Node].Type == topology.Switch {
				return node.GUID, uint8(p)
			}
		}
	}
	return 0, 0
}

// Whatever disturbs the fabric while stage 2 dwells fails its health
// gate: a link lost (the re-route), a trap with nothing changed (a switch
// reporting link errors), or a switch whose tables were overwritten
// behind the SM's back (the audit or the stage's read-back finds it).
// Every promoted switch goes back to the active plan (recomputed by a
// re-route when the fabric changed) and the fabric reads back equal to
// it.
func TestRolloutGateFails(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		disturb      func(t *testing.T, r *rolloutRig, st *rollout.Status)
	}{
		{"link down", "the fabric changed", func(t *testing.T, r *rolloutRig, _ *rollout.Status) {
			leaf, port := switchUplink(r.a.SM.Applied().Topo) // a link both plans use
			if err := r.a.Sim.LinkDown(leaf, port); err != nil {
				t.Fatal(err)
			}
		}},
		{"trap", "1 traps arrived", func(t *testing.T, r *rolloutRig, _ *rollout.Status) {
			sw, port := switchUplink(r.a.SM.Applied().Topo)
			sendLinkTrap(t, r, sw, port)
		}},
		{"tables overwritten", "health gate", func(t *testing.T, r *rolloutRig, st *rollout.Status) {
			ro := st.Rollout
			overwriteLFT(t, r, ro.Steps[ro.Applied-1].GUIDs[0]) // a switch of stage 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := promoting(t, "3s")
			st := r.waitStatus("stage 2", 5*time.Minute, func(s *rollout.Status) bool {
				ro := s.Rollout
				return ro != nil && ro.InProgress() && ro.Applied > 0 && ro.Entering < 0 && ro.Steps[ro.Applied-1].Stage == "half"
			})
			t.Logf("stage 2 entered (%d of %d steps): %s", st.Rollout.Applied, len(st.Rollout.Steps), tc.name)
			tc.disturb(t, r, st)
			st = r.waitStatus("the rollback", 2*time.Minute, func(s *rollout.Status) bool {
				return s.Rollout != nil && !s.Rollout.InProgress()
			})
			ro := st.Rollout
			if ro.Phase != rollout.PhaseRolledBack || !strings.Contains(ro.Reason, "health gate") || !strings.Contains(ro.Reason, tc.reason) || !strings.Contains(ro.Reason, "read-back equals the active plan") {
				t.Errorf("rollout ended %s: %s", ro.Phase, ro.Reason)
			}
			now := r.a.SM.Applied()
			if now.Result.Engine != rolloutActive {
				t.Fatalf("plan in force after rollback: %s", now.Result.Engine)
			}
			got := fabricLFTs(t, r.a.Sim, now.Topo, int(now.Result.Realized.TopLID))
			if n := blocksDiffer(got, now.Result.Realized.LFT); n != 0 {
				t.Errorf("after the rollback %d LFT blocks on the fabric differ from the active plan", n)
			}
			checkHeld(t, "after rollback", now, got)
			t.Logf("rolled back: %s", ro.Reason)
		})
	}
}

// lidOf returns the LID the plan in force gives endpoint (node
// guid, port).
func lidOf(t *testing.T, r *rolloutRig, guid uint64, port uint8) uint16 {
	t.Helper()
	topo := r.a.SM.Applied().Topo
	e := topo.EndpointIndex(topology.PortRef{Node: topo.NodeByGUID(guid), Port: port})
	if e < 0 {
		t.Fatalf("no endpoint 0x%016x port %d", guid, port)
	}
	return r.a.SM.Applied().Result.LIDs.Ports[e].Base
}

// sendLinkTrap sends the SM a trap 129 (local link integrity errors) from
// switch sw about its port, through a port of the embedded fabric at sw.
func sendLinkTrap(t *testing.T, r *rolloutRig, sw uint64, port uint8) {
	t.Helper()
	fab := r.a.SM.Fabric()
	swLID, smLID := lidOf(t, r, sw, 0), lidOf(t, r, fab.SMGUID, fab.SMPort)
	n, err := smp.NewLinkTrap(smp.TrapLinkIntegrity, smp.ProducerSwitch, swLID, port)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.a.Sim.Attach(sw, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var s smp.SMP
	s.InitLID(smp.MethodTrap, smp.AttrNotice, 0)
	s.TID = 0x7a7
	if err := s.SetAttr(n); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, smp.MADLen)
	if err := s.EncodeTo(buf); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(transport.Packet{DLID: smLID, SLID: swLID, MAD: buf}); err != nil {
		t.Fatal(err)
	}
}

// overwriteLFT changes one LFT entry of switch sw behind the SM's back.
func overwriteLFT(t *testing.T, r *rolloutRig, sw uint64) {
	t.Helper()
	row, err := r.a.Sim.LFT(sw)
	if err != nil {
		t.Fatal(err)
	}
	row = slices.Clone(row)
	row[1] = row[1]%4 + 1
	writeLFTs(t, r, map[uint64][]uint8{sw: row})
}

// writeLFTs programs the given LFT rows (by switch GUID) with SMPs from a
// CA on the SM's leaf, over the SM's directed routes from that CA: the
// blocks that differ from what the switch holds.
func writeLFTs(t *testing.T, r *rolloutRig, rows map[uint64][]uint8) {
	t.Helper()
	fab, topo := r.a.SM.Fabric(), r.a.SM.Applied().Topo
	leaf := topo.Port(topology.PortRef{Node: topo.NodeByGUID(fab.SMGUID), Port: fab.SMPort}).Peer
	var from topology.PortRef
	for p := range topo.Nodes[leaf.Node].Ports {
		pr := topo.Nodes[leaf.Node].Ports[p].Peer
		if pr.Connected() && topo.Nodes[pr.Node].Type != topology.Switch && topo.Nodes[pr.Node].GUID != fab.SMGUID {
			from = pr
			break
		}
	}
	conn, err := r.a.Sim.Attach(topo.Nodes[from.Node].GUID, from.Port)
	if err != nil {
		t.Fatal(err)
	}
	tr := transport.New(conn, transport.Options{Timeout: time.Second})
	defer tr.Close()
	c := &mad.Client{T: tr}
	for sw, row := range rows {
		held, err := r.a.Sim.LFT(sw)
		if err != nil {
			t.Fatal(err)
		}
		path := slices.Clone(fab.Nodes[sw].Path)
		path[0] = from.Port
		for b := 0; b*64 < len(row); b++ {
			var blk smp.LFTBlock
			for i := range blk {
				blk[i] = plan.NoPort
			}
			copy(blk[:], row[b*64:])
			if b*64 < len(held) && slices.Equal(blk[:min(64, len(held)-b*64)], held[b*64:min((b+1)*64, len(held))]) {
				continue
			}
			if err := c.Set(context.Background(), path, smp.AttrLinearForwardingTable, uint32(b), &blk, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// An SM that dies in the middle of a rollout restarts over the same
// fabric and state directory, rolls every promoted switch back step by
// step before it programs anything else, reads them back, and the fabric
// equals the active plan. It died either between two steps (its state
// file naming the steps applied) or while programming one (the file names
// the step being entered, whose switches are half on their new tables).
func TestRolloutRestartMidway(t *testing.T) {
	for _, midStep := range []bool{false, true} {
		t.Run(map[bool]string{false: "between steps", true: "inside a step"}[midStep], func(t *testing.T) {
			r := promoting(t, "1h")
			st := r.waitStatus("stage 1 in dwell", 5*time.Minute, func(s *rollout.Status) bool {
				return s.Rollout != nil && s.Rollout.InProgress() && s.Rollout.Applied > 0
			})
			fab := r.a.Sim
			ap := r.a.SM.Applied()
			old := slices.Clone(ap.Result.Realized.LFT)
			cand, err := r.a.SM.CandidatePlan(context.Background(), ap.Topo, ap.Result) // cached
			if err != nil {
				t.Fatal(err)
			}
			r.stop() // the rollout's files stay as they were between two steps
			saved, err := rollout.LoadRollout(r.dir)
			if err != nil || !saved.InProgress() || saved.Applied != st.Rollout.Applied {
				t.Fatalf("state file after the stop: %+v %v", saved, err)
			}
			if midStep {
				// Step Applied+1 was being programmed: half its switches
				// hold the candidate's tables.
				next := saved.Steps[saved.Applied]
				rows := map[uint64][]uint8{}
				for _, g := range next.GUIDs[:(len(next.GUIDs)+1)/2] {
					rows[g] = cand.Realized.LFT[ap.Topo.SwitchIndex(ap.Topo.NodeByGUID(g))]
				}
				writeLFTs(t, r, rows)
				saved.Entering = saved.Applied
				if err := rollout.SaveRollout(r.dir, saved); err != nil {
					t.Fatal(err)
				}
			}
			mid := fabricLFTs(t, fab, ap.Topo, int(ap.Result.Realized.TopLID))
			t.Logf("died with %d LFT blocks on the candidate's tables (step %d applied, entering %d)", blocksDiffer(mid, old), saved.Applied, saved.Entering)
			if blocksDiffer(mid, old) == 0 {
				t.Fatal("the rollout changed nothing on the fabric")
			}

			r2 := startRollout(t, r.cfg, fab)
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
			checkHeld(t, "after the restart", now, got)
		})
	}
}

// Leaf-rooted updn in force and sftree as the candidate: each plan is
// deadlock-free, but every order of the switches opens a credit loop for
// the packets of both: a core-to-core route of one plan turns in another
// pod than the reverse route of the other, and CA traffic between those
// pods closes the loop. (No intermediate state helps: the CA routes alone
// stage fine, but whichever direction of a core pair moves first, its
// union with the other direction's route, old or new, is that loop.) The
// promotion is refused with the cycle named and what to do, and the fabric
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
	if !strings.Contains(st.Rollout.Reason, "routes toward switches") || !strings.Contains(st.Rollout.Reason, `auto_roots = "spines"`) {
		t.Errorf("refusal does not say why and what to do: %s", st.Rollout.Reason)
	}
	after := fabricLFTs(t, r.a.Sim, ap.Topo, int(ap.Result.Realized.TopLID))
	if n := blocksDiffer(before, after); n != 0 || r.a.SM.Applied().Result.Engine != "updn" {
		t.Errorf("a refused rollout changed %d LFT blocks (engine in force %s)", n, r.a.SM.Applied().Result.Engine)
	}
	t.Logf("refused: %.300s", st.Rollout.Reason)
}

// toolLFTs reads every switch's LFT with dump_fts: the stock tools' view,
// not ibsm's. (dump_fts can stop short of LinearFDBTop; the snapshots are
// compared with each other, so they stop alike.)
func toolLFTs(t *testing.T, ctx context.Context, r *rig) map[uint64]*diags.LFT {
	t.Helper()
	fts, _, err := r.env.DumpFTs(ctx)
	if err != nil {
		t.Fatalf("dump_fts: %v", err)
	}
	return fts
}

func sameLFT(a, b *diags.LFT, maxLID uint16) bool {
	for lid := uint16(1); lid <= maxLID; lid++ {
		if a.Port(lid) != b.Port(lid) {
			return false
		}
	}
	return true
}

func maxLIDOf(d *diags.Discovery) uint16 {
	var m uint16
	for _, l := range d.LIDs {
		m = max(m, l)
	}
	return m
}

// rolloutOnIBSim starts ibsim on the radix-8 3-level fat tree (128 CAs,
// 80 switches) and `ibsm run` with the rollout configuration (stages of
// the given dwell), and waits for the shadow plan.
func rolloutOnIBSim(t *testing.T, dwell string) (r *rig, cfg, stateDir string, d *daemon, fab ibsimFabric) {
	t.Helper()
	net := filepath.Join(t.TempDir(), "ft3-8.net")
	writeFatTree(t, net, 8)
	nf, err := netfile.ParseFile(net)
	if err != nil {
		t.Fatal(err)
	}
	smNode := nthCA(t, nf, 0)
	r = startRig(t, net, nthCA(t, nf, len(caNodes(nf))-1).Name)
	fabric := fmt.Sprintf("fabric {\n  transport = \"ibsim\"\n  socket = %q\n  attach = %q\n}\n", r.env.Sockname, smNode.Name)
	cfg = rolloutHCL(t, r.dir, fabric, rolloutActive, rolloutPolicy, rolloutCandidate+threeStages(dwell))
	stateDir = filepath.Join(r.dir, "state")
	d = startIBSM(t, cfg)
	d.waitUp(t, 1, 2*time.Minute)
	waitFile(t, func() bool {
		st, err := rollout.ReadStatus(rollout.Dir(stateDir))
		return err == nil && st.Candidate != nil
	}, "the shadow status", 2*time.Minute)
	fab.d, _, err = r.env.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fab.maxLID = maxLIDOf(fab.d)
	fab.before = toolLFTs(t, context.Background(), r)
	return r, cfg, stateDir, d, fab
}

// ibsimFabric is what the tools saw before the promotion.
type ibsimFabric struct {
	d      *diags.Discovery
	maxLID uint16
	before map[uint64]*diags.LFT
}

func waitFile(t *testing.T, ok func() bool, what string, within time.Duration) {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// The rollout on a real ibsim, judged by the stock tools only: after
// every stage (during its dwell) dump_fts shows exactly the switches of
// the steps applied holding their new tables and every other switch its
// old one, and ibnetdiscover the same LIDs as before.
func TestRolloutIBSim(t *testing.T) {
	r, cfg, stateDir, _, fab := rolloutOnIBSim(t, "5s")
	ctx := context.Background()
	d0, maxLID, before := fab.d, fab.maxLID, fab.before

	// ibsm plan diff while the daemon runs: it asks the daemon, which
	// reads its fabric back. The same from another CA with a state
	// directory of its own reads the fabric back itself; both must agree,
	// with the status, and (after the promotion) with dump_fts.
	st, err := rollout.ReadStatus(rollout.Dir(stateDir))
	if err != nil {
		t.Fatal(err)
	}
	diffDir := filepath.Join(r.dir, "plandiff")
	os.MkdirAll(diffDir, 0o755)
	other := nthCA(t, r.net, 1).Name
	diffCfg := rolloutHCL(t, diffDir, fmt.Sprintf("fabric {\n  transport = \"ibsim\"\n  socket = %q\n  attach = %q\n}\n", r.env.Sockname, other), rolloutActive, rolloutPolicy, rolloutCandidate)
	candDiff := planDiff(t, cfg, "--candidate")
	if candDiff.Source != rollout.SourceDaemon || candDiff.LFTBlocks != st.Changes.LFTBlocks || candDiff.SwitchesChanged != st.Changes.SwitchesChanged || candDiff.LIDsChanged != 0 || candDiff.Unread != "" {
		t.Errorf("ibsm plan diff --candidate (daemon): %d LFT blocks on %d switches, %d LIDs, unread %q; status: %d blocks on %d switches",
			candDiff.LFTBlocks, candDiff.SwitchesChanged, candDiff.LIDsChanged, candDiff.Unread, st.Changes.LFTBlocks, st.Changes.SwitchesChanged)
	}
	if pd := planDiff(t, cfg); pd.Source != rollout.SourceDaemon || pd.SwitchesChanged != 0 || pd.LIDsChanged != 0 {
		t.Errorf("ibsm plan diff (daemon): the plan in force differs from the fabric: %+v", pd.Diff)
	}
	if pd := planDiff(t, diffCfg, "--candidate"); pd.Source != rollout.SourceFabric || !sameSet(setOf(pd.Diff), setOf(candDiff.Diff)) {
		t.Errorf("ibsm plan diff --candidate read back by the command (source %s) differs from the daemon's:\n got %v\nwant %v", pd.Source, setOf(pd.Diff), setOf(candDiff.Diff))
	}
	if out, err := ibsmCmd(t, "rollout", "promote", "--config", cfg, "--wait", "30s"); err != nil {
		t.Fatalf("ibsm rollout promote: %v\n%s", err, out)
	}
	dir := rollout.Dir(stateDir)
	type snap struct {
		applied map[uint64]bool
		lfts    map[uint64]*diags.LFT
	}
	var snaps []snap
	seen := 0
	var ro *rollout.Rollout
	for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		ro, err = rollout.LoadRollout(dir)
		if err != nil || ro == nil {
			continue
		}
		if !ro.InProgress() {
			break
		}
		if ro.Applied > seen && ro.Entering < 0 && ro.Steps[ro.Applied-1].Last {
			seen = ro.Applied
			t0 := time.Now()
			s := snap{applied: map[uint64]bool{}, lfts: toolLFTs(t, ctx, r)}
			if now, _ := rollout.LoadRollout(dir); now == nil || now.Applied != seen || now.Entering >= 0 {
				t.Fatalf("the rollout moved on while dump_fts read the fabric (%s): raise the dwell", time.Since(t0))
			}
			t.Logf("stage ending at step %d: dump_fts read in %s", seen, time.Since(t0).Round(time.Millisecond))
			for _, st := range ro.Steps[:seen] {
				for _, g := range st.GUIDs {
					s.applied[g] = true
				}
			}
			snaps = append(snaps, s)
			if d, _, err := r.env.Discover(ctx); err != nil || diags.CheckLIDs(d, d0.LIDs) != nil {
				t.Errorf("ibnetdiscover after step %d: LIDs changed or unreadable (%v)", seen, err)
			}
		}
	}
	if ro == nil || ro.Phase != rollout.PhasePromoted {
		t.Fatalf("rollout did not promote: %+v", ro)
	}
	after := toolLFTs(t, ctx, r)
	changed := 0
	for g := range before {
		if !sameLFT(before[g], after[g], maxLID) {
			changed++
		}
	}
	if changed == 0 || len(snaps) != 3 {
		t.Fatalf("%d switches changed, %d stage snapshots (want 3)", changed, len(snaps))
	}
	for i, s := range snaps {
		for g, l := range s.lfts {
			want := before[g]
			if s.applied[g] {
				want = after[g]
			}
			if !sameLFT(l, want, maxLID) {
				t.Errorf("after stage %d, dump_fts shows switch %#016x (%s) holding neither what its step promised", i+1, g, l.Desc)
			}
		}
	}
	// The per-switch LFT blocks dump_fts saw change are those plan diff
	// announced; now the configuration's routing block (updn) is what
	// differs, by the same blocks, and the daemon's plan in force (the
	// promoted sftree) matches the fabric.
	toolBlocks := map[uint64][]int{}
	for g := range before {
		for lid := uint16(1); lid <= maxLID; lid++ {
			if b := int(lid) / 64; before[g].Port(lid) != after[g].Port(lid) && !slices.Contains(toolBlocks[g], b) {
				toolBlocks[g] = append(toolBlocks[g], b)
			}
		}
	}
	if got := setOf(candDiff.Diff).blocks; !maps.EqualFunc(got, toolBlocks, slices.Equal[[]int]) {
		t.Errorf("plan diff --candidate before the promotion: %v\ndump_fts before/after: %v", got, toolBlocks)
	}
	if got := setOf(planDiff(t, diffCfg).Diff).blocks; !maps.EqualFunc(got, toolBlocks, slices.Equal[[]int]) {
		t.Errorf("plan diff of the routing block after the promotion (read back by the command): %v\ndump_fts before/after: %v", got, toolBlocks)
	}
	if pd := planDiff(t, cfg); pd.Engine != "sftree" || pd.SwitchesChanged != 0 {
		t.Errorf("plan diff (daemon) after the promotion: engine %s, %d switches differ", pd.Engine, pd.SwitchesChanged)
	}
	t.Logf("ibsim: %d switches changed in %d steps over 3 stages; dump_fts and ibnetdiscover checked after each stage; plan diff's %d LFT blocks on %d switches are dump_fts's", changed, len(ro.Steps), candDiff.LFTBlocks, len(toolBlocks))
}

// kill -9 of ibsm mid-rollout on ibsim (whose switches keep what they
// were programmed): the restarted ibsm rolls back step by step before
// anything else, and dump_fts reads back the old plan.
func TestRolloutIBSimKill9(t *testing.T) {
	r, cfg, stateDir, d, fab := rolloutOnIBSim(t, "1h")
	ctx := context.Background()
	maxLID, before := fab.maxLID, fab.before
	if err := rollout.WriteRequest(rollout.Dir(stateDir), rollout.RequestPromote); err != nil {
		t.Fatal(err)
	}
	waitFile(t, func() bool {
		ro, err := rollout.LoadRollout(rollout.Dir(stateDir))
		return err == nil && ro != nil && ro.InProgress() && ro.Applied > 0
	}, "stage 1 in dwell", 2*time.Minute)
	mid := toolLFTs(t, ctx, r)
	moved := 0
	for g := range before {
		if !sameLFT(before[g], mid[g], maxLID) {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("stage 1 changed no switch")
	}
	syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
	t.Logf("killed ibsm with %d switches on their new tables", moved)

	startIBSM(t, cfg).waitUp(t, 1, 2*time.Minute)
	ro, err := rollout.LoadRollout(rollout.Dir(stateDir))
	if err != nil || ro == nil || ro.Phase != rollout.PhaseRolledBack || !strings.Contains(ro.Reason, "restarted") {
		t.Fatalf("after restart: %+v %v", ro, err)
	}
	got := toolLFTs(t, ctx, r)
	for g := range before {
		if !sameLFT(before[g], got[g], maxLID) {
			t.Errorf("switch %#016x: dump_fts after the restart differs from the old plan", g)
		}
	}
	t.Logf("restart rolled back: %s", ro.Reason)
}

// treeCPU is the user+system CPU time of this process and every process
// descended from it (the plugins), from /proc (clock ticks of 10 ms).
func treeCPU() time.Duration {
	self := os.Getpid()
	type proc struct {
		ppid int
		cpu  time.Duration
	}
	procs := map[int]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		var ppid int
		var ut, st int64
		fmt.Sscanf(f[1], "%d", &ppid)
		fmt.Sscanf(f[11], "%d", &ut)
		fmt.Sscanf(f[12], "%d", &st)
		procs[pid] = proc{ppid, time.Duration(ut+st) * 10 * time.Millisecond}
	}
	var total time.Duration
	for pid, p := range procs {
		for q := pid; q > 1; q = procs[q].ppid {
			if q == self {
				total += p.cpu
				break
			}
			if _, ok := procs[q]; !ok {
				break
			}
		}
	}
	return total
}

func median(xs []time.Duration) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestRolloutShadowBench (IBSM_ROLLOUT_BENCH=1; IBSM_ROLLOUT_BENCH_RADIX,
// default 36: 11,664 CAs) measures the shadow computation (wall, and CPU
// of ibsm and its plugins while nothing else runs) and the active sweep's
// routing phase after a link loss, with and without a candidate computing
// in shadow at that moment; median of 3 fresh starts each.
func TestRolloutShadowBench(t *testing.T) {
	if os.Getenv("IBSM_ROLLOUT_BENCH") == "" {
		t.Skip("IBSM_ROLLOUT_BENCH=1 runs the shadow cost benchmark (minutes on the 36-port 3-level fat tree)")
	}
	k := 36
	if v := os.Getenv("IBSM_ROLLOUT_BENCH_RADIX"); v != "" {
		fmt.Sscanf(v, "%d", &k)
	}
	net := filepath.Join(t.TempDir(), "ft3.net")
	writeFatTree(t, net, k)
	var shadowWall, shadowCPU, withCand, without, first []time.Duration
	for run := 0; run < 3; run++ {
		for _, cand := range []bool{false, true} {
			dir := t.TempDir()
			body := ""
			if cand {
				body = rolloutCandidate
			}
			cfg := rolloutHCL(t, dir, fmt.Sprintf("fabric {\n  transport = \"sim\"\n  topology = %q\n}\n", net), rolloutActive, rolloutPolicy, body)
			c := loadConfig(t, cfg)
			a, err := app.New(context.Background(), c, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			reps := make(chan *sm.Report, 16)
			done := make(chan struct{})
			go func() {
				defer close(done)
				a.SM.Run(ctx, nil, func(rep *sm.Report, err error) {
					if err == nil && rep != nil && rep.Rerouted {
						reps <- rep
					}
				})
			}()
			up := <-reps
			first = append(first, up.Routing.Time)
			// Take a leaf up link down at once: its re-route runs while
			// the shadow computation (if any) does.
			leaf, port := switchUplink(a.SM.Applied().Topo)
			if err := a.Sim.LinkDown(leaf, port); err != nil {
				t.Fatal(err)
			}
			var rr *sm.Report
			select {
			case rr = <-reps:
			case <-time.After(10 * time.Minute):
				t.Fatal("no re-route after the link loss")
			}
			if cand {
				withCand = append(withCand, rr.Routing.Time)
				if err := a.SM.WaitShadow(ctx); err != nil {
					t.Fatal(err)
				}
				// A shadow computation on its own: the plan cached, the
				// metrics measured again; then a cold one after a change.
				time.Sleep(time.Second)
				if err := a.SM.WaitShadow(ctx); err != nil {
					t.Fatal(err)
				}
				cancel()
				<-done
				// One cold shadow computation alone: a fresh candidate
				// pipeline cache would be the honest cost, so measure on
				// a restarted App with its own state dir.
			} else {
				without = append(without, rr.Routing.Time)
				cancel()
				<-done
			}
			a.Close()
			if cand {
				// The cold shadow, measured on its own: a new App on the
				// same fabric file and a fresh state dir, its first sweep
				// done, nothing else running.
				dir2 := t.TempDir()
				cfg2 := rolloutHCL(t, dir2, fmt.Sprintf("fabric {\n  transport = \"sim\"\n  topology = %q\n}\n", net), rolloutActive, rolloutPolicy, rolloutCandidate)
				a2, err := app.New(context.Background(), loadConfig(t, cfg2), nil)
				if err != nil {
					t.Fatal(err)
				}
				ctx2, cancel2 := context.WithCancel(context.Background())
				done2 := make(chan struct{})
				up2 := make(chan struct{}, 1)
				var cpu0 time.Duration
				var t0 time.Time
				go func() {
					defer close(done2)
					a2.SM.Run(ctx2, nil, func(rep *sm.Report, err error) {
						if err == nil && rep != nil && rep.Rerouted {
							cpu0, t0 = treeCPU(), time.Now()
							select {
							case up2 <- struct{}{}:
							default:
							}
						}
					})
				}()
				<-up2
				time.Sleep(50 * time.Millisecond)
				if err := a2.SM.WaitShadow(ctx2); err != nil {
					t.Fatal(err)
				}
				shadowWall = append(shadowWall, time.Since(t0))
				shadowCPU = append(shadowCPU, treeCPU()-cpu0)
				st := a2.SM.RolloutStatus()
				t.Logf("run %d: cold shadow %s wall, %s CPU (ibsm + plugins); status says %.0f ms wall, %.0f ms ibsm CPU",
					run+1, shadowWall[len(shadowWall)-1].Round(time.Millisecond), shadowCPU[len(shadowCPU)-1], st.ShadowMillis, st.ShadowCPUMillis)
				cancel2()
				<-done2
				a2.Close()
			}
			t.Logf("run %d candidate=%v: SUBNET UP routing %s, re-route routing %s", run+1, cand, up.Routing.Time.Round(time.Millisecond), rr.Routing.Time.Round(time.Millisecond))
		}
	}
	t.Logf("radix %d, median of 3: shadow computation %s wall, %s CPU; active re-route routing phase %s without a candidate, %s with one computing in shadow; first SUBNET UP routing %v",
		k, median(shadowWall).Round(time.Millisecond), median(shadowCPU), median(without).Round(time.Millisecond), median(withCand).Round(time.Millisecond), first)
}
