package sm_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestArmAhead: with a CapOneVL assigner a cold heavy sweep arms the
// switch ports of its Init–Init links while the plan is computed, counts
// those Sets in distribution, and ends with every port Active; without
// one it arms nothing early. A plan the verifier rejects leaves the ports
// at most Armed (no data flows) and every table empty.
func TestArmAhead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		oneVL   bool
		loop    bool // the engine's routes loop: the plan is rejected
		armed   bool // the switch ports are armed before the plan
		highest uint8
	}{
		{"one-VL assigner", true, false, true, smp.PortStateActive},
		{"other assigner", false, false, false, smp.PortStateActive},
		{"one-VL assigner, rejected plan", true, true, true, smp.PortStateArmed},
		{"other assigner, rejected plan", false, true, false, smp.PortStateInit},
	}
	sets := map[bool]uint64{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fatTree(t)
			fab, tr := attach(t, f)
			pipe := runner([]sdk.RoutingEngine{&updn{base: base{"updn"}, loop: tc.loop}}, 100)
			pipe.VL.OneVL = tc.oneVL
			s := sm.New(tr, pipe, sm.Options{Parallel: 8}, nil)
			rep, err := s.HeavySweep(context.Background())
			if (err != nil) != tc.loop {
				t.Fatalf("heavy sweep: %v", err)
			}
			swPorts := int64(0)
			for _, n := range f.Nodes {
				for q := 1; q < len(n.Ports); q++ {
					if (n.Ports[q].Peer != nil) && n.Type == topology.Switch {
						swPorts++
					}
				}
			}
			if want := map[bool]int64{true: swPorts}[tc.armed]; !tc.loop && rep.Program.Prearmed != want {
				t.Fatalf("%d ports armed before the plan, want %d", rep.Program.Prearmed, want)
			}
			if !tc.loop {
				// The same Sets either way, counted in distribution.
				if prev, ok := sets[tc.loop]; ok && prev != rep.Distribution.Sets {
					t.Fatalf("distribution counts %d Sets, %d in the case before", rep.Distribution.Sets, prev)
				}
				sets[tc.loop] = rep.Distribution.Sets
			}
			checkStates(t, fab, f, tc.highest, tc.armed)
			if tc.loop {
				for g, l := range lfts(t, fab, f) {
					for _, port := range l {
						if port != 0xFF {
							t.Fatalf("switch %#x has a forwarding entry after a rejected plan", g)
						}
					}
				}
			} else {
				checkProgrammed(t, fab, s)
			}
		})
	}
}

// checkStates asserts every cabled port is in state top, except CA ports
// when top is Armed (a CA port is armed with its LID, which a rejected
// plan never sends) and switch ports when armed is false and top Armed.
func checkStates(t *testing.T, fab *sim.Fabric, f *netfile.File, top uint8, armed bool) {
	t.Helper()
	for _, n := range f.Nodes {
		for q := 1; q < len(n.Ports); q++ {
			if !(n.Ports[q].Peer != nil) {
				continue
			}
			want := top
			if top == smp.PortStateArmed && (n.Type != topology.Switch || !armed) {
				want = smp.PortStateInit
			}
			snap, err := fab.PortInfo(n.GUID, uint8(q))
			must(t, err)
			if snap.State != want {
				t.Fatalf("port %#x/%d in state %d, want %d", n.GUID, q, snap.State, want)
			}
		}
	}
}
