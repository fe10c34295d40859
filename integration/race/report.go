package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
	"hash/fnv"
)

// Sample is one bring-up. Times are seconds.
type Sample struct {
	Up, Disc, Route, Dist, Wall float64
	Gets, Sets                  int64
	RSSMiB                      float64
	// MADSpan is the time the SMPs were sent in: for OpenSM first to last
	// umad_send, for ibsm discovery plus distribution.
	MADSpan float64
}

// SMResult is one SM on one engine and topology.
type SMResult struct {
	SM      string
	Samples []Sample
	Quality *Quality
	// Rejected: ibsm refused the plan (nothing programmed). Err: the run
	// failed. Fallback: OpenSM ran another engine than asked.
	Rejected, Err, Fallback string
	// Detail is OpenSM's SMPs per attribute.
	Detail           string
	LFTHash          uint64
	Nondeterministic bool
}

// EngineResult pairs the two SMs on one engine.
type EngineResult struct {
	Engine    engineSpec
	OSM, IBSM *SMResult
}

// TopoResult is one topology.
type TopoResult struct {
	Name, Args string
	Floor      *Floor
	Engines    []*EngineResult
}

// Report is the whole race.
type Report struct {
	Command               string
	Started               time.Time
	Elapsed               time.Duration
	CPUs                  int
	LoadBefore, LoadAfter string
	Notes                 []string
	Topos                 []*TopoResult
}

func (r *SMResult) median(f func(Sample) float64) float64 {
	xs := make([]float64, len(r.Samples))
	for i, s := range r.Samples {
		xs[i] = f(s)
	}
	return benchutil.Median(xs)
}

func (r *SMResult) ok() bool {
	return r != nil && len(r.Samples) > 0 && r.Err == "" && r.Rejected == ""
}

// lftHash names the programmed state (LIDs and LFTs) so runs can be
// compared.
func lftHash(p *Programmed) uint64 {
	h := fnv.New64a()
	for _, pl := range p.RZ.LIDs.Ports {
		fmt.Fprintf(h, "%d/%d,", pl.Base, pl.LMC)
	}
	for s, row := range p.RZ.LFT {
		fmt.Fprintf(h, "|%x:", p.Topo.Nodes[p.Topo.Switches()[s]].GUID)
		h.Write(row)
	}
	return h.Sum64()
}

// Markdown writes the report: one table for all topologies, then per
// topology the floor and the details the table has no room for.
func (rep *Report) Markdown(w io.Writer) {
	fmt.Fprintf(w, "## ibsm vs OpenSM 3.3.23 on ibsim\n\n")
	fmt.Fprintf(w, "Command: `%s`  \n", rep.Command)
	fmt.Fprintf(w, "Machine: %d CPUs; load average %s before, %s after; run took %s.\n\n", rep.CPUs, rep.LoadBefore, rep.LoadAfter, rep.Elapsed.Round(time.Second))
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "- note: %s\n", n)
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "| topology | engine | SM | runs | SUBNET UP s | discovery / routing / distribution s | Gets | Sets | peak RSS MiB | MAD/s (% of floor) | at-floor s | a2a max | shift worst | eBB | unreachable pairs | deadlock-free (1 VL) | ibsm/OpenSM |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, t := range rep.Topos {
		for _, e := range t.Engines {
			for _, sm := range []*SMResult{e.OSM, e.IBSM} {
				if sm != nil {
					fmt.Fprintln(w, row(t, e, sm))
				}
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Columns: times are medians over the runs; OpenSM's phases are its log's (DISCOVERING→MASTER, MASTER→tables configured, →SUBNET UP), ibsm's its own summary's. "+
		"Gets/Sets are SMP requests (OpenSM: counted at umad_send by a preloaded shim; ibsm: its counters). "+
		"MAD/s is (Gets+Sets)/SUBNET UP; at-floor s is the time those SMPs need at ibsim's floor rate. "+
		"Quality is measured on what was read back out of ibsim with our own SMPs (LIDs and every LFT block), one SL and one VL: "+
		"a2a max = most CA→CA routes on one channel under all-to-all; shift worst = highest channel load over shift permutations; eBB = effective bisection bandwidth (seeded); unreachable pairs count CA→CA and switch→switch pairs; deadlock-free means the channel dependency graph of all of it, switch-to-switch traffic included, is acyclic on one VL.")
	fmt.Fprintln(w)
	for _, t := range rep.Topos {
		fmt.Fprintf(w, "### %s (`ibsm topo %s`)\n\n", t.Name, t.Args)
		if f := t.Floor; f != nil {
			var pts []string
			for _, p := range f.Points {
				pts = append(pts, fmt.Sprintf("w%d %.0f", p.Window, p.Rate))
			}
			fmt.Fprintf(w, "- ibsim floor: **%.0f MAD/s** at window %d (SubnGet NodeInfo at %v hops; %s)\n", f.Best.Rate, f.Best.Window, f.Hops, strings.Join(pts, ", "))
		}
		for _, e := range t.Engines {
			for _, sm := range []*SMResult{e.OSM, e.IBSM} {
				if sm == nil {
					continue
				}
				if d := detail(t, e, sm); d != "" {
					fmt.Fprintf(w, "- %s %s: %s\n", e.Engine, sm.SM, d)
				}
			}
			if v := verdict(t, e); v != "" {
				fmt.Fprintf(w, "- %s: %s\n", e.Engine, v)
			}
		}
		fmt.Fprintln(w)
	}
}

func row(t *TopoResult, e *EngineResult, sm *SMResult) string {
	cells := []string{t.Name, e.Engine.String(), sm.SM}
	if sm.Rejected != "" {
		return "| " + strings.Join(cells, " | ") + " | 1 | rejected: nothing programmed (see below) |" + strings.Repeat(" — |", 13)
	}
	if !sm.ok() {
		return "| " + strings.Join(cells, " | ") + " | 0 | failed (see below) |" + strings.Repeat(" — |", 13)
	}
	up := sm.median(func(s Sample) float64 { return s.Up })
	gets := sm.median(func(s Sample) float64 { return float64(s.Gets) })
	sets := sm.median(func(s Sample) float64 { return float64(s.Sets) })
	rate := sm.median(func(s Sample) float64 { return float64(s.Gets+s.Sets) / s.Up })
	cells = append(cells,
		fmt.Sprint(len(sm.Samples)),
		fmt.Sprintf("%.3f", up),
		fmt.Sprintf("%.3f / %.3f / %.3f", sm.median(func(s Sample) float64 { return s.Disc }), sm.median(func(s Sample) float64 { return s.Route }), sm.median(func(s Sample) float64 { return s.Dist })),
		fmt.Sprintf("%.0f", gets), fmt.Sprintf("%.0f", sets),
		fmt.Sprintf("%.0f", sm.median(func(s Sample) float64 { return s.RSSMiB })),
	)
	if t.Floor != nil && t.Floor.Best.Rate > 0 {
		cells = append(cells, fmt.Sprintf("%.0f (%.0f%%)", rate, 100*rate/t.Floor.Best.Rate), fmt.Sprintf("%.3f", t.Floor.Seconds(int64(gets+sets))))
	} else {
		cells = append(cells, fmt.Sprintf("%.0f", rate), "—")
	}
	if q := sm.Quality; q != nil {
		df := "yes"
		if !q.Acyclic {
			df = "**no** (CDG cycle)"
		}
		cells = append(cells, fmt.Sprint(q.A2AMax), fmt.Sprint(q.ShiftWorst), fmt.Sprintf("%.3f", q.EBB), fmt.Sprint(q.Unreachable), df)
	} else {
		cells = append(cells, "—", "—", "—", "—", "—")
	}
	ratio := "—"
	if sm.SM == "ibsm" && e.OSM.ok() {
		o := e.OSM.median(func(s Sample) float64 { return s.Up })
		ormem := e.OSM.median(func(s Sample) float64 { return s.RSSMiB })
		ratio = fmt.Sprintf("**%.2f×** time, %.2f× RSS", up/o, sm.median(func(s Sample) float64 { return s.RSSMiB })/ormem)
	}
	cells = append(cells, ratio)
	return "| " + strings.Join(cells, " | ") + " |"
}

func detail(t *TopoResult, e *EngineResult, sm *SMResult) string {
	var parts []string
	switch {
	case sm.Rejected != "":
		parts = append(parts, "rejected by ibsm's verifier/VL assigner, nothing programmed: "+sm.Rejected)
	case sm.Err != "":
		parts = append(parts, "failed: "+firstLine(sm.Err, 400))
	}
	if sm.Fallback != "" {
		parts = append(parts, fmt.Sprintf("OpenSM ran %s instead of %s", sm.Fallback, e.Engine.OSM))
	}
	if sm.ok() {
		up := sm.median(func(s Sample) float64 { return s.Up })
		span := sm.median(func(s Sample) float64 { return s.MADSpan })
		n := sm.median(func(s Sample) float64 { return float64(s.Gets + s.Sets) })
		if t.Floor != nil && t.Floor.Best.Rate > 0 && span > 0 {
			what := "first to last umad_send"
			if sm.SM == "ibsm" {
				what = "discovery + distribution"
			}
			parts = append(parts, fmt.Sprintf("%.0f SMPs in %.3fs (%s) = %.0f MAD/s, %.0f%% of the floor; SUBNET UP is %.1f× the at-floor time",
				n, span, what, n/span, 100*n/span/t.Floor.Best.Rate, up/t.Floor.Seconds(int64(n))))
		}
		parts = append(parts, fmt.Sprintf("process wall %.3fs", sm.median(func(s Sample) float64 { return s.Wall })))
	}
	if q := sm.Quality; q != nil {
		shifts := fmt.Sprintf("%d sampled shifts", q.Shifts)
		if q.ShiftAll {
			shifts = "all shifts"
		}
		parts = append(parts, fmt.Sprintf("CA pairs %d/%d, switch pairs %d/%d reachable, %d loop LIDs, a2a max normalised %.3f, hops avg %.2f max %d, shift over %s, %d linked ports not ACTIVE",
			q.CAPairs.Reachable, q.CAPairs.Total, q.SwitchPairs.Reachable, q.SwitchPairs.Total, q.LoopLIDs, q.A2ANorm, q.AvgHops, q.MaxHops, shifts, q.NotActve))
	}
	if q := sm.Quality; q != nil && len(q.Cycle) > 0 {
		c := q.Cycle
		more := ""
		if len(c) > 6 {
			c, more = c[:6], fmt.Sprintf(" … (%d channels)", len(q.Cycle))
		}
		parts = append(parts, "one CDG cycle: "+strings.Join(c, " → ")+more)
	}
	if sm.Nondeterministic {
		parts = append(parts, "**the programmed LFTs differed between runs** (quality is the first run's)")
	}
	if sm.Detail != "" {
		parts = append(parts, "SMPs by attribute: "+sm.Detail)
	}
	return strings.Join(parts, "; ")
}

// verdict states the acceptance criterion for a pair: ibsm at most
// half of OpenSM's time to SUBNET UP.
func verdict(t *TopoResult, e *EngineResult) string {
	if !e.OSM.ok() || !e.IBSM.ok() {
		return ""
	}
	o := e.OSM.median(func(s Sample) float64 { return s.Up })
	i := e.IBSM.median(func(s Sample) float64 { return s.Up })
	res := "MET"
	if i > o/2 {
		res = "NOT MET"
	}
	return fmt.Sprintf("ibsm %.3fs vs OpenSM %.3fs to SUBNET UP: ratio %.2f, target ≤ 0.50 %s", i, o, i/o, res)
}
