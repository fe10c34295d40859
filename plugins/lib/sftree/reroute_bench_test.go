package sftree

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// lftBlocks counts the 64-LID LFT blocks, over all switches, whose entries
// differ between routes a and b under sequential LIDs (what the host's
// programmer would send), and the blocks of the whole fabric.
func lftBlocks(topo *topology.Topology, a, b *plan.Routes, lmc uint8) (changed, total int) {
	lids := testfab.SequentialLIDs(topo, lmc)
	top := 0
	for _, p := range lids.Ports {
		top = max(top, int(p.Base)+p.Count()-1)
	}
	perSwitch := top/64 + 1
	n := len(topo.Switches())
	seen := make(map[int]bool)
	for e := range a.Planes {
		pa, pb := a.Planes[e].Planes, b.Planes[e].Planes
		for k := range min(len(pa), len(pb), lids.Ports[e].Count()) {
			if &pa[k][0] == &pb[k][0] {
				continue
			}
			blk := (int(lids.Ports[e].Base) + k) / 64
			for x := range pa[k] {
				if pa[k][x] != pb[k][x] {
					seen[x*perSwitch+blk] = true
				}
			}
		}
	}
	return len(seen), n * perSwitch
}

// benchReroute times Reroute from a full routing of ft3-k after one cable
// goes down, and reports what it changed next to what a full route of the
// degraded fabric changes. Run with -bench Reroute -benchtime 5x.
func benchReroute(b *testing.B, k int) {
	ctx := context.Background()
	topo, err := sdktest.FatTree3(k)
	if err != nil {
		b.Fatal(err)
	}
	res, err := RouteFatTree(ctx, topo, 0, ftree.Config{}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pick pickCable
	}{
		{"leaf-agg-other-pod", upCable(2, notInPod)},
		{"leaf-agg-root-pod", upCable(2, podNotRoot)},
		{"agg-core-other-pod", upCable(1, notInPod)},
		{"agg-core-root-pod", upCable(1, rootParent)},
		{"root-uplink", upCable(2, isRoot)},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, p := c.pick(res.Tree, res.State.root)
			cable := cableOf(topo, s, p)
			down, err := sdktest.FatTree3(k)
			if err != nil {
				b.Fatal(err)
			}
			testfab.SetLinkState(down, s, p, topology.StateDown)
			g := route.NewGraph(down)
			var next *State
			var rep *RerouteReport
			testfab.Bench(b, func() error {
				var err error
				next, rep, err = res.State.Reroute(ctx, g, Delta{Removed: []Cable{cable}})
				return err
			})
			b.StopTimer()
			full, err := RouteFatTree(ctx, down, 0, ftree.Config{}, Options{})
			if err != nil {
				b.Fatal(err)
			}
			blocks, total := lftBlocks(down, res.Routes, next.routes, 0)
			fblocks, _ := lftBlocks(down, res.Routes, full.Routes, 0)
			fd := diffRoutes(g, res.Routes, full.Routes, nil)
			fc, fs, fe := fd.CADests, fd.SwitchDests, fd.Entries
			b.ReportMetric(float64(rep.CADests+rep.SwitchDests), "dests")
			b.ReportMetric(float64(rep.Entries), "entries")
			b.ReportMetric(float64(blocks), "blocks")
			b.ReportMetric(float64(fc+fs), "full-dests")
			b.ReportMetric(float64(fe), "full-entries")
			b.ReportMetric(float64(fblocks), "full-blocks")
			b.Logf("%s: %s %s; %d CA + %d switch destinations, %d entries, %d of %d blocks (%.3f %%); full route: %d + %d, %d entries, %d blocks (%.3f %%)",
				c.name, rep.How, rep.Fallback, rep.CADests, rep.SwitchDests, rep.Entries, blocks, total, 100*float64(blocks)/float64(total),
				fc, fs, fe, fblocks, 100*float64(fblocks)/float64(total))
		})
	}
}

func BenchmarkReroute36(b *testing.B) { benchReroute(b, 36) }
func BenchmarkReroute56(b *testing.B) { benchReroute(b, 56) }

// BenchmarkRerouteSmall is the same on ft3-k12, in a second.
func BenchmarkRerouteSmall(b *testing.B) { benchReroute(b, 12) }
