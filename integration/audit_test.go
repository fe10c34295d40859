package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/lidstore"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestAuditRepairsLFTOnIBSim: ibsm runs as the SM of a real ibsim with a
// small audit budget. Another client of the same ibsim (not an SM,
// attached at a CA through the project's ibsim transport) overwrites an
// LFT block of its switch with a directed-route SubnSet. Nothing reports
// that change, yet ibsm must put the block back within one audit period
// (ceil(items/audit_smps) light sweeps), log it with the switch and block,
// and dump_fts must then print exactly what it printed before.
func TestAuditRepairsLFTOnIBSim(t *testing.T) {
	const (
		budget   = 20
		interval = 500 * time.Millisecond
		block    = 1 // LIDs 64-127
	)
	net, nf := randomFabric(t)
	cas := caNodes(nf)
	smNode, intruderNode := cas[0], cas[1]
	r := startRig(t, net, cas[len(cas)-1].Name)

	stateDir := filepath.Join(r.dir, "state")
	cfg := auditConfig(t, r, smNode.Name, stateDir, interval, budget, "updn", "single")
	sm := startIBSM(t, cfg)
	sm.waitUp(t, 1, 60*time.Second)

	// The audit's rotation: every switch's port 0, SwitchInfo and the LFT
	// blocks up to the top LID (single-VL plan: nothing else).
	lids, err := lidstore.Load(filepath.Join(stateDir, "guid2lid"))
	if err != nil {
		t.Fatal(err)
	}
	top := uint16(0)
	for _, rg := range lids {
		top = max(top, rg.Max)
	}
	if top < block*64 {
		t.Fatalf("top LID %d: block %d holds no LID", top, block)
	}
	switches := len(nf.Nodes) - len(cas)
	items := switches * (2 + (int(top)+64)/64)
	sweeps := (items + budget - 1) / budget
	period := time.Duration(sweeps) * interval

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, before, err := r.env.DumpFTs(ctx)
	if err != nil {
		t.Fatalf("dump_fts: %v", err)
	}

	// The other client: a plain (non-SM) attachment at another CA.
	c, leaf, ni := r.leafClient(t, ctx, intruderNode.Name)
	var orig, bad, got smp.LFTBlock
	if err := c.Get(ctx, leaf, smp.AttrLinearForwardingTable, block, &orig); err != nil {
		t.Fatal(err)
	}
	changed := 0
	for k := range orig {
		bad[k] = orig[k]
		if lid := block*64 + k; lid <= int(top) && orig[k] != smp.LFTUnreachable {
			bad[k] = smp.LFTUnreachable // every LID this switch routes in the block goes nowhere
			changed++
		}
	}
	if changed == 0 {
		t.Fatalf("switch %#x routes no LID of block %d", ni.NodeGUID, block)
	}
	if err := c.Set(ctx, leaf, smp.AttrLinearForwardingTable, block, &bad, &got); err != nil {
		t.Fatalf("SubnSet(LinearForwardingTable) from the second client: %v", err)
	}
	changedAt := time.Now()
	if got != bad {
		t.Fatalf("ibsim did not take the overwrite: answered %v", got)
	}
	t.Logf("second client overwrote %d entries of switch %#x block %d; audit: %d items, %d per light sweep every %s: period %s",
		changed, ni.NodeGUID, block, items, budget, interval, period)

	// Repaired within the audit period: ceil(items/budget) light sweeps
	// from wherever the rotation stood, plus what the sweeps themselves
	// take on a loaded machine.
	deadline := changedAt.Add(period + 2*interval + 5*time.Second)
	for {
		if err := c.Get(ctx, leaf, smp.AttrLinearForwardingTable, block, &got); err == nil && got == orig {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("block %d of switch %#x not repaired %s after the overwrite (audit period %s):\n%s",
				block, ni.NodeGUID, time.Since(changedAt).Round(time.Millisecond), period, tail(sm.log.String(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(changedAt)
	t.Logf("repaired %s after the overwrite (audit period %s)", took.Round(time.Millisecond), period)

	// ibsm logged it at WARN with the switch and the block.
	re := regexp.MustCompile(fmt.Sprintf(`\[WARN\].*audit: repaired a difference from what was programmed:.*node=%#016x.*path=\S+.*"?LFT block %d.*block=%d`, ni.NodeGUID, block, block))
	for end := time.Now().Add(5 * time.Second); !re.MatchString(sm.log.String()); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no WARN line naming switch %#x and block %d:\n%s", ni.NodeGUID, block, tail(sm.log.String(), 3000))
		}
	}
	if n := strings.Count(sm.log.String(), "audit: repaired a difference"); n != 1 {
		t.Errorf("%d repairs logged, want 1:\n%s", n, tail(sm.log.String(), 3000))
	}
	if strings.Count(sm.log.String(), "SUBNET UP") != 1 {
		t.Errorf("ibsm re-routed for an audit repair:\n%s", tail(sm.log.String(), 3000))
	}

	_, after, err := r.env.DumpFTs(ctx)
	if err != nil {
		t.Fatalf("dump_fts after the repair: %v", err)
	}
	if after != before {
		t.Fatalf("dump_fts after the repair differs from before the overwrite:\nbefore:\n%s\nafter:\n%s", tail(before, 2000), tail(after, 2000))
	}
}

// auditConfig writes an ibsm config driving the ibsim behind r with the
// SM at smNode, the given light sweep interval and audit budget, and the
// sequential LID assigner between engine and vl.
func auditConfig(t *testing.T, r *rig, smNode, stateDir string, interval time.Duration, budget int, engine, vl string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "fabric {\n  transport = \"ibsim\"\n  socket = %q\n  attach = %q\n}\n", r.env.Sockname, smNode)
	fmt.Fprintf(&b, "sm {\n  state_dir = %q\n  mad_timeout = \"200ms\"\n  mad_retries = 3\n  sweep_interval = %q\n  plugin_timeout = \"60s\"\n  priority = 14\n  audit_smps = %d\n}\n",
		stateDir, interval.String(), budget)
	for _, p := range [][2]string{{"routing_engine", engine}, {"lid_assigner", "sequential"}, {"vl_assigner", vl}} {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n}\n", p[0], p[1], filepath.Join(binDir, "ibsm-plugin-"+p[1]))
	}
	fmt.Fprintf(&b, "routing {\n  engine = %q\n  lid_assigner = \"sequential\"\n  vl_assigner = %q\n}\n", engine, vl)
	path := filepath.Join(r.dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuditMultiVLOnIBSim: with a plan on several VLs the audit also reads
// back every port's OperationalVLs, every SL2VL table and VLArbitration
// block. On ibsim, after whole rotations over an untouched fabric, it must
// have found nothing (what ibsim answers is what ibsm wrote), and an SL2VL
// table overwritten by another client is put back.
func TestAuditMultiVLOnIBSim(t *testing.T) {
	const interval = 300 * time.Millisecond
	nf, err := netfile.ParseFile(rrg16Net)
	if err != nil {
		t.Fatal(err)
	}
	cas := caNodes(nf)
	r := startRig(t, rrg16Net, cas[len(cas)-1].Name)
	stateDir := filepath.Join(r.dir, "state")
	cfg := auditConfig(t, r, cas[0].Name, stateDir, interval, 1000, "sssp", "dfsssp")
	sm := startIBSM(t, cfg)
	sm.waitUp(t, 1, 60*time.Second)

	// A few light sweeps: with 1000 reads each, each is at least one
	// rotation on 16 switches.
	time.Sleep(4 * interval)
	log := sm.log.String()
	if strings.Contains(log, "audit: repaired") || strings.Contains(log, "audit: found a difference") || strings.Contains(log, "lost its LID") {
		t.Fatalf("the audit found differences on a fabric nobody touched:\n%s", tail(log, 4000))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, leaf, ni := r.leafClient(t, ctx, cas[1].Name)
	mod := smp.SL2VLMod(1, 2)
	var orig, got smp.SL2VLTable
	if err := c.Get(ctx, leaf, smp.AttrSLtoVLMappingTable, mod, &orig); err != nil {
		t.Fatal(err)
	}
	bad := smp.SL2VLTable{}
	for i := range bad {
		bad[i] = 15 // drop everything
	}
	if err := c.Set(ctx, leaf, smp.AttrSLtoVLMappingTable, mod, &bad, &got); err != nil || got != bad {
		t.Fatalf("SubnSet(SLtoVLMappingTable) from the second client: %v (answer %v)", err, got)
	}
	at := time.Now()
	for {
		if err := c.Get(ctx, leaf, smp.AttrSLtoVLMappingTable, mod, &got); err == nil && got == orig {
			break
		}
		if time.Since(at) > 3*interval+5*time.Second {
			t.Fatalf("SL2VL table 1->2 of switch %#x not repaired after %s:\n%s", ni.NodeGUID, time.Since(at).Round(time.Millisecond), tail(sm.log.String(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("SL2VL table 1->2 of switch %#x repaired %s after the overwrite", ni.NodeGUID, time.Since(at).Round(time.Millisecond))
	re := regexp.MustCompile(fmt.Sprintf(`\[WARN\].*audit: repaired a difference.*node=%#016x.*SL2VL table 1->2`, ni.NodeGUID))
	for end := time.Now().Add(5 * time.Second); !re.MatchString(sm.log.String()); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no WARN line naming switch %#x and the table:\n%s", ni.NodeGUID, tail(sm.log.String(), 3000))
		}
	}
	if n := strings.Count(sm.log.String(), "audit: repaired a difference"); n != 1 {
		t.Errorf("%d repairs logged, want 1:\n%s", n, tail(sm.log.String(), 4000))
	}
}
