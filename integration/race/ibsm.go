package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
)

// BuildIBSM compiles ibsm and the named plugins (plus the LID and VL
// assigners the config uses) into dir, as `make build` does.
func BuildIBSM(goTool, root, dir string, engines []string) error {
	type target struct{ out, pkg string }
	ts := []target{{"ibsm", "./host/cmd/ibsm"}}
	seen := map[string]bool{}
	for _, p := range append([]string{"sequential", "single"}, engines...) {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		ts = append(ts, target{"ibsm-plugin-" + p, "./plugins/" + p})
	}
	for _, t := range ts {
		cmd := exec.Command(goTool, "build", "-trimpath", "-o", filepath.Join(dir, t.out), t.pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", t.pkg, err, out)
		}
	}
	return nil
}

// WriteIBSimConfig writes an ibsm config that attaches to the ibsim behind
// sockname at ibsim's default port (where OpenSM's umad2sim attaches too)
// and brings it up with one engine and no fallback. The MAD settings are
// those of benchutil.WriteConfig.
func WriteIBSimConfig(path, sockname, stateDir, binDir, engine string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fabric {\n  transport = \"ibsim\"\n  socket    = %q\n}\n\n", sockname)
	fmt.Fprintf(&b, "sm {\n  sweep_interval = \"10s\"\n  lmc            = 0\n  state_dir      = %q\n"+
		"  mad_window     = 16\n  mad_timeout    = \"200ms\"\n  mad_retries    = 3\n  plugin_timeout = \"300s\"\n  priority       = 15\n}\n\n", stateDir)
	for _, p := range []struct{ kind, name string }{
		{"routing_engine", engine}, {"lid_assigner", "sequential"}, {"vl_assigner", "single"},
	} {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n}\n\n", p.kind, p.name, filepath.Join(binDir, "ibsm-plugin-"+p.name))
	}
	fmt.Fprintf(&b, "routing {\n  engine       = %q\n  lid_assigner = \"sequential\"\n  vl_assigner  = \"single\"\n}\n", engine)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// IBSMRun is one `ibsm run --once` against ibsim.
type IBSMRun struct {
	Result  *benchutil.Result
	Summary *benchutil.Summary // nil when the plan was rejected
	// Rejected holds the first lines of the refusal when every engine
	// failed (the verifier or the single-VL assigner refused the plan).
	Rejected string
	// PluginRSSKiB sums the plugins' sampled VmHWM.
	PluginRSSKiB int64
}

// RunIBSM runs `ibsm run --once` on the ibsim behind sim.
func RunIBSM(ctx context.Context, binDir string, sim *benchutil.IBSim, engine, dir string, timeout time.Duration) (*IBSMRun, error) {
	cfg := filepath.Join(dir, "ibsm.hcl")
	if err := WriteIBSimConfig(cfg, sim.Sockname, filepath.Join(dir, "state"), binDir, engine); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command(filepath.Join(binDir, "ibsm"), "run", "--once", "--config", cfg)
	res, err := benchutil.Run(ctx, cmd, benchutil.RunOptions{SampleEvery: 20 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	r := &IBSMRun{Result: res}
	for name, kib := range res.DescendantHWMKiB {
		if strings.HasPrefix(name, "ibsm-plugin-") {
			r.PluginRSSKiB += kib
		}
	}
	if res.ExitCode != 0 {
		if i := strings.Index(res.Stderr, "every routing engine failed"); i >= 0 {
			r.Rejected = firstLines(res.Stderr[i:], 4, 500)
			return r, nil
		}
		return nil, fmt.Errorf("ibsm run --once on ibsim exited %d:\n%s", res.ExitCode, tail(res.Stderr, 15))
	}
	if r.Summary, err = benchutil.ParseSummary(res.Stdout); err != nil {
		return nil, fmt.Errorf("%w\nstdout:\n%s", err, tail(res.Stdout, 15))
	}
	return r, nil
}

// firstLines joins up to k lines of s with " / ", cut to n bytes.
func firstLines(s string, k, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > k {
		l = l[:k]
	}
	for i := range l {
		l[i] = strings.TrimSpace(l[i])
	}
	return firstLine(strings.Join(l, " / "), n)
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
