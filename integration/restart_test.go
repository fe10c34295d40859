package integration

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport/netfile"
)

var (
	portInfoSetsRe = regexp.MustCompile(`PortInfo (\d+),`)
	distSetsRe     = regexp.MustCompile(`(?m)^\s*distribution\s.*\s(\d+) Set `)
	smLIDRe        = regexp.MustCompile(`(?m)^SMLid:\.+(\d+)`)
)

// TestRestartKeepsRegistrations: ibsm restarted over the ibsim fabric it
// programmed, its SA state restored from state_dir/sa-state.json, sends no
// Set at all, no PortInfo Set included (no ClientReregister); smpquery
// shows every port still pointing at it. Given SA state saved by another
// SM port, it asks every CA port to re-register again.
func TestRestartKeepsRegistrations(t *testing.T) {
	nf, err := netfile.ParseFile(rand8Net)
	if err != nil {
		t.Fatal(err)
	}
	cas := caNodes(nf)
	smNode, toolNode := cas[0], cas[len(cas)-1]
	r := startRig(t, rand8Net, toolNode.Name)
	stateDir := filepath.Join(r.dir, "state")
	cfg := ibsimConfig(t, r.dir, "ibsm.hcl", "ibsim", r, smNode.Name, stateDir, 3)
	run := func(what string) (portInfo, sets int) {
		t.Helper()
		out, err := ibsmCmd(t, "run", "--once", "--config", cfg)
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		pi, ds := portInfoSetsRe.FindStringSubmatch(out), distSetsRe.FindStringSubmatch(out)
		if pi == nil || ds == nil {
			t.Fatalf("%s: no distribution line with PortInfo in:\n%s", what, out)
		}
		portInfo, _ = strconv.Atoi(pi[1])
		sets, _ = strconv.Atoi(ds[1])
		return portInfo, sets
	}
	smLID := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := r.env.Run(ctx, "smpquery", "-D", "portinfo", "0", "1")
		if err != nil {
			t.Fatalf("smpquery portinfo: %v", err)
		}
		m := smLIDRe.FindStringSubmatch(out)
		if m == nil || m[1] == "0" {
			t.Fatalf("no SM LID in smpquery portinfo:\n%s", out)
		}
		return m[1]
	}

	if pi, _ := run("cold bring-up"); pi < len(cas) {
		t.Fatalf("cold bring-up: %d PortInfo Sets, want at least one per CA (%d)", pi, len(cas))
	}
	before := smLID()
	if pi, sets := run("restart"); pi != 0 || sets != 0 {
		t.Fatalf("restart over the programmed fabric: %d PortInfo Sets, %d Sets; want none", pi, sets)
	}
	if after := smLID(); after != before {
		t.Fatalf("the tool host's SM LID moved %s -> %s", before, after)
	}

	// SA state another SM port saved is not this SM's: every CA re-registers.
	path := filepath.Join(stateDir, "sa-state.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no SA state kept: %v", err)
	}
	b = regexp.MustCompile(`"sm_port_guid":\d+`).ReplaceAll(b, []byte(`"sm_port_guid":1`))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if pi, _ := run("restart with foreign SA state"); pi != len(cas) {
		t.Fatalf("restart with SA state of another SM port: %d PortInfo Sets, want one ClientReregister per CA (%d)", pi, len(cas))
	}
}
