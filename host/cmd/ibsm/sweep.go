package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ibsm/ibsm/host/control"
	"github.com/ibsm/ibsm/host/metrics"
)

// sweepArgs are the arguments of the "sweep" control command.
type sweepArgs struct {
	// Wait: answer when the requested heavy sweep has finished (its
	// outcome), not when it was requested.
	Wait bool `json:"wait"`
}

// sweepResult answers "sweep".
type sweepResult struct {
	Requested time.Time      `json:"requested"`
	Sweep     *metrics.Sweep `json:"sweep,omitempty"` // with wait
}

// handleSweep asks the sweep loop for a heavy sweep; trigger is the loop's
// trigger channel (a pending request already covers a new one).
func (d *daemonState) handleSweep(trigger chan<- struct{}) control.Handler {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var args sweepArgs
		if err := control.Decode(raw, &args); err != nil {
			return nil, err
		}
		res := sweepResult{Requested: time.Now()}
		select {
		case trigger <- struct{}{}:
		default: // one is pending already: it starts after now too
		}
		if !args.Wait {
			return res, nil
		}
		s, err := d.rec.WaitHeavy(ctx, res.Requested)
		if err != nil {
			return nil, fmt.Errorf("the heavy sweep was requested but had not finished when the wait ended: %w", err)
		}
		res.Sweep = s
		return res, nil
	}
}

func cmdSweep(args []string, w io.Writer) error {
	var s socketFlags
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	s.flags(fs, 10*time.Minute)
	noWait := fs.Bool("no-wait", false, "return once the sweep is requested instead of when it has finished")
	asJSON := fs.Bool("json", false, "print the outcome as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var res sweepResult
	if err := s.call("sweep", sweepArgs{Wait: !*noWait}, &res); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	switch {
	case res.Sweep == nil:
		fmt.Fprintf(w, "heavy sweep requested at %s\n", res.Requested.Format(time.RFC3339))
	case res.Sweep.Error != "":
		return fmt.Errorf("heavy sweep failed: %s", res.Sweep.Error)
	case res.Sweep.Report != nil:
		r := res.Sweep.Report
		fmt.Fprintf(w, "heavy sweep done in %s: %d switches, %d CAs, %d links; rerouted %v (engine %s), %d Sets\n",
			r.Total.Round(time.Millisecond), r.Switches, r.CAs, r.Links, r.Rerouted, r.Engine, r.Discovery.Sets+r.Distribution.Sets)
	}
	return nil
}
