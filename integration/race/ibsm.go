package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
)

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
	if err := benchutil.WriteIBSimConfig(cfg, sim.Sockname, filepath.Join(dir, "state"), binDir, engine); err != nil {
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
		return nil, fmt.Errorf("ibsm run --once on ibsim exited %d:\n%s", res.ExitCode, benchutil.TailLines(res.Stderr, 15))
	}
	if r.Summary, err = benchutil.ParseSummary(res.Stdout); err != nil {
		return nil, fmt.Errorf("%w\nstdout:\n%s", err, benchutil.TailLines(res.Stdout, 15))
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
