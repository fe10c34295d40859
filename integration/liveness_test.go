package integration

// Liveness (issue 9): a routing plugin that is stopped (SIGSTOP) must not
// wedge the SM. The sweeps go on, a link fault is re-routed within
// plugin_timeout plus one sweep (by the fallback engine or the restarted
// plugin), and `ibsm run --once` and SIGTERM end ibsm within plugin_timeout
// plus a few seconds. The bounds are loose (the machine is shared): what
// they catch is an SM that never gets there.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
)

const (
	livePluginTimeout = 2 * time.Second
	liveSweep         = 500 * time.Millisecond
	// liveSlack is what an operation may take beyond plugin_timeout and
	// one sweep: killing the plugin, restarting it, a heavy sweep.
	liveSlack = 5 * time.Second
)

// liveSetup is one liveness configuration.
type liveSetup struct {
	transport string // "sim" (default) or "ibsim"
	net       string // topology file (sim)
	socket    string // ibsim socket name
	attach    string // ibsim node the SM attaches at
	engine    string
	fallback  []string
	updnPath  string // replaces the updn binary (a wrapper), if set
}

// liveConfig writes an ibsm config with plugin_timeout 2s and sweeps every
// 500ms into dir.
func liveConfig(t *testing.T, dir string, s liveSetup) string {
	t.Helper()
	var b strings.Builder
	switch s.transport {
	case "", "sim":
		net, err := filepath.Abs(s.net)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "fabric {\n  transport = \"sim\"\n  topology = %q\n}\n", net)
	case "ibsim":
		fmt.Fprintf(&b, "fabric {\n  transport = \"ibsim\"\n  socket = %q\n  attach = %q\n}\n", s.socket, s.attach)
	}
	fmt.Fprintf(&b, "sm {\n  state_dir = %q\n  plugin_timeout = %q\n  mad_timeout = \"200ms\"\n  sweep_interval = %q\n}\n",
		filepath.Join(dir, "state"), livePluginTimeout.String(), liveSweep.String())
	for _, name := range []string{"updn", "minhop"} {
		path := filepath.Join(binDir, "ibsm-plugin-"+name)
		if name == "updn" && s.updnPath != "" {
			path = s.updnPath
		}
		fmt.Fprintf(&b, "plugin \"routing_engine\" %q {\n  path = %q\n}\n", name, path)
	}
	fmt.Fprintf(&b, "plugin \"lid_assigner\" \"sequential\" {\n  path = %q\n}\n", filepath.Join(binDir, "ibsm-plugin-sequential"))
	fmt.Fprintf(&b, "plugin \"vl_assigner\" \"single\" {\n  path = %q\n}\n", filepath.Join(binDir, "ibsm-plugin-single"))
	fb := make([]string, len(s.fallback))
	for i, f := range s.fallback {
		fb[i] = strconv.Quote(f)
	}
	fmt.Fprintf(&b, "routing {\n  engine = %q\n  fallback = [%s]\n  lid_assigner = \"sequential\"\n  vl_assigner = \"single\"\n}\n", s.engine, strings.Join(fb, ", "))
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// pluginChild is the pid of parent's child whose command line names
// binary, 0 if there is none.
func pluginChild(parent int, binary string) int {
	for _, c := range children(parent) {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c), "cmdline"))
		if bytes.Contains(b, []byte(binary)) {
			return c
		}
	}
	return 0
}

// procState is the state letter of pid ("T" when stopped, "" if gone).
func procState(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 {
		return f[0]
	}
	return ""
}

// stopProcess SIGSTOPs pid and waits until it is stopped.
func stopProcess(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %d: %v", pid, err)
	}
	for end := time.Now().Add(5 * time.Second); procState(pid) != "T"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("pid %d did not stop (state %q)", pid, procState(pid))
		}
	}
}

// gone waits up to 5 s for pid to be reaped (a zombie of a process that
// exited itself counts: its parent is gone too).
func gone(pid int) bool {
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) || procState(pid) == "Z" {
			return true
		}
	}
	return false
}

type sweepResult struct {
	rep *sm.Report
	err error
}

// runSM runs a's sweep loop until the test ends and returns its reports.
func runSM(t *testing.T, a *app.App) <-chan sweepResult {
	ch := make(chan sweepResult, 256)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.SM.Run(ctx, nil, func(rep *sm.Report, err error) {
			select {
			case ch <- sweepResult{rep, err}:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done }) // before a.Close (cleanups run last first)
	return ch
}

// waitReroute waits for a sweep that re-routed and returns it, logging the
// failed sweeps before it.
func waitReroute(t *testing.T, ch <-chan sweepResult, within time.Duration) *sm.Report {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case r := <-ch:
			if r.err != nil {
				t.Logf("sweep failed (expected while the plugin is stopped): %v", r.err)
				continue
			}
			if r.rep.Rerouted {
				return r.rep
			}
		case <-timer.C:
			t.Fatalf("no re-route within %v", within)
			return nil
		}
	}
}

// A link goes down on the embedded fabric while the routing plugin is
// stopped: the sweep loop goes on and re-routes within plugin_timeout plus
// a sweep, with the fallback engine or with the restarted plugin.
func TestLivenessStoppedPluginLinkDown(t *testing.T) {
	tests := []struct {
		name       string
		fallback   []string
		wantEngine string
	}{
		// On the ring minus a link (a line) minhop is deadlock-free.
		{"fallback", []string{"minhop"}, "minhop"},
		{"restart", nil, "updn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := start(t, liveConfig(t, t.TempDir(), liveSetup{net: ring6Net, engine: "updn", fallback: tc.fallback}))
			sweeps := runSM(t, a)
			waitReroute(t, sweeps, 30*time.Second)
			updn, ok := a.Plugin(sdk.KindRouting, "updn")
			if !ok {
				t.Fatal("updn is not running")
			}
			pid := updn.PID()
			stopProcess(t, pid)

			topo := a.SM.Applied().Topo
			sw, port := linkBetweenSwitches(t, topo)
			start := time.Now()
			if err := a.Sim.LinkDown(topo.Nodes[sw].GUID, port); err != nil {
				t.Fatal(err)
			}
			rep := waitReroute(t, sweeps, livePluginTimeout+liveSweep+liveSlack)
			took := time.Since(start)
			t.Logf("link down re-routed by %s %v after the fault (plugin stopped, plugin_timeout %v, sweep %v)",
				rep.Engine, took.Round(time.Millisecond), livePluginTimeout, liveSweep)
			if rep.Engine != tc.wantEngine {
				t.Errorf("re-routed by %s, want %s (attempts %+v)", rep.Engine, tc.wantEngine, rep.Attempts)
			}
			if !gone(pid) {
				t.Errorf("stopped updn pid %d was not killed", pid)
			}
			if tc.wantEngine == "updn" && (updn.Restarts() != 1 || updn.PID() == pid || updn.PID() == 0) {
				t.Errorf("updn restarts %d pid %d (was %d)", updn.Restarts(), updn.PID(), pid)
			}

			// The loop still sweeps: the link comes back and is re-routed
			// (the restarted updn, or its cached plan for the whole ring).
			start = time.Now()
			if err := a.Sim.LinkUp(topo.Nodes[sw].GUID, port); err != nil {
				t.Fatal(err)
			}
			rep = waitReroute(t, sweeps, liveSweep+liveSlack)
			t.Logf("link up re-routed by %s %v later", rep.Engine, time.Since(start).Round(time.Millisecond))
			if rep.Engine != "updn" {
				t.Errorf("link up re-routed by %s, want updn", rep.Engine)
			}
		})
	}
}

// The same on a real ibsim: ibsm runs as a daemon, ibsim's console unlinks
// a ring link while updn is stopped.
func TestLivenessIBSimUnlinkStoppedPlugin(t *testing.T) {
	r := startRig(t, ring6Net, "ring-3-host-0")
	var pid int
	// Registered before startIBSM's cleanup, so it runs after ibsm stopped.
	t.Cleanup(func() {
		if pid != 0 && !gone(pid) {
			t.Errorf("updn pid %d outlived ibsm", pid)
		}
	})
	d := startIBSM(t, liveConfig(t, r.dir, liveSetup{transport: "ibsim", socket: r.env.Sockname, attach: "ring-0-host-0", engine: "updn"}))
	d.waitUp(t, 1, 60*time.Second)
	if pid = pluginChild(d.cmd.Process.Pid, "ibsm-plugin-updn"); pid == 0 {
		t.Fatal("no updn process")
	}
	stopProcess(t, pid)
	start := time.Now()
	if err := r.sim.Unlink("ring-0", 2); err != nil {
		t.Fatal(err)
	}
	d.waitUp(t, 2, livePluginTimeout+liveSweep+liveSlack)
	t.Logf("ibsim unlink re-routed %v after the fault (updn stopped)", time.Since(start).Round(time.Millisecond))
	if want := "did not answer Route within 2s; killed"; !strings.Contains(d.log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, tail(d.log.String(), 3000))
	}
	if !gone(pid) {
		t.Errorf("stopped updn pid %d was not killed", pid)
	}
	if n := pluginChild(d.cmd.Process.Pid, "ibsm-plugin-updn"); n == 0 || n == pid {
		t.Errorf("updn was not restarted (pid %d, was %d)", n, pid)
	}
}

// `ibsm run --once` whose routing plugin is stopped once it is configured:
// the plan comes from the state directory's cache (the plugin is not
// called), SUBNET UP, and closing the stopped plugin does not hang.
func TestLivenessRunOnceStoppedPlugin(t *testing.T) {
	dir := t.TempDir()
	cfg := liveConfig(t, dir, liveSetup{net: ring6Net, engine: "updn"})
	if out, err := ibsmCmd(t, "run", "--once", "--config", cfg); err != nil || !strings.Contains(out, "SUBNET UP") {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	cmd := exec.Command(filepath.Join(binDir, "ibsm"), "run", "--once", "--config", cfg)
	var out, errb lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ibsm := cmd.Process.Pid
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	// Plugins launch in order (engines, LID assigner, VL assigner) and each
	// is configured before the next starts: once the VL assigner's process
	// exists, updn is configured. Freeze ibsm there, stop updn, thaw ibsm.
	var updn int
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if pluginChild(ibsm, "ibsm-plugin-single") != 0 {
			syscall.Kill(ibsm, syscall.SIGSTOP)
			updn = pluginChild(ibsm, "ibsm-plugin-updn")
			break
		}
		select {
		case err := <-done:
			t.Fatalf("ibsm exited (%v) before its VL assigner started:\n%s", err, errb.String())
		default:
		}
		if time.Now().After(end) {
			t.Fatal("the VL assigner never started")
		}
	}
	if updn == 0 {
		syscall.Kill(ibsm, syscall.SIGCONT)
		t.Fatal("no updn process")
	}
	stopProcess(t, updn)
	start := time.Now()
	syscall.Kill(ibsm, syscall.SIGCONT)
	select {
	case err := <-done:
		took := time.Since(start)
		t.Logf("ibsm run --once with updn stopped exited %v after the stop", took.Round(time.Millisecond))
		if err != nil || !strings.Contains(out.String(), "SUBNET UP") {
			t.Fatalf("exit %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), tail(errb.String(), 3000))
		}
		if !regexp.MustCompile(`\s0 plugin calls`).MatchString(out.String()) {
			t.Errorf("the second run called plugins (the stopped updn?):\n%s", out.String())
		}
		if took > livePluginTimeout+liveSlack {
			t.Errorf("took %v, want at most %v", took, livePluginTimeout+liveSlack)
		}
	case <-time.After(livePluginTimeout + 3*liveSlack):
		t.Fatalf("ibsm run --once did not exit with updn stopped:\n%s", tail(errb.String(), 3000))
	}
	if !gone(updn) {
		t.Errorf("stopped updn pid %d outlived ibsm", updn)
	}
}

// SIGTERM to a daemon whose routing plugin is stopped, after SUBNET UP and
// at launch (before its handshake): ibsm exits within plugin_timeout plus a
// few seconds and leaves no plugin behind.
func TestLivenessSIGTERMStoppedPlugin(t *testing.T) {
	t.Run("after SUBNET UP", func(t *testing.T) {
		d := startIBSM(t, liveConfig(t, t.TempDir(), liveSetup{net: ring6Net, engine: "updn"}))
		waitFor(t, d.log, "SUBNET UP", 1, 30*time.Second)
		plugins := children(d.cmd.Process.Pid)
		updn := pluginChild(d.cmd.Process.Pid, "ibsm-plugin-updn")
		if updn == 0 {
			t.Fatal("no updn process")
		}
		stopProcess(t, updn)
		sigterm(t, d, livePluginTimeout+liveSlack, true)
		for _, p := range plugins {
			if !gone(p) {
				t.Errorf("plugin pid %d outlived ibsm", p)
			}
		}
	})
	t.Run("at launch", func(t *testing.T) {
		dir := t.TempDir()
		// A wrapper that stops itself before it execs updn: the plugin
		// never prints its handshake.
		wrapper := filepath.Join(dir, "updn-stopped")
		script := fmt.Sprintf("#!/bin/sh\nkill -STOP $$\nexec %q \"$@\"\n", filepath.Join(binDir, "ibsm-plugin-updn"))
		if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		d := startIBSM(t, liveConfig(t, dir, liveSetup{net: ring6Net, engine: "updn", updnPath: wrapper}))
		var pid int
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if pid = pluginChild(d.cmd.Process.Pid, "updn-stopped"); pid != 0 && procState(pid) == "T" {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("the wrapper never stopped:\n%s", d.log.String())
			}
		}
		sigterm(t, d, liveSlack, true) // a requested stop: exit 0
		if !strings.Contains(d.log.String(), "stopped during start-up") || !strings.Contains(d.log.String(), "caller gave up") {
			t.Errorf("ibsm's error does not say the launch was abandoned:\n%s", tail(d.log.String(), 2000))
		}
		if !gone(pid) {
			t.Errorf("stopped plugin pid %d outlived ibsm", pid)
		}
	})
}

// sigterm stops d with SIGTERM and fails unless it exits within bound (and
// with status 0 if clean).
func sigterm(t *testing.T, d *daemon, bound time.Duration, clean bool) {
	t.Helper()
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		took := time.Since(start)
		t.Logf("ibsm exited %v after SIGTERM (%v)", took.Round(time.Millisecond), err)
		if clean && err != nil {
			t.Errorf("ibsm exited with %v:\n%s", err, tail(d.log.String(), 3000))
		}
		if took > bound {
			t.Errorf("ibsm took %v to exit, want at most %v", took, bound)
		}
	case <-time.After(bound + liveSlack):
		t.Fatalf("ibsm did not exit within %v of SIGTERM:\n%s", bound+liveSlack, tail(d.log.String(), 3000))
	}
}
