package benchutil

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ibsm/ibsm/conf"
)

// TestConfigsLoad: the configs both benchmarks write are accepted by the
// configuration loader as written, with the fabric each asks for.
func TestConfigsLoad(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	tests := []struct {
		name    string
		write   func(path string) error
		check   func(c *conf.Config) bool
		timeout time.Duration
	}{
		{"sim", func(p string) error {
			return WriteConfig(p, filepath.Join(dir, "f.net"), filepath.Join(dir, "state"), bin, "updn")
		},
			func(c *conf.Config) bool {
				return c.Fabric.Transport == conf.TransportSim && c.Fabric.Topology == filepath.Join(dir, "f.net")
			}, 120 * time.Second},
		{"ibsim", func(p string) error { return WriteIBSimConfig(p, "race-42", filepath.Join(dir, "state"), bin, "updn") },
			func(c *conf.Config) bool {
				return c.Fabric.Transport == conf.TransportIBSim && c.Fabric.Socket == "race-42"
			},
			300 * time.Second},
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
			t.Errorf("%s: fabric %+v", tc.name, c.Fabric)
		}
		if c.SM.PluginTimeout != tc.timeout || c.Routing.Engine != "updn" || len(c.Plugins) != 3 {
			t.Errorf("%s: plugin timeout %v, engine %q, %d plugins", tc.name, c.SM.PluginTimeout, c.Routing.Engine, len(c.Plugins))
		}
	}
}
