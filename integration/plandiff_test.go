package integration

// ibsm plan diff on the embedded fabric: the daemon (sssp routed over
// several VLs by dfsssp, so every switch holds SL2VL tables; candidate:
// the same routes made deadlock-free by acro, other SLs and SL2VL tables)
// reads its fabric back when asked over the control socket; once it is
// stopped, the state directory's record of what it programmed stands in
// for the fabric. Every expected difference is computed from the
// simulator's own tables, not through ibsm's reader.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// planDiffConfig writes rrg16 (16 switches, 16 CAs) with sssp + dfsssp in
// force and candidate { vl_assigner = "acro" }; no light sweep runs (an
// hour's interval), so nothing repairs what the test changes on the
// fabric.
func planDiffConfig(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("../conf/examples/rrg16.net")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rrg16.net"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var h strings.Builder
	h.WriteString("fabric {\n  transport = \"sim\"\n  topology = \"rrg16.net\"\n}\nsm {\n  state_dir = \"state\"\n  sweep_interval = \"1h\"\n}\n")
	for _, p := range [][2]string{{"routing_engine", "sssp"}, {"lid_assigner", "sequential"}, {"vl_assigner", "dfsssp"}, {"vl_assigner", "acro"}} {
		fmt.Fprintf(&h, "plugin %q %q {\n  path = %q\n}\n", p[0], p[1], filepath.Join(binDir, "ibsm-plugin-"+p[1]))
	}
	h.WriteString("routing {\n  engine = \"sssp\"\n  lid_assigner = \"sequential\"\n  vl_assigner = \"dfsssp\"\n}\ncandidate {\n  vl_assigner = \"acro\"\n}\n")
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(h.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// planDiff runs ibsm plan diff --json with args and decodes its answer.
func planDiff(t *testing.T, cfg string, args ...string) *rollout.PlanDiff {
	t.Helper()
	out, err := ibsmCmd(t, append([]string{"plan", "diff", "--config", cfg, "--json"}, args...)...)
	if err != nil {
		t.Fatalf("ibsm plan diff %v: %v\n%s", args, err, out)
	}
	var pd rollout.PlanDiff
	if err := json.Unmarshal([]byte(out), &pd); err != nil {
		t.Fatalf("ibsm plan diff --json: %v\n%s", err, out)
	}
	return &pd
}

// diffSet is a diff as sets: per switch GUID its LFT blocks and SL2VL
// pairs, per port GUID its LID.
type diffSet struct {
	blocks map[uint64][]int
	sl2vl  map[uint64][][2]uint8
	lids   map[uint64]string
}

func setOf(d *rollout.Diff) diffSet {
	s := diffSet{map[uint64][]int{}, map[uint64][][2]uint8{}, map[uint64]string{}}
	for _, sw := range d.Switches {
		if len(sw.LFTBlocks) > 0 {
			s.blocks[sw.GUID] = sw.LFTBlocks
		}
		if len(sw.SL2VL) > 0 {
			s.sl2vl[sw.GUID] = sw.SL2VL
		}
	}
	for _, l := range d.LIDs {
		s.lids[l.GUID] = l.New
	}
	return s
}

func (s diffSet) String() string {
	return fmt.Sprintf("LFT blocks %v, SL2VL %v, LIDs %v", s.blocks, s.sl2vl, s.lids)
}

func sameSet(a, b diffSet) bool {
	return maps.EqualFunc(a.blocks, b.blocks, slices.Equal[[]int]) &&
		maps.EqualFunc(a.sl2vl, b.sl2vl, slices.Equal[[][2]uint8]) && maps.Equal(a.lids, b.lids)
}

// simDiff is what programming p would change on the simulator, read from
// the simulator's own state: LFT blocks (entries 0..top), the SL2VL
// tables of the pairs p programs, the LIDs of p's endpoints.
func simDiff(t *testing.T, f *sim.Fabric, p rollout.Plan) diffSet {
	t.Helper()
	topo, want := p.Rz.Topo, rollout.TablesOf(p)
	s := diffSet{map[uint64][]int{}, map[uint64][][2]uint8{}, map[uint64]string{}}
	for i, node := range topo.Switches() {
		guid := topo.Nodes[node].GUID
		held, err := f.LFT(guid)
		if err != nil {
			t.Fatal(err)
		}
		row := want.LFT[i]
		for blk := 0; blk*64 < len(row); blk++ {
			for lid := blk * 64; lid < min((blk+1)*64, len(row)); lid++ {
				h := uint8(plan.NoPort)
				if lid < len(held) {
					h = held[lid]
				}
				if h != row[lid] {
					s.blocks[guid] = append(s.blocks[guid], blk)
					break
				}
			}
		}
		for _, pr := range want.SL2VL.Pairs(node) {
			w, _ := want.SL2VL.Table(node, pr[0], pr[1])
			if h, err := f.SL2VL(guid, pr[0], pr[1]); err != nil || h != w {
				s.sl2vl[guid] = append(s.sl2vl[guid], pr)
			}
		}
	}
	for e, ep := range topo.Endpoints() {
		ps, err := f.PortInfo(topo.Nodes[ep.Node].GUID, ep.Port)
		if err != nil {
			t.Fatal(err)
		}
		if w := p.Rz.LIDs.Ports[e]; ps.LID != w.Base || ps.LMC != w.LMC {
			s.lids[topo.PortGUID(ep)] = fmt.Sprint(w.Base)
		}
	}
	return s
}

// tamper changes, through SMPs from a second port on the fabric, one LFT
// entry and one SL2VL table of the switch cabled to CA ca, and gives
// another CA port a new LID.
func tamper(t *testing.T, f *sim.Fabric, topo *topology.Topology, ca topology.PortRef, other topology.PortRef) {
	t.Helper()
	conn, err := f.Attach(topo.Nodes[ca.Node].GUID, ca.Port)
	if err != nil {
		t.Fatal(err)
	}
	tr := transport.New(conn, transport.Options{Timeout: time.Second})
	defer tr.Close()
	c := &mad.Client{T: tr}
	ctx := context.Background()
	sw := topo.Nodes[topo.Port(ca).Peer.Node].GUID
	path := mad.Path{ca.Port}
	var blk smp.LFTBlock
	if err := c.Get(ctx, path, smp.AttrLinearForwardingTable, 0, &blk); err != nil {
		t.Fatal(err)
	}
	blk[1] = blk[1]%4 + 1 // LID 1 leaves by another port
	if err := c.Set(ctx, path, smp.AttrLinearForwardingTable, 0, &blk, nil); err != nil {
		t.Fatal(err)
	}
	var tbl smp.SL2VLTable
	if err := c.Get(ctx, path, smp.AttrSLtoVLMappingTable, smp.SL2VLMod(1, 2), &tbl); err != nil {
		t.Fatal(err)
	}
	tbl[0], tbl[1] = tbl[1]+1, tbl[0]+1
	if err := c.Set(ctx, path, smp.AttrSLtoVLMappingTable, smp.SL2VLMod(1, 2), &tbl, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.SetPortLID(topo.Nodes[other.Node].GUID, other.Port, 0x1234, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("tampered: switch 0x%016x LFT block 0 and SL2VL 1->2; CA 0x%016x port %d LID 0x1234", sw, topo.Nodes[other.Node].GUID, other.Port)
}

func TestPlanDiffEmbedded(t *testing.T) {
	dir := t.TempDir()
	cfg := planDiffConfig(t, dir)
	r := startRollout(t, cfg, nil)
	r.waitStatus("the shadow plan", 2*time.Minute, func(s *rollout.Status) bool { return s.Candidate != nil || s.Error != "" })
	ap := r.a.SM.Applied()
	active := rollout.Plan{Rz: ap.Result.Realized, VLs: ap.Result.VLs}
	if len(rollout.PlanSL2VL(ap.Topo, active.VLs).Pairs(ap.Topo.Switches()[0])) == 0 {
		t.Fatal("the active plan programs no SL2VL table: the test needs a multi-VL plan")
	}
	cres, err := r.a.SM.CandidatePlan(context.Background(), ap.Topo, ap.Result) // from the cache
	if err != nil {
		t.Fatal(err)
	}
	cand := rollout.Plan{Rz: cres.Realized, VLs: cres.VLs}

	// The daemon holds the state directory's lock; plan diff asks it.
	pd := planDiff(t, cfg)
	if pd.Source != rollout.SourceDaemon || pd.Engine != "sssp" || pd.SwitchesChanged != 0 || pd.LIDsChanged != 0 || pd.Unread != "" {
		t.Errorf("the plan in force against the fabric: %+v %+v", pd, pd.Diff)
	}
	want := simDiff(t, r.a.Sim, cand)
	pd = planDiff(t, cfg, "--candidate")
	if len(want.sl2vl) == 0 || !sameSet(setOf(pd.Diff), want) || pd.Source != rollout.SourceDaemon {
		t.Errorf("candidate against the fabric (source %s):\n got %v\nwant %v", pd.Source, setOf(pd.Diff), want)
	}
	t.Logf("candidate: %d LFT blocks, %d SL2VL tables on %d switches", pd.LFTBlocks, pd.SL2VLTables, pd.SwitchesChanged)

	// What the fabric holds changes behind the daemon's back: plan diff
	// reads it back and names exactly that.
	fab := r.a.SM.Fabric()
	var cas []topology.PortRef // CA ports other than the SM's
	for _, ep := range ap.Topo.Endpoints() {
		if n := ap.Topo.Nodes[ep.Node]; n.Type != topology.Switch && (n.GUID != fab.SMGUID || ep.Port != fab.SMPort) {
			cas = append(cas, ep)
		}
	}
	tamper(t, r.a.Sim, ap.Topo, cas[0], cas[1])
	want = simDiff(t, r.a.Sim, active)
	if len(want.blocks) != 1 || len(want.sl2vl) != 1 || len(want.lids) != 1 {
		t.Fatalf("the simulator does not show the tampering: %v", want)
	}
	out, err := ibsmCmd(t, "plan", "diff", "--config", cfg)
	if err != nil || !strings.Contains(out, "against the fabric as the daemon (pid") || !strings.Contains(out, "1 LFT blocks and 1 SL2VL tables on 1 switches, 1 endpoint LIDs would change") {
		t.Errorf("ibsm plan diff after tampering: %v\n%s", err, out)
	}
	if got := setOf(planDiff(t, cfg).Diff); !sameSet(got, want) {
		t.Errorf("after tampering:\n got %v\nwant %v", got, want)
	}
	t.Logf("ibsm plan diff:\n%s", out)

	// The daemon stops: the embedded fabric is gone with it, so plan diff
	// compares against what the daemon last programmed, and says so; it
	// writes nothing into the state directory.
	r.a.SM.WaitRecorded()
	r.stop()
	state := filepath.Join(dir, "state")
	before := dirState(t, state)
	pd = planDiff(t, cfg)
	if pd.Source != rollout.SourceState || !strings.Contains(pd.From, rollout.ProgrammedFile) || pd.SwitchesChanged != 0 || pd.LIDsChanged != 0 {
		t.Errorf("against the record: %+v %+v", pd, pd.Diff)
	}
	pd = planDiff(t, cfg, "--candidate")
	if got, want := setOf(pd.Diff), setOf(rollout.Compare(rollout.TablesOf(active), rollout.TablesOf(cand))); !sameSet(got, want) {
		t.Errorf("candidate against the record:\n got %v\nwant %v", got, want)
	}
	if after := dirState(t, state); after != before {
		t.Errorf("plan diff changed the state directory:\nbefore %s\nafter  %s", before, after)
	}
	b, err := exec.Command(filepath.Join(binDir, "ibsm"), "plan", "diff", "--config", cfg, "--from", "fabric").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "exists only inside the daemon") {
		t.Errorf("--from fabric on the embedded fabric: %v\n%s", err, b)
	}
}

// dirState lists dir's files with sizes and modification times.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d; ", strings.TrimPrefix(p, dir), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
