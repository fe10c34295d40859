// Command lidtables reproduces the LID-assignment experiments of Nienaber,
// Yuan and Duan, "On LID Assignment in InfiniBand Networks" (ANCS 2007),
// Tables 1-3, and López, Flich and Duato, "Deadlock-free Routing in
// InfiniBand through Destination Renaming" (ICPP 2001), Tables 4-6, and
// prints them as Markdown with the papers' numbers beside ours.
//
// It calls the routing and LID libraries directly (no plugin processes),
// runs instances in parallel (-workers) and checks every LID plan realises
// its paths hop for hop. Every fabric is host/topogen's paper preset, so
// 'ibsm topo paper ... --seed N' writes the exact instance N of a table
// (see topogen.Paper.Args). Its README and latest output (RESULTS.md) sit beside it.
//
//	go run ./integration/experiments/lidtables -out integration/experiments/lidtables/RESULTS.md
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/plugins/lib/lids"
	"github.com/ibsm/ibsm/plugins/lib/paths"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// The five heuristics of Nienaber et al.'s Tables 1 and 2, in the paper's
// order.
var table12 = []lids.Heuristic{lids.Greedy, lids.SplitMergeS, lids.SplitMergeL, lids.ColorS, lids.ColorL}

type conf000 struct{ machines, switches int }

var confs000 = []conf000{{128, 16}, {256, 16}, {512, 16}, {128, 32}, {256, 32}, {512, 32}, {128, 64}, {256, 64}, {512, 64}}

func (c conf000) String() string { return fmt.Sprintf("%d/%d", c.machines, c.switches) }

// paper000 is instance seed of a Nienaber et al. configuration.
func paper000(c conf000, seed int64) topogen.Paper {
	return topogen.Paper{Set: "000", Switches: c.switches, CAs: c.machines, Seed: seed}
}

// paper003 is instance seed of López et al.'s switches x links fabric.
func paper003(switches, links int, seed int64) topogen.Paper {
	return topogen.Paper{Set: "003", Switches: switches, Degree: links, Seed: seed}
}

// Nienaber et al. Table 1 (shortest widest) and Table 2 (path selection):
// average total LIDs over 32 instances, columns greedy, s-m/S, s-m/L,
// color/S, color/L; rows in confs000 order.
var paperT1 = [][5]float64{
	{478.7, 478.9, 477.3, 479.3, 476.4},
	{1044.3, 1045.4, 1041.5, 1047.7, 1039.2},
	{2218.3, 2220.1, 2211.8, 2220.4, 2208.5},
	{451.5, 453.9, 452.9, 461.3, 443.0},
	{1078.8, 1084.7, 1079.0, 1100.0, 1062.4},
	{2428.7, 2440.2, 2425.8, 2461.0, 2392.1},
	{422.8, 427.7, 427.0, 441.5, 407.4},
	{1015.5, 1022.2, 1019.3, 1044.6, 990.6},
	{2325.8, 2338.4, 2330.1, 2385.1, 2274.4},
}
var paperT2 = [][5]float64{
	{520.9, 524.2, 514.0, 581.2, 466.0},
	{951.3, 952.7, 935.0, 1062.6, 851.2},
	{1829.2, 1852.8, 1823.0, 2038.7, 1653.2},
	{540.3, 546.7, 539.3, 611.3, 466.0},
	{1006.7, 1018.2, 1002.2, 1130.8, 887.2},
	{1904.0, 1920.3, 1895.7, 2115.8, 1688.7},
	{528.0, 541.1, 530.5, 599.4, 460.5},
	{1054.9, 1092.9, 1068.1, 1197.9, 921.4},
	{2019.9, 2075.4, 2043.4, 2278.6, 1786.6},
}

// Nienaber et al. Table 3: renaming load, LIDs; separate load, LIDs.
var paperT3 = [][4]float64{
	{3.84, 477.8, 3.70, 466.0},
	{7.52, 1044.9, 7.35, 851.2},
	{15.46, 2213.3, 14.91, 1653.2},
	{3.01, 448.1, 2.75, 466.0},
	{6.26, 1079.2, 5.8, 887.2},
	{13.24, 2422.8, 12.37, 1688.7},
	{3.01, 420.0, 2.75, 460.5},
	{5.72, 1011.8, 5.13, 921.4},
	{10.55, 2323.4, 9.54, 1786.6},
}

// López et al. Table 4(a) (up*/down*): total, original, new entries; min, max,
// avg % increase. Table 5(a): avg and max renamings per host.
var sizes003 = []int{8, 16, 32, 64}
var paperT4 = [][6]float64{
	{402, 256, 145, 37, 70, 57},
	{1648, 1022, 616, 39, 82, 60},
	{6733, 4078, 2637, 49, 85, 65},
	{26512, 16310, 10188, 57, 71, 62},
}
var paperT5 = [][2]float64{{1.1, 3}, {1.5, 4}, {1.8, 6}, {2.1, 7}}

// López et al. Table 6: % of entries with conflicts, 64 switches, 4 hosts per
// switch, by inter-switch links per switch: min, max, avg.
var links003 = []int{3, 4, 5, 8}
var paperT6 = [][3]float64{{0.91, 1.44, 1.26}, {2.40, 3.07, 2.71}, {3.90, 4.87, 4.23}, {7.33, 8.71, 8.08}}

func main() {
	seeds := flag.Int("seeds", 32, "random instances per Nienaber et al. configuration (paper: 32)")
	seeds003 := flag.Int("seeds003", 10, "random instances per López et al. configuration (paper: 10)")
	workers := flag.Int("workers", 2, "instances computed in parallel")
	only := flag.String("tables", "000,003", "which papers' tables to run: 000, 003 or both")
	gran := flag.String("granularity", "switch,machine", `path selection granularities for Nienaber et al.'s Tables 2 and 3, comma-separated: "switch" (one path per switch pair, the plugin default), "machine" (one per machine pair)`)
	out := flag.String("out", "", "write the Markdown here instead of stdout")
	flag.Parse()
	w := io.Writer(os.Stdout)
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		w = f
	}
	start := time.Now()
	fmt.Fprintf(w, "# LID assignment experiments (seeds 000 and 003)\n\n")
	fmt.Fprintf(w, "Generated by `go run ./integration/experiments/lidtables %s` on %d CPU(s), %d worker(s).\n",
		strings.Join(os.Args[1:], " "), runtime.NumCPU(), *workers)
	fmt.Fprintf(w, "Every number below is ours unless marked *paper*; every LID plan was checked to realise its paths hop for hop.\n\n")
	var grans []paths.Granularity
	for _, g := range strings.Split(*gran, ",") {
		pg, err := paths.ParseGranularity(strings.TrimSpace(g))
		if err != nil {
			fmt.Fprintln(os.Stderr, "-granularity:", err)
			os.Exit(2)
		}
		grans = append(grans, pg)
	}
	if strings.Contains(*only, "000") {
		if err := run000(w, *seeds, *workers, grans); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if strings.Contains(*only, "003") {
		if err := run003(w, *seeds003, *workers); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Fprintf(w, "Total wall time: %s.\n", time.Since(start).Round(time.Second))
}

// caLIDs assigns LIDs to paths with h and returns the result after checking
// that the plan realises every path; total is the LIDs of CA ports only
// (the papers count machines).
func caLIDs(t *topology.Topology, ps []plan.Path, h lids.Heuristic) (*lids.Result, int, error) {
	res, err := lids.Assign(context.Background(), t, &plan.Routes{Paths: ps}, lids.Options{Heuristic: h, MaxLMC: 7})
	if err != nil {
		return nil, 0, err
	}
	if err := lids.CheckRealises(t, ps, res.Plan); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", h, err)
	}
	total := 0
	for e, ep := range t.Endpoints() {
		if t.SwitchIndex(ep.Node) < 0 {
			total += res.Plan.Ports[e].Count()
		}
	}
	return res, total, nil
}

// cliqueBound is a lower bound on the total CA LIDs any partition of ps
// needs: paths toward one destination that leave one switch by different
// ports pairwise split, so a destination needs at least as many LIDs as
// the most out-ports its paths use at any one switch (rounded up to a
// power of two like the heuristics' counts).
func cliqueBound(t *topology.Topology, ps []plan.Path) int {
	outs := map[[2]int32][]uint8{}
	need := make([]int, len(t.Endpoints()))
	for _, p := range ps {
		for _, h := range p.Hops {
			k := [2]int32{p.Dst, h.Switch}
			if !slices.Contains(outs[k], h.Out) {
				outs[k] = append(outs[k], h.Out)
				need[p.Dst] = max(need[p.Dst], len(outs[k]))
			}
		}
	}
	total := 0
	for e, ep := range t.Endpoints() {
		if t.SwitchIndex(ep.Node) < 0 {
			n := 1
			for n < need[e] {
				n *= 2
			}
			total += n
		}
	}
	return total
}

// maxLoad is Nienaber et al.'s load metric: the most paths on one channel, each
// machine sending 1 in total (so 1/(machines-1) per pair).
func maxLoad(t *topology.Topology, ps []plan.Path, machines int) (float64, error) {
	m, err := paths.MaxLoad(t, ps)
	return float64(m) / float64(machines-1), err
}

// inst000 is one Nienaber et al. instance. Routing 0 is shortest-widest;
// routing 1+g is path selection at granularity grans[g].
type inst000 struct {
	lids    [][5]int // total CA LIDs per heuristic (table12 order)
	bound   []int    // clique lower bound on total CA LIDs
	maxK    [][5]int // largest configurations for one destination
	routeT  []time.Duration
	load    []float64 // Nienaber et al. load metric per routing
	renLIDs int
	renLoad float64
	took    time.Duration
}

func routingName(rt int, grans []paths.Granularity) string {
	if rt == 0 {
		return "shortest-widest"
	}
	return fmt.Sprintf("path selection (%s)", grans[rt-1])
}

func run000(w io.Writer, seeds, workers int, grans []paths.Granularity) error {
	start := time.Now()
	nr := 1 + len(grans)
	res := make([][]inst000, len(confs000))
	for c := range res {
		res[c] = make([]inst000, seeds)
	}
	// Largest configurations first so the pool ends evenly.
	order := make([]int, len(confs000)*seeds)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ca, cb := confs000[a/seeds], confs000[b/seeds]
		return cb.machines*cb.switches - ca.machines*ca.switches
	})
	_, err := route.Each(context.Background(), len(order), workers, func(_, j int) error {
		i := order[j]
		c, s := confs000[i/seeds], uint64(i%seeds)+1
		r := &res[i/seeds][i%seeds]
		r.lids, r.maxK = make([][5]int, nr), make([][5]int, nr)
		r.bound, r.routeT, r.load = make([]int, nr), make([]time.Duration, nr), make([]float64, nr)
		t0 := time.Now()
		topo, err := topogen.Topology(paper000(c, int64(s)))
		if err != nil {
			return fmt.Errorf("%v seed %d: %w", c, s, err)
		}
		for rt := 0; rt < nr; rt++ {
			t1 := time.Now()
			var ps []plan.Path
			if rt == 0 {
				ps, err = paths.ShortestWidest(topo, rand.New(rand.NewPCG(s, 0x000a)))
			} else {
				o := paths.DefaultOptions()
				o.Granularity = grans[rt-1]
				var pr *paths.Result
				// Same random stream for every granularity: same root.
				if pr, err = paths.PathSelectionOpts(topo, rand.New(rand.NewPCG(s, 0x000b)), o); err == nil {
					ps = pr.Paths
				}
			}
			if err != nil {
				return fmt.Errorf("%v seed %d %s: %w", c, s, routingName(rt, grans), err)
			}
			r.routeT[rt] = time.Since(t1)
			r.bound[rt] = cliqueBound(topo, ps)
			if r.load[rt], err = maxLoad(topo, ps, c.machines); err != nil {
				return err
			}
			for k, h := range table12 {
				a, n, err := caLIDs(topo, ps, h)
				if err != nil {
					return fmt.Errorf("%v seed %d %s: %w", c, s, routingName(rt, grans), err)
				}
				r.lids[rt][k], r.maxK[rt][k] = n, slices.Max(a.Configs)
			}
		}
		// Table 3: destination renaming on its own routing (random
		// shortest up*/down*, López et al.'s); "separate" = path selection +
		// color/L is already measured above.
		renPaths, err := paths.RandomShortestUpDown(topo, rand.New(rand.NewPCG(s, 0x000c)))
		if err != nil {
			return fmt.Errorf("%v seed %d random shortest: %w", c, s, err)
		}
		if _, r.renLIDs, err = caLIDs(topo, renPaths, lids.Renaming); err != nil {
			return fmt.Errorf("%v seed %d renaming: %w", c, s, err)
		}
		if r.renLoad, err = maxLoad(topo, renPaths, c.machines); err != nil {
			return err
		}
		r.took = time.Since(t0)
		fmt.Fprintf(os.Stderr, "000 %v seed %d: %s (routing %v)\n", c, s, r.took.Round(time.Millisecond), r.routeT)
		return nil
	})
	if err != nil {
		return err
	}
	mean := func(c int, f func(*inst000) float64) float64 {
		sum := 0.0
		for k := range res[c] {
			sum += f(&res[c][k])
		}
		return sum / float64(len(res[c]))
	}
	var cpu time.Duration
	routeT := make([]time.Duration, nr)
	for c := range res {
		for k := range res[c] {
			cpu += res[c][k].took
			for rt := range routeT {
				routeT[rt] += res[c][k].routeT[rt]
			}
		}
	}
	fmt.Fprintf(w, "## Nienaber, Yuan and Duan (ANCS 2007)\n\n")
	fmt.Fprintf(w, "Set-up: connected uniformly random simple switch graphs, average inter-switch degree 8 (standing in for GT-ITM), machines placed uniformly at random; %d seeds per configuration (paper: 32), seeds 1..%d. Instance N of conf. M/S is `ibsm topo paper --set 000 --switches S --cas M --seed N`. Up*/down* root drawn at random. LIDs are totals over machines after rounding each to 2^LMC.\n\n", seeds, seeds)
	// tied lists every heuristic whose mean equals v.
	tied := func(m [5]float64, v float64) string {
		var names []string
		for k := range m {
			if m[k] == v {
				names = append(names, string(table12[k]))
			}
		}
		if len(names) == len(m) {
			return "all equal"
		}
		return strings.Join(names, " = ")
	}
	ordering := func(table string, rt int, paper [][5]float64) {
		fmt.Fprintf(w, "| conf. | greedy | s-m/S | s-m/L | color/S | color/L | clique bound | fewest | most | color/L vs paper |\n|---|---|---|---|---|---|---|---|---|---|\n")
		var lFewest, sMost, lStrict, notAbove int
		for c := range confs000 {
			var m [5]float64
			for k := range m {
				m[k] = mean(c, func(r *inst000) float64 { return float64(r.lids[rt][k]) })
			}
			lo, hi := slices.Min(m[:]), slices.Max(m[:])
			fmt.Fprintf(w, "| %v |", confs000[c])
			for k := range m {
				fmt.Fprintf(w, " %.1f (*%.1f*) |", m[k], paper[c][k])
			}
			d := 100 * (m[4] - paper[c][4]) / paper[c][4]
			lb := mean(c, func(r *inst000) float64 { return float64(r.bound[rt]) })
			fmt.Fprintf(w, " %.1f | %s | %s | %+.1f%% |\n", lb, tied(m, lo), tied(m, hi), d)
			if m[4] == lo {
				lFewest++
				if m[4] < m[3] {
					lStrict++
				}
			}
			if m[3] == hi {
				sMost++
			}
			if m[4] <= paper[c][4] {
				notAbove++
			}
		}
		n := len(confs000)
		fmt.Fprintf(w, "\n*%s; ours (paper). Clique bound: no partition of these paths can use fewer LIDs. Fewest/most: heuristics with the lowest/highest mean (ties joined by =).*\n\n", table)
		fmt.Fprintf(w, "Checks: color/L fewest (ties included) in %d of %d configurations; color/S most (ties included) in %d of %d; color/L strictly below color/S in %d of %d; color/L at or below the paper's color/L in %d of %d.\n\n",
			lFewest, n, sMost, n, lStrict, n, notAbove, n)
	}
	fmt.Fprintf(w, "### Table 1: average total LIDs, shortest-widest routing (one path per machine pair)\n\n")
	ordering("Nienaber et al. Table 1", 0, paperT1)
	for g := range grans {
		fmt.Fprintf(w, "### Table 2: average total LIDs, path-selection routing (Yen k=16, most-loaded-link-first, one path per %s pair)\n\n", grans[g])
		ordering("Nienaber et al. Table 2", 1+g, paperT2)
	}

	fmt.Fprintf(w, "Largest number of LIDs (configurations, before rounding) any one destination needed, max over seeds:\n\n| conf. | routing | greedy | s-m/S | s-m/L | color/S | color/L |\n|---|---|---|---|---|---|---|\n")
	for c := range confs000 {
		for rt := 0; rt < nr; rt++ {
			fmt.Fprintf(w, "| %v | %s |", confs000[c], routingName(rt, grans))
			for k := range table12 {
				m := 0
				for i := range res[c] {
					m = max(m, res[c][i].maxK[rt][k])
				}
				fmt.Fprintf(w, " %d |", m)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "\n### Table 3: maximum link load and LIDs\n\n")
	fmt.Fprintf(w, "Renaming = random shortest up*/down* path per pair + destination renaming; Separate = path selection + color/L. Load = most paths on one directed channel / (machines - 1). Shortest-widest is listed for reference (the paper does not).\n\n")
	fmt.Fprintf(w, "| conf. | Renaming load | Renaming LIDs |")
	for _, g := range grans {
		fmt.Fprintf(w, " Separate (%s) load | Separate (%s) LIDs |", g, g)
	}
	fmt.Fprintf(w, " shortest-widest load |\n|---|---|---|")
	for range grans {
		fmt.Fprintf(w, "---|---|")
	}
	fmt.Fprintf(w, "---|\n")
	for c := range confs000 {
		p := paperT3[c]
		rl := mean(c, func(r *inst000) float64 { return r.renLoad })
		rn := mean(c, func(r *inst000) float64 { return float64(r.renLIDs) })
		fmt.Fprintf(w, "| %v | %.2f (*%.2f*) | %.1f (*%.1f*) |", confs000[c], rl, p[0], rn, p[1])
		for g := range grans {
			sl := mean(c, func(r *inst000) float64 { return r.load[1+g] })
			sn := mean(c, func(r *inst000) float64 { return float64(r.lids[1+g][4]) })
			fmt.Fprintf(w, " %.2f (*%.2f*) | %.1f (*%.1f*) |", sl, p[2], sn, p[3])
		}
		fmt.Fprintf(w, " %.2f |\n", mean(c, func(r *inst000) float64 { return r.load[0] }))
	}
	fmt.Fprintf(w, "\n*Nienaber et al. Table 3 (fully explicit routing not reproduced); ours (paper).*\n\n")
	for g, gr := range grans {
		var lower, fewer int
		for c := range confs000 {
			if mean(c, func(r *inst000) float64 { return r.load[1+g] }) < mean(c, func(r *inst000) float64 { return r.renLoad }) {
				lower++
			}
			if mean(c, func(r *inst000) float64 { return float64(r.lids[1+g][4]) }) < mean(c, func(r *inst000) float64 { return float64(r.renLIDs) }) {
				fewer++
			}
		}
		fmt.Fprintf(w, "Checks, separate (%s) against renaming: lower load in %d of %d configurations, fewer LIDs in %d of %d.\n\n", gr, lower, len(confs000), fewer, len(confs000))
	}
	fmt.Fprintf(w, "Tables 1-3 wall time %s (instance time summed over workers %s; routing:", time.Since(start).Round(time.Second), cpu.Round(time.Second))
	for rt := range routeT {
		fmt.Fprintf(w, " %s %s;", routingName(rt, grans), routeT[rt].Round(time.Second))
	}
	fmt.Fprintf(w, " the rest is LID assignment and checks).\n\n")
	return nil
}

// entries measures a renaming result the way López et al. §4 does: original =
// (switch, destination) pairs some path passes (random-table entries
// without renaming), total = (switch, LID) pairs with renaming. For
// Table 6 it counts the (switch, destination) entries whose paths need more
// than one out-port (conflicted) and the out-ports beyond the first
// (extra), against cxn = the (switch, input port, destination) entries of
// the C x N -> C tables the paths came from.
func entries(t *topology.Topology, ps []plan.Path, group []int32) (original, total, conflicted, extra, cxn int) {
	type sd struct{ s, d int32 }
	outs := map[sd][]uint8{}
	trip := map[[3]int32]bool{}
	lids := map[[3]int32]bool{}
	for i, p := range ps {
		for _, h := range p.Hops {
			k := sd{h.Switch, p.Dst}
			if !slices.Contains(outs[k], h.Out) {
				outs[k] = append(outs[k], h.Out)
			}
			trip[[3]int32{h.Switch, p.Dst, int32(h.In)}] = true
			lids[[3]int32{h.Switch, p.Dst, group[i]}] = true
		}
	}
	for _, o := range outs {
		if len(o) > 1 {
			conflicted++
			extra += len(o) - 1
		}
	}
	return len(outs), len(lids), conflicted, extra, len(trip)
}

type inst003 struct {
	orig, total, conf, extra, cxn int
	avgRen                        float64
	maxRen                        int
}

func run003(w io.Writer, seeds, workers int) error {
	start := time.Now()
	one := func(n, links int, s uint64) (inst003, error) {
		var r inst003
		topo, err := topogen.Topology(paper003(n, links, int64(s)))
		if err != nil {
			return r, fmt.Errorf("%d switches, %d links, seed %d: %w", n, links, s, err)
		}
		ps, err := paths.RandomShortestUpDown(topo, rand.New(rand.NewPCG(s, 0x003a)))
		if err != nil {
			return r, err
		}
		res, _, err := caLIDs(topo, ps, lids.Renaming)
		if err != nil {
			return r, err
		}
		r.orig, r.total, r.conf, r.extra, r.cxn = entries(topo, ps, res.PathGroup)
		cas := 0
		for e, ep := range topo.Endpoints() {
			if topo.SwitchIndex(ep.Node) < 0 {
				cas++
				r.avgRen += float64(res.Configs[e] - 1)
				r.maxRen = max(r.maxRen, res.Configs[e]-1)
			}
		}
		r.avgRen /= float64(cas)
		return r, nil
	}
	t4 := make([][]inst003, len(sizes003))
	t6 := make([][]inst003, len(links003))
	for i := range t4 {
		t4[i] = make([]inst003, seeds)
	}
	for i := range t6 {
		t6[i] = make([]inst003, seeds)
	}
	nj := (len(sizes003) + len(links003)) * seeds
	_, err := route.Each(context.Background(), nj, workers, func(_, j int) error {
		k, s := j/seeds, j%seeds
		var err error
		if k < len(sizes003) {
			t4[k][s], err = one(sizes003[k], 4, uint64(s)+1)
		} else {
			k -= len(sizes003)
			t6[k][s], err = one(64, links003[k], uint64(s)+1)
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "## López, Flich and Duato (ICPP 2001)\n\n")
	fmt.Fprintf(w, "Set-up: random 4-regular simple switch graphs (Jellyfish construction, 4 inter-switch links per switch, single links), 4 hosts per switch; up*/down* with a uniformly random shortest legal path per host pair; destination renaming in (src, dst) path order; %d seeds per size (paper: 10), seeds 1..%d. Instance N of S switches with L links is `ibsm topo paper --set 003 --switches S --degree L --seed N`.\n\n", seeds, seeds)
	fmt.Fprintf(w, "### Table 4(a): forwarding-table entries (random tables, summed over switches)\n\n")
	fmt.Fprintf(w, "| Sw | Total | Original | New | Min %% | Max %% | Avg %% |\n|---|---|---|---|---|---|---|\n")
	for i, n := range sizes003 {
		var tot, orig float64
		lo, hi, avg := 1e9, 0.0, 0.0
		for _, r := range t4[i] {
			tot += float64(r.total)
			orig += float64(r.orig)
			inc := 100 * float64(r.total-r.orig) / float64(r.orig)
			lo, hi, avg = min(lo, inc), max(hi, inc), avg+inc
		}
		k := float64(len(t4[i]))
		p := paperT4[i]
		fmt.Fprintf(w, "| %d | %.0f (*%.0f*) | %.0f (*%.0f*) | %.0f (*%.0f*) | %.0f (*%.0f*) | %.0f (*%.0f*) | %.0f (*%.0f*) |\n",
			n, tot/k, p[0], orig/k, p[1], (tot-orig)/k, p[2], lo, p[3], hi, p[4], avg/k, p[5])
	}
	fmt.Fprintf(w, "\n*López et al. Table 4(a); ours (paper).*\n\n### Table 5(a): renamings per host (extra LIDs before LMC rounding)\n\n| Sw | Avg | Maximum |\n|---|---|---|\n")
	for i, n := range sizes003 {
		avg, mx := 0.0, 0
		for _, r := range t4[i] {
			avg += r.avgRen
			mx = max(mx, r.maxRen)
		}
		fmt.Fprintf(w, "| %d | %.1f (*%.1f*) | %d (*%.0f*) |\n", n, avg/float64(len(t4[i])), paperT5[i][0], mx, paperT5[i][1])
	}
	fmt.Fprintf(w, "\n*López et al. Table 5(a); ours (paper).*\n\n### Table 6: %% of forwarding-table entries with conflicts, 64 switches, 4 hosts per switch\n\n")
	fmt.Fprintf(w, "The paper does not define the ratio. Its tables are C x N -> C (input channel, destination -> output channel), so we divide by those entries: *conflicted* = (switch, destination) pairs whose paths need 2+ out-ports, *extra* = out-ports beyond the first; both over (switch, input port, destination) entries. The last column is conflicted over (switch, destination) entries, which is what an N x N -> C table sees.\n\n")
	fmt.Fprintf(w, "| Links | conflicted min / max / avg | extra min / max / avg | paper min / max / avg | conflicted / N x N -> C entries, avg |\n|---|---|---|---|---|\n")
	for i, l := range links003 {
		lo, hi, avg := 1e9, 0.0, 0.0
		elo, ehi, eavg := 1e9, 0.0, 0.0
		nn := 0.0
		for _, r := range t6[i] {
			pc := 100 * float64(r.conf) / float64(r.cxn)
			lo, hi, avg = min(lo, pc), max(hi, pc), avg+pc
			pe := 100 * float64(r.extra) / float64(r.cxn)
			elo, ehi, eavg = min(elo, pe), max(ehi, pe), eavg+pe
			nn += 100 * float64(r.conf) / float64(r.orig)
		}
		k := float64(len(t6[i]))
		p := paperT6[i]
		fmt.Fprintf(w, "| %d | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | *%.2f / %.2f / %.2f* | %.2f |\n", l, lo, hi, avg/k, elo, ehi, eavg/k, p[0], p[1], p[2], nn/k)
	}
	fmt.Fprintf(w, "\n*López et al. Table 6; ours (paper).*\n\nTables 4-6 wall time %s.\n\n", time.Since(start).Round(time.Second))
	return nil
}
