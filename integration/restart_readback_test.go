package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/transport/smp"
)

var (
	lftReadRe     = regexp.MustCompile(`LFT blocks read back (\d+)`)
	lftSentRe     = regexp.MustCompile(`\(LFT blocks (\d+) of (\d+),`)
	restoredLogRe = regexp.MustCompile(`forwarding tables taken from the record of the last programming.*switches=(\d+) read_back=(\d+)`)
)

// restartRun is what one `ibsm run --once` printed of its distribution.
type restartRun struct {
	out                              string
	sets, portInfo, lftSent, lftRead int
	restored, readBack               int // switches, from the log line
	restoredLogged                   bool
}

// TestRestartRestoresTablesOnIBSim: ibsm restarted over the ibsim fabric it
// programmed takes every switch's forwarding table from the state
// directory's record instead of reading it back: one LFT Get per switch
// (the block that checks the record), no Set at all. A block another client changed behind its back, with the switch's
// port-0 LID, MasterSMLID and LinearFDBTop untouched, is therefore not
// seen by that restart; the audit of the daemon started next finds and
// repairs it. Changed again, this time with another SM LID written on the
// switch's port 0, the switch is read back at the next restart and the
// block mended by that restart itself.
func TestRestartRestoresTablesOnIBSim(t *testing.T) {
	const (
		budget   = 20
		interval = 500 * time.Millisecond
	)
	net, nf := randomFabric(t)
	cas := caNodes(nf)
	switches := len(nf.Nodes) - len(cas)
	r := startRig(t, net, cas[len(cas)-1].Name)
	stateDir := filepath.Join(r.dir, "state")
	cfg := auditConfig(t, r, cas[0].Name, stateDir, interval, budget, "updn", "single")

	once := func(what string) restartRun {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "ibsm"), "run", "--once", "--config", cfg)
		out, err := cmd.CombinedOutput()
		s := string(out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, tail(s, 3000))
		}
		pi, ds, ls := portInfoSetsRe.FindStringSubmatch(s), distSetsRe.FindStringSubmatch(s), lftSentRe.FindStringSubmatch(s)
		if pi == nil || ds == nil || ls == nil {
			t.Fatalf("%s: no distribution line in:\n%s", what, tail(s, 3000))
		}
		// The next start trusts the record only if this one wrote it
		// before exiting and cleared the stale mark its programming left.
		if _, err := os.Stat(filepath.Join(stateDir, rollout.ProgrammedFile+rollout.StaleSuffix)); err == nil {
			t.Fatalf("%s: ibsm exited with the record of its programming marked stale (not written before exit?)", what)
		}
		x := restartRun{out: s}
		x.portInfo, _ = strconv.Atoi(pi[1])
		x.sets, _ = strconv.Atoi(ds[1])
		x.lftSent, _ = strconv.Atoi(ls[1])
		if m := lftReadRe.FindStringSubmatch(s); m != nil {
			x.lftRead, _ = strconv.Atoi(m[1])
		}
		if m := restoredLogRe.FindStringSubmatch(s); m != nil {
			x.restoredLogged = true
			x.restored, _ = strconv.Atoi(m[1])
			x.readBack, _ = strconv.Atoi(m[2])
		}
		return x
	}

	cold := once("cold bring-up")
	if cold.lftSent == 0 || cold.restoredLogged {
		t.Fatalf("cold bring-up: %d LFT blocks sent, restored from a record: %v", cold.lftSent, cold.restoredLogged)
	}
	blocksPerSwitch := cold.lftSent / switches

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, leaf, ni := r.leafClient(t, ctx, cas[1].Name)
	// The block overwritten: not the one holding the switch's own LID,
	// which a restart reads to check the record (its probe).
	var pi smp.PortInfo
	if err := c.Get(ctx, leaf, smp.AttrPortInfo, 0, &pi); err != nil {
		t.Fatal(err)
	}
	if blocksPerSwitch < 2 {
		t.Fatalf("%d LFT blocks per switch: no block but the probe to overwrite", blocksPerSwitch)
	}
	block := uint32(int(pi.LID)/64+1) % uint32(blocksPerSwitch)
	var orig smp.LFTBlock
	if err := c.Get(ctx, leaf, smp.AttrLinearForwardingTable, block, &orig); err != nil {
		t.Fatal(err)
	}
	lftNow := func() smp.LFTBlock {
		t.Helper()
		var got smp.LFTBlock
		if err := c.Get(ctx, leaf, smp.AttrLinearForwardingTable, block, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	overwrite := func() {
		t.Helper()
		bad, changed := orig, 0
		for k := range bad {
			if bad[k] != smp.LFTUnreachable {
				bad[k], changed = smp.LFTUnreachable, changed+1
			}
		}
		var got smp.LFTBlock
		if err := c.Set(ctx, leaf, smp.AttrLinearForwardingTable, block, &bad, &got); err != nil || got != bad || changed == 0 {
			t.Fatalf("overwriting block %d of switch %#x (%d entries): %v", block, ni.NodeGUID, changed, err)
		}
	}

	// Conditions hold: the restart sends nothing and reads one block
	// per switch.
	overwrite()
	rs := once("restart")
	if rs.sets != 0 || rs.portInfo != 0 || rs.lftRead != switches || !rs.restoredLogged || rs.restored != switches || rs.readBack != 0 {
		t.Fatalf("restart over the programmed fabric: %d Sets (%d PortInfo), %d LFT blocks read, %d switches restored and %d read back (logged: %v); want 0, 0, %d, %d, 0:\n%s",
			rs.sets, rs.portInfo, rs.lftRead, rs.restored, rs.readBack, rs.restoredLogged, switches, switches, tail(rs.out, 3000))
	}
	if lftNow() == orig {
		t.Fatal("the restart mended a block it was not to read; the audit below proves nothing")
	}

	// The daemon (restored again) finds the block within an audit period.
	sm := startIBSM(t, cfg)
	sm.waitUp(t, 1, 60*time.Second)
	if m := restoredLogRe.FindStringSubmatch(sm.log.String()); m == nil || m[1] != strconv.Itoa(switches) {
		t.Fatalf("the daemon did not restore all %d switches from the record:\n%s", switches, tail(sm.log.String(), 3000))
	}
	items := switches * (2 + blocksPerSwitch)
	period := time.Duration((items+budget-1)/budget) * interval
	at := time.Now()
	for lftNow() != orig {
		if time.Since(at) > period+2*interval+10*time.Second {
			t.Fatalf("block %d of switch %#x not repaired %s after SUBNET UP (audit period %s):\n%s", block, ni.NodeGUID, time.Since(at).Round(time.Millisecond), period, tail(sm.log.String(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	re := regexp.MustCompile(fmt.Sprintf(`audit: repaired a difference from what was programmed:.*node=%#016x.*block=%d`, ni.NodeGUID, block))
	for end := time.Now().Add(5 * time.Second); !re.MatchString(sm.log.String()); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no audit repair logged for switch %#x block %d:\n%s", ni.NodeGUID, block, tail(sm.log.String(), 3000))
		}
	}
	t.Logf("audit repaired the block %s after SUBNET UP (period %s)", time.Since(at).Round(time.Millisecond), period)
	if err := sm.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sm.done:
		if err != nil {
			t.Fatalf("ibsm exited with %v on SIGTERM", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ibsm did not stop within 15s of SIGTERM")
	}

	// A condition fails (another SM's LID on the switch's port 0): that
	// switch is read back and mended by the restart itself.
	overwrite()
	if err := c.Get(ctx, leaf, smp.AttrPortInfo, 0, &pi); err != nil {
		t.Fatal(err)
	}
	pi.PortState, pi.PortPhysicalState = smp.PortStateNoChange, smp.PhysStateNoChange
	pi.LinkSpeedEnabled, pi.LinkWidthEnabled, pi.LinkDownDefaultState = 0, 0, 0
	pi.MasterSMLID++
	if err := c.Set(ctx, leaf, smp.AttrPortInfo, 0, &pi, nil); err != nil {
		t.Fatal(err)
	}
	rf := once("restart after another SM's LID reached the switch")
	if rf.restored != switches-1 || rf.readBack != 1 || rf.lftRead != switches-1+blocksPerSwitch || rf.lftSent != 1 || rf.portInfo != 1 {
		t.Fatalf("restart with one switch failing a condition: %d switches restored, %d read back (%d blocks), %d LFT blocks and %d PortInfo sent; want %d, 1 (%d), 1 and 1:\n%s",
			rf.restored, rf.readBack, rf.lftRead, rf.lftSent, rf.portInfo, switches-1, switches-1+blocksPerSwitch, tail(rf.out, 3000))
	}
	if lftNow() != orig {
		t.Fatalf("block %d of switch %#x not mended by the restart that read it back", block, ni.NodeGUID)
	}
	if strings.Contains(rf.out, "audit: repaired") {
		t.Fatalf("run --once audited:\n%s", tail(rf.out, 3000))
	}
}
