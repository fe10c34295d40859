package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk"
)

// exampleDir is the example plugin's own Go module (sdk/README.md).
const exampleDir = "../sdk/examples/minimal-engine"

// buildExample builds the example plugin from its own module, against the
// SDK alone, into binDir.
func buildExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "ibsm-example-minimal-engine")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = exampleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", exampleDir, err, out)
	}
	return bin
}

// exampleConfig writes a config that routes the 648-CA fat tree with the
// example engine (require_acyclic on, so the single-VL plan it hands the
// host is deadlock-free by its own check too).
func exampleConfig(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(ft2Net)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fabric.net"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`fabric {
  transport = "sim"
  topology  = "fabric.net"
}
sm {
  state_dir   = "state"
  mad_timeout = "100ms"
}
plugin "routing_engine" "minimal-engine" {
  path = %q
  config {
    require_acyclic = true
  }
}
plugin "lid_assigner" "sequential" {
  path = %q
}
plugin "vl_assigner" "single" {
  path = %q
}
routing {
  engine       = "minimal-engine"
  lid_assigner = "sequential"
  vl_assigner  = "single"
}
`, bin, filepath.Join(binDir, "ibsm-plugin-sequential"), filepath.Join(binDir, "ibsm-plugin-single"))
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSDKExamplePlugin: the example plugin, built from its own module,
// brings the embedded 648-CA fat tree up as the routing engine; it reports
// the SDK version it was built with (the SDK module's version), and the
// logger sdk.Serve handed it logs at the host's level: its debug line
// shows under --log-level debug and not under info.
func TestSDKExamplePlugin(t *testing.T) {
	bin := buildExample(t)
	cfg := exampleConfig(t, bin)

	out, code := ibsm(t, "run", "--once", "--log-level", "debug", "--config", cfg)
	if code != 0 || !strings.Contains(out, "SUBNET UP") || !strings.Contains(out, "engine minimal-engine") {
		t.Fatalf("ibsm run --once with the example engine: exit %d\n%s", code, out)
	}
	routed := regexp.MustCompile(`(?m)^.*DEBUG.*minimal-engine.*routed.*switches=54 endpoints=702 .*acyclic=yes`)
	if !routed.MatchString(out) {
		t.Errorf("the plugin's debug line is missing at --log-level debug:\n%s", out)
	}
	out, code = ibsm(t, "run", "--once", "--log-level", "info", "--config", cfg)
	if code != 0 || !strings.Contains(out, "SUBNET UP") {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "routed") {
		t.Errorf("the plugin logged at debug under --log-level info:\n%s", out)
	}

	out, code = ibsm(t, "plugins", "list", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("plugins list: exit %d\n%s", code, out)
	}
	var list struct {
		Plugins []struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			SDKVersion string `json:"sdk_version"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("plugins list --json: %v\n%s", err, out)
	}
	found := false
	for _, p := range list.Plugins {
		if p.Name == "minimal-engine" {
			found = true
			if p.Version != "1.0.0" || p.SDKVersion != sdk.SDKVersion {
				t.Errorf("example reports version %q, SDK %q; want 1.0.0, SDK %s", p.Version, p.SDKVersion, sdk.SDKVersion)
			}
		}
	}
	if !found {
		t.Errorf("plugins list lacks the example:\n%s", out)
	}
}

// TestSDKModuleVersion: the SDK module's version, as the main module and
// the example require it, is the version every plugin reports (SDKVersion).
func TestSDKModuleVersion(t *testing.T) {
	want := "github.com/ibsm/ibsm/sdk v" + sdk.SDKVersion
	for _, f := range []string{"../go.mod", filepath.Join(exampleDir, "go.mod")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^\s*(require\s+)?` + regexp.QuoteMeta(want) + `\s*$`).Match(b) {
			t.Errorf("%s does not require %s", f, want)
		}
	}
}
