package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/integration/diags"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/transport/netfile"
)

// TestScoreDump (IBSM_SCORE_DUMP=dir[:dir...]) measures what another SM left in an
// ibsim fabric with the same sdk/analysis figures `ibsm verify` prints:
// dir holds the topology (fabric.net), the SM's guid2lid and dump_fts run
// against the fabric (dump_fts.out). It is how BENCHMARKS.md scores OpenSM
// engines the race harness does not drive (torus-2QoS needs its
// torus-2QoS.conf and -Q). LFTs only: path SLs are not in the dump, so
// deadlock freedom is not judged here.
func TestScoreDump(t *testing.T) {
	dirs := os.Getenv("IBSM_SCORE_DUMP")
	if dirs == "" {
		t.Skip("set IBSM_SCORE_DUMP=dir with fabric.net, guid2lid and dump_fts.out (several: dir1:dir2)")
	}
	for _, dir := range strings.Split(dirs, ":") {
		t.Run(filepath.Base(dir), func(t *testing.T) { scoreDump(t, dir) })
	}
}

func scoreDump(t *testing.T, dir string) {
	nf, err := netfile.ParseFile(filepath.Join(dir, "fabric.net"))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := nf.Topology()
	if err != nil {
		t.Fatal(err)
	}
	p, err := diags.LoadPlan(filepath.Join(dir, "guid2lid"), filepath.Join(dir, "dump_fts.out"))
	if err != nil {
		t.Fatal(err)
	}
	eps := topo.Endpoints()
	lids := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps))}
	for e, ep := range eps {
		lid, ok := p.LIDs[topo.PortGUID(ep)]
		if !ok {
			t.Fatalf("endpoint 0x%016x port %d has no LID in guid2lid", topo.Nodes[ep.Node].GUID, ep.Port)
		}
		lids.Ports[e] = plan.PortLID{Base: lid}
	}
	// Every switch's table as dumped; Realize only shapes the arrays.
	sw := topo.Switches()
	routes := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e := range eps {
		pl := make(plan.Plane, len(sw))
		for s, n := range sw {
			l := p.LFTs[topo.Nodes[n].GUID]
			if l == nil {
				t.Fatalf("no LFT dumped for switch 0x%016x", topo.Nodes[n].GUID)
			}
			pl[s] = l.Port(lids.Ports[e].Base)
		}
		routes.Planes[e].Planes = []plan.Plane{pl}
	}
	real, err := plan.Realize(topo, routes, lids)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.Analyse(real, nil, analysis.Options{Shifts: analysis.ShiftsAuto, Bisections: analysis.DefaultBisections, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := analysis.Minimal(real)
	t.Logf("CA pairs %.3f%% reachable, loops %d, avg hops %.3f, a2a max %d (%.3f), worst shift %d, eBB %.4f, minimal %.3f%% (max extra %d)",
		rep.CAPairs.Percent(), rep.LoopLIDs, rep.AvgHops, rep.Load.Max, rep.Load.MaxNormalized, rep.Shift.Worst, rep.EBB.EBB, m.Percent(), m.MaxExtra)
	for i, u := range rep.Unreachable {
		if i == 3 {
			break
		}
		t.Logf("  unreachable: %s", u.Message)
	}
}
