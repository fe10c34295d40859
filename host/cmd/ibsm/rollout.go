package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/control"
	"github.com/ibsm/ibsm/host/rollout"
)

const rolloutUsage = `usage: ibsm rollout <command> --config FILE [flags]

Commands (the daemon must run with a candidate {} block):
  status  [--json]          both plans side by side, what promotion would send, the rollout
  promote [--wait DUR]      start the staged promotion of the candidate
  abort   [--wait DUR]      roll every promoted switch back to the active plan
  history [--json]          every rollout event so far

status asks the daemon over its control socket (state_dir/control.sock)
when it answers rollout.status, else reads state_dir/rollout/status.json
(rewritten after each shadow computation and rollout step); history reads
state_dir/rollout/history.jsonl. promote and abort leave a
request file there that the daemon takes at its next light sweep
(sm.sweep_interval); --wait waits until it is taken.
`

func cmdRollout(args []string, w io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, rolloutUsage)
		return errors.New("missing rollout command")
	}
	var c common
	fs := flag.NewFlagSet("rollout "+args[0], flag.ContinueOnError)
	c.flags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	wait := fs.Duration("wait", 0, "wait this long for the daemon to take the request (0: do not wait)")
	switch args[0] {
	case "status", "promote", "abort", "history":
	case "-h", "--help", "help":
		fmt.Fprint(w, rolloutUsage)
		return nil
	default:
		fmt.Fprint(os.Stderr, rolloutUsage)
		return fmt.Errorf("unknown rollout command %q", args[0])
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	if cfg.Candidate == nil {
		return fmt.Errorf("%s has no candidate {} block: add one, e.g. candidate { engine = \"sftree\" }, and reload the daemon (SIGHUP)", cfg.File)
	}
	dir := rollout.Dir(cfg.SM.StateDir)
	switch args[0] {
	case "status":
		st, err := liveStatus(cfg.SM.StateDir)
		if err != nil {
			if st, err = rollout.ReadStatus(dir); err != nil {
				return err
			}
		}
		if *asJSON {
			return printJSON(w, st)
		}
		st.Text(w)
		if age := time.Since(st.Updated); age > 3*cfg.SM.SweepInterval {
			fmt.Fprintf(w, "warning: this status is %s old; is the daemon running?\n", age.Round(time.Second))
		}
		return nil
	case "history":
		h, err := rollout.ReadHistory(dir)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(w, h)
		}
		for _, e := range h {
			fmt.Fprintf(w, "%s %s %-12s", e.At.Format(time.RFC3339), e.ID, e.Event)
			if e.Stage != "" {
				fmt.Fprintf(w, " stage %s step %d", e.Stage, e.Step)
			}
			if e.Detail != "" {
				fmt.Fprintf(w, ": %s", e.Detail)
			}
			fmt.Fprintln(w)
		}
		return nil
	}
	req := rollout.Request(args[0])
	if err := rollout.WriteRequest(dir, req); err != nil {
		return err
	}
	path := filepath.Join(dir, rollout.RequestFile)
	if *wait <= 0 {
		fmt.Fprintf(w, "%s requested (%s); the daemon takes it within sm.sweep_interval (%s): follow with ibsm rollout status\n", req, path, cfg.SM.SweepInterval)
		return nil
	}
	deadline := time.Now().Add(*wait)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(w, "%s taken by the daemon: follow with ibsm rollout status\n", req)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the daemon did not take the %s request within %s; is it running with this configuration? (the request stays in %s)", req, *wait, path)
}

// liveStatus asks the running daemon over its control socket (when it
// registered the rollout commands); an error sends the caller to the file.
func liveStatus(stateDir string) (*rollout.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var st rollout.Status
	if err := control.Call(ctx, control.SocketPath(stateDir), app.CmdRolloutStatus, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
