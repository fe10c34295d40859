package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/control"
	"github.com/ibsm/ibsm/host/rollout"
)

const planUsage = `usage: ibsm plan diff --config FILE [--candidate] [--json] [--from auto|daemon|fabric|state]

Prints what programming a plan would change against what is programmed:
per switch the LFT blocks (64 LIDs each) and SL2VL tables (per in/out
port pair) that differ, and the endpoints whose LIDs change. Nothing is
programmed and the state directory is neither locked nor written, so it
runs beside a daemon on the same configuration. The plan is the routing
block's; --candidate: the candidate {} block's, with the active plan's
LIDs, as the shadow computes it.

--from chooses what "programmed" means (auto, the default, takes the
first that applies):
  daemon  a daemon runs on this state_dir (its control socket answers):
          it reads back every switch's LFT and SL2VL tables from its
          fabric now, and compares the plan it has in force (--candidate:
          its latest shadow plan). The plan is the daemon's running
          configuration: to see what an edited routing block would do,
          put it in a candidate {} block, ibsm reload, and use --candidate.
  fabric  no daemon answers and the transport is ibsim or umad: this
          command discovers the fabric, computes the plan from FILE and
          reads the tables back itself (ibsim: as a second, non-SM client
          at the configured node; umad opens the port as an SM does, so
          it fails while another SM holds it).
  state   otherwise (the embedded fabric lives only inside the daemon that
          runs it): state_dir/` + rollout.ProgrammedFile + `, the record of what the SM
          last programmed (a whole plan, or a rollout step's mixed state),
          written after every programming.
The first line of the output (and "source"/"from" in --json) says which
was used. What could not be read back counts as changed and is named.
`

func cmdPlan(args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "diff" {
		fmt.Fprint(os.Stderr, planUsage)
		return fmt.Errorf("want: ibsm plan diff")
	}
	var c common
	fs := flag.NewFlagSet("plan diff", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), planUsage) }
	c.flags(fs)
	cand := fs.Bool("candidate", false, "diff the candidate {} block's plan instead of the routing block's")
	asJSON := fs.Bool("json", false, "print JSON")
	from := fs.String("from", "auto", "what to compare against: auto, daemon, fabric or state")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch *from {
	case "auto", rollout.SourceDaemon, rollout.SourceFabric, rollout.SourceState:
	default:
		return fmt.Errorf("--from %q: give auto, daemon, fabric or state", *from)
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	if *cand && cfg.Candidate == nil {
		return fmt.Errorf("--candidate: %s has no candidate {} block", cfg.File)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var pd *rollout.PlanDiff
	if *from == "auto" || *from == rollout.SourceDaemon {
		pd, err = daemonDiff(ctx, cfg, *cand)
		var none *noDaemon
		switch {
		case err == nil:
		case errors.As(err, &none) && *from == "auto":
			pd = nil
		default:
			return err
		}
	}
	if pd == nil {
		src := *from
		if src == "auto" {
			src = rollout.SourceFabric
			if cfg.Fabric.Transport == conf.TransportSim {
				src = rollout.SourceState
			}
		}
		if pd, err = localDiff(ctx, &c, cfg, *cand, src); err != nil {
			return err
		}
	}
	if *asJSON {
		return printJSON(w, pd)
	}
	pd.Text(w)
	return nil
}

// noDaemon: no socket, or nothing listens on it.
type noDaemon struct{ err error }

func (e *noDaemon) Error() string { return e.err.Error() }

// daemonDiff asks the daemon on cfg's state directory.
func daemonDiff(ctx context.Context, cfg *conf.Config, cand bool) (*rollout.PlanDiff, error) {
	sock := control.SocketPath(cfg.SM.StateDir)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	cl, err := control.Dial(dctx, sock)
	cancel()
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil, &noDaemon{err}
	}
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var pd rollout.PlanDiff
	if err := cl.Call(ctx, app.CmdPlanDiff, app.PlanDiffArgs{Candidate: cand}, &pd); err != nil {
		return nil, fmt.Errorf("the daemon on %s: %w", sock, err)
	}
	return &pd, nil
}

// localDiff computes the plan here (without the state directory's lock)
// and compares it with what src holds.
func localDiff(ctx context.Context, c *common, cfg *conf.Config, cand bool, src string) (*rollout.PlanDiff, error) {
	if src == rollout.SourceFabric && cfg.Fabric.Transport == conf.TransportSim {
		return nil, errors.New("--from fabric: the embedded fabric (transport \"sim\") exists only inside the daemon that runs it; use --from daemon while it runs, or --from state")
	}
	record := filepath.Join(cfg.SM.StateDir, rollout.ProgrammedFile)
	var rec *rollout.Programmed
	if src == rollout.SourceState {
		var err error
		if rec, err = rollout.LoadProgrammed(record); err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, fmt.Errorf("nothing to compare against: no daemon answers on %s and %s does not exist (ibsm run writes it after programming)", control.SocketPath(cfg.SM.StateDir), record)
		}
	}
	a, err := app.NewReadOnly(ctx, cfg, c.logger())
	if err != nil {
		return nil, err
	}
	defer a.Close()
	fab, topo, res, err := a.SM.Plan(ctx)
	if err != nil {
		return nil, err
	}
	if cand {
		if res, err = a.SM.CandidatePlan(ctx, topo, res); err != nil {
			return nil, fmt.Errorf("candidate: %w", err)
		}
	}
	if src == rollout.SourceFabric {
		pd, err := a.SM.DiffFabric(ctx, fab, res, cand)
		if err != nil {
			return nil, err
		}
		pd.Source, pd.From = src, fmt.Sprintf("the fabric as this command read it back over %s", cfg.Fabric.Transport)
		return pd, nil
	}
	want := rollout.TablesOf(rollout.Plan{Rz: res.Realized, VLs: res.VLs})
	from := fmt.Sprintf("%s: what the SM last programmed (engine %s, plan %s, at %s)", record, rec.Engine, rec.Key, rec.At.Format(time.RFC3339))
	if rec.Note != "" {
		from += ": " + rec.Note
	}
	return &rollout.PlanDiff{Engine: res.Engine, Key: res.Key.String(), Candidate: cand, Source: src, From: from,
		Diff: rollout.Compare(rec.Tables(topo), want)}, nil
}
