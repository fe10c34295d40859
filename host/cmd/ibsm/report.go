package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ibsm/ibsm/conf/atomicfile"
	"github.com/ibsm/ibsm/host/report"
)

func cmdReport(args []string, w io.Writer) error {
	var c common
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	c.flags(fs)
	out := fs.String("out", "report.html", "the HTML file to write (self-contained: open it in any browser, offline)")
	title := fs.String("title", "", "the page's title (default: the config file's name)")
	shifts := fs.Int("shifts", 0, "shift permutations for the worst-shift load (0: all of them up to 1,024 CAs, else 64)")
	withCand := fs.Bool("candidate", true, "when the config has a candidate {} block, draw its plan beside the active one (computed as the shadow computes it: on the same discovery, with the active plan's LIDs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *shifts < 0 {
		return errors.New("--shifts must be 0 (automatic) or a positive count")
	}
	start := time.Now()
	a, res, err := planOnly(&c)
	if err != nil {
		return err
	}
	defer a.Close()
	if *title == "" {
		*title = "ibsm report: " + filepath.Base(c.config)
	}
	defer c.endProgress()
	plans := []report.Plan{{Name: "active", Engine: res.Engine, Key: res.Key.String(), Rz: res.Realized, VLs: res.VLs}}
	candErr := ""
	if *withCand && a.Config.Candidate != nil {
		c.phase("candidate", "routing and verifying the candidate {} block's plan")
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		cand, err := a.SM.CandidatePlan(ctx, res.Realized.Topo, res)
		interrupted := ctx.Err()
		stop()
		switch {
		case interrupted != nil:
			return interrupted
		case err != nil:
			// The page says so beside the active plan: a rejected
			// candidate is what an operator wants to see.
			candErr = err.Error()
			fmt.Fprintf(os.Stderr, "ibsm report: the candidate {} block's plan failed, the page shows the active plan alone: %v\n", err)
		default:
			plans = append(plans, report.Plan{Name: "candidate", Engine: cand.Engine, Key: cand.Key.String(), Rz: cand.Realized, VLs: cand.VLs})
		}
	}
	c.phase("report", fmt.Sprintf("loads and shifts of %d plan(s)", len(plans)))
	m, err := report.Build(plans, report.Options{Title: *title, Shifts: *shifts})
	if err != nil {
		return err
	}
	m.CandidateError = candErr
	err = atomicfile.WriteFunc(*out, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		if err := report.Write(bw, m); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("%w (check that --out's directory is writable)", err)
	}
	c.endProgress()
	fi, _ := os.Stat(*out)
	var names []string
	for _, p := range m.Plans {
		names = append(names, p.Name+" "+p.Metrics.Engine)
	}
	fmt.Fprintf(w, "wrote %s (%d bytes; plans: %s; %d switches, %d CAs, %d boxes, %d links drawn%s) in %s\n", *out, fi.Size(), strings.Join(names, ", "),
		m.Switches, m.CAs, len(m.Nodes), len(m.Links), map[bool]string{true: ", aggregated", false: ""}[m.Aggregated], time.Since(start).Round(time.Millisecond))
	return nil
}
