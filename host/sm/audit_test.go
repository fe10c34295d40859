package sm_test

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"slices"
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

// TestAuditYields: the tick's audit reads its share in chunks and stops
// after the chunk in which something more urgent came (a trap, in Run):
// the rest of the share waits for the next tick.
func TestAuditYields(t *testing.T) {
	t.Parallel()
	_, tr := attach(t, ft3(t))
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 1), sm.Options{AuditSMPs: 40}, nil)
	ctx := context.Background()
	_, err := s.HeavySweep(ctx)
	must(t, err)
	tests := []struct {
		name     string
		urgentAt int // the yield that says something waits (0: none)
		reads    uint64
	}{
		{"nothing waits: the whole share", 0, 40},
		{"a trap after the first chunk", 1, 10},
		{"a trap after the third", 3, 30},
	}
	for _, tc := range tests {
		asked := 0
		before := s.AuditStats().Reads
		s.AuditIn(ctx, 10, func() bool { asked++; return asked == tc.urgentAt })
		if got := s.AuditStats().Reads - before; got != tc.reads {
			t.Errorf("%s: %d reads, want %d", tc.name, got, tc.reads)
		}
		if items := s.AuditStats().Items; items < 40 {
			t.Fatalf("the fabric has %d audit items; the test needs 40", items)
		}
	}
}

// TestNewSMsYields: the master's look for new SMs reads every end port,
// and none once a trap waits (the next poll tick looks again).
func TestNewSMsYields(t *testing.T) {
	t.Parallel()
	f := ft3(t)
	_, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 1), sm.Options{}, nil)
	ctx := context.Background()
	rep, err := s.HeavySweep(ctx)
	must(t, err)
	ends := uint64(rep.Switches + rep.CAs - 1) // every end port but the SM's own
	for _, tc := range []struct {
		name  string
		yield func() bool
		gets  uint64
		done  bool
	}{{"nothing waits", nil, ends, true}, {"a trap waits", func() bool { return true }, 0, false}} {
		gets := tr.Stats().Gets
		found, done := s.NewSMs(ctx, tc.yield)
		if got := tr.Stats().Gets - gets; found || done != tc.done || got != tc.gets {
			t.Errorf("%s: found %v, done %v, %d Gets; want none found, done %v, %d Gets", tc.name, found, done, got, tc.done, tc.gets)
		}
	}
}

// TestAuditRepairsLFTBlock: an LFT block overwritten behind the SM's back
// is found and repaired within ceil(items/budget) light sweeps, by one
// Set, and no light sweep calls for a re-route; each light sweep reads
// exactly min(budget, items) more than one without the audit.
func TestAuditRepairsLFTBlock(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
			t.Parallel()
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
			// Its tables survived (only the LID was lost): they are read
			// back, found as planned, and not sent again.
			if rep.PluginCalls != 0 || rep.Program.LFTBlocksRead != blocks || rep.Program.LFTBlocksSent != 0 || rep.Program.PortInfoSets != 1 {
				t.Fatalf("re-programming the reset switch: %d plugin calls, program %+v; want its LID set and its %d blocks read back, none sent", rep.PluginCalls, rep.Program, blocks)
			}
			checkProgrammed(t, fab, s)
		})
	}
}

// TestAuditInRun: the sweep loop's own light sweeps repair a block without
// any sweep report (no re-route).
func TestAuditInRun(t *testing.T) {
	t.Parallel()
	f := ft3(t)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100),
		sm.Options{Parallel: 8, SweepInterval: 20 * time.Millisecond, AuditSMPs: 9}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	reps := make(chan *sm.Report, 8)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, nil, func(r *sm.Report, err error) {
			if err != nil && ctx.Err() == nil { // a sweep cut short by the test's end is no failure
				t.Errorf("sweep: %v", err)
			}
			reps <- r
		})
	}()
	defer func() { cancel(); <-done }()
	<-reps
	a := s.Applied()
	if a == nil {
		t.Fatal("the first sweep applied no plan")
	}
	// Overwrite only once the audit has gone round once: on a loaded
	// machine a retried Set of the first sweep can still be in flight
	// and would mend the block before the audit sees it.
	deadline := time.Now().Add(20 * time.Second)
	for s.AuditStats().Rotations == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no audit rotation within 20s; audit %+v", s.AuditStats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	victim := a.Topo.Nodes[a.Topo.Switches()[0]].GUID
	overwriteBlock(t, switchAgent(t, fab, victim), 1, a.Result.Realized.LFT[0])
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

// TestMeasureAudit measures the audit on the 3-level fat tree of 36-port
// switches (11,664 CAs, 1,620 switches) on the embedded fabric: the SMPs
// and time it adds to a light sweep at the default budget (and two larger
// ones), the light sweeps one rotation takes, and how many light sweeps
// after an overwrite the block is repaired, worst case (the block just
// behind the cursor) and from the middle of the rotation. Times at the
// default sweep_interval are light sweeps × 10 s. Run it with
// IBSM_MEASURE=1 (not part of make test).
func TestMeasureAudit(t *testing.T) {
	if os.Getenv("IBSM_MEASURE") == "" {
		t.Skip("set IBSM_MEASURE=1 to measure")
	}
	const interval = 10 * time.Second // conf.DefaultSweepInterval
	f, err := topogen.FatTree{Radix: 36, Levels: 3}.Generate()
	must(t, err)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&spineUpDown{base{"updn"}}}, 1), sm.Options{Parallel: 64}, nil)
	ctx := context.Background()
	t0 := time.Now()
	rep, err := s.HeavySweep(ctx)
	must(t, err)
	t.Logf("ft3-36: %d switches %d CAs; heavy sweep %v, %d LFT blocks", rep.Switches, rep.CAs, time.Since(t0).Round(time.Millisecond), rep.Program.LFTBlocksTotal)

	// One light sweep: with the audit off, then at each budget.
	sweep := func() (time.Duration, uint64, uint64) {
		st0 := tr.Stats()
		t0 := time.Now()
		need, err := s.LightSweep(ctx)
		must(t, err)
		if need {
			t.Fatal("light sweep asks for a sweep on an untouched fabric")
		}
		st1 := tr.Stats()
		return time.Since(t0), st1.Gets - st0.Gets, st1.Sets - st0.Sets
	}
	median := func(n int) (time.Duration, uint64) {
		var ds []time.Duration
		var gets uint64
		for i := 0; i < n; i++ {
			d, g, _ := sweep()
			ds = append(ds, d)
			gets = g
		}
		slices.Sort(ds)
		return ds[n/2], gets
	}
	s.Opts.AuditSMPs = -1
	offT, offG := median(7)
	t.Logf("light sweep without the audit: %d Gets, %v (median of 7)", offG, offT.Round(time.Microsecond))
	for _, b := range []int{0, 3000, 10000} {
		s.Opts.AuditSMPs = b
		d, g := median(7)
		items := s.AuditStats().Items
		budget := b
		if b == 0 {
			budget = int(g - offG) // the default grows with the fabric: what it read is its budget
		}
		n := (items + budget - 1) / budget
		t.Logf("audit_smps %d: light sweep %d Gets (+%d), %v (+%v); %d items (%d LFT blocks + 2 × %d switches): %d light sweeps per rotation = %v at sweep_interval %v",
			budget, g, g-offG, d.Round(time.Microsecond), (d - offT).Round(time.Microsecond), items, items-2*rep.Switches, rep.Switches, n, time.Duration(n)*interval, interval)
	}

	// Repair latency at the default budget, counted in light sweeps.
	s.Opts.AuditSMPs = 0
	a := s.Applied()
	// The rotation goes switch by switch in GUID order.
	sws := make([]int, len(a.Topo.Switches())) // rotation order → switch index
	for i := range sws {
		sws[i] = i
	}
	slices.SortFunc(sws, func(x, y int) int {
		gx, gy := a.Topo.Nodes[a.Topo.Switches()[x]].GUID, a.Topo.Nodes[a.Topo.Switches()[y]].GUID
		return cmp.Compare(gx, gy)
	})
	blocks := (int(a.Result.Realized.TopLID) + 64) / 64
	per := 2 + blocks
	repairAfter := func(name string, item int) {
		idx := sws[item/per]
		b := item%per - 2
		if b < 0 {
			b = 0
		}
		g := a.Topo.Nodes[a.Topo.Switches()[idx]].GUID
		c := switchAgent(t, fab, g)
		overwriteBlock(t, c, b, a.Result.Realized.LFT[idx])
		c.T.Close()
		st0 := s.AuditStats()
		t0 := time.Now()
		n := 0
		for {
			if l, _ := fab.LFT(g); bytes.Equal(l, a.Result.Realized.LFT[idx]) {
				break
			}
			sweep()
			n++
			if n > st0.Items {
				t.Fatalf("%s: not repaired after %d light sweeps", name, n)
			}
		}
		st1 := s.AuditStats()
		t.Logf("%s: switch %d block %d repaired after %d light sweeps (%v back to back) = %v at sweep_interval %v; %d difference, %d repaired",
			name, idx, b, n, time.Since(t0).Round(time.Millisecond), time.Duration(n)*interval, interval, st1.Differences-st0.Differences, st1.Repaired-st0.Repaired)
	}
	st := s.AuditStats()
	// Worst case: the block the cursor has just passed.
	behind := (st.Cursor - 1 + st.Items) % st.Items
	for behind%per < 2 { // a block, not port 0 or SwitchInfo
		behind = (behind - 1 + st.Items) % st.Items
	}
	repairAfter("worst case (just behind the cursor)", behind)
	st = s.AuditStats()
	repairAfter("half a rotation ahead", (st.Cursor+st.Items/2)%st.Items)
}
