// Command race14 puts ibsm next to OpenSM 3.3.23 on the fabrics of issue
// 14's acceptance table, in one run. Per fabric (`ibsm topo ...`) and per
// round it plans the fabric with each ibsm pipeline through the host on the
// embedded fabric (as `ibsm run --once` plans it, fresh state directory),
// then brings it up with each OpenSM engine on a fresh ibsim (`opensm -o
// -R engine [-Q] [--nue_max_num_vls N]`), interleaved, so both sides see
// the same machine load. Times are medians over -runs rounds: ibsm's
// routing phase (route, LIDs, VLs, verify) and OpenSM's routing from its
// log (MASTER to "tables configured", which includes its LID assignment),
// each with its user+sys CPU. Quality comes from the first round: ibsm's
// plan as `ibsm verify --bisections 100 --seed 1` scores it, OpenSM's
// tables read back with dump_fts and scored by the same analysis; whether
// later rounds gave the same plan (ibsm's plan key, OpenSM's LFT hash) is
// checked, not assumed.
//
//	make build
//	go run ./integration/experiments/race14 -bin bin -fabrics hyperx,torus -runs 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "race14: %v\n", err)
		}
		os.Exit(1)
	}
}

type options struct {
	bin, work, fabrics, osmLog, out string
	runs, onceCAs, readAllCAs       int
	limit                           time.Duration
}

func run(args []string, stdout, logw io.Writer) error {
	var o options
	fs := flag.NewFlagSet("race14", flag.ContinueOnError)
	fs.SetOutput(logw)
	var names []string
	for _, f := range fabrics() {
		names = append(names, f.name)
	}
	fs.StringVar(&o.bin, "bin", "bin", "directory of ibsm's plugin binaries (make build)")
	fs.StringVar(&o.work, "work", "", "directory for fabrics, state and OpenSM runs (default: a temporary directory, removed after)")
	fs.StringVar(&o.fabrics, "fabrics", strings.Join(names, ","), "fabrics to run, in this order")
	fs.StringVar(&o.osmLog, "opensm-log", "0x03", "OpenSM log level (-D); 0x07 logs \"building routing with\" (the notes' route_s start) at the cost of VERBOSE logging")
	fs.StringVar(&o.out, "out", "", "also append the table rows to this file")
	fs.IntVar(&o.runs, "runs", 3, "rounds: each plans every ibsm pipeline and brings up every OpenSM engine once")
	fs.IntVar(&o.onceCAs, "opensm-once-cas", 5000, "on fabrics with more CAs, OpenSM runs in the first round only")
	fs.IntVar(&o.readAllCAs, "readback-all-cas", 2500, "on fabrics with at most this many CAs OpenSM's tables are read back every round (to check they are the same); above, in the first round only")
	fs.DurationVar(&o.limit, "opensm-limit", 20*time.Minute, "cap on one OpenSM run (ibsim start to read-back)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.runs < 1 {
		return fmt.Errorf("-runs %d: want at least 1", o.runs)
	}
	var todo []fabric
	for _, n := range strings.Split(o.fabrics, ",") {
		i := slices.IndexFunc(fabrics(), func(f fabric) bool { return f.name == n })
		if i < 0 {
			return fmt.Errorf("-fabrics: no fabric %q; known: %s", n, strings.Join(names, ", "))
		}
		todo = append(todo, fabrics()[i])
	}
	bin, err := benchutil.PluginDir(o.bin, "-bin", "nue", "nue-vl", "torus", "torus-vl", "sssp", "acro", "updn", "single", "sequential")
	if err != nil {
		return err
	}
	t, err := findTools()
	if err != nil {
		return err
	}
	work, done, err := benchutil.WorkDir(o.work, "race14-")
	if err != nil {
		return err
	}
	defer done()
	out := stdout
	if o.out != "" {
		f, err := os.OpenFile(o.out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		out = io.MultiWriter(stdout, f)
	}
	fmt.Fprintf(out, "\nrace14 %s, %d CPU(s), %d round(s), OpenSM -D %s, cap %s per OpenSM run\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"),
		runtime.NumCPU(), o.runs, o.osmLog, o.limit)
	fmt.Fprintln(out, header)
	for _, f := range todo {
		if err := raceFabric(context.Background(), o, t, bin, work, f, out, logw); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

const header = "| fabric | budget | SM / engines | deadlock-free | minimal | eBB | a2a max (norm.) | worst shift | SLs / VLs | routing s, median (runs) | CPU s (median) | ibsm / OpenSM (wall; CPU) | same plan every run | load |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"

// series collects one row's rounds.
type ibsmSeries struct {
	c    ibsmCfg
	runs []ibsmRun
	q    *quality
	err  error
}

type osmSeries struct {
	c    osmCfg
	runs []osmRun
	q    *quality
	err  error
}

func raceFabric(ctx context.Context, o options, t *tools, bin, work string, f fabric, out, logw io.Writer) error {
	dir := filepath.Join(work, f.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	net, tconf := filepath.Join(dir, "fabric.net"), filepath.Join(dir, "torus-2QoS.conf")
	nf, err := writeFabric(f, net, tconf)
	if err != nil {
		return err
	}
	topo, err := nf.Topology()
	if err != nil {
		return err
	}
	cas := len(topo.Endpoints()) - len(topo.Switches())
	is := make([]*ibsmSeries, len(f.ibsm))
	for i, c := range f.ibsm {
		is[i] = &ibsmSeries{c: c}
	}
	os_ := make([]*osmSeries, len(f.opensm))
	for i, c := range f.opensm {
		os_[i] = &osmSeries{c: c}
	}
	for r := 0; r < o.runs; r++ {
		for _, s := range is {
			if s.err != nil {
				continue
			}
			fmt.Fprintf(logw, "%s round %d: ibsm %s\n", f.name, r+1, s.c.label)
			x, q, err := measureIBSM(ctx, bin, dir, net, s.c, r == 0)
			if err != nil {
				s.err = err
				fmt.Fprintf(logw, "  %v\n", err)
				continue
			}
			s.runs = append(s.runs, x)
			if q != nil {
				s.q = q
			}
		}
		if r > 0 && cas > o.onceCAs {
			continue
		}
		for _, s := range os_ {
			if s.err != nil {
				continue
			}
			fmt.Fprintf(logw, "%s round %d: OpenSM %s\n", f.name, r+1, s.c.key)
			x, rz, err := measureOpenSM(ctx, t, dir, net, tconf, nf, topo, s.c, o.osmLog, o.limit, r == 0 || cas <= o.readAllCAs)
			if err != nil {
				s.err = err
				fmt.Fprintf(logw, "  %v\n", err)
				continue
			}
			s.runs = append(s.runs, x)
			if r == 0 && rz != nil {
				if s.q, err = score(rz, nil); err != nil {
					return err
				}
				ok, err := caDeadlockFree(rz)
				if err != nil {
					return err
				}
				s.q.deadlockFree = map[bool]string{true: "yes", false: "no"}[ok]
			}
		}
	}
	for _, s := range is {
		fmt.Fprintln(out, s.row(f, os_))
	}
	for _, s := range os_ {
		fmt.Fprintln(out, s.row(f))
	}
	if f.ssspRef {
		fmt.Fprintf(logw, "%s: sssp alone\n", f.name)
		q, err := ssspAlone(ctx, topo)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "| %s | — | ibsm `sssp` alone (routes only, no VL assignment: reference) | %s (1 VL) | %s | | | — | | |\n",
			f.label, q.deadlockFree, q.cells())
	}
	return nil
}

// cells are the quality columns minimal .. SLs/VLs.
func (q *quality) cells() string {
	if q == nil {
		return " | | | | "
	}
	min := fmt.Sprintf("%.1f %%", q.minimal)
	if q.unreachable > 0 || q.loops > 0 {
		min += fmt.Sprintf(" (%.2f %% of CA pairs reached, %d looping LIDs)", q.caPairsReachable, q.loops)
	}
	return fmt.Sprintf("%s | %.4f | %d (%.3f) | %d | %d / %d", min, q.ebb, q.a2aMax, q.a2aNorm, q.worstShift, q.sls, q.vls)
}

func (s *ibsmSeries) row(f fabric, osm []*osmSeries) string {
	lead := fmt.Sprintf("| %s | %d VL | ibsm %s", f.label, s.c.budget, s.c.label)
	if len(s.runs) == 0 {
		return fmt.Sprintf("%s | refused: %s | | | | | | | | | | |", lead, oneLine(s.err))
	}
	get := func(g func(ibsmRun) float64) []float64 {
		v := make([]float64, len(s.runs))
		for i, r := range s.runs {
			v[i] = g(r)
		}
		return v
	}
	phase := get(func(r ibsmRun) float64 { return r.phase })
	cpu := benchutil.Median(get(func(r ibsmRun) float64 { return r.cpu }))
	med := func(g func(ibsmRun) float64) float64 { return benchutil.Median(get(g)) }
	times := fmt.Sprintf("%.2f (%s; route %.2f, LIDs %.2f, VLs %.2f, verify %.2f)", benchutil.Median(phase), list(phase),
		med(func(r ibsmRun) float64 { return r.route }), med(func(r ibsmRun) float64 { return r.lids }),
		med(func(r ibsmRun) float64 { return r.vls }), med(func(r ibsmRun) float64 { return r.verify }))
	ratio := "—"
	for _, o := range osm {
		if o.c.key == s.c.vs && len(o.runs) > 0 {
			w, c := o.medians()
			cr := "—" // below the 20 ms sampling interval
			if c >= 0.05 {
				cr = fmt.Sprintf("%.2f×", cpu/c)
			}
			ratio = fmt.Sprintf("%.2f× ; %s (vs %s)", benchutil.Median(phase)/w, cr, o.c.key)
		}
	}
	same := "yes"
	for _, r := range s.runs[1:] {
		if r.planKey != s.runs[0].planKey {
			same = "**no**"
		}
	}
	dl := "?"
	if s.q != nil {
		dl = s.q.deadlockFree
	}
	if s.err != nil {
		same += fmt.Sprintf(" (a later run failed: %s)", oneLine(s.err))
	}
	return fmt.Sprintf("%s | %s | %s | %s | %.2f | %s | %s | %s |", lead, dl, s.q.cells(), times, cpu, ratio, same,
		loadRange(get(func(r ibsmRun) float64 { return r.load })))
}

// medians are the OpenSM routing wall and CPU seconds.
func (s *osmSeries) medians() (wall, cpu float64) {
	var w, c []float64
	for _, r := range s.runs {
		w, c = append(w, r.route), append(c, r.routeCPU)
	}
	return benchutil.Median(w), benchutil.Median(c)
}

func (s *osmSeries) row(f fabric) string {
	lead := fmt.Sprintf("| %s | %d VL | OpenSM %s", f.label, s.c.budget, strings.TrimSpace(s.c.engine+" "+strings.Join(s.c.args, " ")))
	if len(s.runs) == 0 {
		return fmt.Sprintf("%s | failed: %s | | | | | | | | | | |", lead, oneLine(s.err))
	}
	used := s.runs[0].engine
	dl := "by design (SLs not read)"
	switch {
	case used != s.c.engine:
		dl = fmt.Sprintf("**fell back to %s**", used)
		if s.q != nil {
			dl += fmt.Sprintf("; CA traffic on one VL deadlock-free: %s", s.q.deadlockFree)
		}
	case s.c.vls == 1 && s.q != nil:
		dl = s.q.deadlockFree + " (CA traffic, 1 VL)"
	}
	var w, b []float64
	for _, r := range s.runs {
		w, b = append(w, r.route), append(b, r.build)
	}
	wall, cpu := s.medians()
	times := fmt.Sprintf("%.2f (%s)", wall, list(w))
	if benchutil.Median(b) > 0 {
		times += fmt.Sprintf("; from \"building routing\" %.2f", benchutil.Median(b))
	}
	same := "yes"
	read := 0
	for _, r := range s.runs {
		if r.lftHash != "" {
			read++
			if r.lftHash != s.runs[0].lftHash {
				same = "**no**"
			}
		}
	}
	if read < 2 {
		same = "not checked (read back once)"
	}
	if s.err != nil {
		same += fmt.Sprintf(" (a later run failed: %s)", oneLine(s.err))
	}
	var loads []float64
	for _, r := range s.runs {
		loads = append(loads, r.load)
	}
	cells := s.q.cells()
	if s.q != nil {
		cells = cells[:strings.LastIndex(cells, "|")] + "| —"
	}
	return fmt.Sprintf("%s | %s | %s | %s | %.2f (whole run %.1f) | | %s | %s |", lead, dl, cells, times, cpu,
		benchutil.Median(func() []float64 {
			var v []float64
			for _, r := range s.runs {
				v = append(v, r.cpu)
			}
			return v
		}()), same, loadRange(loads))
}

func list(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, ", ")
}

func loadRange(v []float64) string {
	if len(v) == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f–%.1f", slices.Min(v), slices.Max(v))
}

func oneLine(err error) string {
	if err == nil {
		return ""
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ReplaceAll(s, "|", "/")
}
