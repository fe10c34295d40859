package sm_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// switchAgent is a second agent at a switch's port 0: its SMPs with an
// empty directed route change the switch behind the SM's back (no trap,
// no PortStateChange).
func switchAgent(t *testing.T, fab *sim.Fabric, g uint64) *mad.Client {
	t.Helper()
	conn, err := fab.Attach(g, 0)
	must(t, err)
	tr := transport.New(conn, transport.Options{Timeout: 50 * time.Millisecond, Window: 4})
	t.Cleanup(func() { tr.Close() })
	return &mad.Client{T: tr}
}

// overwriteBlock rewrites LFT block b of the switch agent c sits on so
// that every LID the plan routes in it goes elsewhere.
func overwriteBlock(t *testing.T, c *mad.Client, b int, want []uint8) {
	t.Helper()
	var blk smp.LFTBlock
	ctx := context.Background()
	must(t, c.Get(ctx, nil, smp.AttrLinearForwardingTable, uint32(b), &blk))
	for k := range blk {
		if lid := b*64 + k; lid < len(want) && want[lid] != 0xFF {
			blk[k] = want[lid] ^ 1
		}
	}
	must(t, c.Set(ctx, nil, smp.AttrLinearForwardingTable, uint32(b), &blk, nil))
}

func ft3(t *testing.T) *netfile.File {
	f, err := topogen.FatTree{Radix: 4, Levels: 3}.Generate()
	must(t, err)
	return f
}

// TestAuditRepairsLFTBlock: an LFT block overwritten behind the SM's back
// is found and repaired within ceil(items/budget) light sweeps, by one
// Set, and no light sweep calls for a re-route; each light sweep reads
// exactly min(budget, items) more than one without the audit.
func TestAuditRepairsLFTBlock(t *testing.T) {
	f := ft3(t)
	ctx := context.Background()
	var off uint64 // Gets of a light sweep without the audit
	tests := []struct {
		name   string
		budget int // Options.AuditSMPs
		reads  func(items int) int
	}{
		{"off", -1, func(int) int { return 0 }},
		{"budget 7", 7, func(items int) int { return min(7, items) }},
		{"default budget", 0, func(items int) int { return min(sm.DefaultAuditSMPs, items) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fab, tr := attach(t, f)
			s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8, AuditSMPs: tc.budget}, nil)
			_, err := s.HeavySweep(ctx)
			must(t, err)
			g0 := tr.Stats().Gets
			need, err := s.LightSweep(ctx)
			must(t, err)
			gets := tr.Stats().Gets - g0
			items := s.AuditStats().Items
			if need {
				t.Fatal("light sweep on an untouched fabric asks for a sweep")
			}
			if tc.budget < 0 {
				off = gets
				if items != 0 || s.AuditStats().Reads != 0 {
					t.Fatalf("audit off, yet %+v", s.AuditStats())
				}
				return
			}
			if want := off + uint64(tc.reads(items)); off == 0 || gets != want {
				t.Fatalf("light sweep sent %d Gets, want %d (%d without the audit + %d reads of %d items)", gets, want, off, tc.reads(items), items)
			}
			a := s.Applied()
			idx := len(a.Topo.Switches()) - 1
			victim := a.Topo.Nodes[a.Topo.Switches()[idx]].GUID
			plan := a.Result.Realized.LFT[idx]
			blocks := (int(a.Result.Realized.TopLID) + 64) / 64
			if items != len(a.Topo.Switches())*(2+blocks) {
				t.Fatalf("%d items, want %d switches × (port 0 + SwitchInfo + %d blocks)", items, len(a.Topo.Switches()), blocks)
			}
			overwriteBlock(t, switchAgent(t, fab, victim), blocks-1, plan)
			if l, _ := fab.LFT(victim); bytes.Equal(l, plan) {
				t.Fatal("the overwrite did not reach the switch")
			}
			r := tc.reads(items)
			limit := (items + r - 1) / r
			st0 := tr.Stats()
			n := 0
			for ; n < limit; n++ {
				if l, _ := fab.LFT(victim); bytes.Equal(l, plan) {
					break
				}
				g := tr.Stats().Gets
				need, err := s.LightSweep(ctx)
				must(t, err)
				if need {
					t.Fatalf("light sweep %d asks for a sweep; the audit repairs on its own", n+1)
				}
				if d := tr.Stats().Gets - g; d != off+uint64(tc.reads(items)) {
					t.Fatalf("light sweep %d sent %d Gets, want %d", n+1, d, off+uint64(tc.reads(items)))
				}
			}
			if l, _ := fab.LFT(victim); !bytes.Equal(l, plan) {
				t.Fatalf("block not repaired after %d light sweeps (%d items, %d reads each)", n, items, tc.reads(items))
			}
			if sets := tr.Stats().Sets - st0.Sets; sets != 1 {
				t.Fatalf("the repair took %d Sets, want 1", sets)
			}
			checkProgrammed(t, fab, s)
			if st := s.AuditStats(); st.Differences != 1 || st.Repaired != 1 || st.ReadFailures != 0 {
				t.Fatalf("audit stats %+v", st)
			}
			t.Logf("repaired after %d of at most %d light sweeps (%d items, %d reads each)", n, limit, items, tc.reads(items))
		})
	}
}

// TestAuditSwitchLID: a switch LID changed behind the SM's back (without
// PortStateChange) is put back by one PortInfo Set; a switch whose LID went
// to 0 (reset) is handed to an incremental sweep, which re-programs it
// whole.
func TestAuditSwitchLID(t *testing.T) {
	f := ft3(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		lid   uint16
		reset bool
	}{
		{"changed", 0x321, false},
		{"reset to 0", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fab, tr := attach(t, f)
			s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8}, nil)
			_, err := s.HeavySweep(ctx)
			must(t, err)
			a := s.Applied()
			victim := a.Topo.Nodes[a.Topo.Switches()[3]].GUID
			c := switchAgent(t, fab, victim)
			var pi smp.PortInfo
			must(t, c.Get(ctx, nil, smp.AttrPortInfo, 0, &pi))
			pi.LID, pi.PortState, pi.PortPhysicalState = tc.lid, smp.PortStateNoChange, smp.PhysStateNoChange
			pi.LinkSpeedEnabled, pi.LinkWidthEnabled, pi.LinkDownDefaultState = 0, 0, 0
			must(t, c.Set(ctx, nil, smp.AttrPortInfo, 0, &pi, nil))
			if _, psc, _ := fab.SwitchInfo(victim); psc {
				t.Fatal("the switch reports PortStateChange; the test proves nothing")
			}
			sets0 := tr.Stats().Sets
			ch, full, err := s.LightSweepChanges(ctx)
			must(t, err)
			if full != "" || len(ch.Switches) != 0 {
				t.Fatalf("light sweep: %+v %q", ch, full)
			}
			if !tc.reset {
				if len(ch.Ports) != 0 || tr.Stats().Sets-sets0 != 1 {
					t.Fatalf("light sweep returned %+v and sent %d Sets; want one PortInfo Set and nothing to sweep", ch, tr.Stats().Sets-sets0)
				}
				checkProgrammed(t, fab, s)
				return
			}
			if len(ch.Ports) != 1 || ch.Ports[0].GUID != victim || ch.Ports[0].Port != 0 || tr.Stats().Sets != sets0 {
				t.Fatalf("light sweep returned %+v, %d Sets; want switch %#x port 0 handed over, nothing sent", ch, tr.Stats().Sets-sets0, victim)
			}
			rep, err := s.IncrementalSweep(ctx, ch)
			must(t, err)
			blocks := int64(a.Result.Realized.TopLID)/64 + 1
			if rep.PluginCalls != 0 || rep.Program.LFTBlocksSent != blocks || rep.Program.PortInfoSets != 1 {
				t.Fatalf("re-programming the reset switch: %d plugin calls, program %+v; want its LID and its %d blocks", rep.PluginCalls, rep.Program, blocks)
			}
			checkProgrammed(t, fab, s)
		})
	}
}

// TestAuditInRun: the sweep loop's own light sweeps repair a block without
// any sweep report (no re-route).
func TestAuditInRun(t *testing.T) {
	f := ft3(t)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100),
		sm.Options{Parallel: 8, SweepInterval: 20 * time.Millisecond, AuditSMPs: 9}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	reps := make(chan *sm.Report, 8)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, nil, func(r *sm.Report, err error) {
			if err != nil {
				t.Errorf("sweep: %v", err)
			}
			reps <- r
		})
	}()
	defer func() { cancel(); <-done }()
	<-reps
	a := s.Applied()
	victim := a.Topo.Nodes[a.Topo.Switches()[0]].GUID
	overwriteBlock(t, switchAgent(t, fab, victim), 1, a.Result.Realized.LFT[0])
	deadline := time.Now().Add(20 * time.Second)
	for {
		if l, _ := fab.LFT(victim); bytes.Equal(l, a.Result.Realized.LFT[0]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not repaired within 20s; audit %+v", s.AuditStats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := s.AuditStats(); st.Repaired != 1 || st.Differences != 1 {
		t.Fatalf("audit stats %+v", st)
	}
	select {
	case r := <-reps:
		t.Fatalf("the sweep loop re-routed for an audit repair: %+v", r)
	default:
	}
}
