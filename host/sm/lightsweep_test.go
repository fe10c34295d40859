package sm_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestLightSweepReads: a light sweep reads each switch's SwitchInfo, the
// SM's own port and a share of the CA ports; once a switch reports a
// change it leaves the CA ports for the next sweep (the incremental sweep
// re-reads the area, and CAs behind a cable that just went down would
// only time out: 64 of them in turn took 45-100 s).
func TestLightSweepReads(t *testing.T) {
	t.Parallel()
	f := fatTree(t) // 6 switches, 8 CAs (the SM's among them)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8, CAChecksPerSweep: 4}, nil)
	ctx := context.Background()
	_, err := s.HeavySweep(ctx)
	must(t, err)
	l := interSwitchLink(t, f)
	for _, tc := range []struct {
		name      string
		act       func() error
		change    bool
		portInfos uint64
	}{
		// The audit that follows a sweep without changes reads more.
		{"unchanged", func() error { return nil }, false, 1 + 4},
		{"cable down", func() error { return fab.LinkDown(l.A.GUID, uint8(l.PA)) }, true, 1},
	} {
		must(t, tc.act())
		before := fab.Stats().ByAttr
		ch, full, err := s.LightSweepChanges(ctx)
		must(t, err)
		after := fab.Stats().ByAttr
		pi := after[smp.AttrPortInfo] - before[smp.AttrPortInfo]
		if pi < tc.portInfos || (tc.change && pi != tc.portInfos) || ch.Empty() == tc.change || full != "" {
			t.Fatalf("%s: %d PortInfo reads, changes %+v, full %q; want %d (at least, when unchanged), change %v",
				tc.name, pi, ch, full, tc.portInfos, tc.change)
		}
	}
}

// TestLightSweepBehindADeadCable: a cable that dies unannounced (its traps
// lost) on the routes of many switches costs the light sweep the timeouts
// of the switch right behind it, not one per switch routed over it (1,596
// in turn took 268 s on ft3-56); the ones behind are reported changed
// without being asked, and the incremental sweep that follows repairs the
// fabric as usual.
func TestLightSweepBehindADeadCable(t *testing.T) {
	t.Parallel()
	f, err := topogen.FatTree{Radix: 8, Levels: 3}.Generate()
	must(t, err)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8}, nil)
	ctx := context.Background()
	_, err = s.HeavySweep(ctx)
	must(t, err)
	// The switch the most other switches' routes cross, and the cable that
	// reaches it.
	model := s.Fabric()
	var (
		cut    *discovery.Node
		behind int
	)
	for _, b := range model.Nodes {
		if b.Info.NodeType != smp.NodeTypeSwitch || len(b.Path) < 2 {
			continue
		}
		n := 0
		for _, o := range model.Nodes {
			if o.Info.NodeType == smp.NodeTypeSwitch && model.Crosses(o, map[*discovery.Node]bool{b: true}) != nil {
				n++
			}
		}
		if n > behind {
			cut, behind = b, n
		}
	}
	if behind < 4 {
		t.Fatalf("no switch has more than %d others behind it; the test proves nothing", behind)
	}
	parent := model.Nodes[model.SMGUID]
	for _, hop := range cut.Path[:len(cut.Path)-1] {
		parent = model.Nodes[parent.Ports[hop].PeerGUID]
	}
	must(t, fab.LinkDown(parent.Info.NodeGUID, cut.Path[len(cut.Path)-1]))

	before := tr.Stats().Timeouts
	ch, full, err := s.LightSweepChanges(ctx)
	must(t, err)
	if timeouts := tr.Stats().Timeouts - before; timeouts != 1 || full != "" {
		t.Fatalf("light sweep: %d SMPs timed out (full %q); want 1: the switch behind the cable, not the %d behind it", timeouts, full, behind)
	}
	// The cut switch, the ones behind it, and the switch on this side of
	// the cable (its port went down).
	if want := behind + 2; len(ch.Switches) != want {
		t.Fatalf("light sweep reported %d switches changed; want %d", len(ch.Switches), want)
	}
	rep, err := s.IncrementalSweep(ctx, ch)
	must(t, err)
	if !rep.Incremental || rep.Fallback != "" {
		t.Fatalf("incremental sweep: %+v", rep)
	}
	checkProgrammed(t, fab, s)
}
