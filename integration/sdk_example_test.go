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
	if !hasLine(out, "[DEBUG]", "minimal-engine", "routed:", "switches=54", "endpoints=702", "acyclic=yes") {
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

// oldSDKMinhop builds the minhop plugin as it was when the SDK was 0.2.0
// (the last commit before the SDK became its own module at 0.3.0): the
// sources come out of git history with git archive, nothing in the
// working tree changes. It skips when the clone lacks that history.
func oldSDKMinhop(t *testing.T) string {
	t.Helper()
	find := exec.Command("git", "log", "--format=%H", "-1", `-S`+`const SDKVersion = "0.2.0"`, "--", "sdk/handshake.go")
	find.Dir = ".."
	out, err := find.Output()
	moved := strings.TrimSpace(string(out))
	if err != nil || moved == "" {
		t.Skipf("no git history with SDK 0.2.0 here (shallow clone?): %v", err)
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `git archive "$0^" go.mod go.sum sdk plugins/minhop plugins/internal/route plugins/internal/pcfg | tar -x -C "$1"`, moved, src)
	archive.Dir = ".."
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s^: %v\n%s", moved, err, out)
	}
	bin := filepath.Join(binDir, "ibsm-plugin-minhop-sdk020")
	build := exec.Command("go", "build", "-o", bin, "./plugins/minhop")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building minhop at %s^ (SDK 0.2.0): %v\n%s", moved, err, out)
	}
	return bin
}

// TestOldSDKPluginOnNewHost: a plugin built against an older minor SDK
// (0.2.0, which predates the "planes" capability and reports only "lmc")
// passes the handshake of this host, is listed with the SDK version it
// reports, paired with today's LID and VL assigners (the host infers
// planes from "lmc") and brings the fabric up.
func TestOldSDKPluginOnNewHost(t *testing.T) {
	bin := oldSDKMinhop(t)
	cfg := exampleConfig(t, bin)
	// The config names the routing engine "minimal-engine"; only the
	// binary is old. Drop the example's own setting, which minhop lacks.
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(b), "  config {\n    require_acyclic = true\n  }\n", "", 1)
	if err := os.WriteFile(cfg, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := ibsm(t, "plugins", "list", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("plugins list: exit %d\n%s", code, out)
	}
	var list struct {
		Plugins []struct {
			Role         string   `json:"role"`
			SDKVersion   string   `json:"sdk_version"`
			Capabilities []string `json:"capabilities"`
		} `json:"plugins"`
		Compatible bool `json:"compatible"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("plugins list --json: %v\n%s", err, out)
	}
	if !list.Compatible {
		t.Fatalf("the host finds the old plugin incompatible:\n%s", out)
	}
	engines := 0
	for _, p := range list.Plugins {
		if p.Role != "routing.engine" {
			continue
		}
		engines++
		if p.SDKVersion != "0.2.0" || strings.Join(p.Capabilities, ",") != "lmc" {
			t.Fatalf("old minhop reports SDK %q, capabilities %v; want 0.2.0, [lmc]", p.SDKVersion, p.Capabilities)
		}
	}
	if engines != 1 {
		t.Fatalf("plugins list shows %d routing engines, want the old minhop:\n%s", engines, out)
	}
	out, code = ibsm(t, "run", "--once", "--config", cfg)
	if code != 0 || !strings.Contains(out, "SUBNET UP") || !strings.Contains(out, "702 nodes (54 switches, 648 CAs)") {
		t.Fatalf("ibsm run --once with the SDK 0.2.0 minhop: exit %d\n%s", code, out)
	}
}

// TestSDKReadme runs the commands of sdk/README.md's walk-through from the
// repository root, in order: every line must be one this test knows how to
// run, so the README cannot name a command nobody ran. `make build` is what
// TestMain already did into binDir, so bin/ paths resolve to binDir; the
// rest runs verbatim (go test and go build in the example's own module).
func TestSDKReadme(t *testing.T) {
	b, err := os.ReadFile("../sdk/README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## From nothing to a running engine.*?```sh\n(.*?)```").FindSubmatch(b)
	if block == nil {
		t.Fatal("sdk/README.md has no sh block under \"From nothing to a running engine\"")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir, ran := root, 0
	for _, line := range strings.Split(strings.TrimSpace(string(block[1])), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "cd":
			dir = filepath.Clean(filepath.Join(dir, f[1]))
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		case line == "make build":
			// TestMain built ibsm and every first-party plugin into binDir.
		case len(f) >= 2 && f[0] == "go" && (f[1] == "test" || f[1] == "build"):
			cmd := exec.Command(f[0], f[1:]...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%q in %s: %v\n%s", line, dir, err, out)
			}
		case len(f) == 5 && f[0] == "bin/ibsm" && f[1] == "run" && f[2] == "--once" && f[3] == "--config":
			cfg := readmeConfig(t, filepath.Join(dir, f[4]))
			out, code := ibsm(t, "run", "--once", "--config", cfg)
			if code != 0 || !strings.Contains(out, "SUBNET UP") || !strings.Contains(out, "engine minimal-engine") {
				t.Fatalf("%q: exit %d\n%s", line, code, out)
			}
		default:
			t.Fatalf("sdk/README.md names %q, which this test does not run: teach it or change the README", line)
		}
		ran++
	}
	if ran < 6 {
		t.Fatalf("only %d README commands ran", ran)
	}
}

// readmeConfig copies the README's config next to a fresh state dir, its
// bin/ paths pointing at binDir (where make build's binaries are) and the
// example binary the README built.
func readmeConfig(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	rel := filepath.Dir(path)
	s = strings.ReplaceAll(s, `"../../../bin/ibsm-example-minimal-engine"`, fmt.Sprintf("%q", filepath.Join(rel, "../../../bin/ibsm-example-minimal-engine")))
	s = strings.ReplaceAll(s, `"../../../bin/`, `"`+binDir+"/")
	s = strings.ReplaceAll(s, `"../../../conf/`, `"`+filepath.Join(rel, "../../../conf")+"/")
	s = strings.ReplaceAll(s, `"../../../.ibsm-state/minimal-engine"`, `"state"`)
	if strings.Contains(s, `"../`) {
		t.Fatalf("%s has a relative path this test does not map:\n%s", path, s)
	}
	out := filepath.Join(t.TempDir(), "ibsm.hcl")
	if err := os.WriteFile(out, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// hasLine reports whether one line of out holds every part.
func hasLine(out string, parts ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
