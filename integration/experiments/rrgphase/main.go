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
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/topogen"
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
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	for _, p := range []string{o.engine, o.lid, o.vl} {
		if _, err := os.Stat(filepath.Join(bin, "ibsm-plugin-"+p)); err != nil {
			return fmt.Errorf("plugin %s: %v; run 'make build' or pass -bin", p, err)
		}
	}
	work := o.work
	if work == "" {
		if work, err = os.MkdirTemp("", "rrgphase-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
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
		len(seeds), median(phaseMed), median(phaseBest), median(cpuMed))
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
	return median(v)
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

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

const config = `fabric {
  transport = "sim"
  topology  = %q
}
sm {
  lmc            = 0
  state_dir      = %q
  plugin_timeout = "600s"
}
plugin "routing_engine" %q {
  path = %q
}
plugin "lid_assigner" %q {
  path = %q
}
plugin "vl_assigner" %q {
  path = %q
}
routing {
  engine       = %q
  lid_assigner = %q
  vl_assigner  = %q
}
`

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
	pl := func(p string) string { return filepath.Join(bin, "ibsm-plugin-"+p) }
	cfgPath := filepath.Join(work, name+".hcl")
	src := fmt.Appendf(nil, config, net, state, o.engine, pl(o.engine), o.lid, pl(o.lid), o.vl, pl(o.vl), o.engine, o.lid, o.vl)
	if err := os.WriteFile(cfgPath, src, 0o644); err != nil {
		return r, err
	}
	cfg, diags := conf.Load(cfgPath)
	if diags.HasErrors() {
		return r, fmt.Errorf("%s", conf.FormatDiagnostics(diags))
	}
	ctx := context.Background()
	a, err := app.New(ctx, cfg, hclog.New(&hclog.LoggerOptions{Name: "rrgphase", Level: hclog.Error, Output: os.Stderr}))
	if err != nil {
		return r, err
	}
	defer a.Close()
	r.load[0] = loadavg()
	mark := &phaseMark{}
	if o.cpuProfile != "" {
		mark.profile = fmt.Sprintf("%s.%s-%d", o.cpuProfile, strings.TrimPrefix(name, fmt.Sprintf("rrg%d-%d-%d-seed", o.switches, o.ports, o.cas)), i)
	}
	a.SM.SetProgress(mark)
	_, _, res, err := a.SM.Plan(ctx)
	end := time.Now()
	after := sample()
	if perr := mark.stopProfile(); perr != nil && err == nil {
		err = perr
	}
	r.load[1] = loadavg()
	if err != nil {
		return r, err
	}
	before, began, ok := mark.get()
	if !ok {
		return r, fmt.Errorf("the SM never announced its routing phase")
	}
	r.cpu[0] = after.host - before.host
	for k, p := range []string{o.engine, o.lid, o.vl} {
		r.cpu[k+1] = after.plugin["ibsm-plugin-"+p] - before.plugin["ibsm-plugin-"+p]
	}
	tm := res.Timings
	r.route, r.lids, r.vls, r.verify = tm.Routing.Seconds(), tm.LIDs.Seconds(), tm.VLs.Seconds(), tm.Verify.Seconds()
	// The phase as `ibsm run --once` reports it: the stages plus what the
	// host does between them (realising the tables before the VL call).
	r.phase = end.Sub(began).Seconds()
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

// cpuSample is the CPU seconds (user+sys) so far of this process and of
// each child process by executable name.
type cpuSample struct {
	host   float64
	plugin map[string]float64
}

// phaseMark notes the time and samples CPU when the routing phase starts,
// and starts the CPU profile there when profile names a file.
type phaseMark struct {
	mu      sync.Mutex
	at      cpuSample
	began   time.Time
	set     bool
	profile string
	prof    *os.File
	profErr error
}

func (m *phaseMark) Phase(name, _ string) {
	if name != "routing" {
		return
	}
	m.mu.Lock()
	if m.profile != "" && m.prof == nil {
		m.prof, m.profErr = os.Create(m.profile)
		if m.profErr == nil {
			if m.profErr = pprof.StartCPUProfile(m.prof); m.profErr != nil {
				m.prof.Close()
				m.prof = nil
			}
		}
	}
	m.mu.Unlock()
	began := time.Now()
	s := sample()
	m.mu.Lock()
	m.at, m.began, m.set = s, began, true
	m.mu.Unlock()
}

// stopProfile ends the phase's CPU profile, if one was started.
func (m *phaseMark) stopProfile() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prof == nil {
		return m.profErr
	}
	pprof.StopCPUProfile()
	err := m.prof.Close()
	m.prof = nil
	if err != nil {
		return err
	}
	return m.profErr
}

func (m *phaseMark) Count(string, int64, int64) {}

func (m *phaseMark) get() (cpuSample, time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at, m.began, m.set
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on every
// Linux architecture Go supports).
const clockTicks = 100

func sample() cpuSample {
	s := cpuSample{plugin: map[string]float64{}}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.host = tv(ru.Utime) + tv(ru.Stime)
	}
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses and
		// may hold spaces: state ppid ... utime (14th field) stime (15th).
		i := bytes.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != self {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		stt, _ := strconv.ParseFloat(f[12], 64)
		s.plugin[filepath.Base(exe)] += (ut + stt) / clockTicks
	}
	return s
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
