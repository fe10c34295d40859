package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// testPlugin is the path of the testdata plugin binary built by TestMain.
var testPlugin string

func TestMain(m *testing.M) {
	bin, cleanup, err := buildPlugin("testplugin", "./testdata/testplugin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testPlugin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// buildPlugin builds the plugin package pkg as name and returns its path.
// The binary lives in the user's cache directory, one per checkout, so that
// go build finds it up to date and does not link it again (2-3 s of CPU per
// run); a file lock keeps two test processes from writing it at once.
// Without a cache directory it goes to a temporary one, which cleanup
// removes.
func buildPlugin(name, pkg string) (bin string, cleanup func(), err error) {
	cleanup = func() {}
	wd, err := os.Getwd()
	if err != nil {
		return "", cleanup, err
	}
	dir, err := os.UserCacheDir()
	if err == nil {
		sum := sha256.Sum256([]byte(wd))
		dir = filepath.Join(dir, "ibsm-test", hex.EncodeToString(sum[:8]))
		err = os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		if dir, err = os.MkdirTemp("", "pluginhost-test"); err != nil {
			return "", cleanup, err
		}
		cleanup = func() { os.RemoveAll(dir) }
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", cleanup, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", cleanup, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	bin = filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", cleanup, fmt.Errorf("building %s: %v\n%s", pkg, err, out)
	}
	return bin, cleanup, nil
}

func newManager(t *testing.T) *Manager {
	t.Helper()
	m, err := New(Options{Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Warn, Output: testWriter{t}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func modeCfg(mode, marker string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"mode": cty.StringVal(mode), "marker": cty.StringVal(marker)})
}

func launch(t *testing.T, m *Manager, cfg Config) *Plugin {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	if cfg.Kind == "" {
		cfg.Kind = sdk.KindRouting
	}
	cfg.Path = testPlugin
	p, err := m.Launch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ring(t *testing.T) *topology.Topology {
	topo, err := sdktest.Ring(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// processGone waits until pid no longer exists (reaped, not a zombie).
func processGone(pid int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func TestLaunchConfigureRoute(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	p := launch(t, m, Config{})
	if info := p.Info(); info.Name != "testplugin" || info.Kind != sdk.KindRouting {
		t.Fatalf("Info = %+v", info)
	}
	if s := p.Schema(); len(s.Attributes) != 2 || s.Attributes[0].Name != "mode" {
		t.Fatalf("Schema = %+v", s)
	}
	eng, err := p.RoutingEngine()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.LIDAssigner(); err == nil {
		t.Fatal("a routing engine posed as a LID assigner")
	}
	topo := ring(t)
	// Kind calls before Configure reach the plugin, which refuses them.
	if _, err := eng.Route(context.Background(), sdk.RouteRequest{Topo: topo}); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("unconfigured Route: %v", err)
	}
	if err := eng.Configure(modeCfg("normal", "")); err != nil {
		t.Fatal(err)
	}
	r, err := eng.Route(context.Background(), sdk.RouteRequest{Topo: topo})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Planes) != len(topo.Endpoints()) {
		t.Fatalf("%d destinations, want %d", len(r.Planes), len(topo.Endpoints()))
	}
	if p.Calls() != 2 || p.Restarts() != 0 {
		t.Fatalf("calls %d restarts %d, want 2 and 0", p.Calls(), p.Restarts())
	}
}

func TestPluginErrorsAreReported(t *testing.T) {
	t.Parallel()
	tests := []struct{ mode, want string }{
		{"error", "plugin test: Route: rpc error: code = Unknown desc = route: engine refuses: no roots found"},
		{"short_plane", "destination endpoint 0 plane 0 has 3 entries, want one per switch (4)"},
		{"bad_port", "destination endpoint 1 plane 0: switch 0 (0x0002c90300000000) out-port 200 does not exist (switch has 4 ports)"},
	}
	m := newManager(t)
	p := launch(t, m, Config{})
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			if err := p.Configure(modeCfg(tc.mode, "")); err != nil {
				t.Fatal(err)
			}
			_, err := p.Route(context.Background(), sdk.RouteRequest{Topo: ring(t)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant it to contain %q", err, tc.want)
			}
			if p.Restarts() != 0 {
				t.Fatalf("a plugin error restarted the plugin")
			}
		})
	}
}

func TestRestartAfterCrash(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	p := launch(t, m, Config{})
	marker := filepath.Join(t.TempDir(), "crashed")
	if err := p.Configure(modeCfg("crash_once", marker)); err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	// The plugin dies inside Route; the call is retried once on a fresh,
	// re-configured process (crash_once now sees its marker) and succeeds.
	if _, err := p.Route(context.Background(), sdk.RouteRequest{Topo: ring(t)}); err != nil {
		t.Fatalf("retry after crash: %v", err)
	}
	if !processGone(pid) {
		t.Fatalf("crashed plugin pid %d still exists", pid)
	}
	if p.Restarts() != 1 || p.Calls() != 1 || p.PID() == pid || p.PID() == 0 {
		t.Fatalf("restarts %d calls %d pid %d (was %d)", p.Restarts(), p.Calls(), p.PID(), pid)
	}
}

func TestCrashingPluginIsReported(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	p := launch(t, m, Config{})
	if err := p.Configure(modeCfg("crash", "")); err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	_, err := p.Route(context.Background(), sdk.RouteRequest{Topo: ring(t)})
	if err == nil || !strings.Contains(err.Error(), "exited during Route") || !strings.Contains(err.Error(), "restarted on the next call") {
		t.Fatalf("error = %v", err)
	}
	if !processGone(pid) || p.Restarts() != 1 {
		t.Fatalf("pid %d gone=%v restarts %d (one retry expected)", pid, processGone(pid), p.Restarts())
	}
}

func TestHungPluginIsKilled(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	p := launch(t, m, Config{CallTimeout: 300 * time.Millisecond})
	if err := p.Configure(modeCfg("hang", "")); err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	start := time.Now()
	_, err := p.Route(context.Background(), sdk.RouteRequest{Topo: ring(t)})
	want := "plugin test did not answer Route within 300ms; killed; will restart on next use"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if !processGone(pid) {
		t.Fatalf("hung plugin pid %d still exists", pid)
	}
	t.Logf("hang detected and killed after %v", time.Since(start))
	if err := p.Configure(modeCfg("normal", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Route(context.Background(), sdk.RouteRequest{Topo: ring(t)}); err != nil {
		t.Fatal(err)
	}
	if p.Restarts() != 1 {
		t.Fatalf("restarts = %d, want 1", p.Restarts())
	}
}

func TestCallerCancellationDoesNotKill(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	p := launch(t, m, Config{})
	if err := p.Configure(modeCfg("hang", "")); err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := p.Route(ctx, sdk.RouteRequest{Topo: ring(t)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v", err)
	}
	if p.PID() != pid {
		t.Fatalf("the caller's own deadline killed the plugin")
	}
}

func TestSHA256Pin(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(testPlugin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	good := hex.EncodeToString(sum[:])
	bad := strings.Repeat("ab", 32)
	m := newManager(t)
	tests := []struct {
		name, pin, want string
	}{
		{"match", good, ""},
		{"mismatch", bad, fmt.Sprintf("plugin pinned: refusing to run %s: its sha256 is %s, the pin says %s", testPlugin, good, bad)},
		{"malformed", "xyz", `sha256 pin "xyz" is not 64 hex digits`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := m.Launch(context.Background(), Config{Name: "pinned", Kind: sdk.KindRouting, Path: testPlugin, SHA256: tc.pin})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				p.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestKindMismatch(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	_, err := m.Launch(context.Background(), Config{Name: "wrong", Kind: sdk.KindLIDAssign, Path: testPlugin})
	want := `is a "routing_engine" plugin (testplugin 0.0.1), but it is configured as "lid_assigner"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v", err)
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	var pids []int
	for i := 0; i < 3; i++ {
		p := launch(t, m, Config{Name: fmt.Sprintf("p%d", i)})
		pids = append(pids, p.PID())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if pid == 0 || !processGone(pid) {
			t.Fatalf("plugin pid %d survived Close", pid)
		}
	}
	if _, err := os.Stat(m.socketDir); !os.IsNotExist(err) {
		t.Fatalf("socket dir %s left behind", m.socketDir)
	}
}

func TestSocketDirTooLong(t *testing.T) {
	t.Parallel()
	_, err := New(Options{SocketDir: filepath.Join(t.TempDir(), strings.Repeat("d", 90))})
	if err == nil || !strings.Contains(err.Error(), "unix socket paths are limited to 108 bytes") {
		t.Fatalf("error = %v", err)
	}
}

func TestServeRefusesInconsistentKind(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	_, err := m.Launch(context.Background(), Config{Name: "liar", Kind: sdk.KindLIDAssign, Path: testPlugin,
		Env: []string{"TESTPLUGIN_CLAIM_KIND=lid_assigner"}, StartTimeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), `Info().Kind is "lid_assigner" but`) {
		t.Fatalf("error = %v", err)
	}
}

// TestTestPluginConforms runs the vendor conformance kit against the test
// plugin binary: the kit's own launcher must interoperate with Serve.
func TestTestPluginConforms(t *testing.T) {
	t.Parallel()
	sdktest.RunRoutingEngine(t, testPlugin, sdktest.Options{})
}

// BenchmarkRouteReferenceFabric is one Route call to a real plugin process on
// the reference fabric (1,620 switches, 13,284 endpoints): 21.5 MB of planes
// back, topology out, all validation included.
func BenchmarkRouteReferenceFabric(b *testing.B) {
	topo, err := sdktest.FatTree3(36)
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	p, err := m.Launch(context.Background(), Config{Name: "bench", Kind: sdk.KindRouting, Path: testPlugin})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Configure(modeCfg("synthetic", "")); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(topo.Switches()) * len(topo.Endpoints())))
	for b.Loop() {
		if _, err := p.Route(context.Background(), sdk.RouteRequest{Topo: topo}); err != nil {
			b.Fatal(err)
		}
	}
}
