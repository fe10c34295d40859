package sm_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/host/sm"
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
