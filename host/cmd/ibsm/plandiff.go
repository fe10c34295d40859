package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/sdk/plan"
)

const planUsage = `usage: ibsm plan diff --config FILE [--candidate] [--json]

Computes the configured plan (--candidate: the candidate {} block's, with
the active plan's LIDs, as the shadow computes it) and prints what
programming it would change against what the switches hold, read back
from the fabric: per switch the LFT blocks (64 LIDs each) and SL2VL
tables that differ, and the endpoints whose LIDs change. Nothing is
programmed.
`

func cmdPlan(args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "diff" {
		fmt.Fprint(os.Stderr, planUsage)
		return fmt.Errorf("want: ibsm plan diff")
	}
	var c common
	fs := flag.NewFlagSet("plan diff", flag.ContinueOnError)
	c.flags(fs)
	cand := fs.Bool("candidate", false, "diff the candidate {} block's plan instead of the routing block's")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return err
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
	a, err := app.New(ctx, cfg, c.logger())
	if err != nil {
		return err
	}
	defer a.Close()
	fab, topo, res, err := a.SM.Plan(ctx)
	if err != nil {
		return err
	}
	if *cand {
		if res, err = a.SM.CandidatePlan(ctx, topo, res); err != nil {
			return fmt.Errorf("candidate: %w", err)
		}
	}
	want := rollout.TablesOf(rollout.Plan{Rz: res.Realized, VLs: res.VLs})
	held := rollout.Tables{Topo: topo, LIDs: make([]plan.PortLID, len(topo.Endpoints()))}
	all := make([]int32, len(topo.Switches()))
	for i := range all {
		all[i] = int32(i)
	}
	held.LFT, err = a.SM.ReadLFTsFrom(ctx, fab, topo, all, int(res.Realized.TopLID))
	if err != nil {
		// Unread blocks stay unknown: they count as differing.
		fmt.Fprintf(os.Stderr, "ibsm plan diff: %v; blocks not read back count as changed\n", err)
	}
	for e, ep := range topo.Endpoints() {
		if n := fab.Nodes[topo.Nodes[ep.Node].GUID]; n != nil && n.Ports[ep.Port].Valid {
			pi := n.Ports[ep.Port].Info
			held.LIDs[e] = plan.PortLID{Base: pi.LID, LMC: pi.LMC}
		}
	}
	d := rollout.Compare(held, want)
	if *asJSON {
		return printJSON(w, struct {
			Engine string `json:"engine"`
			Key    string `json:"plan_key"`
			*rollout.Diff
			SL2VLNote string `json:"sl2vl_note"`
		}{res.Engine, res.Key.String(), d, "SL2VL tables are not read back; they are not compared"})
	}
	fmt.Fprintf(w, "plan %s (engine %s) against the fabric as read back:\n", res.Key, res.Engine)
	d.Text(w)
	fmt.Fprintln(w, "(SL2VL tables are not read back and not compared)")
	return nil
}
