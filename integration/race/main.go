// Command race brings the same simulated fat trees up with OpenSM 3.3.23
// and with ibsm, one after the other on fresh ibsim instances in one run,
// and prints a Markdown table: time to SUBNET UP and per phase, SMP Gets
// and Sets, peak RSS, the MAD rate against ibsim's own floor, and the
// routing quality of what each SM left in the fabric, read back with our
// own SMPs and measured by sdk/analysis identically for both.
//
//	go run ./integration/race -topos ft2-36,ft3-24,ft3-36   (or make bench-opensm)
//
// How each number is obtained:
//
//   - OpenSM runs as `opensm -o -R <engine>` through libumad2sim. Its
//     phases come from its log (benchutil.ParseOpenSMLog). Its SMPs are
//     counted by a small LD_PRELOAD shim (shim/countmad.c, compiled here
//     with cc) that interposes umad_send; ibsim has no counter and OpenSM
//     logs single MADs only at DEBUG level, which would slow what we time.
//   - ibsm runs as `ibsm run --once` with transport "ibsim" (pure Go, no
//     preload) and prints its own phases, SMP counts and peak RSS.
//   - Peak RSS is the kernel's: wait4's ru_maxrss for OpenSM; for ibsm its
//     own VmHWM plus the plugins' sampled VmHWM (an upper bound on the sum).
//   - Every SM gets a fresh ibsim: a used one keeps LIDs and LFTs, and the
//     second SM would find little to program.
//   - The floor is the best completion rate of pipelined SubnGet(NodeInfo)
//     at 1..4 hops over one raw attachment, swept over windows.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
)

// topoSpec is one fabric of the race.
type topoSpec struct {
	Name string
	Args []string // ibsm topo arguments
	Big  bool     // runs -big-runs times instead of -runs
}

var knownTopos = []topoSpec{
	{"ft2-36", []string{"fat-tree", "--radix", "36", "--levels", "2"}, false},
	{"ft3-24", []string{"fat-tree", "--radix", "24", "--levels", "3"}, false},
	{"ft3-36", []string{"fat-tree", "--radix", "36", "--levels", "3"}, true},
}

// engineSpec pairs OpenSM's -R engine with the ibsm routing plugin run
// against it ("" when ibsm has none).
type engineSpec struct{ OSM, IBSM string }

func (e engineSpec) String() string {
	if e.IBSM == e.OSM || e.IBSM == "" {
		return e.OSM
	}
	return e.OSM + "/" + e.IBSM
}

// parseEngines reads "updn,minhop,ftree:sftree". An engine whose ibsm
// plugin directory does not exist runs on OpenSM only.
func parseEngines(s, root string) ([]engineSpec, []string, error) {
	var out []engineSpec
	var notes []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		osm, ib, ok := strings.Cut(f, ":")
		if !ok {
			ib = osm
		}
		if osm == "" {
			return nil, nil, fmt.Errorf("-engines %q: empty OpenSM engine in %q; write osm[:ibsm-plugin]", s, f)
		}
		if ib != "" {
			if _, err := os.Stat(filepath.Join(root, "plugins", ib, "main.go")); err != nil {
				notes = append(notes, fmt.Sprintf("ibsm has no plugin %q (plugins/%s): %s runs on OpenSM only", ib, ib, osm))
				ib = ""
			}
		}
		out = append(out, engineSpec{osm, ib})
	}
	if len(out) == 0 {
		return nil, nil, errors.New("-engines names no engine")
	}
	return out, notes, nil
}

func pickTopos(s string) ([]topoSpec, error) {
	var out []topoSpec
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, t := range knownTopos {
			if t.Name == n {
				out = append(out, t)
				found = true
			}
		}
		if !found {
			var names []string
			for _, t := range knownTopos {
				names = append(names, t.Name)
			}
			return nil, fmt.Errorf("-topos: unknown topology %q; known: %s", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

type options struct {
	topos, engines, out, work, cc, sms string
	runs, bigRuns, floorMADs           int
	floorWindows                       []int
	seed                               int64
	timeout                            time.Duration
	keep                               bool
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "race:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	var o options
	var windows string
	fs := flag.NewFlagSet("race", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.topos, "topos", "ft2-36,ft3-24,ft3-36", "topologies, comma-separated (ft2-36, ft3-24, ft3-36)")
	fs.StringVar(&o.engines, "engines", "updn,minhop,ftree:sftree", "engines as osm[:ibsm-plugin], comma-separated; the ibsm plugin defaults to the same name (ftree:sftree pairs OpenSM's ftree with ibsm's sftree)")
	fs.StringVar(&o.sms, "sms", "opensm,ibsm", "which SMs to run")
	fs.IntVar(&o.runs, "runs", 3, "bring-ups per SM and engine on the smaller trees (medians are reported)")
	fs.IntVar(&o.bigRuns, "big-runs", 1, "bring-ups per SM and engine on ft3-36")
	fs.IntVar(&o.floorMADs, "floor-mads", 20000, "SMPs per window when measuring ibsim's floor")
	fs.StringVar(&windows, "floor-windows", "1,2,4,8,16,32", "windows of outstanding SMPs swept for the floor")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the shift sample and the bisections")
	fs.StringVar(&o.out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&o.work, "work", "", "working directory (default: a temporary one, removed unless -keep)")
	fs.BoolVar(&o.keep, "keep", false, "keep the working directory (logs, .net files, configs)")
	fs.StringVar(&o.cc, "cc", "cc", "C compiler for the MAD counting shim")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "limit on each SM process")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, w := range strings.Split(windows, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			return fmt.Errorf("-floor-windows %q: want positive integers", windows)
		}
		o.floorWindows = append(o.floorWindows, n)
	}
	if o.runs < 1 || o.bigRuns < 1 {
		return errors.New("-runs and -big-runs must be at least 1")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := race(ctx, o, stderr)
	if rep != nil {
		var b strings.Builder
		rep.Markdown(&b)
		io.WriteString(stdout, b.String())
		if o.out != "" {
			if werr := os.WriteFile(o.out, []byte(b.String()), 0o644); werr != nil && err == nil {
				err = werr
			}
		}
	}
	return err
}

// repoRoot finds the module root from the working directory.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w (run from the ibsm repository)", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the ibsm module; run from the repository")
	}
	return filepath.Dir(mod), nil
}

func race(ctx context.Context, o options, logw io.Writer) (*Report, error) {
	log := hclog.New(&hclog.LoggerOptions{Name: "race", Output: logw, Level: hclog.Info})
	topos, err := pickTopos(o.topos)
	if err != nil {
		return nil, err
	}
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	engines, notes, err := parseEngines(o.engines, root)
	if err != nil {
		return nil, err
	}
	doOSM, doIBSM := strings.Contains(o.sms, "opensm"), strings.Contains(o.sms, "ibsm")
	ibsimPath, opensmPath, preload, err := benchutil.OpenSMTools()
	if err != nil {
		return nil, err
	}
	work := o.work
	if work == "" {
		if work, err = os.MkdirTemp("", "ibsm-race-"); err != nil {
			return nil, err
		}
		if !o.keep {
			defer os.RemoveAll(work)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	bin := filepath.Join(work, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	var shim string
	if doOSM {
		if shim, err = BuildCountMAD(o.cc, bin); err != nil {
			return nil, err
		}
	}
	if doIBSM {
		// The LID and VL assigners every config uses, then the engines.
		plugins := []string{"sequential", "single"}
		for _, e := range engines {
			plugins = append(plugins, e.IBSM)
		}
		log.Info("building ibsm and plugins")
		if err := benchutil.BuildPlugins("go", root, bin, plugins); err != nil {
			return nil, err
		}
	}
	rep := &Report{
		Command: "go run ./integration/race " + strings.Join(os.Args[1:], " "),
		Started: time.Now(), Notes: notes, CPUs: runtime.NumCPU(),
		LoadBefore: loadAvg(),
	}
	tools := &tools{ibsim: ibsimPath, opensm: opensmPath, preload: preload, shim: shim, bin: bin, timeout: o.timeout, log: log}
	for _, tp := range topos {
		tr, err := raceTopo(ctx, o, tools, tp, engines, doOSM, doIBSM, filepath.Join(work, tp.Name))
		if tr != nil {
			rep.Topos = append(rep.Topos, tr)
		}
		if err != nil {
			rep.LoadAfter = loadAvg()
			return rep, fmt.Errorf("%s: %w", tp.Name, err)
		}
	}
	rep.LoadAfter = loadAvg()
	rep.Elapsed = time.Since(rep.Started)
	return rep, nil
}

type tools struct {
	ibsim, opensm, preload, shim, bin string
	timeout                           time.Duration
	log                               hclog.Logger
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func (t *tools) startIBSim(ctx context.Context, net, dir string) (*benchutil.IBSim, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return benchutil.StartIBSimWith(ctx, benchutil.IBSimOptions{Path: t.ibsim, NetFile: net, Dir: dir, Ready: 5 * time.Minute, NoConsole: true})
}

// dial attaches a plain (non-SM) client at ibsim's default port.
func dial(ctx context.Context, sim *benchutil.IBSim) (*ibsim.Conn, error) {
	return ibsim.Dial(ctx, ibsim.Options{SockName: sim.Sockname, RecvBuffer: 8192})
}

func raceTopo(ctx context.Context, o options, t *tools, tp topoSpec, engines []engineSpec, doOSM, doIBSM bool, dir string) (*TopoResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	net := filepath.Join(dir, tp.Name+".net")
	f, err := os.Create(net)
	if err != nil {
		return nil, err
	}
	if _, err := topogen.Write(tp.Args, f); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	tr := &TopoResult{Name: tp.Name, Args: strings.Join(tp.Args, " ")}
	t.log.Info("measuring ibsim's floor", "topology", tp.Name)
	if tr.Floor, err = t.floor(ctx, net, filepath.Join(dir, "floor"), o); err != nil {
		return tr, err
	}
	t.log.Info("ibsim floor", "topology", tp.Name, "MAD/s", int(tr.Floor.Best.Rate), "window", tr.Floor.Best.Window)
	runs := o.runs
	if tp.Big {
		runs = o.bigRuns
	}
	for _, e := range engines {
		er := &EngineResult{Engine: e}
		tr.Engines = append(tr.Engines, er)
		if doOSM {
			er.OSM = &SMResult{SM: "OpenSM"}
		}
		if doIBSM && e.IBSM != "" {
			er.IBSM = &SMResult{SM: "ibsm"}
		}
		for i := 0; i < runs; i++ {
			// Alternate who goes first, so neither always meets a
			// machine the other has just warmed (page cache, CPU
			// frequency) or loaded.
			order := []*SMResult{er.OSM, er.IBSM}
			if i%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, sm := range order {
				if sm == nil || sm.Err != "" || sm.Rejected != "" {
					continue
				}
				rd := filepath.Join(dir, fmt.Sprintf("%s-%s-%d", strings.ToLower(sm.SM), e.OSM, i))
				if err := t.oneRun(ctx, sm, e, net, rd, o.seed); err != nil {
					if ctx.Err() != nil {
						return tr, err
					}
					sm.Err = err.Error()
					t.log.Error("bring-up failed", "topology", tp.Name, "engine", e.String(), "sm", sm.SM, "error", err)
				}
			}
		}
	}
	return tr, nil
}

// floor measures ibsim's best SMP rate on a fresh instance of net.
func (t *tools) floor(ctx context.Context, net, dir string, o options) (*Floor, error) {
	sim, err := t.startIBSim(ctx, net, dir)
	if err != nil {
		return nil, err
	}
	defer sim.Stop()
	c, err := dial(ctx, sim)
	if err != nil {
		return nil, err
	}
	tp := transport.New(c, transport.Options{Window: 8, Timeout: time.Second, Retries: 2})
	paths, hops, err := floorPaths(ctx, tp, 64)
	tp.Close()
	if err != nil {
		return nil, err
	}
	raw, err := dial(ctx, sim)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	pts, err := MeasureFloor(ctx, raw, paths, o.floorWindows, o.floorMADs)
	if err != nil {
		return nil, err
	}
	return &Floor{Best: Best(pts), Points: pts, Hops: hops}, nil
}

// oneRun brings a fresh ibsim up with one SM, reads the result back and,
// on the first successful run, measures its quality.
func (t *tools) oneRun(ctx context.Context, sm *SMResult, e engineSpec, net, dir string, seed int64) error {
	sim, err := t.startIBSim(ctx, net, dir)
	if err != nil {
		return err
	}
	defer sim.Stop()
	var s Sample
	if sm.SM == "OpenSM" {
		r, err := RunOpenSM(ctx, t.opensm, t.preload, t.shim, sim, e.OSM, dir)
		if err != nil {
			return err
		}
		p := r.Phases
		s = Sample{Up: p.SubnetUp.Seconds(), Disc: p.Discovery.Seconds(), Route: p.Routing.Seconds(), Dist: p.Distribution.Seconds(),
			Wall: r.Result.Wall.Seconds(), Gets: int64(r.MADs.SMPs(methodGet)), Sets: int64(r.MADs.SMPs(methodSet)),
			RSSMiB: float64(r.Result.MaxRSSKiB) / 1024, MADSpan: r.MADs.Last.Sub(r.MADs.First).Seconds()}
		sm.Detail = r.MADs.AttrSummary()
		if p.Engine != e.OSM {
			sm.Fallback = p.Engine
		}
		t.log.Info("OpenSM", "engine", e.OSM, "subnet_up_s", s.Up, "gets", s.Gets, "sets", s.Sets, "rss_MiB", int(s.RSSMiB))
	} else {
		r, err := RunIBSM(ctx, t.bin, sim, e.IBSM, dir, t.timeout)
		if err != nil {
			return err
		}
		if r.Summary == nil {
			sm.Rejected = r.Rejected
			t.log.Info("ibsm rejected the plan", "engine", e.IBSM, "why", r.Rejected)
			return nil
		}
		m := r.Summary
		s = Sample{Up: m.SubnetUp.Seconds(), Disc: m.Discovery.Seconds(), Route: m.Routing.Seconds(), Dist: m.Distribution.Seconds(),
			Wall: r.Result.Wall.Seconds(), Gets: m.DiscoveryGets + m.DistributionGets, Sets: m.DiscoverySets + m.DistributionSets,
			RSSMiB: float64(m.PeakRSSKiB+r.PluginRSSKiB) / 1024}
		s.MADSpan = s.Disc + s.Dist
		t.log.Info("ibsm", "engine", e.IBSM, "subnet_up_s", s.Up, "gets", s.Gets, "sets", s.Sets, "rss_MiB", int(s.RSSMiB))
	}
	sm.Samples = append(sm.Samples, s)

	c, err := dial(ctx, sim)
	if err != nil {
		return fmt.Errorf("attaching to read back: %w", err)
	}
	tp := transport.New(c, transport.Options{Window: 8, Timeout: time.Second, Retries: 2})
	defer tp.Close()
	start := time.Now()
	prog, err := ReadBack(ctx, tp, 64)
	if err != nil {
		return err
	}
	h := lftHash(prog)
	if sm.LFTHash != 0 && h != sm.LFTHash {
		sm.Nondeterministic = true
	}
	if sm.Quality != nil {
		return nil
	}
	sm.LFTHash = h
	q, _, err := Measure(prog, QualityOptions(seed))
	if err != nil {
		return err
	}
	sm.Quality = q
	t.log.Info("read back and measured", "sm", sm.SM, "engine", e.String(), "smps", prog.SMPs, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
