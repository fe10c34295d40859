// Package integration runs the real ibsm: real plugin binaries launched by
// the host, the embedded fabric, and the stock tools (ibdmchk) checking what
// was programmed. Fault scenarios prove that bad input loses nothing.
package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/integration/benchutil"
)

// binDir holds ibsm and the plugin binaries, built once for all tests.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ibsm-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := 1
	if err := buildAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "integration: building binaries:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildAll builds ibsm and the first-party plugins the way the benchmark
// does, plus the misbehaving test engine.
func buildAll(dir string) error {
	if err := benchutil.Build("go", "..", dir); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "ibsm-plugin-badengine"), "./testdata/badengine")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./testdata/badengine: %v\n%s", err, out)
	}
	return nil
}

// setup describes one test fabric and routing configuration.
type setup struct {
	net      string   // topology file (copied into the test dir)
	engine   string   // routing engine
	fallback []string // fallback engines
	badMode  string   // badengine's mode when engine or a fallback is "badengine"
	timeout  string   // plugin_timeout
	sweep    string   // sweep_interval
	updnRoot string   // updn root_guids entry
	lmc      int
}

// writeConfig writes an HCL config for s into dir and returns its path.
func writeConfig(t *testing.T, dir string, s setup) string {
	t.Helper()
	src, err := os.ReadFile(s.net)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fabric.net"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if s.timeout == "" {
		s.timeout = "30s"
	}
	if s.sweep == "" {
		s.sweep = "10s"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fabric {\n  transport = \"sim\"\n  topology = \"fabric.net\"\n}\n")
	fmt.Fprintf(&b, "sm {\n  state_dir = \"state\"\n  lmc = %d\n  plugin_timeout = %q\n  mad_timeout = \"100ms\"\n  sweep_interval = %q\n}\n", s.lmc, s.timeout, s.sweep)
	for _, name := range []string{"minhop", "updn", "badengine"} {
		fmt.Fprintf(&b, "plugin \"routing_engine\" %q {\n  path = %q\n", name, filepath.Join(binDir, "ibsm-plugin-"+name))
		if name == "badengine" && s.badMode != "" {
			fmt.Fprintf(&b, "  config {\n    mode = %q\n  }\n", s.badMode)
		}
		if name == "updn" && s.updnRoot != "" {
			fmt.Fprintf(&b, "  config {\n    root_guids = [%q]\n  }\n", s.updnRoot)
		}
		b.WriteString("}\n")
	}
	fmt.Fprintf(&b, "plugin \"lid_assigner\" \"sequential\" {\n  path = %q\n}\n", filepath.Join(binDir, "ibsm-plugin-sequential"))
	fmt.Fprintf(&b, "plugin \"vl_assigner\" \"single\" {\n  path = %q\n}\n", filepath.Join(binDir, "ibsm-plugin-single"))
	fb := make([]string, len(s.fallback))
	for i, f := range s.fallback {
		fb[i] = fmt.Sprintf("%q", f)
	}
	fmt.Fprintf(&b, "routing {\n  engine = %q\n  fallback = [%s]\n  lid_assigner = \"sequential\"\n  vl_assigner = \"single\"\n}\n", s.engine, strings.Join(fb, ", "))
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func loadConfig(t *testing.T, path string) *conf.Config {
	t.Helper()
	cfg, diags := conf.Load(path)
	if diags.HasErrors() {
		t.Fatalf("config: %s", conf.FormatDiagnostics(diags))
	}
	return cfg
}

// start builds an App for the config at path; it is closed at test end.
func start(t *testing.T, path string) *app.App {
	t.Helper()
	a, err := app.New(context.Background(), loadConfig(t, path), nil)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}

// lfts snapshots every switch's LFT in the embedded fabric.
func lfts(t *testing.T, a *app.App) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	topo := a.SM.Applied()
	if topo == nil {
		t.Fatal("no plan applied yet")
	}
	for _, sw := range topo.Topo.Switches() {
		g := topo.Topo.Nodes[sw].GUID
		l, err := a.Sim.LFT(g)
		if err != nil {
			t.Fatal(err)
		}
		out[g] = string(l)
	}
	return out
}

const (
	ft2Net   = "../conf/examples/ft2-648.net"
	ring6Net = "../conf/examples/ring6.net"
)
