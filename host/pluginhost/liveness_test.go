package pluginhost

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk"
)

// Liveness: a plugin that is stopped (SIGSTOP), at launch, mid-call or
// idle, or that closes its stdio, must not wedge the host. Every operation
// returns within its deadline plus slack, the next call runs on a fresh
// process and nothing is left behind. The bounds are generous (the machine
// is shared); what they catch is an operation that never returns.

// slack is what an operation may take beyond its own deadline: killing and
// reaping the plugin, scheduling on a loaded machine.
const slack = 3 * time.Second

// timed runs f and fails the test if it took longer than bound.
func timed(t *testing.T, what string, bound time.Duration, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	f()
	d := time.Since(start)
	t.Logf("%s took %v", what, d.Round(time.Millisecond))
	if d > bound {
		t.Errorf("%s took %v, want at most %v", what, d, bound)
	}
	return d
}

// childPIDs lists this process's children that are m's plugins: go-plugin
// gives each a socket directory inside m's (PLUGIN_UNIX_SOCKET_DIR), which
// tells them apart from the plugins of tests running in parallel. A zombie
// has no environment left to tell; it counts for every manager, so one
// that is never reaped fails whichever test looks.
func childPIDs(m *Manager) []int {
	var out []int
	self := strconv.Itoa(os.Getpid())
	mine := []byte(plugin.EnvUnixSocketDir + "=" + m.socketDir + "/")
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 || f[1] != self {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if f[0] == "Z" || bytes.Contains(env, mine) {
			out = append(out, pid)
		}
	}
	return out
}

// noChildren fails the test unless every plugin process of m is gone
// (reaped) within 5 s.
func noChildren(t *testing.T, m *Manager) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := childPIDs(m)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin processes left behind: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// procState is the state letter in /proc/pid/stat ("T" when stopped).
func procState(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0]
}

func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for procState(pid) != "T" {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never stopped (state %q)", pid, procState(pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func routeOK(t *testing.T, p *Plugin) {
	t.Helper()
	if _, err := p.Route(context.Background(), sdk.RouteRequest{Topo: ring(t)}); err != nil {
		t.Fatalf("Route: %v", err)
	}
}

// (a) A plugin stopped before its handshake line: Launch fails within
// StartTimeout, the process is killed, and the next launch works.
func TestStoppedAtLaunch(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	marker := filepath.Join(t.TempDir(), "stop")
	os.WriteFile(marker, nil, 0o600)
	cfg := Config{Name: "test", Kind: sdk.KindRouting, Path: testPlugin, StartTimeout: 2 * time.Second,
		Env: []string{"TESTPLUGIN_STOP_AT_START=" + marker}}
	var err error
	timed(t, "Launch of a plugin stopped before its handshake", cfg.StartTimeout+slack, func() {
		_, err = m.Launch(context.Background(), cfg)
	})
	if err == nil || !strings.Contains(err.Error(), "did not start within 2s") || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("error = %v", err)
	}
	noChildren(t, m)
	// The same plugin again, free to start (a plugin killed before it got
	// to remove the marker would leave it for this one): with the default
	// timeout, as plugins starting in parallel tests can take a second.
	os.Remove(marker)
	cfg.StartTimeout = 0
	p, err := m.Launch(context.Background(), cfg)
	if err != nil {
		t.Fatalf("second launch: %v", err)
	}
	if err := p.Configure(modeCfg("normal", "")); err != nil {
		t.Fatal(err)
	}
	routeOK(t, p)
	if !slices.Contains(childPIDs(m), p.PID()) {
		t.Fatalf("plugin pid %d not among the manager's children %v", p.PID(), childPIDs(m))
	}
	timed(t, "Manager.Close", slack, func() { m.Close() })
	noChildren(t, m)
}

// (a) The restart of a dead plugin stops before its handshake: the call
// fails within StartTimeout and the next call restarts it again. The
// timeout also bounds the two launches that are not stopped, so it leaves
// room for plugins starting in parallel tests on a loaded machine.
func TestStoppedAtRestart(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	marker := filepath.Join(t.TempDir(), "stop")
	const start = 3 * time.Second
	p := launch(t, m, Config{StartTimeout: start, Env: []string{"TESTPLUGIN_STOP_AT_START=" + marker}})
	if err := p.Configure(modeCfg("normal", "")); err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	os.WriteFile(marker, nil, 0o600)
	syscall.Kill(pid, syscall.SIGKILL)
	if !processGone(pid) {
		t.Fatalf("pid %d survived SIGKILL", pid)
	}
	var err error
	timed(t, "Route while the restart is stopped", start+slack, func() {
		_, err = p.Route(context.Background(), sdk.RouteRequest{Topo: ring(t)})
	})
	if err == nil || !strings.Contains(err.Error(), "restarting") || !strings.Contains(err.Error(), "did not start within 3s") {
		t.Fatalf("error = %v", err)
	}
	noChildren(t, m)
	os.Remove(marker) // in case the restart was killed before it got there
	routeOK(t, p)
	if p.Restarts() != 1 || p.Calls() != 2 {
		t.Fatalf("restarts %d calls %d, want 1 and 2", p.Restarts(), p.Calls())
	}
}

// A launch that hangs does not hold the spawner thread: another plugin
// launches meanwhile, and a caller that gives up gets its answer at once.
func TestHungLaunchBlocksNothing(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	marker := filepath.Join(t.TempDir(), "stop")
	os.WriteFile(marker, nil, 0o600)
	hung := make(chan error, 1)
	go func() {
		_, err := m.Launch(context.Background(), Config{Name: "hung", Kind: sdk.KindRouting, Path: testPlugin,
			StartTimeout: 4 * time.Second, Env: []string{"TESTPLUGIN_STOP_AT_START=" + marker}})
		hung <- err
	}()
	for {
		if _, err := os.Stat(marker); err != nil {
			break // the hung plugin is running and stops itself now
		}
		time.Sleep(10 * time.Millisecond)
	}
	timed(t, "a second launch while one hangs", 3*time.Second, func() {
		p := launch(t, m, Config{Name: "other"})
		p.Close()
	})
	if err := <-hung; err == nil || !strings.Contains(err.Error(), "did not start within 4s") {
		t.Fatalf("hung launch: %v", err)
	}

	// The caller's context ends a hung launch early (SIGTERM to ibsm).
	os.WriteFile(marker, nil, 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var err error
	timed(t, "a hung launch whose caller gives up after 300ms", 300*time.Millisecond+slack, func() {
		_, err = m.Launch(ctx, Config{Name: "hung", Kind: sdk.KindRouting, Path: testPlugin,
			StartTimeout: time.Minute, Env: []string{"TESTPLUGIN_STOP_AT_START=" + marker}})
	})
	if err == nil || !strings.Contains(err.Error(), "caller gave up") {
		t.Fatalf("error = %v", err)
	}
	noChildren(t, m)
}

// (b) A plugin stopped in the middle of a call is killed at the call
// deadline; the next call runs on a new process.
func TestStoppedMidCall(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	p := launch(t, m, Config{CallTimeout: time.Second})
	if err := p.Configure(modeCfg("stop", "")); err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	var err error
	timed(t, "Route into a plugin that stops itself", time.Second+slack, func() {
		_, err = p.Route(context.Background(), sdk.RouteRequest{Topo: ring(t)})
	})
	if want := "plugin test did not answer Route within 1s; killed; will restart on next use"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if !processGone(pid) {
		t.Fatalf("stopped plugin pid %d still exists", pid)
	}
	if err := p.Configure(modeCfg("normal", "")); err != nil {
		t.Fatal(err)
	}
	routeOK(t, p)
	if p.Restarts() != 1 || p.PID() == pid {
		t.Fatalf("restarts %d pid %d (was %d)", p.Restarts(), p.PID(), pid)
	}
}

// (c) A plugin stopped while idle: the next call times out and kills it,
// the one after restarts it; Close of a stopped plugin is prompt.
func TestStoppedIdle(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	p := launch(t, m, Config{CallTimeout: time.Second})
	if err := p.Configure(modeCfg("normal", "")); err != nil {
		t.Fatal(err)
	}
	routeOK(t, p)
	pid := p.PID()
	syscall.Kill(pid, syscall.SIGSTOP)
	waitStopped(t, pid)
	var err error
	timed(t, "Route into an idle stopped plugin", time.Second+slack, func() {
		_, err = p.Route(context.Background(), sdk.RouteRequest{Topo: ring(t)})
	})
	if want := "plugin test did not answer Route within 1s; killed; will restart on next use"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if !processGone(pid) {
		t.Fatalf("stopped plugin pid %d still exists", pid)
	}
	timed(t, "Route after the kill (restart)", 5*time.Second, func() { routeOK(t, p) })
	if p.Restarts() != 1 || p.Calls() != 3 {
		t.Fatalf("restarts %d calls %d, want 1 and 3", p.Restarts(), p.Calls())
	}

	// Stopped again, then closed: Close does not wait for an answer.
	pid = p.PID()
	syscall.Kill(pid, syscall.SIGSTOP)
	waitStopped(t, pid)
	timed(t, "Plugin.Close of a stopped plugin", stopGrace+slack, func() { p.Close() })
	if !processGone(pid) {
		t.Fatalf("stopped plugin pid %d survived Close", pid)
	}
	noChildren(t, m)
}

// Manager.Close with every plugin stopped, one of them mid-call.
func TestManagerCloseStoppedPlugins(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	var pids []int
	for _, name := range []string{"a", "b", "c"} {
		p := launch(t, m, Config{Name: name, CallTimeout: time.Minute})
		pids = append(pids, p.PID())
	}
	busy, _ := m.Plugin(sdk.KindRouting, "a")
	if err := busy.Configure(modeCfg("stop", "")); err != nil {
		t.Fatal(err)
	}
	routed := make(chan error, 1)
	topo := ring(t)
	go func() {
		_, err := busy.Route(context.Background(), sdk.RouteRequest{Topo: topo})
		routed <- err
	}()
	// "a" stops itself inside the Route (mode stop): waiting for that, not
	// stopping it from here, is what makes the Route be in flight when
	// Close comes (under load the call could otherwise arrive later).
	waitStopped(t, pids[0])
	for _, pid := range pids[1:] {
		syscall.Kill(pid, syscall.SIGSTOP)
		waitStopped(t, pid)
	}
	timed(t, "Manager.Close with three stopped plugins", stopGrace+slack, func() { m.Close() })
	select {
	case err := <-routed:
		if err == nil {
			t.Fatal("Route into a killed plugin succeeded")
		}
		t.Logf("in-flight Route: %v", err)
	case <-time.After(slack):
		t.Fatal("the Route in flight did not return after Close")
	}
	noChildren(t, m)
	if _, err := os.Stat(m.socketDir); !os.IsNotExist(err) {
		t.Fatalf("socket dir %s left behind", m.socketDir)
	}
}

// (d) A plugin that closes its stdout before the handshake fails to launch
// at once; one that closes its stdio later keeps working and closes
// promptly.
func TestClosedStdio(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	var err error
	timed(t, "Launch of a plugin that closed its stdout", slack, func() {
		_, err = m.Launch(context.Background(), Config{Name: "mute", Kind: sdk.KindRouting, Path: testPlugin,
			StartTimeout: 10 * time.Second, Env: []string{"TESTPLUGIN_CLOSE_STDOUT=1"}})
	})
	if err == nil || !strings.Contains(err.Error(), "start failed") {
		t.Fatalf("error = %v", err)
	}
	noChildren(t, m)

	p := launch(t, m, Config{CallTimeout: 5 * time.Second})
	if err := p.Configure(modeCfg("close_stdio", "")); err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	routeOK(t, p)
	routeOK(t, p)
	if p.PID() != pid || p.Restarts() != 0 {
		t.Fatalf("pid %d (was %d), restarts %d", p.PID(), pid, p.Restarts())
	}
	timed(t, "Plugin.Close of a plugin without stdio", stopGrace+slack, func() { p.Close() })
	noChildren(t, m)
}
