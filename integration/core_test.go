package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/topology"
)

// ibsmCmd runs the built ibsm binary and returns stdout; stderr goes to the
// test log on failure.
func ibsmCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "ibsm"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		t.Logf("ibsm %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), err
}

func TestRunOnceFatTree(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), setup{net: ft2Net, engine: "updn", fallback: []string{"minhop"}})
	out, err := ibsmCmd(t, "run", "--once", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SUBNET UP", "702 nodes (54 switches, 648 CAs)", "engine updn", "discovery", "distribution", " Get ", " Set "} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestVerifyFatTreeUpdn(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), setup{net: ft2Net, engine: "updn"})
	out, err := ibsmCmd(t, "verify", "--json", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rep analysis.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, out)
	}
	if rep.CAs != 648 || rep.Switches != 54 {
		t.Fatalf("fabric %d CAs %d switches", rep.CAs, rep.Switches)
	}
	if !rep.CAPairs.Complete() || rep.CAPairs.Total != 648*647 {
		t.Errorf("CA pairs %+v", rep.CAPairs)
	}
	if !rep.SwitchPairs.Complete() || rep.SwitchPairs.Total != 54*53 {
		t.Errorf("switch pairs %+v", rep.SwitchPairs)
	}
	if !rep.DeadlockFree || len(rep.VLs) == 0 || !rep.VLs[0].Acyclic {
		t.Errorf("CDG not acyclic: %+v", rep.VLs)
	}
	if rep.Load.MaxNormalized <= 0 || len(rep.Hops) == 0 {
		t.Errorf("missing load/hops: %+v %v", rep.Load, rep.Hops)
	}
	text, err := ibsmCmd(t, "verify", "--config", cfg)
	if err != nil || !strings.Contains(text, "engine: updn") {
		t.Fatalf("verify text: %v\n%s", err, text)
	}
}

func TestRingMinhopRefusedThenFallback(t *testing.T) {
	// minhop alone: single refuses naming the cycle; nothing is programmed.
	dir := t.TempDir()
	a := start(t, writeConfig(t, dir, setup{net: ring6Net, engine: "minhop"}))
	_, err := a.SM.HeavySweep(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cycle") || !strings.Contains(err.Error(), "0x") {
		t.Fatalf("want a refusal naming the cycle, got %v", err)
	}
	fab := a.SM.Fabric()
	for guid, n := range fab.Nodes {
		if n.Switch == nil {
			continue
		}
		top, _, err := a.Sim.SwitchInfo(guid)
		if err != nil {
			t.Fatal(err)
		}
		if top != 0 {
			t.Errorf("switch 0x%x got LinearFDBTop %d although the plan was refused", guid, top)
		}
		pi, _ := a.Sim.PortInfo(guid, 0)
		if pi.LID != 0 {
			t.Errorf("switch 0x%x got LID %d although the plan was refused", guid, pi.LID)
		}
	}

	// With fallback updn the fabric comes up deadlock-free.
	b := start(t, writeConfig(t, t.TempDir(), setup{net: ring6Net, engine: "minhop", fallback: []string{"updn"}}))
	rep, err := b.SM.HeavySweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Engine != "updn" || len(rep.Attempts) != 2 || !strings.Contains(rep.Attempts[0].Err.Error(), "cycle") {
		t.Fatalf("engine %s attempts %+v", rep.Engine, rep.Attempts)
	}
	res := b.SM.Applied().Result
	ar, err := analysis.Analyse(res.Realized, res.VLs, analysis.Options{})
	if err != nil || !ar.OK() {
		t.Fatalf("analysis: %v %+v", err, ar)
	}
}

func TestIbdmchkOnDumps(t *testing.T) {
	if _, err := exec.LookPath("ibdmchk"); err != nil {
		t.Skip("ibdmchk (Debian ibutils) not installed; make test installs it")
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, setup{net: ft2Net, engine: "updn"})
	out := filepath.Join(dir, "dump")
	if _, err := ibsmCmd(t, "dump", "--config", cfg, "--out", out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"opensm-subnet.lst", "opensm.fdbs", "opensm-lfts.dump"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s missing or empty: %v", f, err)
		}
	}
	cmd := exec.Command("ibdmchk", "-s", "opensm-subnet.lst", "-f", "opensm.fdbs", "-m", "opensm.mcfdbs")
	cmd.Dir = out
	got, _ := cmd.CombinedOutput() // ibdmchk may crash on exit after printing
	s := string(got)
	if !strings.Contains(s, "no credit loops found") {
		t.Fatalf("ibdmchk did not report 'no credit loops found':\n%s", tail(s, 3000))
	}
	if strings.Contains(s, "Found credit loop") {
		t.Fatalf("ibdmchk found a credit loop:\n%s", tail(s, 3000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestHashSkipAndIncrementalReroute(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, setup{net: ft2Net, engine: "updn"})
	a := start(t, cfgPath)
	ctx := context.Background()
	first, err := a.SM.HeavySweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Routing and LIDs: single (one-vl) is not asked, the check proved its plan.
	if !first.Rerouted || first.PluginCalls != 2 || first.Distribution.Sets == 0 {
		t.Fatalf("bring-up: %+v", first)
	}

	// Unchanged fabric: a light sweep sees nothing, a heavy sweep calls no
	// plugin and sends no Set.
	calls := pluginCalls(a)
	if changed, err := a.SM.LightSweep(ctx); err != nil || changed {
		t.Fatalf("light sweep on an unchanged fabric: changed=%v err=%v", changed, err)
	}
	again, err := a.SM.HeavySweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Rerouted || again.PluginCalls != 0 || pluginCalls(a) != calls || again.Discovery.Sets+again.Distribution.Sets != 0 {
		t.Fatalf("unchanged re-sweep: rerouted=%v plugin calls %d (total %d→%d), sets %d",
			again.Rerouted, again.PluginCalls, calls, pluginCalls(a), again.Discovery.Sets+again.Distribution.Sets)
	}

	// Restart on the same state directory and an identical (fresh) fabric:
	// no plugin call, same LIDs.
	before := lfts(t, a)
	a.Close()
	b := start(t, cfgPath)
	rep, err := b.SM.HeavySweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PluginCalls != 0 || pluginCalls(b) != 0 {
		t.Fatalf("restart made %d plugin calls", pluginCalls(b))
	}
	if after := lfts(t, b); !reflect.DeepEqual(before, after) {
		t.Fatal("restart programmed different tables")
	}

	// One leaf-spine link down: light sweep notices, re-route sends only the
	// blocks that changed.
	topo := b.SM.Applied().Topo
	var sw, port = linkBetweenSwitches(t, topo)
	if err := b.Sim.LinkDown(topo.Nodes[sw].GUID, port); err != nil {
		t.Fatal(err)
	}
	if changed, err := b.SM.LightSweep(ctx); err != nil || !changed {
		t.Fatalf("light sweep after link down: changed=%v err=%v", changed, err)
	}
	rr, err := b.SM.HeavySweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Rerouted || rr.PluginCalls == 0 {
		t.Fatalf("link down did not re-route: %+v", rr)
	}
	sent, total := rr.Program.LFTBlocksSent, rr.Program.LFTBlocksTotal
	t.Logf("link down: %d of %d LFT blocks sent (%.1f%%), %d Sets in all", sent, total, 100*float64(sent)/float64(total), rr.Distribution.Sets)
	if sent == 0 || sent >= total {
		t.Fatalf("re-route sent %d of %d blocks; want some but not all", sent, total)
	}
	res := b.SM.Applied().Result
	ar, err := analysis.Analyse(res.Realized, res.VLs, analysis.Options{})
	if err != nil || !ar.OK() {
		t.Fatalf("degraded plan: %v %+v", err, ar)
	}
	// The fabric holds exactly the new plan.
	for s, node := range b.SM.Applied().Topo.Switches() {
		got, _ := b.Sim.LFT(b.SM.Applied().Topo.Nodes[node].GUID)
		want := res.Realized.LFT[s]
		if !bytes.Equal(got, want[:len(got)]) || len(got) != int(res.Realized.TopLID)+1 {
			t.Fatalf("switch %d holds a table different from the plan", s)
		}
	}
}

// linkBetweenSwitches returns a switch and port whose link leads to another
// switch.
func linkBetweenSwitches(t *testing.T, topo *topology.Topology) (int32, uint8) {
	for _, sw := range topo.Switches() {
		n := &topo.Nodes[sw]
		for p := 1; p < len(n.Ports); p++ {
			if peer := n.Ports[p].Peer; peer.Connected() && topo.Nodes[peer.Node].Type == topology.Switch {
				return sw, uint8(p)
			}
		}
	}
	t.Fatal("no inter-switch link")
	return 0, 0
}

// TestPluginFaultsKeepLastGoodPlan brings the fabric up with updn, then
// switches to a misbehaving engine: each fault is reported with its cause
// and the fabric keeps the tables it had.
func TestPluginFaultsKeepLastGoodPlan(t *testing.T) {
	cases := []struct {
		mode, timeout, want string
	}{
		{"crash", "", "exited"},
		{"hang", "1s", "did not answer"},
		{"bad_port", "", "port 200"},
		{"loop", "", "loop"},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			dir := t.TempDir()
			a := start(t, writeConfig(t, dir, setup{net: ring6Net, engine: "updn", timeout: c.timeout}))
			ctx := context.Background()
			if _, err := a.SM.HeavySweep(ctx); err != nil {
				t.Fatal(err)
			}
			before := lfts(t, a)
			bad := writeConfig(t, dir, setup{net: ring6Net, engine: "badengine", badMode: c.mode, timeout: c.timeout})
			if err := a.Reload(ctx, loadConfig(t, bad)); err != nil {
				t.Fatal(err)
			}
			_, err := a.SM.HeavySweep(ctx)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
			if !strings.Contains(err.Error(), "last good plan") {
				t.Errorf("error does not say the last good plan stays: %v", err)
			}
			if after := lfts(t, a); !reflect.DeepEqual(before, after) {
				t.Fatal("a rejected plan changed the fabric's tables")
			}
		})
	}
}

func TestKilledPluginRestarts(t *testing.T) {
	a := start(t, writeConfig(t, t.TempDir(), setup{net: ring6Net, engine: "updn"}))
	ctx := context.Background()
	if _, err := a.SM.HeavySweep(ctx); err != nil {
		t.Fatal(err)
	}
	p, ok := a.Plugin(sdk.KindRouting, "updn")
	if !ok {
		t.Fatal("updn plugin not running")
	}
	pid := p.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Force a re-route: one ring link down.
	topo := a.SM.Applied().Topo
	sw, port := linkBetweenSwitches(t, topo)
	if err := a.Sim.LinkDown(topo.Nodes[sw].GUID, port); err != nil {
		t.Fatal(err)
	}
	rep, err := a.SM.HeavySweep(ctx)
	if err != nil {
		t.Fatalf("sweep after the plugin was killed: %v", err)
	}
	if !rep.Rerouted || p.Restarts() != 1 || p.PID() == pid {
		t.Fatalf("rerouted=%v restarts=%d pid %d→%d", rep.Rerouted, p.Restarts(), pid, p.PID())
	}
}

func TestBadInputs(t *testing.T) {
	t.Run("malformed topology file", func(t *testing.T) {
		dir := t.TempDir()
		bad := filepath.Join(dir, "bad.net")
		os.WriteFile(bad, []byte("Switch 4 \"S-1\"\n[1] \"S-2\"[1]\n[9] \"H-1\"[1]\n"), 0o644)
		cfg := writeConfig(t, dir, setup{net: bad, engine: "updn"})
		_, err := app.New(context.Background(), loadConfig(t, cfg), nil)
		if err == nil || !strings.Contains(err.Error(), "fabric.net:") {
			t.Fatalf("want a file:line error, got %v", err)
		}
	})
	t.Run("malformed HCL", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "bad.hcl")
		os.WriteFile(p, []byte("fabric {\n  transport = \"sim\"\n  topology = \"x.net\"\n}\nsm {\n  lmc = 9\n}\n"), 0o644)
		out, err := ibsmCmd(t, "run", "--once", "--config", p)
		if err == nil {
			t.Fatalf("bad config accepted: %s", out)
		}
	})
}

// pluginCalls is the number of kind calls (Route, AssignLIDs, AssignVLs)
// the plugin processes a's config names have answered: counted by the
// plugin host, independently of the sweep's own report.
func pluginCalls(a *app.App) uint64 {
	var n uint64
	for _, p := range a.Current().Plugins {
		if pl, ok := a.Plugin(p.Kind, p.Name); ok {
			n += pl.Calls()
		}
	}
	return n
}
