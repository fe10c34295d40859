package analysis_test

import (
	"fmt"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
)

// BenchmarkAnalyseFatTree36 analyses the reference fabric: the 3-level fat
// tree of 36-port switches (1,620 switches, 11,664 CAs, 13,284 LIDs) routed
// with MinHop.
func BenchmarkAnalyseFatTree36(b *testing.B) { benchAnalyseFatTree(b, 36) }

// BenchmarkAnalyseFatTree56 analyses the largest full 3-level fat tree in
// the LID space (3,920 switches, 43,904 CAs, 187 M table entries): its
// per-channel tables no longer fit a core's cache, which the 36-port tree
// hides.
func BenchmarkAnalyseFatTree56(b *testing.B) { benchAnalyseFatTree(b, 56) }

func benchAnalyseFatTree(b *testing.B, radix int) {
	topo, err := analysistest.FatTree3(radix, 1)
	if err != nil {
		b.Fatal(err)
	}
	r, err := analysistest.Realize(topo, analysistest.MinHop(topo), 0, plan.DLIDBase)
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			analysistest.ReportCPU(b, func() {
				rep, err := analysis.Analyse(r, nil, analysis.Options{Workers: workers})
				if err != nil {
					b.Fatal(err)
				}
				if !rep.CAPairs.Complete() {
					b.Fatalf("fat tree incomplete: %+v", rep.CAPairs)
				}
			})
		})
	}
}

// BenchmarkTrafficFatTree24 times the fat-tree metrics on the 3-level tree of
// 24-port switches (720 switches, 3,456 CAs): every shift (3,455 × 3,456
// flow walks) and 100 bisections, routed with MinHop.
func BenchmarkTrafficFatTree24(b *testing.B) {
	topo, err := analysistest.FatTree3(24, 1)
	if err != nil {
		b.Fatal(err)
	}
	r, err := analysistest.Realize(topo, analysistest.MinHop(topo), 0, plan.DLIDBase)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opt  analysis.Options
	}{
		{"shifts=all", analysis.Options{Shifts: analysis.ShiftsAll}},
		{"bisections=100", analysis.Options{Bisections: 100}},
	} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", c.name, workers), func(b *testing.B) {
				opt := c.opt
				opt.Workers = workers
				var rep *analysis.Report
				analysistest.ReportCPU(b, func() {
					if rep, err = analysis.Analyse(r, nil, opt); err != nil {
						b.Fatal(err)
					}
				})
				if rep.Shift != nil {
					b.ReportMetric(rep.Shift.Millis, "shift-ms")
					b.ReportMetric(float64(rep.Shift.Worst), "worst-load")
				}
				if rep.EBB != nil {
					b.ReportMetric(rep.EBB.Millis, "ebb-ms")
					b.ReportMetric(rep.EBB.EBB, "ebb")
				}
			})
		}
	}
}

// BenchmarkAnalyseFatTree36MultiVL analyses the reference fabric under a
// four-VL plan built to exercise every slow path of the (channel, VL)
// graph: four default SLs by DLID, ~150k per-source SL overrides, and
// SL2VL tables that differ per CA in-port at every leaf (so the first-hop
// VL is asked of each sending CA).
func BenchmarkAnalyseFatTree36MultiVL(b *testing.B) {
	topo, err := analysistest.FatTree3(36, 4)
	if err != nil {
		b.Fatal(err)
	}
	r, err := analysistest.Realize(topo, analysistest.MinHop(topo), 0, plan.DLIDBase)
	if err != nil {
		b.Fatal(err)
	}
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(r.TopLID)+1), VLs: 4}
	for lid := range v.SLByDLID {
		v.SLByDLID[lid] = uint8(lid % 4)
	}
	for sl := range v.Default {
		v.Default[sl] = uint8(sl % 4)
	}
	for e, ref := range topo.Endpoints() {
		if topo.SwitchIndex(ref.Node) >= 0 || e%64 != 0 {
			continue
		}
		for lid := 1; lid <= int(r.TopLID); lid += 16 {
			v.Overrides = append(v.Overrides, plan.SLOverride{Src: int32(e), DLID: uint16(lid), SL: uint8((e + lid) % 4)})
		}
	}
	for _, n := range topo.Switches() {
		node := &topo.Nodes[n]
		for in := 1; in < len(node.Ports); in++ {
			peer := node.Ports[in].Peer
			if !peer.Connected() || topo.SwitchIndex(peer.Node) >= 0 {
				continue // CA in-ports only
			}
			var tab [16]uint8
			for sl := range tab {
				tab[sl] = uint8((sl + in) % 4)
			}
			for out := 1; out < len(node.Ports); out++ {
				if out != in {
					v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: n, In: uint8(in), Out: uint8(out), VL: tab})
				}
			}
		}
	}
	b.Logf("%d SL overrides, %d SL2VL entries", len(v.Overrides), len(v.SL2VL))
	var rep *analysis.Report
	analysistest.ReportCPU(b, func() {
		if rep, err = analysis.Analyse(r, v, analysis.Options{Workers: 1}); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(float64(len(rep.VLsUsed)), "vls")
	if rep.DeadlockFree {
		b.ReportMetric(1, "deadlock-free")
	} else {
		b.ReportMetric(0, "deadlock-free")
	}
}

// BenchmarkVerdictFatTree56 is what the host's check asks of the analysis
// at ft3-56 (Options.VerdictOnly) on Up*/Down* routes, which are
// deadlock-free (MinHop's switch-to-switch routes there are not, so the
// verdict-only path hands them to the general one).
func BenchmarkVerdictFatTree56(b *testing.B) { benchVerdict(b, 56) }

// BenchmarkVerdictFatTree36 is BenchmarkVerdictFatTree56 on the reference
// fabric (21 M entries): small enough for an instruction-level profiler.
func BenchmarkVerdictFatTree36(b *testing.B) { benchVerdict(b, 36) }

func benchVerdict(b *testing.B, radix int) {
	topo, err := analysistest.FatTree3(radix, 1)
	if err != nil {
		b.Fatal(err)
	}
	r, err := analysistest.Realize(topo, analysistest.UpDown(topo, 0), 0, plan.DLIDBase)
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			analysistest.ReportCPU(b, func() {
				rep, err := analysis.Analyse(r, nil, analysis.Options{Workers: workers, VerdictOnly: true})
				if err != nil {
					b.Fatal(err)
				}
				if !rep.OK() {
					b.Fatalf("Up*/Down* fat tree rejected: %+v", rep)
				}
			})
		})
	}
}
