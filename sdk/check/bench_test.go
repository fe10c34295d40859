package check_test

import (
	"fmt"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
)

// BenchmarkCheckFatTree56 is the host's check of a cold bring-up at the
// largest full 3-level fat tree in the LID space (3,920 switches, 43,904
// CAs, 187 M table entries): Up*/Down* routes, as sftree answers, realised
// into tables, judged under plan.OneVL() as the pipeline does before it
// would ask a CapOneVL assigner.
func BenchmarkCheckFatTree56(b *testing.B) {
	topo, err := analysistest.FatTree3(56, 1)
	if err != nil {
		b.Fatal(err)
	}
	routes := analysistest.UpDown(topo, 0)
	rz, err := analysistest.Realize(topo, routes, 0, plan.DLIDBase)
	if err != nil {
		b.Fatal(err)
	}
	p := check.Plan{Topo: topo, LIDs: rz.LIDs, VLs: plan.OneVL(), Realized: rz}
	for _, metrics := range []bool{false, true} {
		b.Run(fmt.Sprintf("metrics=%v", metrics), func(b *testing.B) {
			analysistest.ReportCPU(b, func() {
				if _, err := check.Check(p, check.Options{Metrics: metrics}); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
