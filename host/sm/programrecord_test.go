package sm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
)

// TestProgramRecord: the Programmer restores from the state directory's
// record only while the audit runs (it is what reads restored tables
// back); with the audit off it still marks the record stale before each
// programming; without a state directory it has no record at all.
func TestProgramRecord(t *testing.T) {
	if programRecord(nil, false) != nil {
		t.Fatal("no state directory: want a nil Record, not an interface holding a nil *Recorder")
	}
	topo, err := analysistest.FatTree3(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	topo.SM = topo.Endpoints()[0]
	rz, err := analysistest.Realize(topo, analysistest.UpDown(topo, 0), 0, plan.DLIDBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		auditOff bool
		restores bool
	}{
		{"audit on", false, true},
		{"audit off", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &rollout.Recorder{Path: filepath.Join(t.TempDir(), rollout.ProgrammedFile)}
			rec.RecordPlan(rollout.Plan{Rz: rz}, "updn", "k", "")
			rec.Wait()
			r := programRecord(rec, tc.auditOff)
			h, err := r.Held()
			if err != nil || (h != nil) != tc.restores {
				t.Fatalf("Held = %v, %v; want a plan: %v", h != nil, err, tc.restores)
			}
			if err := r.Programming(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(rec.Path + rollout.StaleSuffix); err != nil {
				t.Fatalf("Programming left no stale mark: %v", err)
			}
		})
	}
}
