package nue

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/plugins/lib/sssp"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// TestScale routes large fabrics when IBSM_NUE_SCALE=1 and logs time,
// minimal share and eBB (seed 1, 100 bisections, as `ibsm verify`; the
// numbers for BENCHMARKS.md come through the host). IBSM_NUE_NET names a
// topology file (`ibsm topo` output) and IBSM_NUE_VLS a comma-separated list of budgets (default 8) in place
// of the built-in cases; IBSM_NUE_SSSP=1 adds sssp's eBB for reference. IBSM_NUE_TREES, _LIMIT,
// _PEN, _HOP and _REROUTE set Options.Trees, SearchLimit, TurnPenalty,
// HopCost and Reroute (unset: the engine's defaults).
func TestScale(t *testing.T) {
	if os.Getenv("IBSM_NUE_SCALE") != "1" {
		t.Skip("set IBSM_NUE_SCALE=1")
	}
	trees, _ := strconv.Atoi(os.Getenv("IBSM_NUE_TREES"))
	limit, _ := strconv.Atoi(os.Getenv("IBSM_NUE_LIMIT"))
	pen, _ := strconv.Atoi(os.Getenv("IBSM_NUE_PEN"))
	hop, _ := strconv.Atoi(os.Getenv("IBSM_NUE_HOP"))
	// Unset, the engine's default (one second pass), so the numbers are the plugin's.
	reroute, _ := strconv.Atoi(cmp.Or(os.Getenv("IBSM_NUE_REROUTE"), "1"))
	type scaleCase struct {
		name   string
		topo   *topology.Topology
		budget int
	}
	var cases []scaleCase
	if file := os.Getenv("IBSM_NUE_NET"); file != "" {
		topo := readNet(t, file)
		for _, v := range strings.Split(cmp.Or(os.Getenv("IBSM_NUE_VLS"), "8"), ",") {
			b, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, scaleCase{filepath.Base(file) + "/" + v + "vl", topo, b})
		}
	} else {
		size := 1000
		if n, _ := strconv.Atoi(os.Getenv("IBSM_NUE_SIZE")); n > 0 {
			size = n
		}
		rnd, err := sdktest.Random(7, size, 26, 10)
		if err != nil {
			t.Fatal(err)
		}
		cases = []scaleCase{
			{"torus8x8x8-1vl", torus3(t, 8, 8, 8, 2), 1},
			{"torus8x8x8-8vl", torus3(t, 8, 8, 8, 2), 8},
			{"random-x16-8vl", rnd, 8},
		}
	}
	for _, c := range cases {
		if only := os.Getenv("IBSM_NUE_CASE"); only != "" && c.name != only {
			continue
		}
		if c.budget > c.topo.MinLinkVLs() {
			for i := range c.topo.Nodes {
				for p := range c.topo.Nodes[i].Ports {
					c.topo.Nodes[i].Ports[p].VLCap = 8
				}
			}
		}
		t0, c0 := time.Now(), testfab.CPUTime()
		planes, _, rep, err := Route(context.Background(), c.topo, Options{Budget: c.budget, Trees: trees, SearchLimit: limit, TurnPenalty: pen, HopCost: hop, Reroute: reroute})
		if err != nil {
			t.Fatal(err)
		}
		tr, cr := time.Since(t0), testfab.CPUTime()-c0
		t.Logf("inserts %d, searches %d, visited %d, refused %d; escaped trees by layer %v of %v; balanced escape tree %v", rep.Inserts, rep.Searches, rep.Visited, rep.Refused, rep.EscapedByLayer, rep.TreesByLayer, rep.BalancedEscape)
		real, err := testfab.Realize(c.topo, &plan.Routes{Planes: planes}, 0)
		if err != nil {
			t.Fatal(err)
		}
		t0, c0 = time.Now(), testfab.CPUTime()
		v, a, err := Assign(context.Background(), real, c.budget)
		if err != nil {
			t.Fatal(err)
		}
		tv, cv := time.Since(t0), testfab.CPUTime()-c0
		t.Logf("%s: CPU route %v, vl %v", c.name, cr, cv)
		an, err := analysis.Analyse(real, v, analysis.Options{Bisections: 100, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("IBSM_NUE_SSSP") == "1" {
			sp, _, err := sssp.Route(context.Background(), c.topo, 0)
			if err != nil {
				t.Fatal(err)
			}
			sreal, err := testfab.Realize(c.topo, &plan.Routes{Planes: sp}, 0)
			if err != nil {
				t.Fatal(err)
			}
			san, err := analysis.Analyse(sreal, nil, analysis.Options{Bisections: 100, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: sssp eBB %.4f", c.name, san.EBB.EBB)
		}
		t.Logf("%s: route %v, vl %v (budget %d, firstfit %v, VLs %d), escaped %d/%d trees (%d entries), minimal %.1f%%, eBB %.4f, deadlock-free %v, max load %v",
			c.name, tr, tv, a.Budget, a.FirstFit, v.VLs, rep.Escaped, rep.Trees, rep.EscapedSwitches,
			100*float64(rep.MinimalPairs)/float64(max(rep.Pairs, 1)), an.EBB.EBB, an.DeadlockFree, an.Load)
	}
}

// readNet reads a topology file (`ibsm topo` output).
func readNet(t *testing.T, file string) *topology.Topology {
	t.Helper()
	nf, err := netfile.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := nf.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}
