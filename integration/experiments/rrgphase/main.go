// Command rrgphase measures the host's routing phase on seeded random
// regular graphs: per seed, `ibsm topo rrg --switches S --ports D --cas C
// --seed N` is planned through the host's own pipeline (host/app on the
// embedded fabric, the real plugin binaries, the verifier), as `ibsm run
// --once` plans it, with a fresh state directory per run (no plan cache).
// It prints, per seed, the routing phase and its parts (route call, LID
// call, VL call, host verify) as the median and the best of -runs cold
// runs, the CPU seconds (user+sys) the phase took in the host and in each
// plugin, the plan's VLs and SLs, and whether every run of the seed gave
// the same plan; then the medians over the seeds. Machine load (the 1-minute
// load average before and after) goes beside it: on a shared machine the
// wall times follow the load, the CPU times much less.
//
//	make build
//	go run ./integration/experiments/rrgphase -bin bin -seeds 1-10 -runs 3
//
// -bisections N also scores each seed's plan (eBB over N random
// bisections, seed 1, as `ibsm verify --bisections N`); it is not timed.
// -cpuprofile FILE writes a CPU profile of the host's side of each routing
// phase (this process) to FILE.<seed>-<run>; `go tool pprof` merges them.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/sdk/analysis"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "rrgphase: %v\n", err)
		}
		os.Exit(1)
	}
}

type options struct {
	bin, work, engine, lid, vl, seeds string
	switches, ports, cas, runs        int
	bisections                        int
	cpuProfile                        string
}

func run(args []string, out, logw io.Writer) error {
	var o options
	fs := flag.NewFlagSet("rrgphase", flag.ContinueOnError)
	fs.SetOutput(logw)
	fs.StringVar(&o.bin, "bin", "bin", "directory of the ibsm-plugin-<name> binaries (make build)")
	fs.StringVar(&o.work, "work", "", "directory for fabrics, configs and state (default: a new temporary directory, removed after)")
	fs.StringVar(&o.engine, "engine", "sssp", "routing engine plugin")
	fs.StringVar(&o.lid, "lid", "sequential", "LID assigner plugin")
	fs.StringVar(&o.vl, "vl", "acro", "VL assigner plugin")
	fs.StringVar(&o.seeds, "seeds", "1-10", "seeds of the random graphs: a list (1,4,7) or a range (1-10)")
	fs.IntVar(&o.switches, "switches", 512, "switches")
	fs.IntVar(&o.ports, "ports", 12, "switch-to-switch ports per switch (the graph's degree)")
	fs.IntVar(&o.cas, "cas", 4, "CAs per switch")
	fs.IntVar(&o.runs, "runs", 3, "cold runs per seed")
	fs.IntVar(&o.bisections, "bisections", 0, "score each seed's plan with this many random bisections (0: no eBB)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the host's side; the plugins are not in it) during each routing phase to `FILE`.<seed>-<run>")
	if err := fs.Parse(args); err != nil {
		return err
	}
	seeds, err := parseSeeds(o.seeds)
	if err != nil {
		return fmt.Errorf("-seeds: %w", err)
	}
	if o.runs < 1 {
		return fmt.Errorf("-runs %d: want at least 1", o.runs)
	}
	bin, err := benchutil.PluginDir(o.bin, "-bin", o.engine, o.lid, o.vl)
	if err != nil {
		return err
	}
	work, done, err := benchutil.WorkDir(o.work, "rrgphase-")
	if err != nil {
		return err
	}
	defer done()
	fmt.Fprintf(out, "%s + %s + %s on `ibsm topo rrg --switches %d --ports %d --cas %d --seed N`, %d cold run(s) per seed, %d CPU(s)\n\n",
		o.engine, o.lid, o.vl, o.switches, o.ports, o.cas, o.runs, runtime.NumCPU())
	fmt.Fprintf(out, "| seed | routing phase median (best) | route | LIDs | VLs | verify | CPU s host / %s / %s / %s | VLs / SLs | same plan every run | eBB | load |\n", o.engine, o.lid, o.vl)
	fmt.Fprintf(out, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	var phaseMed, phaseBest, cpuMed []float64
	for _, seed := range seeds {
		s, err := measureSeed(o, bin, work, seed)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		fmt.Fprintln(out, s.row(o))
		phaseMed = append(phaseMed, s.median(func(r runResult) float64 { return r.phase }))
		phaseBest = append(phaseBest, s.best(func(r runResult) float64 { return r.phase }))
		cpuMed = append(cpuMed, s.median(runResult.cpuTotal))
	}
	fmt.Fprintf(out, "\nOver %d seeds: routing phase median of the per-seed medians **%.3f s** (per-seed best: median %.3f s); CPU (host + plugins, user+sys) median %.2f s\n",
		len(seeds), benchutil.Median(phaseMed), benchutil.Median(phaseBest), benchutil.Median(cpuMed))
	return nil
}

// parseSeeds reads "1-10" or "1,4,7".
func parseSeeds(s string) ([]int64, error) {
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := strconv.ParseInt(lo, 10, 64)
		b, err2 := strconv.ParseInt(hi, 10, 64)
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("%q is not a range like 1-10", s)
		}
		var out []int64
		for n := a; n <= b; n++ {
			out = append(out, n)
		}
		return out, nil
	}
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runResult is one cold run: seconds of wall time of the phase and of
// its stages, CPU seconds of the phase per process (host first, then the
// plugins in call order).
type runResult struct {
	phase, route, lids, vls, verify float64
	cpu                             [4]float64
	planKey                         string
	vlsUsed, sls                    int
	load                            [2]float64
}

func (r runResult) cpuTotal() float64 { return r.cpu[0] + r.cpu[1] + r.cpu[2] + r.cpu[3] }

type seedResult struct {
	seed int64
	runs []runResult
	ebb  float64 // -1: not scored
}

func (s *seedResult) median(f func(runResult) float64) float64 {
	v := make([]float64, len(s.runs))
	for i, r := range s.runs {
		v[i] = f(r)
	}
	return benchutil.Median(v)
}

func (s *seedResult) best(f func(runResult) float64) float64 {
	b := f(s.runs[0])
	for _, r := range s.runs[1:] {
		b = min(b, f(r))
	}
	return b
}

func (s *seedResult) row(o options) string {
	p := func(f func(runResult) float64) string {
		return fmt.Sprintf("%.3f (%.3f)", s.median(f), s.best(f))
	}
	cpu := make([]string, 4)
	for i := range cpu {
		cpu[i] = fmt.Sprintf("%.2f", s.median(func(r runResult) float64 { return r.cpu[i] }))
	}
	same := "yes"
	for _, r := range s.runs[1:] {
		if r.planKey != s.runs[0].planKey {
			same = "**no**"
		}
	}
	ebb := "-"
	if s.ebb >= 0 {
		ebb = fmt.Sprintf("%.4f", s.ebb)
	}
	lo, hi := s.runs[0].load[0], s.runs[0].load[0]
	for _, r := range s.runs {
		lo, hi = min(lo, r.load[0], r.load[1]), max(hi, r.load[0], r.load[1])
	}
	return fmt.Sprintf("| %d | %s | %s | %s | %s | %s | %s | %d / %d | %s | %s | %.1f–%.1f |", s.seed,
		p(func(r runResult) float64 { return r.phase }), p(func(r runResult) float64 { return r.route }),
		p(func(r runResult) float64 { return r.lids }), p(func(r runResult) float64 { return r.vls }),
		p(func(r runResult) float64 { return r.verify }), strings.Join(cpu, " / "),
		s.runs[0].vlsUsed, s.runs[0].sls, same, ebb, lo, hi)
}

func measureSeed(o options, bin, work string, seed int64) (*seedResult, error) {
	var topo bytes.Buffer
	targs := []string{"rrg", "--switches", strconv.Itoa(o.switches), "--ports", strconv.Itoa(o.ports),
		"--cas", strconv.Itoa(o.cas), "--seed", strconv.FormatInt(seed, 10)}
	if _, err := topogen.Write(targs, &topo); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("rrg%d-%d-%d-seed%d", o.switches, o.ports, o.cas, seed)
	net := filepath.Join(work, name+".net")
	if err := os.WriteFile(net, topo.Bytes(), 0o644); err != nil {
		return nil, err
	}
	res := &seedResult{seed: seed, ebb: -1}
	for i := 0; i < o.runs; i++ {
		r, err := measureRun(o, bin, work, name, net, i, i == 0 && o.bisections > 0, res)
		if err != nil {
			return nil, err
		}
		res.runs = append(res.runs, r)
	}
	return res, nil
}

// measureRun plans the fabric once with a fresh state directory. When
// score is set, the plan's eBB goes into sr.
func measureRun(o options, bin, work, name, net string, i int, score bool, sr *seedResult) (runResult, error) {
	var r runResult
	state := filepath.Join(work, "state", fmt.Sprintf("%s-%d", name, i))
	if err := os.RemoveAll(state); err != nil {
		return r, err
	}
	defer os.RemoveAll(state)
	cfg := benchutil.Config{Topology: net, StateDir: state, BinDir: bin, Engine: o.engine, LIDAssigner: o.lid, VLAssigner: o.vl,
		PluginTimeout: "600s"}
	ctx := context.Background()
	loaded, err := cfg.Load(filepath.Join(work, name+".hcl"))
	if err != nil {
		return r, err
	}
	a, err := app.New(ctx, loaded, hclog.New(&hclog.LoggerOptions{Name: "rrgphase", Level: hclog.Error, Output: os.Stderr}))
	if err != nil {
		return r, err
	}
	defer a.Close()
	r.load[0] = benchutil.LoadAvg()
	profile := ""
	if o.cpuProfile != "" {
		profile = fmt.Sprintf("%s.%s-%d", o.cpuProfile, strings.TrimPrefix(name, fmt.Sprintf("rrg%d-%d-%d-seed", o.switches, o.ports, o.cas)), i)
	}
	_, res, phase, err := benchutil.PlanTimed(ctx, a.SM, profile)
	r.load[1] = benchutil.LoadAvg()
	if err != nil {
		return r, err
	}
	r.cpu[0] = (phase.After.Self - phase.Before.Self).Seconds()
	for k, p := range []string{o.engine, o.lid, o.vl} {
		r.cpu[k+1] = (phase.After.Plugin(p) - phase.Before.Plugin(p)).Seconds()
	}
	tm := res.Timings
	r.route, r.lids, r.vls, r.verify = tm.Routing.Seconds(), tm.LIDs.Seconds(), tm.VLs.Seconds(), tm.Verify.Seconds()
	// The phase as `ibsm run --once` reports it: the stages plus what the
	// host does between them (realising the tables before the VL call).
	r.phase = phase.Wall().Seconds()
	r.planKey = fmt.Sprintf("%x", res.Key)
	r.vlsUsed = res.VLs.VLs
	sls := map[uint8]bool{}
	for lid, o := range res.Realized.LIDOwner {
		if o != 0 && lid < len(res.VLs.SLByDLID) {
			sls[res.VLs.SLByDLID[lid]] = true
		}
	}
	for _, ov := range res.VLs.Overrides {
		sls[ov.SL] = true
	}
	r.sls = len(sls)
	if score {
		rep, err := analysis.Analyse(res.Realized, res.VLs, analysis.Options{Bisections: o.bisections, Seed: 1})
		if err != nil {
			return r, err
		}
		if !rep.DeadlockFree {
			return r, fmt.Errorf("the host accepted a plan the analysis calls not deadlock-free")
		}
		sr.ebb = rep.EBB.EBB
	}
	return r, nil
}
