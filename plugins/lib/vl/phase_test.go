package vl_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/vl"
	"github.com/ibsm/ibsm/sdk"
)

// TestACROSeeds runs the acro plugin's body (vl.Assign on realised tables,
// as the host calls it) on 512-switch random 12-regular fabrics with 4 CAs
// per switch, one per seed in IBSM_ACRO_SEEDS (e.g. "1-10"), and prints
// each plan's SHA-256: a change to acro or the plan must keep those hashes
// (same plan) unless it means to change the plan. Its times are a warm
// process's: the plugin runs in a fresh one, where every first-touched
// page costs a fault, so judge memory-heavy changes with
// integration/experiments/rrgphase (or one seed per process). Opt-in: it
// routes each seed with sssp first (about 0.2 s a seed).
func TestACROSeeds(t *testing.T) {
	spec := os.Getenv("IBSM_ACRO_SEEDS")
	if spec == "" {
		t.Skip("set IBSM_ACRO_SEEDS=1-10 to time acro and hash its plans")
	}
	lo, hi, ok := strings.Cut(spec, "-")
	if !ok {
		hi = lo
	}
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil || a > b {
		t.Fatalf("IBSM_ACRO_SEEDS=%q: want N or N-M", spec)
	}
	var total, totalCPU time.Duration
	for seed := a; seed <= b; seed++ {
		real, _ := rrg512(t, int64(seed))
		c0, t0 := cpuTime(t), time.Now()
		v, err := vl.Assign(context.Background(), hclog.NewNullLogger(), "acro", sdk.VLRequest{Realized: real}, vl.ACRO)
		d, c := time.Since(t0), cpuTime(t)-c0
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		total += d
		totalCPU += c
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: acro %v (CPU %v), VLs %d, SL2VL %d, overrides %d, plan %x", seed, d.Round(time.Millisecond), c.Round(time.Millisecond), v.VLs, len(v.SL2VL), len(v.Overrides), sha256.Sum256(js))
	}
	t.Logf("acro total %v, CPU %v (user+sys of the process)", total.Round(time.Millisecond), totalCPU.Round(time.Millisecond))
}

// cpuTime is the user+sys CPU time of this process so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
