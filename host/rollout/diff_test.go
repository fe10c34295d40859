package rollout

import (
	"bytes"
	"compress/gzip"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// vlPlan gives every DLID SL 1 (VL 1 by default) and lists the switch
// tables of sw with out port 1 mapping SL 1 to vl.
func vlPlan(t *topology.Topology, top int, sw []int32, vl uint8) *plan.VLPlan {
	v := &plan.VLPlan{SLByDLID: make([]uint8, top+1), VLs: 2}
	for i := range v.SLByDLID {
		v.SLByDLID[i] = 1
	}
	v.Default[1] = 1
	for _, s := range sw {
		node := t.Switches()[s]
		for in := range t.Nodes[node].Ports {
			e := plan.SL2VLEntry{Node: node, In: uint8(in), Out: 1, VL: v.Default}
			e.VL[1] = vl
			v.SL2VL = append(v.SL2VL, e)
		}
	}
	return v
}

// The SL2VL tables a diff counts are those the programmer sends: every
// (in, out) pair of a switch whose table differs, none for a plan that
// only uses SL 0 on VL 0, all of them when the other side's are unknown.
// The status says how many.
func TestCompareSL2VL(t *testing.T) {
	topo, err := analysistest.FatTree3(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	rz := realize(t, topo, analysistest.UpDown(topo, 0)).Rz
	top := int(rz.TopLID)
	ports := len(topo.Nodes[topo.Switches()[0]].Ports)
	allPairs := 0
	for s := range topo.Switches() {
		allPairs += pairsOf(topo, s)
	}
	same := vlPlan(topo, top, []int32{0, 3}, 1)
	moved := vlPlan(topo, top, []int32{0, 3}, 0) // switches 0 and 3: SL 1 to VL 0 toward port 1
	for _, tc := range []struct {
		name            string
		old, new        *plan.VLPlan
		tables, switch_ int
	}{
		{"unchanged", same, same, 0, 0},
		{"two switches remap out port 1", same, moved, 2 * ports, 2},
		{"to SL 0 only: nothing sent", same, nil, 0, 0},
		{"from SL 0 only: every pair sent", nil, same, allPairs, len(topo.Switches())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(TablesOf(Plan{Rz: rz, VLs: tc.old}), TablesOf(Plan{Rz: rz, VLs: tc.new}))
			if d.SL2VLTables != tc.tables || d.SwitchesChanged != tc.switch_ || d.LFTBlocks != 0 {
				t.Errorf("diff: %d SL2VL tables on %d switches (%d LFT blocks), want %d on %d", d.SL2VLTables, d.SwitchesChanged, d.LFTBlocks, tc.tables, tc.switch_)
			}
			var b bytes.Buffer
			(&Status{Changes: d}).Text(&b)
			if want := fmt.Sprintf("0 LFT blocks and %d SL2VL tables to %d switches", tc.tables, tc.switch_); !strings.Contains(b.String(), want) {
				t.Errorf("status text lacks %q:\n%s", want, b.String())
			}
		})
	}
}

// A record of what was programmed reads back as that plan on the same
// topology, switch by switch and LID by LID; what it does not hold is
// unknown and counts as changed.
func TestProgrammedRecord(t *testing.T) {
	topo, err := analysistest.FatTree3(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := realize(t, topo, analysistest.UpDown(topo, 0))
	p.VLs = vlPlan(topo, int(p.Rz.TopLID), []int32{1}, 0)
	path := filepath.Join(t.TempDir(), ProgrammedFile)
	w := &Recorder{Path: path}
	w.RecordPlan(p, "updn", "k1", "first")
	w.RecordPlan(p, "updn", "k2", "") // replaces or follows the first
	w.Wait()
	rec, err := LoadProgrammed(path)
	if err != nil || rec == nil || rec.Key != "k2" {
		t.Fatalf("load: %+v %v", rec, err)
	}
	if d := Compare(rec.Tables(topo), TablesOf(p)); d.SwitchesChanged != 0 || d.LIDsChanged != 0 {
		t.Errorf("the record differs from the plan it records: %+v", d)
	}
	other := realize(t, topo, analysistest.UpDown(topo, 1))
	other.VLs = p.VLs
	want := Compare(TablesOf(p), TablesOf(other))
	if d := Compare(rec.Tables(topo), TablesOf(other)); d.LFTBlocks != want.LFTBlocks || d.LFTBlocks == 0 {
		t.Errorf("against another plan: %d blocks, want %d", d.LFTBlocks, want.LFTBlocks)
	}
	delete(rec.Switches, topo.Nodes[topo.Switches()[2]].GUID)
	rec.LIDs[topo.PortGUID(topo.Endpoints()[0])] = plan.PortLID{}
	d := Compare(rec.Tables(topo), TablesOf(p))
	if d.SwitchesChanged != 1 || d.LFTBlocks != (len(p.Rz.LFT[2])+63)/64 || d.SL2VLTables != pairsOf(topo, 2) || d.LIDsChanged != 1 {
		t.Errorf("a switch and a LID missing from the record: %+v", d)
	}
	if _, err := LoadProgrammed(filepath.Join(t.TempDir(), "none")); err != nil {
		t.Errorf("a missing record is no error: %v", err)
	}
}

// A record survives the round trip whatever its shape (an LFT missing,
// the older gzip'd gob format), and a damaged one is refused, never read
// as tables that differ.
func TestProgrammedRecordFile(t *testing.T) {
	topo, err := analysistest.FatTree3(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := realize(t, topo, analysistest.UpDown(topo, 0))
	rec := RecordOf(p, "updn", "k", "")
	noLFT := topo.Nodes[topo.Switches()[1]].GUID
	rec.Switches[noLFT] = ProgrammedSwitch{}
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := saveProgrammed(good, rec); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	var v1 bytes.Buffer
	v1.WriteString(recordMagicV1)
	zw := gzip.NewWriter(&v1)
	if err := gob.NewEncoder(zw).Encode(rec); err != nil || zw.Close() != nil {
		t.Fatal(err)
	}
	lftAt := bytes.Index(b, p.Rz.LFT[0][:32])
	for _, c := range []struct {
		name    string
		content []byte
		damaged string // "" for a good file
	}{
		{"written", b, ""},
		{"older format", v1.Bytes(), ""},
		{"an LFT byte flipped", flip(b, lftAt+5), "checksum"},
		{"the checksum flipped", flip(b, len(b)-1), "checksum"},
		{"truncated", b[:len(b)-100], "checksum"},
		{"only the magic", []byte(recordMagic), "truncated"},
		{"not a record", []byte("hello"), "not a record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			if err := os.WriteFile(path, c.content, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadProgrammed(path)
			if c.damaged != "" {
				if err == nil || !strings.Contains(err.Error(), c.damaged) || !strings.Contains(err.Error(), "remove it") {
					t.Fatalf("got %v, want an error saying %q and what to do", err, c.damaged)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Key != "k" || got.Engine != "updn" || got.Switches[noLFT].LFT != nil || len(got.LIDs) != len(rec.LIDs) {
				t.Fatalf("read back %q %q, LFT of the switch without one %v, %d LIDs", got.Key, got.Engine, got.Switches[noLFT].LFT, len(got.LIDs))
			}
			for g, ps := range rec.Switches {
				if !bytes.Equal(got.Switches[g].LFT, ps.LFT) || len(got.Switches[g].SL2VL) != len(ps.SL2VL) {
					t.Fatalf("switch 0x%x differs after the round trip", g)
				}
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x40
	return c
}

// pairsOf is how many SL2VL tables the programmer writes to switch s
// (out port 0 only where listed).
func pairsOf(t *topology.Topology, s int) int {
	n := len(t.Nodes[t.Switches()[s]].Ports)
	return n * (n - 1)
}

// Fit keeps a daemon's answer within the control socket's line and says
// how much it left out; the totals stay.
func TestPlanDiffFit(t *testing.T) {
	d := &Diff{LFTBlocks: 3000, SwitchesChanged: 1000}
	for i := 0; i < 1000; i++ {
		d.Switches = append(d.Switches, SwitchDiff{GUID: uint64(i), Desc: "switch", LFTBlocks: []int{0, 1, 2}})
	}
	pd := &PlanDiff{Engine: "e", Diff: d}
	pd.Fit(20000)
	b, _ := json.Marshal(pd)
	if len(b) > 20000 || pd.SwitchesUnlisted == 0 || len(pd.Switches)+pd.SwitchesUnlisted != 1000 || pd.SwitchesChanged != 1000 {
		t.Errorf("fit: %d bytes, %d listed, %d unlisted", len(b), len(pd.Switches), pd.SwitchesUnlisted)
	}
	var out bytes.Buffer
	pd.Text(&out)
	if !strings.Contains(out.String(), "more switches") {
		t.Errorf("text does not say the list is cut:\n%s", out.String())
	}
}
