// Command ftcompare tabulates fat-tree routing quality: for full and
// seeded degraded fat trees it plans every routing engine through the
// host's own pipeline (host/app: discovery on the embedded fabric, plugin
// calls, the host's verifier with the single-VL proof) and prints, per
// engine, routing time, switch-pair reachability, all-to-all max channel
// load, worst shift-permutation load and effective bisection bandwidth as
// a Markdown table.
//
// An engine the host rejects (minhop: cyclic CDG on one VL) is not dropped
// from the table: its routes are requested from the same plugin once more,
// given sequential LIDs, realised and analysed on their own, and the row is
// marked "not deadlock-free (rejected)" with the host's reason. The host is
// not weakened for this: its verdict is reported as it is.
//
//	make plugins
//	go run ./integration/experiments/ftcompare --plugins bin
//
// ftree gets routing.switch_to_switch = "best_effort" (it leaves switch
// pairs unrouted on 3-level trees by design); every other engine the
// default "required". Engines whose plugin binary is missing are skipped
// (listed on stderr). Every run gets its own config and state directory
// under --work.
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
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
)

// trees are the fabrics compared, as `ibsm topo` arguments.
var trees = map[string][]string{
	"ft2-648":  {"ft", "--radix", "36", "--levels", "2"},
	"ft3-3456": {"ft", "--radix", "24", "--levels", "3"},
	"ft3-36":   {"ft", "--radix", "36", "--levels", "3"},
	"ft2-8":    {"ft", "--radix", "8", "--levels", "2"},
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "ftcompare: %v\n", err)
		}
		os.Exit(1)
	}
}

type options struct {
	plugins, work        string
	trees, engines, frac string
	seed                 int64
	bisections           int
	shifts               string
}

func run(args []string, out, logw io.Writer) error {
	var o options
	fs := flag.NewFlagSet("ftcompare", flag.ContinueOnError)
	fs.SetOutput(logw)
	fs.StringVar(&o.plugins, "plugins", "bin", "directory of ibsm-plugin-<name> binaries")
	fs.StringVar(&o.work, "work", "", "directory for topologies, configs and state, kept afterwards (default: a new temporary directory, removed at the end)")
	fs.StringVar(&o.trees, "trees", "ft2-648,ft3-3456", "fabrics: ft2-648, ft3-3456, ft3-36, ft2-8")
	fs.StringVar(&o.engines, "engines", "ftree,sftree,updn,minhop", "routing engines (plugins)")
	fs.StringVar(&o.frac, "remove-links", "0,0.01,0.05", "fractions of switch-to-switch cables removed")
	fs.Int64Var(&o.seed, "seed", 7, "seed of the degradation, the shift sample and the bisections")
	fs.IntVar(&o.bisections, "bisections", analysis.DefaultBisections, "bisections for eBB")
	fs.StringVar(&o.shifts, "shifts", "auto", "shifts: auto, all or a sample size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	shifts, err := analysis.ParseShifts(o.shifts)
	if err != nil {
		return fmt.Errorf("--shifts %w", err)
	}
	plugins, err := benchutil.PluginDir(o.plugins, "--plugins", "sequential", "single")
	if err != nil {
		return err
	}
	work := o.work
	if work == "" {
		if work, err = os.MkdirTemp("", "ftcompare-"); err != nil {
			return err
		}
		defer os.RemoveAll(work) // a directory of our own: nothing to keep
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	var engines []string
	for _, e := range strings.Split(o.engines, ",") {
		if _, err := os.Stat(filepath.Join(plugins, "ibsm-plugin-"+e)); err != nil {
			fmt.Fprintf(logw, "ftcompare: skipping engine %s: no plugin binary in %s\n", e, plugins)
			continue
		}
		engines = append(engines, e)
	}
	aopt := analysis.Options{Shifts: shifts, Bisections: o.bisections, Seed: o.seed}
	fmt.Fprintf(out, "| fabric | removed cables | engine | routing s | sw→sw reach | a2a max (sw-sw link) | shift worst / mean | eBB (min..max) | host verdict |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, tree := range strings.Split(o.trees, ",") {
		targs, ok := trees[tree]
		if !ok {
			return fmt.Errorf("unknown fabric %q; choose from ft2-648, ft3-3456, ft3-36, ft2-8", tree)
		}
		for _, fr := range strings.Split(o.frac, ",") {
			frac, err := strconv.ParseFloat(fr, 64)
			if err != nil {
				return fmt.Errorf("--remove-links %q: %v", fr, err)
			}
			name := fmt.Sprintf("%s-%s", tree, fr)
			net := filepath.Join(work, name+".net")
			a := append([]string(nil), targs...)
			if frac > 0 {
				a = append(a, "--remove-links", fr, "--seed", strconv.FormatInt(o.seed, 10))
			}
			removed, err := writeTopo(net, a)
			if err != nil {
				return err
			}
			for _, eng := range engines {
				r := measure(plugins, work, name, net, eng, aopt)
				fmt.Fprintf(out, "| %s | %s | %s | %s |\n", tree, removed, eng, strings.Join(r.cells(), " | "))
			}
		}
	}
	return nil
}

// writeTopo generates a fabric file and says how many switch-to-switch
// cables were removed.
func writeTopo(path string, args []string) (string, error) {
	var b bytes.Buffer
	deg, err := topogen.Write(args, &b)
	if err != nil {
		return "", err
	}
	removed := "0"
	if deg != nil {
		removed = fmt.Sprintf("%d of %d", deg.LinksRemoved, deg.LinksBefore)
	}
	return removed, os.WriteFile(path, b.Bytes(), 0o644)
}

// row is one engine's result on one fabric.
type row struct {
	routing  time.Duration
	rep      *analysis.Report
	rejected string // the host's reason, "" if it accepted the plan
	warnings int
	err      error // no metrics at all
}

func (r row) cells() []string {
	if r.err != nil {
		msg := strings.ReplaceAll(strings.Join(strings.Fields(r.err.Error()), " "), "|", "/")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return []string{"-", "-", "-", "-", "-", "error: " + msg}
	}
	rep := r.rep
	shift, ebb := "-", "-"
	if rep.Shift != nil {
		shift = fmt.Sprintf("%d / %.2f", rep.Shift.Worst, rep.Shift.Mean)
		if !rep.Shift.All {
			shift += fmt.Sprintf(" (%d sampled)", rep.Shift.Shifts)
		}
	}
	if rep.EBB != nil {
		ebb = fmt.Sprintf("%.4f (%.4f..%.4f)", rep.EBB.EBB, rep.EBB.Min, rep.EBB.Max)
	}
	verdict := "accepted, deadlock-free on 1 VL"
	if r.warnings > 0 {
		verdict += " (best_effort: switch pairs unrouted)"
	}
	if r.rejected != "" {
		msg := strings.ReplaceAll(strings.Join(strings.Fields(r.rejected), " "), "|", "/")
		if len(msg) > 140 {
			msg = msg[:140] + "…"
		}
		verdict = "not deadlock-free (rejected): " + msg
		if rep.DeadlockFree {
			verdict = "rejected: " + msg
		}
	}
	if !rep.CAPairs.Complete() {
		verdict += fmt.Sprintf("; CA pairs %.3f%%", rep.CAPairs.Percent())
	}
	return []string{
		fmt.Sprintf("%.2f", r.routing.Seconds()),
		fmt.Sprintf("%.3f%%", rep.SwitchPairs.Percent()),
		fmt.Sprintf("%d (%d)", rep.Load.Max, rep.Load.MaxSwitchLink),
		shift, ebb, verdict,
	}
}

// measure plans eng on net through the host's pipeline. When the host
// rejects the plan, the routes alone are analysed.
func measure(plugins, work, name, net, eng string, aopt analysis.Options) row {
	cfgPath := filepath.Join(work, name+"-"+eng+".hcl")
	state := filepath.Join(work, "state", name+"-"+eng)
	if err := os.RemoveAll(state); err != nil {
		return row{err: err}
	}
	policy := "required"
	if eng == "ftree" {
		policy = "best_effort"
	}
	cfg := benchutil.Config{Topology: net, StateDir: state, BinDir: plugins, Engine: eng, PluginTimeout: "1800s", SwitchToSwitch: policy}
	ctx := context.Background()
	loaded, err := cfg.Load(cfgPath)
	if err != nil {
		return row{err: err}
	}
	a, err := app.New(ctx, loaded, hclog.New(&hclog.LoggerOptions{Name: "ftcompare", Level: hclog.Error, Output: os.Stderr}))
	if err != nil {
		return row{err: err}
	}
	defer a.Close()
	_, topo, res, perr := a.SM.Plan(ctx)
	if perr == nil {
		rep, err := analysis.Analyse(res.Realized, res.VLs, aopt)
		if err != nil {
			return row{err: err}
		}
		return row{routing: res.Timings.Routing, rep: rep, warnings: len(res.Warnings)}
	}
	if topo == nil {
		return row{err: perr}
	}
	// Routes only: the same plugins, called directly, timed, realised and
	// analysed without the VL stage the host refused.
	rp, ok := a.Plugin(sdk.KindRouting, eng)
	if !ok {
		return row{err: fmt.Errorf("routing plugin %s not running after the rejected plan: %v", eng, perr)}
	}
	lp, ok := a.Plugin(sdk.KindLIDAssign, "sequential")
	if !ok {
		return row{err: fmt.Errorf("LID plugin sequential not running: %v", perr)}
	}
	start := time.Now()
	routes, err := rp.Route(ctx, sdk.RouteRequest{Topo: topo, LMC: 0})
	took := time.Since(start)
	if err != nil {
		return row{err: fmt.Errorf("routes-only analysis: %v (host: %v)", err, perr)}
	}
	lids, err := lp.AssignLIDs(ctx, sdk.LIDRequest{Topo: topo, Routes: routes, LMC: 0})
	if err != nil {
		return row{err: fmt.Errorf("routes-only analysis: LIDs: %v (host: %v)", err, perr)}
	}
	real, err := plan.Realize(topo, routes, lids)
	if err != nil {
		return row{err: fmt.Errorf("routes-only analysis: %v (host: %v)", err, perr)}
	}
	rep, err := analysis.Analyse(real, nil, aopt)
	if err != nil {
		return row{err: err}
	}
	return row{routing: took, rep: rep, rejected: reason(perr, eng)}
}

// reason is the host's rejection without the RPC wrapping.
func reason(err error, eng string) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "desc = "); i >= 0 {
		msg = msg[i+len("desc = "):]
	}
	for _, p := range []string{eng + ": ", "assign VLs: ", "single: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}
