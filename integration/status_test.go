package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/control"
	"github.com/ibsm/ibsm/host/metrics"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// ibsmBoth runs the ibsm binary with args and returns its stdout and
// stderr together.
func ibsmBoth(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := ibsmOut(t, args...)
	return out + errOut, err
}

// statusOf asks the daemon for its status through `ibsm status --json`.
func statusOf(t *testing.T, cfg string) *metrics.Status {
	t.Helper()
	out, err := ibsmBoth(t, "status", "--config", cfg, "--json")
	if err != nil {
		t.Fatalf("ibsm status: %v\n%s", err, out)
	}
	var st metrics.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("ibsm status --json: %v\n%s", err, out)
	}
	return &st
}

// TestStatusSweepReload drives a daemon on the embedded ring through its
// control socket: status agrees with the topology file and the plan,
// `ibsm sweep` runs a heavy sweep and reports it, `ibsm reload` and SIGHUP
// apply the run-time settings (priority, sweep interval, MAD window,
// timeout and retries, log level) and name those that need a restart,
// a broken config changes nothing, and another uid is refused.
func TestStatusSweepReload(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, setup{net: ring6Net, engine: "updn", sweep: "200ms"})
	d := startIBSM(t, cfg)
	waitFor(t, d.log, "SUBNET UP", 1, 30*time.Second)
	nf, err := netfile.ParseFile(ring6Net)
	if err != nil {
		t.Fatal(err)
	}
	var sw, cas int
	for _, n := range nf.Nodes {
		if n.Type == topology.Switch {
			sw++
		} else {
			cas++
		}
	}

	st := statusOf(t, cfg)
	if st.SM.State != "master" || st.SM.Priority != 15 || st.SM.LID == 0 {
		t.Errorf("SM %+v, want master, priority 15, a LID", st.SM)
	}
	if st.Fabric.Switches != sw || st.Fabric.CAs != cas || st.Fabric.PortsByState["active"] == 0 || len(st.Fabric.PortsByState) != 1 {
		t.Errorf("fabric %+v, want %d switches and %d CAs, every linked port active", st.Fabric, sw, cas)
	}
	if st.Plan == nil || st.Plan.Engine != "updn" || st.Plan.Metrics.UnreachableCAPairs != 0 || st.Plan.Metrics.CAPairs != int64(cas*(cas-1)) || !st.Plan.Metrics.DeadlockFree || len(st.Plan.Stages) != 3 {
		t.Fatalf("plan %+v", st.Plan)
	}
	if st.Sweeps.Heavy == nil || st.Sweeps.Heavy.Report == nil || !st.Sweeps.Heavy.Report.Rerouted || st.Sweeps.Heavy.Report.Switches != sw {
		t.Errorf("last heavy sweep %+v", st.Sweeps.Heavy)
	}
	if len(st.Plugins) != 3 {
		t.Errorf("plugins %+v, want updn, sequential and single", st.Plugins)
	}
	for _, p := range st.Plugins {
		// single (one-vl) is not asked: the host's check proved its plan.
		if p.Health != "running" || p.PID == 0 || (p.Calls == 0) != (p.Name == "single") {
			t.Errorf("plugin %+v, want running, with calls unless it is single", p)
		}
	}
	// Light sweeps run every 200ms.
	for end := time.Now().Add(10 * time.Second); st.Sweeps.LightCount < 2; st = statusOf(t, cfg) {
		if time.Now().After(end) {
			t.Fatalf("no light sweeps in status: %+v", st.Sweeps)
		}
		time.Sleep(100 * time.Millisecond)
	}
	text, err := ibsmBoth(t, "status", "--config", cfg)
	for _, want := range []string{"SM  ", "master, priority 15", "plan  ", "by updn", "plugin updn", "running"} {
		if err != nil || !strings.Contains(text, want) {
			t.Errorf("ibsm status lacks %q (%v):\n%s", want, err, text)
		}
	}

	heavy := st.Sweeps.HeavyCount
	out, err := ibsmBoth(t, "sweep", "--config", cfg)
	if err != nil || !strings.Contains(out, "heavy sweep done") || !strings.Contains(out, "rerouted false") {
		t.Errorf("ibsm sweep: %v\n%s", err, out)
	}
	if st = statusOf(t, cfg); st.Sweeps.HeavyCount != heavy+1 {
		t.Errorf("heavy sweeps %d after ibsm sweep, want %d", st.Sweeps.HeavyCount, heavy+1)
	}

	// Run-time settings through `ibsm reload`.
	src, _ := os.ReadFile(cfg)
	os.WriteFile(filepath.Join(dir, "other.net"), mustRead(t, ring6Net), 0o644)
	changed := strings.Replace(string(src), `sweep_interval = "200ms"`,
		"sweep_interval = \"300ms\"\n  priority = 3\n  mad_window = 2\n  mad_retries = 5\n  log_level = \"debug\"", 1)
	changed = strings.Replace(changed, `topology = "fabric.net"`, `topology = "other.net"`, 1)
	os.WriteFile(cfg, []byte(changed), 0o644)
	out, err = ibsmBoth(t, "reload", "--config", cfg)
	for _, want := range []string{"applied: priority 15 → 3", "applied: sweep_interval 200ms → 300ms", "applied: mad_window 16 → 2",
		"applied: mad_retries 3 → 5", "applied: log_level info → debug", "needs a restart: fabric.topology"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("ibsm reload lacks %q (%v):\n%s", want, err, out)
		}
	}
	st = statusOf(t, cfg)
	if s := st.SM; s.Priority != 3 || s.MADWindow != 2 || s.MADRetries != 5 || s.SweepEvery != "300ms" || s.LogLevel != "debug" {
		t.Errorf("after reload: %+v", s)
	}
	if !strings.Contains(d.log.String(), "takes effect only at the next restart: setting=\"fabric.topology") {
		t.Errorf("the log does not name the setting that needs a restart:\n%s", tail(d.log.String(), 3000))
	}

	// A broken config: an error that says so, nothing changes.
	os.WriteFile(cfg, []byte(strings.Replace(changed, "priority = 3", "priority = 99", 1)), 0o644)
	out, err = ibsmBoth(t, "reload", "--config", cfg)
	if err == nil || !strings.Contains(out, "reload failed, the running configuration stays in force") || !strings.Contains(out, "Priority out of range") {
		t.Errorf("reload of a broken config: %v\n%s", err, out)
	}
	if st = statusOf(t, cfg); st.SM.Priority != 3 {
		t.Errorf("priority %d after a failed reload, want 3", st.SM.Priority)
	}

	// SIGHUP does the same as ibsm reload.
	os.WriteFile(cfg, []byte(strings.Replace(changed, "priority = 3", "priority = 7", 1)), 0o644)
	d.cmd.Process.Signal(syscall.SIGHUP)
	for end := time.Now().Add(10 * time.Second); statusOf(t, cfg).SM.Priority != 7; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("SIGHUP did not apply priority 7:\n%s", tail(d.log.String(), 3000))
		}
	}

	// Another user: the socket's mode keeps it out (the path is opened up
	// so that only the socket itself decides).
	sock := control.SocketPath(filepath.Join(dir, "state"))
	for p := dir; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	pub, err := os.MkdirTemp("", "ibsm-status-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pub)
	os.Chmod(pub, 0o755)
	os.WriteFile(filepath.Join(pub, "ibsm"), mustRead(t, filepath.Join(binDir, "ibsm")), 0o755)
	cmd := exec.Command(filepath.Join(pub, "ibsm"), "status", "--socket", sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	o, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(o), "permission denied") {
		t.Errorf("uid 65534: ibsm status: %v\n%s", err, o)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
