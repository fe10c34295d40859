// Command ibsm is the subnet manager: `ibsm run` is the daemon, `ibsm verify`
// and `ibsm dump` compute the plan for a fabric and report on it or write
// OpenSM-format dumps, `ibsm topo` generates test topologies.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/dump"
	"github.com/ibsm/ibsm/host/metrics"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk/analysis"
)

const usage = `usage: ibsm <command> [flags]

Commands:
  run     --config FILE [--once]     run the subnet manager (until SIGTERM; SIGHUP reloads)
  verify  --config FILE [--json] [--shifts auto|all|N] [--bisections N] [--seed S]
                                     compute the plan and print its metrics (no Set is sent)
  dump    --config FILE [--out DIR]  compute the plan and write OpenSM-format dumps for ibdmchk
  topo    <kind> [flags]             write a generated test topology (ibsm topo -h)
  plugins lock|verify|list --config FILE [--json]
                                     pin plugin binaries in plugins.lock.hcl, check or list them
  status  [--config FILE | --socket PATH] [--json]
                                     ask the running daemon what it is doing (its control socket)
  sweep   [--config FILE | --socket PATH] [--no-wait]
                                     have the running daemon run a heavy sweep and print its outcome
  reload  [--config FILE | --socket PATH]
                                     have the running daemon re-read its config (as SIGHUP) and say what changed
  rollout status|promote|abort|history --config FILE [--json]
                                     the candidate {} block's shadow plan and staged promotion
  plan    diff --config FILE [--candidate] [--json] [--from auto|daemon|fabric|state]
                                     what the configured (or candidate) plan would change against what is programmed
  report  --config FILE [--out report.html] [--candidate=false]
                                     compute the plan (and a candidate {} block's beside it) and draw it as one self-contained HTML page
  version                            print the version, commit and plugin SDK version (also --version)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = cmdRun(os.Args[2:])
	case "verify":
		err = cmdVerify(os.Args[2:], os.Stdout)
	case "dump":
		err = cmdDump(os.Args[2:])
	case "topo":
		err = cmdTopo(os.Args[2:], os.Stdout)
	case "plugins":
		err = cmdPlugins(os.Args[2:], os.Stdout)
	case "status":
		err = cmdStatus(os.Args[2:], os.Stdout)
	case "sweep":
		err = cmdSweep(os.Args[2:], os.Stdout)
	case "reload":
		err = cmdReload(os.Args[2:], os.Stdout)
	case "report":
		err = cmdReport(os.Args[2:], os.Stdout)
	case "rollout":
		err = cmdRollout(os.Args[2:], os.Stdout)
	case "plan":
		err = cmdPlan(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	case "--version", "version":
		fmt.Print(versionString())
		return
	default:
		fmt.Fprintf(os.Stderr, "ibsm: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "ibsm %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

type common struct {
	config   string
	logLevel string
	logJSON  bool
	logOut   io.Writer     // default os.Stderr
	prog     *termProgress // progress.go: nil unless drawn on a terminal
}

func (c *common) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "HCL configuration file (required)")
	fs.StringVar(&c.logLevel, "log-level", "info", "trace, debug, info, warn or error")
	fs.BoolVar(&c.logJSON, "log-json", false, "log as JSON")
}

func (c *common) logger() hclog.Logger {
	out := c.logOut
	if out == nil {
		out = os.Stderr
	}
	return hclog.New(&hclog.LoggerOptions{Name: "ibsm", Level: hclog.LevelFromString(c.logLevel), JSONFormat: c.logJSON, Output: out})
}

// load reads and validates the config; errors carry file:line:column,
// each with its source line and a caret under the spot.
func (c *common) load() (*conf.Config, error) {
	if c.config == "" {
		return nil, errors.New("--config FILE is required (see conf/examples/)")
	}
	l := conf.NewLoader()
	cfg, diags := l.Load(c.config)
	if diags.HasErrors() {
		return nil, fmt.Errorf("invalid configuration, nothing applied:\n%s", l.FormatDiagnostics(diags))
	}
	if d := cfg.CheckFiles(); d.HasErrors() {
		return nil, fmt.Errorf("invalid configuration, nothing applied:\n%s", l.FormatDiagnostics(d))
	}
	return cfg, nil
}

func cmdRun(args []string) error {
	var c common
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	c.flags(fs)
	once := fs.Bool("once", false, "bring the subnet up, print a summary and exit 0 at SUBNET UP")
	dumpDir := fs.String("dump-dir", "", "after every SUBNET UP that re-routed, write the programmed plan as OpenSM dumps (as `ibsm dump` does) into this directory")
	logPath := fs.String("log-file", "", "append the log to this file instead of stderr; SIGUSR1 reopens it (logrotate)")
	pidPath := fs.String("pid-file", "", "write the daemon's PID to this file (removed at exit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	stopDaemon := make(chan struct{})
	defer close(stopDaemon)
	if *logPath != "" {
		lf, err := openLogFile(*logPath)
		if err != nil {
			return err
		}
		defer lf.Close()
		reopenOnUSR1(lf, stopDaemon)
		c.logOut = lf
	}
	if *pidPath != "" {
		remove, err := writePIDFile(*pidPath)
		if err != nil {
			return err
		}
		defer remove()
	}
	notify := newNotifier()
	defer notify.Close()
	rec := metrics.NewRecorder()
	hooks := rec.Hooks()
	if *once {
		hooks = c.progressHooks(hooks) // before the logger: its lines step around the progress line
		defer c.endProgress()
	}
	log := c.logger()
	rl := &reloader{c: &c, notify: notify, flagLvl: log.GetLevel()}
	log.SetLevel(rl.logLevel(cfg))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	a, err := app.NewWithHooks(ctx, cfg, log, hooks)
	if err != nil {
		if ctx.Err() != nil {
			// SIGTERM while plugins were starting: a requested stop.
			log.Info("stopped during start-up", "cause", err)
			return nil
		}
		return err
	}
	defer a.Close()
	if *once {
		rep, err := a.SM.HeavySweep(ctx)
		c.endProgress()
		if err != nil {
			return err
		}
		printSummary(os.Stdout, rep)
		printPlanWarnings(os.Stdout, a)
		if *dumpDir != "" {
			return dumpApplied(*dumpDir, a)
		}
		return nil
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	trigger := make(chan struct{}, 1)
	d := newDaemonState(a, rec, c.config, log)
	a.SM.Observer = rec
	rl.d, rl.trigger = d, trigger
	srv, stopControl, err := startControl(d, rl, trigger)
	if err != nil {
		return err
	}
	defer stopControl()
	a.RegisterRollout(srv) // rollout.status|promote|abort for `ibsm rollout`
	me := newMetricsEndpoint(d)
	defer me.Close()
	if err := me.set(cfg.SM.MetricsListen); err != nil {
		return err
	}
	rl.onConfig = func(c *conf.Config) {
		if err := me.set(c.SM.MetricsListen); err != nil {
			log.Error("metrics endpoint not moved", "error", err)
		}
	}
	go func() {
		for range hup {
			if _, err := rl.reload(ctx); err != nil {
				log.Error("reload failed; the running configuration stays in force", "error", err)
			}
		}
	}()
	notify.watchdog(stopDaemon, sweeping(a, cfg))
	return a.SM.Run(ctx, trigger, func(rep *sm.Report, err error) {
		rec.Sweep(rep, err)
		if err != nil {
			log.Error("heavy sweep failed; the last good plan stays programmed", "error", err)
			notify.Status("heavy sweep failed: " + err.Error())
			return
		}
		switch rep.State {
		case smpStateMaster:
			notify.Ready(fmt.Sprintf("SUBNET UP: master, %d switches, %d CAs", rep.Switches, rep.CAs))
		case smpStateStandby:
			notify.Ready("standby")
		}
		if rep.Rerouted {
			logSummary(log, rep)
			for _, w := range planWarnings(a) {
				log.Warn("SUBNET UP with a plan warning", "engine", rep.Engine, "warning", w)
			}
			if *dumpDir != "" {
				if err := dumpApplied(*dumpDir, a); err != nil {
					log.Warn("plan dumps not written", "dir", *dumpDir, "error", err)
				}
			}
		} else {
			log.Debug("heavy sweep: fabric and plan unchanged")
		}
	})
}

// dumpApplied writes the plan in force as OpenSM dumps. Files are written
// into a fresh directory next to dir and then renamed into it one by one, so
// a reader never sees a half-written file.
func dumpApplied(dir string, a *app.App) error {
	ap := a.SM.Applied()
	if ap == nil || ap.Result == nil {
		return fmt.Errorf("no plan is programmed yet")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(dir, ".dump-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := dump.WriteAll(stage, ap.Result.Realized, ap.Result.VLs); err != nil {
		return err
	}
	if err := dump.WriteMCFDBFile(stage, a.SM.MulticastForwarding()); err != nil {
		return err
	}
	files, err := os.ReadDir(stage)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Rename(filepath.Join(stage, f.Name()), filepath.Join(dir, f.Name())); err != nil {
			return err
		}
	}
	return nil
}

func printSummary(w io.Writer, r *sm.Report) {
	fmt.Fprintf(w, "SUBNET UP in %s: %d nodes (%d switches, %d CAs), %d links, engine %s\n",
		r.Total.Round(time.Millisecond), r.Nodes, r.Switches, r.CAs, r.Links, r.Engine)
	fmt.Fprintf(w, "  discovery     %10s  %7d Get  %7d Set\n", r.Discovery.Time.Round(time.Microsecond), r.Discovery.Gets, r.Discovery.Sets)
	fmt.Fprintf(w, "  routing       %10s  %7d plugin calls (route %s, LIDs %s, VLs %s, verify %s)\n", r.Routing.Time.Round(time.Microsecond), r.PluginCalls,
		r.Stages.Routing.Round(time.Microsecond), r.Stages.LIDs.Round(time.Microsecond), r.Stages.VLs.Round(time.Microsecond), r.Stages.Verify.Round(time.Microsecond))
	// VL arbitration and OperationalVLs Sets only exist for multi-VL plans;
	// single-VL summaries keep their familiar shape.
	var vlExtra string
	if r.Program.VLArbSets > 0 || r.Program.OpVLsSets > 0 {
		vlExtra = fmt.Sprintf(", VLArb %d, OperationalVLs %d", r.Program.VLArbSets, r.Program.OpVLsSets)
	}
	if r.Program.LFTBlocksRead > 0 { // switches programmed before (takeover, restart) are read back first
		vlExtra += fmt.Sprintf(", LFT blocks read back %d", r.Program.LFTBlocksRead)
	}
	if r.Program.LFTRestored > 0 { // a restart: tables taken from the state dir's record
		vlExtra += fmt.Sprintf(", switch tables restored from the record %d", r.Program.LFTRestored)
	}
	fmt.Fprintf(w, "  distribution  %10s  %7d Get  %7d Set (LFT blocks %d of %d, PortInfo %d, port state %d, SwitchInfo %d, SL2VL %d%s)\n",
		r.Distribution.Time.Round(time.Microsecond), r.Distribution.Gets, r.Distribution.Sets,
		r.Program.LFTBlocksSent, r.Program.LFTBlocksTotal, r.Program.PortInfoSets, r.Program.StateSets, r.Program.SwitchInfoSets, r.Program.SL2VLSets, vlExtra)
	if pt := r.Partitions; pt.Time > 0 {
		fmt.Fprintf(w, "  partitions    %10s  %7d Get  %7d Set (P_Key blocks read %d, sent %d, enforcement %d, %d more with the Active Sets)\n",
			pt.Time.Round(time.Microsecond), pt.Gets, pt.Sets, r.PKeys.BlocksRead, r.PKeys.BlocksSent, r.PKeys.EnforceSets, r.PKeys.EnforcedActive)
	}
	fmt.Fprintf(w, "  MAD retries %d, timeouts %d; peak RSS %s\n", r.Retries, r.Timeouts, peakRSS())
	for _, a := range r.Attempts {
		if a.Err != nil {
			fmt.Fprintf(w, "  engine %s rejected: %v\n", a.Engine, a.Err)
		}
	}
	for i, wn := range r.Warnings {
		if i == 5 {
			fmt.Fprintf(w, "  … %d more discovery warnings\n", len(r.Warnings)-5)
			break
		}
		fmt.Fprintf(w, "  warning: %s\n", wn)
	}
}

// planWarnings are what the verifier's policy let through in the plan in
// force (routing.switch_to_switch = "best_effort").
func planWarnings(a *app.App) []string {
	if ap := a.SM.Applied(); ap != nil && ap.Result != nil {
		return ap.Result.Warnings
	}
	return nil
}

func printPlanWarnings(w io.Writer, a *app.App) {
	for _, wn := range planWarnings(a) {
		fmt.Fprintf(w, "  plan warning: %s\n", wn)
	}
}

func logSummary(log hclog.Logger, r *sm.Report) {
	log.Info("SUBNET UP", "engine", r.Engine, "nodes", r.Nodes, "switches", r.Switches, "cas", r.CAs,
		"total", r.Total, "discovery", r.Discovery.Time, "discovery_gets", r.Discovery.Gets,
		"routing", r.Routing.Time, "plugin_calls", r.PluginCalls,
		"distribution", r.Distribution.Time, "distribution_sets", r.Distribution.Sets,
		"lft_blocks_sent", r.Program.LFTBlocksSent, "lft_blocks_total", r.Program.LFTBlocksTotal, "lft_blocks_read", r.Program.LFTBlocksRead,
		"retries", r.Retries)
}

// peakRSS reads VmHWM from /proc (Linux); "n/a" elsewhere.
func peakRSS() string {
	if runtime.GOOS != "linux" {
		return "n/a"
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "n/a"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "n/a"
}

// planOnly discovers and plans without programming. The caller closes the
// App.
func planOnly(c *common) (*app.App, *pipeline.Result, error) {
	cfg, err := c.load()
	if err != nil {
		return nil, nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hooks := c.progressHooks(nil)
	a, err := app.NewWithHooks(ctx, cfg, c.logger(), hooks)
	if err != nil {
		c.endProgress()
		return nil, nil, err
	}
	_, _, res, err := a.SM.Plan(ctx)
	if err != nil {
		c.endProgress()
		a.Close()
		return nil, nil, err
	}
	return a, res, nil
}

func cmdVerify(args []string, w io.Writer) error {
	var c common
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	c.flags(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	shifts := analysis.ShiftsAuto
	fs.Func("shifts", fmt.Sprintf("shift permutations for the worst channel load: auto (every shift up to %d CAs, else a sample of %d), all, 0 to skip, or a sample size (default auto)", analysis.AllShiftsMaxCAs, analysis.DefaultShiftSample), func(v string) error {
		n, err := analysis.ParseShifts(v)
		shifts = n
		return err
	})
	bisections := fs.Int("bisections", analysis.DefaultBisections, "random bisections for the effective bisection bandwidth (0 to skip)")
	seed := fs.Int64("seed", 1, "seed of the shift sample and the bisections")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bisections < 0 {
		return fmt.Errorf("--bisections %d: give 0 to skip or a positive count", *bisections)
	}
	a, res, err := planOnly(&c)
	if err != nil {
		return err
	}
	defer a.Close()
	c.phase("analysis", "reachability, loads, shifts, bisections")
	rep, err := analysis.Analyse(res.Realized, res.VLs, analysis.Options{Shifts: shifts, Bisections: *bisections, Seed: *seed})
	if err != nil {
		c.endProgress()
		return err
	}
	minimal := analysis.Minimal(res.Realized)
	c.endProgress()
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*analysis.Report
			Minimal analysis.MinimalStats `json:"minimal"`
		}{rep, minimal})
	}
	fmt.Fprintf(w, "engine: %s\n", res.Engine)
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "plan warning: %s\n", wn)
	}
	if err := rep.Text(w); err != nil {
		return err
	}
	avg := 0.0
	if minimal.Pairs > 0 {
		avg = float64(minimal.ExtraHops) / float64(minimal.Pairs)
	}
	_, err = fmt.Fprintf(w, "minimal paths: %.3f%% of %d reachable CA->CA pairs take a shortest path (extra switches: %.3f per pair on average, at most %d)\n",
		minimal.Percent(), minimal.Pairs, avg, minimal.MaxExtra)
	return err
}

func cmdDump(args []string) error {
	var c common
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	c.flags(fs)
	out := fs.String("out", ".", "directory for opensm-subnet.lst, opensm.fdbs, opensm-lfts.dump, opensm-sl2vl.dump")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a, res, err := planOnly(&c)
	if err != nil {
		return err
	}
	defer a.Close()
	c.endProgress()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := dump.WriteAll(*out, res.Realized, res.VLs); err != nil {
		return err
	}
	abs, _ := filepath.Abs(*out)
	fmt.Printf("wrote OpenSM dumps for engine %s to %s\n", res.Engine, abs)
	return nil
}
