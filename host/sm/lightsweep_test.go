package sm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/sim"
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
		if tc.change && pi == tc.portInfos+1 {
			pi-- // the client's probe of the cable's near end (mad.Client.probe), on its own goroutine
		}
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
	fab, tr, s, cut, parent, behind := deadCableRig(t)
	ctx := context.Background()
	must(t, fab.LinkDown(parent.Info.NodeGUID, cut.Path[len(cut.Path)-1]))

	before := tr.Stats().Timeouts
	ch, full, err := s.LightSweepChanges(ctx)
	must(t, err)
	if timeouts := tr.Stats().Timeouts - before; timeouts != 1 || full != "" {
		t.Fatalf("light sweep: %d SMPs timed out (full %q); want 1: the switch behind the cable, not one for each of the %d behind it", timeouts, full, behind)
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

// cutAt takes a cable down when a phase of the sweep starts.
type cutAt struct {
	phase string
	cut   func()
	once  sync.Once
}

func (c *cutAt) Phase(name, _ string) {
	if name == c.phase {
		c.once.Do(c.cut)
	}
}
func (c *cutAt) Count(string, int64, int64) {}

// TestProgrammingBehindADeadCable: a cable on the routes of many switches
// that dies after discovery, as the tables go out, fails the sweep (the
// next one re-discovers) after a few timeouts: the SMPs for the switches
// behind it are not sent once a probe found the route dead, instead of
// each waiting out its own timeout.
func TestProgrammingBehindADeadCable(t *testing.T) {
	t.Parallel()
	fab, tr, _, cut, parent, behind := deadCableRig(t)
	ctx := context.Background()
	// Another plan (LIDs from 300), so that every table goes out again.
	s2 := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 300), sm.Options{Parallel: 8}, nil)
	s2.SetProgress(&cutAt{phase: "programming", cut: func() { must(t, fab.LinkDown(parent.Info.NodeGUID, cut.Path[len(cut.Path)-1])) }})
	before := tr.Stats()
	if _, err := s2.HeavySweep(ctx); err == nil {
		t.Fatal("the sweep programmed switches behind a dead cable without an error")
	}
	st := tr.Stats()
	sent := st.Sets - before.Sets
	// What was in flight when the cable died (at most a window, 32) and
	// what went out while the probe that finds its route dead waited out
	// its own timeout (a window more) time out; without the probe, every
	// SMP for a switch behind did: 616, 22 s.
	if timeouts := st.Timeouts - before.Timeouts; timeouts > 2*32 {
		t.Fatalf("%d SMPs timed out (of %d Sets); want at most two windows' worth (32): %d switches are behind the cable", timeouts, sent, behind)
	}
}

// deadCableRig is an SM that brought up a 3-level fat tree of 8-port
// switches, the switch the most other switches' routes cross (cut), the
// switch before it on its route (the cable between them is the one to
// take down) and how many cross it.
func deadCableRig(t *testing.T) (fab *sim.Fabric, tr transport.Transport, s *sm.SM, cut, parent *discovery.Node, behind int) {
	t.Helper()
	f, err := topogen.FatTree{Radix: 8, Levels: 3}.Generate()
	must(t, err)
	fab, tr = attach(t, f)
	s = sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8}, nil)
	_, err = s.HeavySweep(context.Background())
	must(t, err)
	cut, parent, behind = mostBehind(s.Fabric())
	if behind < 4 {
		t.Fatalf("no switch has more than %d others behind it; the test proves nothing", behind)
	}
	return fab, tr, s, cut, parent, behind
}

// mostBehind returns the switch the most other switches' routes cross,
// the switch before it on its route, and how many cross it.
func mostBehind(model *discovery.Fabric) (cut, parent *discovery.Node, behind int) {
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
	if cut == nil {
		return nil, nil, 0
	}
	parent = model.Nodes[model.SMGUID]
	for _, hop := range cut.Path[:len(cut.Path)-1] {
		parent = model.Nodes[parent.Ports[hop].PeerGUID]
	}
	return cut, parent, behind
}
