package benchutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/conf"
)

// TestConfigsLoad: the configs the benchmarks and experiments write are
// accepted by the configuration loader as written, with the fabric,
// pipeline and settings each asks for.
func TestConfigsLoad(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	state := filepath.Join(dir, "state")
	net := filepath.Join(dir, "f.net")
	tests := []struct {
		name    string
		write   func(path string) error
		check   func(c *conf.Config) bool
		timeout time.Duration
		engine  string
		lid, vl string
	}{
		{"sim", func(p string) error { return WriteConfig(p, net, state, bin, "updn") },
			func(c *conf.Config) bool {
				return c.Fabric.Transport == conf.TransportSim && c.Fabric.Topology == net
			}, 120 * time.Second, "updn", "sequential", "single"},
		{"ibsim", func(p string) error { return WriteIBSimConfig(p, "race-42", state, bin, "updn") },
			func(c *conf.Config) bool {
				return c.Fabric.Transport == conf.TransportIBSim && c.Fabric.Socket == "race-42"
			}, 300 * time.Second, "updn", "sequential", "single"},
		{"plugin config blocks", Config{Topology: net, StateDir: state, BinDir: bin, Engine: "nue", VLAssigner: "nue-vl",
			EngineConfig: []string{"vls = 8", "reroute = 0"}, VLConfig: []string{"vls = 8"}, PluginTimeout: "30m"}.Write,
			func(c *conf.Config) bool {
				return c.Plugins[0].HasConfig && !c.Plugins[1].HasConfig && c.Plugins[2].HasConfig &&
					c.SM.SweepInterval == conf.DefaultSweepInterval
			}, 30 * time.Minute, "nue", "sequential", "nue-vl"},
		{"lid assigner, lmc, switch_to_switch", Config{Topology: net, StateDir: state, BinDir: bin, Engine: "ftree", LIDAssigner: "lin",
			LMC: 2, SwitchToSwitch: "best_effort", PluginTimeout: "600s"}.Write,
			func(c *conf.Config) bool {
				return c.SM.LMC == 2 && c.Routing.SwitchToSwitch == conf.SwitchToSwitchBestEffort
			}, 600 * time.Second, "ftree", "lin", "single"},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, tc.name+".hcl")
		if err := tc.write(path); err != nil {
			t.Fatal(err)
		}
		c, diags := conf.Load(path)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", tc.name, diags.Error())
		}
		if !tc.check(c) {
			t.Errorf("%s: fabric %+v, sm %+v, routing %+v", tc.name, c.Fabric, c.SM, c.Routing)
		}
		r := c.Routing
		if c.SM.PluginTimeout != tc.timeout || r.Engine != tc.engine || r.LIDAssigner != tc.lid || r.VLAssigner != tc.vl ||
			len(r.Fallback) != 0 || len(c.Plugins) != 3 {
			t.Errorf("%s: plugin timeout %v, routing %+v, %d plugins", tc.name, c.SM.PluginTimeout, r, len(c.Plugins))
		}
		for _, p := range c.Plugins {
			if p.Path != filepath.Join(bin, "ibsm-plugin-"+p.Name) {
				t.Errorf("%s: plugin %s at %s", tc.name, p.Name, p.Path)
			}
		}
	}
}

// TestConfigHCL: the layout the benchmarks' configs have always had
// (attributes aligned, a blank line between blocks), config blocks
// included.
func TestConfigHCL(t *testing.T) {
	got := Config{Topology: "/f.net", StateDir: "/s", BinDir: "/b", Engine: "nue", VLAssigner: "nue-vl",
		EngineConfig: []string{"vls = 8", "reroute = 0"}, VLConfig: []string{"vls = 8"}, PluginTimeout: "30m"}.HCL()
	want := `fabric {
  transport = "sim"
  topology  = "/f.net"
}

sm {
  lmc            = 0
  state_dir      = "/s"
  plugin_timeout = "30m"
}

plugin "routing_engine" "nue" {
  path = "/b/ibsm-plugin-nue"
  config {
    vls = 8
    reroute = 0
  }
}

plugin "lid_assigner" "sequential" {
  path = "/b/ibsm-plugin-sequential"
}

plugin "vl_assigner" "nue-vl" {
  path = "/b/ibsm-plugin-nue-vl"
  config {
    vls = 8
  }
}

routing {
  engine       = "nue"
  lid_assigner = "sequential"
  vl_assigner  = "nue-vl"
}
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestPluginDir: the directory comes back absolute when every plugin is
// there; a missing one is named with what to do.
func TestPluginDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ibsm-plugin-updn"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := PluginDir(dir, "-bin", "updn"); err != nil || got != dir {
		t.Errorf("PluginDir(updn) = %q, %v; want %q", got, err, dir)
	}
	_, err := PluginDir(dir, "-bin", "updn", "nue")
	if err == nil || !strings.Contains(err.Error(), "plugin nue") || !strings.Contains(err.Error(), "pass -bin") {
		t.Errorf("PluginDir(updn, nue) error %v; want it to name nue and -bin", err)
	}
}

// TestWorkDir: a given directory is created and kept, a temporary one
// removed by done.
func TestWorkDir(t *testing.T) {
	given := filepath.Join(t.TempDir(), "a", "b")
	got, done, err := WorkDir(given, "x-")
	if err != nil || got != given {
		t.Fatalf("WorkDir(%q) = %q, %v", given, got, err)
	}
	done()
	if _, err := os.Stat(given); err != nil {
		t.Errorf("given work directory after done: %v", err)
	}
	tmp, done, err := WorkDir("", "benchutil-workdir-")
	if err != nil || !filepath.IsAbs(tmp) || !strings.HasPrefix(filepath.Base(tmp), "benchutil-workdir-") {
		t.Fatalf("WorkDir(\"\") = %q, %v", tmp, err)
	}
	done()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary work directory after done: %v", err)
	}
}
