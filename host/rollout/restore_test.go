package rollout

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestRecorderHeld: what a restarted SM may restore comes from the record
// only while no programming started after it was written: Programming
// marks it stale until the next record is written, and a record written
// for an earlier programming than the last one started does not clear the
// mark. A record without the SM's LID (older format) restores nothing.
func TestRecorderHeld(t *testing.T) {
	topo, err := analysistest.FatTree3(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	topo.SM = topo.Endpoints()[len(topo.Endpoints())-1]
	p := realize(t, topo, analysistest.UpDown(topo, 0))
	p.VLs = vlPlan(topo, int(p.Rz.TopLID), []int32{1}, 0) // switch 1 lists its tables toward port 1
	smLID := p.Rz.LIDs.Ports[topo.EndpointIndex(topo.SM)].Base
	w := &Recorder{Path: filepath.Join(t.TempDir(), ProgrammedFile)}
	record := func() {
		w.RecordPlan(p, "updn", "k", "")
		w.Wait()
	}
	steps := []struct {
		name string
		do   func()
		want bool // Held restores the plan
	}{
		{"no record", func() {}, false},
		{"recorded", record, true},
		{"programming started", func() { _ = w.Programming() }, false},
		{"its record written", record, true},
		{"a record of an earlier programming", func() {
			_ = w.Programming()
			w.mu.Lock()
			earlier := w.gen
			w.mu.Unlock()
			_ = w.Programming()
			must(t, saveProgrammed(w.Path, RecordOf(p, "updn", "k", "")))
			w.clearStale(earlier)
		}, false},
		{"the last one's record", record, true},
		{"a record without the SM's LID", func() {
			r := RecordOf(p, "updn", "k", "")
			r.SMLID = 0
			must(t, saveProgrammed(w.Path, r))
		}, false},
	}
	for _, s := range steps {
		s.do()
		h, err := w.Held()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		_, statErr := os.Stat(w.Path + StaleSuffix)
		if stale := statErr == nil; stale && s.want {
			t.Fatalf("%s: the stale mark is still there", s.name)
		}
		if (h != nil) != s.want {
			t.Fatalf("%s: Held = %v, want a plan: %v", s.name, h != nil, s.want)
		}
		if h == nil {
			continue
		}
		if h.SMLID != smLID || h.Top != p.Rz.TopLID || len(h.Switches) != len(topo.Switches()) || h.NoSL2VL || h.SL2VLDefault != p.VLs.Default {
			t.Fatalf("%s: SM LID %d top %d, %d switches, SL2VL none %v default %v; want %d, %d, %d, false, %v",
				s.name, h.SMLID, h.Top, len(h.Switches), h.NoSL2VL, h.SL2VLDefault, smLID, p.Rz.TopLID, len(topo.Switches()), p.VLs.Default)
		}
		for i, node := range topo.Switches() {
			hs := h.Switches[topo.Nodes[node].GUID]
			want := p.Rz.LIDs.Ports[topo.EndpointIndex(topology.PortRef{Node: node, Port: 0})]
			if hs.LID != want.Base || hs.LMC != want.LMC || !bytes.Equal(hs.LFT, p.Rz.LFT[i]) {
				t.Fatalf("%s: switch %d held as LID %d LMC %d, want %d %d (or its LFT differs)", s.name, i, hs.LID, hs.LMC, want.Base, want.LMC)
			}
			listed := 0
			if i == 1 {
				listed = len(topo.Nodes[node].Ports) // vlPlan lists (in, 1) for every in
			}
			if len(hs.SL2VL) != listed {
				t.Fatalf("%s: switch %d holds %d listed SL2VL tables, want %d", s.name, i, len(hs.SL2VL), listed)
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
