package analysis_test

import (
	"testing"

	"github.com/ibsm/ibsm/host/analysis"
	"github.com/ibsm/ibsm/host/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
)

// BenchmarkAnalyseFatTree36 analyses the reference fabric: the 3-level fat
// tree of 36-port switches (1,620 switches, 11,664 CAs, 13,284 LIDs) routed
// with MinHop.
func BenchmarkAnalyseFatTree36(b *testing.B) {
	topo, err := analysistest.FatTree3(36, 1)
	if err != nil {
		b.Fatal(err)
	}
	r, err := analysistest.Realize(topo, analysistest.MinHop(topo), 0, plan.DLIDBase)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rep, err := analysis.Analyse(r, nil, analysis.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if !rep.CAPairs.Complete() {
			b.Fatalf("fat tree incomplete: %+v", rep.CAPairs)
		}
	}
}
