package sm_test

import (
	"context"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestArmAhead: asked to (Options.ArmAhead) and with a CapOneVL assigner,
// a cold heavy sweep arms the
// switch ports of its Init–Init links while the plan is computed (here
// the engine answers once they are all Armed), counts those Sets in
// distribution, and ends with every port Active; without one it arms
// nothing early, nor when not asked. A plan the verifier rejects leaves
// the ports at most Armed (no data flows) and every table empty; not
// asked, it leaves them Init: no Set before a verified plan. A plan ready at once stops
// the arming wherever it got to, and Apply does the rest.
func TestArmAhead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		oneVL   bool
		ahead   bool // Options.ArmAhead
		loop    bool // the engine's routes loop: the plan is rejected
		armed   bool // the engine answers once every switch port is Armed
		highest uint8
	}{
		{"one-VL assigner", true, true, false, true, smp.PortStateActive},
		{"other assigner", false, true, false, false, smp.PortStateActive},
		{"one-VL assigner, rejected plan", true, true, true, true, smp.PortStateArmed},
		{"other assigner, rejected plan", false, true, true, false, smp.PortStateInit},
		{"one-VL assigner, plan ready at once", true, true, false, false, smp.PortStateActive},
		{"one-VL assigner, not asked", true, false, false, false, smp.PortStateActive},
		{"one-VL assigner, not asked, rejected plan", true, false, true, false, smp.PortStateInit},
	}
	sets := map[bool]uint64{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fatTree(t)
			fab, tr := attach(t, f)
			swPorts := int64(0)
			for _, n := range f.Nodes {
				for q := 1; q < len(n.Ports); q++ {
					if (n.Ports[q].Peer != nil) && n.Type == topology.Switch {
						swPorts++
					}
				}
			}
			eng := &updn{base: base{"updn"}, loop: tc.loop}
			if tc.armed {
				eng.gate = func() { waitArmed(t, fab, f, swPorts) }
			}
			pipe := runner([]sdk.RoutingEngine{eng}, 100)
			pipe.VL.OneVL = tc.oneVL
			s := sm.New(tr, pipe, sm.Options{Parallel: 8, ArmAhead: tc.ahead}, nil)
			rep, err := s.HeavySweep(context.Background())
			if (err != nil) != tc.loop {
				t.Fatalf("heavy sweep: %v", err)
			}
			switch {
			case tc.loop:
			case tc.armed && rep.Program.Prearmed != swPorts, !(tc.oneVL && tc.ahead) && rep.Program.Prearmed != 0, rep.Program.Prearmed > swPorts:
				t.Fatalf("%d ports armed before the plan (of %d)", rep.Program.Prearmed, swPorts)
			default:
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

// waitArmed waits until the fabric's switch ports are all Armed.
func waitArmed(t *testing.T, fab *sim.Fabric, f *netfile.File, want int64) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		armed := int64(0)
		for _, n := range f.Nodes {
			for q := 1; q < len(n.Ports); q++ {
				if n.Type != topology.Switch || n.Ports[q].Peer == nil {
					continue
				}
				if snap, err := fab.PortInfo(n.GUID, uint8(q)); err == nil && snap.State == smp.PortStateArmed {
					armed++
				}
			}
		}
		if armed == want {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of %d switch ports Armed before the plan", armed, want)
			return
		}
		time.Sleep(time.Millisecond)
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
