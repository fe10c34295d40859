// Command vlfigs reproduces Figs. 5-6 of Kawano et al., "ACRO: Assignment of
// Channels in Reverse Order to Make Arbitrary Routing Deadlock-free": the
// layers (VLs) acro, layered (LASH) and dfsssp need on random regular switch
// graphs (64 and 256 switches, degree 4-12, 100 seeds per point), each
// destination routed on one fixed seeded random minimal path per pair,
// min/avg/max per point, written as Markdown next to the paper's reported
// figures. Layers are not capped (VLCap is taken as unlimited) so the counts
// are the algorithms' own. Every graph is host/topogen's paper "001" preset,
// so 'ibsm topo paper --set 001 ... --seed N' writes the exact instance N of
// a point (see topogen.Paper.Args). Its README and latest output (RESULTS.md) sit
// beside it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/plugins/lib/vl"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

type point struct {
	n, deg int
}

type result struct {
	layers [3]int
	sls    int           // acro SL classes, 17 = refused
	vls    int           // VLs of acro's IB plan (one SL per DLID), 0 = refused
	ovr    int           // per-source SL overrides in acro's IB plan
	tabs   int           // SL2VL tables in acro's IB plan
	acroT  time.Duration // acro: ACRO layers plus the IB plan
	err    error
}

var algoNames = [3]string{"acro", "layered", "dfsssp"}

// paper001 is instance seed of the n-switch, degree-deg point.
func paper001(n, deg int, seed int64) topogen.Paper {
	return topogen.Paper{Set: "001", Switches: n, Degree: deg, Seed: seed}
}

// switchTables is the realisation Kawano et al. count layers on: one LID per
// switch (LIDs 1..n, port 0), every switch routing toward every switch on
// one seeded random minimal next hop. The preset gives each switch a CA;
// the CAs get LIDs above the switches' so that the plan is complete, but
// their columns are cut off the tables: the paper's routing tables are
// switch to switch, and a CA's tree would only repeat its switch's (drawn
// again). RandomMinimal draws the switch destinations first (switches
// precede CAs in Endpoints), so the switch columns are the same draws as
// on the fabric without CAs. The CAs stay traffic sources (they inject
// through their switch, like its port 0).
func switchTables(topo *topology.Topology, seed int64) (*plan.Realized, error) {
	eps := topo.Endpoints()
	n := len(topo.Switches())
	for i := 0; i < n; i++ {
		if topo.Nodes[eps[i].Node].Type != topology.Switch {
			return nil, fmt.Errorf("endpoint %d is not a switch: switch LIDs would not be 1..%d", i, n)
		}
	}
	routes, err := vl.RandomMinimal(topo, seed)
	if err != nil {
		return nil, err
	}
	lids := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps))}
	for i := range lids.Ports {
		lids.Ports[i] = plan.PortLID{Base: uint16(i + 1)}
	}
	real, err := plan.Realize(topo, routes, lids)
	if err != nil {
		return nil, err
	}
	real.TopLID = uint16(n)
	real.LIDOwner = real.LIDOwner[:n+1]
	for s := range real.LFT {
		real.LFT[s] = real.LFT[s][:n+1]
	}
	return real, nil
}

func run(n, deg int, seed int64) result {
	topo, err := topogen.Topology(paper001(n, deg, seed))
	if err != nil {
		return result{err: err}
	}
	// A .net file carries no VLCap (the snapshot says 8): lift it so that
	// the layer counts are the algorithms' own, not capped at 8.
	for i := range topo.Nodes {
		for p := range topo.Nodes[i].Ports {
			topo.Nodes[i].Ports[p].VLCap = 255
		}
	}
	real, err := switchTables(topo, seed)
	if err != nil {
		return result{err: err}
	}
	f, err := vl.NewFabric(real)
	if err != nil {
		return result{err: err}
	}
	tr, err := f.BuildTrees()
	if err != nil {
		return result{err: err}
	}
	ctx := context.Background()
	var res result
	for i, a := range []vl.Algorithm{vl.ACRO, vl.Layered, vl.DFSSSP} {
		t0 := time.Now()
		ly, err := a(ctx, f, tr, 64)
		if err != nil {
			return result{err: fmt.Errorf("%s: %w", algoNames[i], err)}
		}
		res.layers[i] = ly.N
		if i == 0 {
			v, st, err := vl.HopPlan(f, ly, tr, ibVLs)
			res.acroT = time.Since(t0)
			res.sls = st.SLs
			res.tabs = st.Tables
			if err == nil {
				res.vls = v.VLs
				res.ovr = st.Overrides
				if err := vl.Check(f, v); err != nil {
					return result{err: fmt.Errorf("acro plan fails the checker: %w", err)}
				}
			}
		}
	}
	return res
}

// ibVLs is the data VLs acro's IB plan may use: 8, what common HCAs and
// switches offer (VLCap), not the 15 the architecture allows.
const ibVLs = 8

func ints(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		if lo, hi, ok := strings.Cut(part, "-"); ok {
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || a > b {
				return nil, fmt.Errorf("bad range %q", part)
			}
			for i := a; i <= b; i++ {
				out = append(out, i)
			}
			continue
		}
		v, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", part)
		}
		out = append(out, v)
	}
	return out, nil
}

func main() {
	sizes := flag.String("sizes", "64,256", "switch counts")
	degrees := flag.String("degrees", "4-12", "degrees (list or range)")
	seeds := flag.Int("seeds", 100, "topologies per point (seeds 1..n)")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "parallel seeds")
	out := flag.String("out", "", "Markdown output file (default stdout)")
	flag.Parse()
	ns, err := ints(*sizes)
	if err != nil {
		fail(err)
	}
	ds, err := ints(*degrees)
	if err != nil {
		fail(err)
	}
	var pts []point
	for _, n := range ns {
		for _, d := range ds {
			if n*d%2 == 0 && d < n {
				pts = append(pts, point{n, d})
			}
		}
	}
	start := time.Now()
	type job struct {
		p    int
		seed int64
	}
	var jobs []job
	results := make([][]result, len(pts))
	for p := range pts {
		results[p] = make([]result, *seeds)
		for s := 1; s <= *seeds; s++ {
			jobs = append(jobs, job{p, int64(s)})
		}
	}
	_, _ = route.Each(context.Background(), len(jobs), max(*workers, 1), func(_, i int) error {
		j := jobs[i]
		results[j.p][j.seed-1] = run(pts[j.p].n, pts[j.p].deg, j.seed)
		if j.seed == int64(*seeds) {
			fmt.Fprintf(os.Stderr, "vlfigs: %d switches degree %d done (%v)\n", pts[j.p].n, pts[j.p].deg, time.Since(start).Round(time.Second))
		}
		return nil
	})
	w := io.Writer(os.Stdout)
	if *out != "" {
		fh, err := os.Create(*out)
		if err != nil {
			fail(err)
		}
		defer fh.Close()
		w = fh
	}
	fmt.Fprintf(w, "# Layers (VLs) needed on random regular topologies (Kawano et al., Figs. 5-6)\n\n")
	fmt.Fprintf(w, "`go run ./integration/experiments/vlfigs -sizes %s -degrees %s -seeds %d` — %d workers, wall time %v.\n\n", *sizes, *degrees, *seeds, *workers, time.Since(start).Round(time.Second))
	fmt.Fprintf(w, "Each point: %d connected random regular graphs (seeds 1..%d; instance N of S switches of degree D is `ibsm topo paper --set 001 --switches S --degree D --seed N`, Jellyfish construction, one CA per switch), one LID per switch (the CAs' LIDs are left out of the tables: switch-to-switch routing as in the paper), every switch routing every destination on one seeded random minimal next hop (a fixed routing table, as in the paper). min / avg / max layers. `acro IB VLs` are the VLs of the plan the acro plugin installs (`vl.HopPlan`: one SL per DLID, at most 16 SLs and 8 VLs; every plan passes the exact (channel, VL) checker); `acro SLs max` the SLs it uses; `overrides max` the per-source SL overrides it needed (only for DLIDs no SL class takes whole); `refused` how many seeds it could not realise within 8 VLs; `tables max` its SL2VL tables (switch in/out port pairs off the default); `acro ms` the mean time of ACRO's layers plus the plan (one core, workers running side by side).\n\n", *seeds, *seeds)
	fmt.Fprintf(w, "| switches | degree | acro layers | acro IB VLs | layered (LASH) | dfsssp | acro layers / layered avg | acro IB VLs / layered avg | acro SLs max | overrides max | refused | tables max | acro ms |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for p, pt := range pts {
		var mn, mx [4]int
		var sum [4]float64
		slMax, slOver, ok, ovMax, tabMax := 0, 0, 0, 0, 0
		var acroT time.Duration
		for i := range mn {
			mn[i] = 1 << 30
		}
		var errs []string
		for _, r := range results[p] {
			if r.err != nil {
				errs = append(errs, r.err.Error())
				continue
			}
			ok++
			for i, l := range r.layers {
				mn[i] = min(mn[i], l)
				mx[i] = max(mx[i], l)
				sum[i] += float64(l)
			}
			slMax = max(slMax, r.sls)
			ovMax = max(ovMax, r.ovr)
			tabMax = max(tabMax, r.tabs)
			acroT += r.acroT
			if r.vls == 0 {
				slOver++
				continue
			}
			mn[3] = min(mn[3], r.vls)
			mx[3] = max(mx[3], r.vls)
			sum[3] += float64(r.vls)
		}
		if ok == 0 {
			fmt.Fprintf(w, "| %d | %d | error: %s | | | | | | | | | | |\n", pt.n, pt.deg, errs[0])
			continue
		}
		cell := func(i, n int) string {
			if n == 0 {
				return "-"
			}
			return fmt.Sprintf("%d / %.2f / %d", mn[i], sum[i]/float64(n), mx[i])
		}
		sl := strconv.Itoa(slMax)
		if slMax > vl.MaxSLs {
			sl = ">16"
		}
		realised := ok - slOver
		ratio := "-"
		if realised > 0 {
			ratio = fmt.Sprintf("%.2f", sum[3]/float64(realised)/(sum[1]/float64(ok)))
		}
		fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %s | %.2f | %s | %s | %d | %d of %d | %d | %.0f |\n", pt.n, pt.deg, cell(0, ok), cell(3, realised), cell(1, ok), cell(2, ok), sum[0]/sum[1], ratio, sl, ovMax, slOver, ok, tabMax, float64(acroT.Microseconds())/1000/float64(ok))
		if len(errs) > 0 {
			fmt.Fprintf(w, "\n%d seeds failed, first: %s\n\n", len(errs), errs[0])
		}
	}
	fmt.Fprintf(os.Stderr, "vlfigs: done in %v\n", time.Since(start).Round(time.Second))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "vlfigs:", err)
	os.Exit(2)
}
