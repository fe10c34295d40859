package sm_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/discovery/discoverytest"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// fullModel discovers the fabric from scratch over tr.
func fullModel(t *testing.T, tr transport.Transport) (*discovery.Fabric, *topology.Topology) {
	t.Helper()
	f, err := (&discovery.Discoverer{C: &mad.Client{T: tr}}).Run(context.Background())
	must(t, err)
	topo, err := f.Topology()
	must(t, err)
	return f, topo
}

// sameAsFull asserts the SM's model equals a full re-discovery, and that a
// heavy sweep now finds nothing to do.
func sameAsFull(t *testing.T, name string, s *sm.SM, tr transport.Transport) {
	t.Helper()
	full, topo := fullModel(t, tr)
	if d := discoverytest.Diff(s.Fabric(), full); len(d) != 0 {
		t.Fatalf("%s: SM model differs from a full discovery:\n%s", name, strings.Join(d, "\n"))
	}
	if h := s.Applied().Topo.Hash(); h != topo.Hash() {
		t.Fatalf("%s: applied topology %x, full discovery %x", name, h, topo.Hash())
	}
	if d := topoDiff(s.Applied().Topo, topo); d != "" {
		t.Fatalf("%s: applied topology (patched from the last one) differs from a full discovery's: %s", name, d)
	}
	sets0 := tr.Stats().Sets
	rep, err := s.HeavySweep(context.Background())
	must(t, err)
	if rep.Rerouted || tr.Stats().Sets-sets0 != uint64(0) {
		t.Fatalf("%s: a heavy sweep after the incremental one still changed things: %+v", name, rep.Program)
	}
}

// topoDiff says how a differs from b in nodes, ports and the derived
// indices; a port state of Init or better counts as Active (the sweep cut
// its snapshot before it activated the ports a full discovery sees Active).
func topoDiff(a, b *topology.Topology) string {
	if len(a.Nodes) != len(b.Nodes) || a.SM != b.SM {
		return fmt.Sprintf("%d nodes, SM %v vs %d, %v", len(a.Nodes), a.SM, len(b.Nodes), b.SM)
	}
	up := func(p topology.Port) topology.Port {
		if p.State >= topology.StateInit {
			p.State = topology.StateActive
		}
		return p
	}
	for i := range a.Nodes {
		na, nb := a.Nodes[i], b.Nodes[i]
		if na.GUID != nb.GUID || na.Type != nb.Type || na.Desc != nb.Desc || len(na.Ports) != len(nb.Ports) {
			return fmt.Sprintf("node %d: %#x %v %q %d ports vs %#x %v %q %d ports", i, na.GUID, na.Type, na.Desc, len(na.Ports), nb.GUID, nb.Type, nb.Desc, len(nb.Ports))
		}
		for p := range na.Ports {
			if up(na.Ports[p]) != up(nb.Ports[p]) {
				return fmt.Sprintf("node %#x port %d: %+v vs %+v", na.GUID, p, na.Ports[p], nb.Ports[p])
			}
		}
	}
	if !slices.Equal(a.Endpoints(), b.Endpoints()) || !slices.Equal(a.Switches(), b.Switches()) {
		return "endpoints or switches differ"
	}
	return ""
}

func switchLinks(f *netfile.File) []netfile.Link {
	var out []netfile.Link
	for _, l := range f.Links() {
		if l.A.Type == topology.Switch && l.B.Type == topology.Switch {
			out = append(out, l)
		}
	}
	return out
}

// lastCA returns the last CA cable in file order (far from the SM's port,
// which is the first CA's).
func lastCA(f *netfile.File) netfile.Link {
	ls := f.Links()
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].A.Type != topology.Switch {
			return ls[i]
		}
		if ls[i].B.Type != topology.Switch {
			return netfile.Link{A: ls[i].B, PA: ls[i].PB, B: ls[i].A, PB: ls[i].PA}
		}
	}
	return netfile.Link{}
}

func TestIncrementalSweepMatchesHeavy(t *testing.T) {
	t.Parallel()
	type fault struct {
		name string
		do   func(fab *sim.Fabric, f *netfile.File) error
	}
	sw := func(i int, up bool) func(*sim.Fabric, *netfile.File) error {
		return func(fab *sim.Fabric, f *netfile.File) error {
			l := switchLinks(f)[i]
			if up {
				return fab.LinkUp(l.A.GUID, uint8(l.PA))
			}
			return fab.LinkDown(l.A.GUID, uint8(l.PA))
		}
	}
	ca := func(up bool) func(*sim.Fabric, *netfile.File) error {
		return func(fab *sim.Fabric, f *netfile.File) error {
			l := lastCA(f)
			if up {
				return fab.LinkUp(l.A.GUID, uint8(l.PA))
			}
			return fab.LinkDown(l.A.GUID, uint8(l.PA))
		}
	}
	tests := []struct {
		name   string
		gen    topogen.FatTree
		faults []fault
	}{
		{"2 levels", topogen.FatTree{Radix: 4, Levels: 2}, []fault{
			{"link down", sw(0, false)},
			{"link up", sw(0, true)},
			{"CA link down", ca(false)},
			{"new CA", ca(true)},
			{"CA removed", func(fab *sim.Fabric, f *netfile.File) error { return fab.RemoveNode(lastCA(f).A.GUID) }},
			{"switch removed", func(fab *sim.Fabric, f *netfile.File) error { return fab.RemoveNode(switchLinks(f)[1].B.GUID) }},
		}},
		{"3 levels", topogen.FatTree{Radix: 4, Levels: 3}, []fault{
			{"link down", sw(2, false)},
			{"two more down", func(fab *sim.Fabric, f *netfile.File) error {
				if err := sw(4, false)(fab, f); err != nil {
					return err
				}
				return sw(9, false)(fab, f)
			}},
			{"all up", func(fab *sim.Fabric, f *netfile.File) error {
				for _, i := range []int{2, 4, 9} {
					if err := sw(i, true)(fab, f); err != nil {
						return err
					}
				}
				return nil
			}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := tc.gen.Generate()
			must(t, err)
			fab, tr := attach(t, f)
			s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8, LIDFile: filepath.Join(t.TempDir(), "guid2lid")}, nil)
			s.CrossCheck()
			ctx := context.Background()
			_, err = s.HeavySweep(ctx)
			must(t, err)
			for _, ft := range tc.faults {
				must(t, ft.do(fab, f))
				ch, full, err := s.LightSweepChanges(ctx)
				must(t, err)
				if full != "" || len(ch.Switches) == 0 {
					t.Fatalf("%s: light sweep found %+v (full: %q)", ft.name, ch, full)
				}
				rep, err := s.IncrementalSweep(ctx, ch)
				must(t, err)
				if !rep.Incremental || rep.Fallback != "" || !rep.Rerouted {
					t.Fatalf("%s: report %+v", ft.name, rep)
				}
				if p := rep.Program; p.LFTBlocksSent >= p.LFTBlocksTotal {
					t.Fatalf("%s: %d of %d LFT blocks re-sent", ft.name, p.LFTBlocksSent, p.LFTBlocksTotal)
				}
				checkProgrammed(t, fab, s)
				if err := s.CleanModelHolds(); err != nil {
					t.Fatalf("%s: %v", ft.name, err)
				}
				sameAsFull(t, ft.name, s, tr)
				if again, full, err := s.LightSweepChanges(ctx); err != nil || !again.Empty() || full != "" {
					t.Fatalf("%s: light sweep after the re-route = %+v %q, %v; want nothing", ft.name, again, full, err)
				}
			}
		})
	}
}

// A CA whose LID changes behind the SM's back leaves no PortStateChange on
// any switch; the light sweep's CA check finds it and one PortInfo Set
// repairs it.
func TestLightSweepCatchesCAChange(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	tests := []struct {
		name   string
		checks int
		// sweeps is how many light sweeps it takes at most to see it.
		sweeps int
	}{
		{"all CAs each sweep", 100, 1},
		{"two CAs per sweep", 2, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8, CAChecksPerSweep: tc.checks}, nil)
			s.CrossCheck()
			ctx := context.Background()
			_, err := s.HeavySweep(ctx)
			must(t, err)
			l := lastCA(f)
			must(t, fab.SetPortLID(l.A.GUID, uint8(l.PA), 0x999, 0))
			for _, sw := range f.Nodes {
				if sw.Type == topology.Switch {
					if _, psc, _ := fab.SwitchInfo(sw.GUID); psc {
						t.Fatalf("switch %#x reports a change; the test proves nothing", sw.GUID)
					}
				}
			}
			var ch discovery.Changes
			n := 0
			for ; n < tc.sweeps && ch.Empty(); n++ {
				ch, _, err = s.LightSweepChanges(ctx)
				must(t, err)
			}
			if len(ch.Ports) != 1 || ch.Ports[0].GUID != l.A.GUID || len(ch.Switches) != 0 {
				t.Fatalf("after %d light sweeps: %+v", n, ch)
			}
			rep, err := s.IncrementalSweep(ctx, ch)
			must(t, err)
			if rep.PluginCalls != 0 || rep.Program.PortInfoSets != 1 || rep.Program.LFTBlocksSent != 0 {
				t.Fatalf("repair: %d plugin calls, program %+v; want one PortInfo Set", rep.PluginCalls, rep.Program)
			}
			checkProgrammed(t, fab, s)
			must(t, s.CleanModelHolds())
		})
	}
}

// trapSender attaches an extra agent at a switch's port 0 to send traps
// LID-routed to the SM, as a switch's SMA would.
func trapSender(t *testing.T, fab *sim.Fabric, sw uint64) transport.Conn {
	t.Helper()
	c, err := fab.Attach(sw, 0)
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func sendTrap(t *testing.T, c transport.Conn, smLID, from uint16, n *smp.Notice, tid uint64) {
	t.Helper()
	var s smp.SMP
	s.InitLID(smp.MethodTrap, smp.AttrNotice, 0)
	s.TID = tid
	must(t, s.SetAttr(n))
	buf := make([]byte, smp.MADLen)
	must(t, s.EncodeTo(buf))
	must(t, c.Send(transport.Packet{DLID: smLID, SLID: from, MAD: buf}))
}

// trapRig is an SM running its sweep loop (Run) on the embedded fat tree
// with the updn test engine, as the trap tests need it: every sweep's
// report arrives on reps, the log in sink.
type trapRig struct {
	f    *netfile.File
	fab  *sim.Fabric
	tr   transport.Transport // the SM's
	s    *sm.SM
	sink *logSink
	reps chan *sm.Report
	stop func() // ends Run; idempotent, and a test cleanup
}

// startTrapRig starts Run with opts (Parallel 8 and an hour's sweep
// interval when unset); logs are JSON when json is set.
func startTrapRig(t *testing.T, opts sm.Options, json bool, reports int) *trapRig {
	t.Helper()
	if opts.Parallel == 0 {
		opts.Parallel = 8
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = time.Hour
	}
	r := &trapRig{f: fatTree(t), sink: &logSink{}, reps: make(chan *sm.Report, reports)}
	r.fab, r.tr = attach(t, r.f)
	log := hclog.New(&hclog.LoggerOptions{Output: r.sink, Level: hclog.Info, JSONFormat: json})
	r.s = sm.New(r.tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), opts, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The rig starts from a programmed fabric: a first sweep that fails
	// (its MADs starved on a loaded machine) is swept again, and only
	// sweeps after the first good one count as test failures.
	trigger := make(chan struct{}, 1)
	var up atomic.Bool
	ready := make(chan struct{})
	go func() {
		done <- r.s.Run(ctx, trigger, func(rep *sm.Report, err error) {
			switch {
			case err == nil && !up.Load():
				// The rig's own first good sweep: not one the test
				// caused (it may end before startTrapRig looks).
				up.Store(true)
				close(ready)
				return
			case err == nil:
			case ctx.Err() != nil: // a sweep cut short by stop is no failure
			case !up.Load():
				t.Logf("first sweep failed, sweeping again: %v", err)
				select {
				case trigger <- struct{}{}:
				default: // a sweep is asked for already
				}
				return
			default:
				t.Errorf("sweep: %v", err)
			}
			r.reps <- rep
		})
	}()
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(r.stop)
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("no good first sweep within 5 s")
	}
	return r
}

// lidOf is the base LID the plan in force gives a switch.
func (r *trapRig) lidOf(guid uint64) uint16 {
	a := r.s.Applied()
	return a.Result.LIDs.Ports[a.Topo.EndpointIndex(topology.PortRef{Node: a.Topo.NodeByGUID(guid), Port: 0})].Base
}

// smLID is the SM port's LID in the plan in force.
func (r *trapRig) smLID() uint16 {
	a := r.s.Applied()
	return a.Result.LIDs.Ports[a.Topo.EndpointIndex(a.Topo.SM)].Base
}

// logSink collects log lines.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}
func (l *logSink) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// waitFor reports whether the log holds want within d (a loaded machine
// may run the SM's trap handling later than the test's quiet period).
func (l *logSink) waitFor(want string, d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(l.String(), want) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// TestTrapQuiet: a cable's traps are answered once they go quiet, not at
// the end of the coalescing window (here far longer than the test waits).
func TestTrapQuiet(t *testing.T) {
	t.Parallel()
	r := startTrapRig(t, sm.Options{TrapCoalesce: time.Minute, TrapQuiet: 20 * time.Millisecond}, false, 4)
	l := switchLinks(r.f)[0]
	must(t, r.fab.LinkDown(l.A.GUID, uint8(l.PA)))
	select {
	case rep := <-r.reps:
		if !rep.Incremental || rep.Traps < 1 || !rep.Rerouted {
			t.Fatalf("link down: %+v", rep)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no sweep 20 s after the traps: the loop waited for the coalescing window")
	}
}

func TestRunTraps(t *testing.T) {
	t.Parallel()
	// The quiet gap is the whole window: the burst below must come as one
	// batch on a loaded machine too.
	r0 := startTrapRig(t, sm.Options{TrapCoalesce: 30 * time.Millisecond, TrapQuiet: 30 * time.Millisecond, TrapMinInterval: 300 * time.Millisecond}, true, 16)
	f, fab, tr, s, sink, reps := r0.f, r0.fab, r0.tr, r0.s, r0.sink, r0.reps
	next := func(what string) *sm.Report {
		t.Helper()
		select {
		case r := <-reps:
			return r
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no sweep", what)
			return nil
		}
	}
	quiet := func(what string, d time.Duration) {
		t.Helper()
		select {
		case r := <-reps:
			t.Fatalf("%s: unexpected sweep %+v", what, r)
		case <-time.After(d):
		}
	}
	smLID, lidOf := r0.smLID(), r0.lidOf

	// A link between two switches goes down: both switches trap, but a
	// trap whose LID route to the SM crossed that link is lost (as in
	// ibsim); one sweep answers what arrives, re-reading only what changed.
	others0 := fab.Stats().Others
	l := switchLinks(f)[0]
	must(t, fab.LinkDown(l.A.GUID, uint8(l.PA)))
	r := next("link down")
	if !r.Incremental || r.Traps < 1 || !r.Rerouted || r.Fallback != "" || r.Links != 15 || r.Timeouts != 0 {
		t.Fatalf("link down: %+v", r)
	}
	checkProgrammed(t, fab, s)
	// One TrapRepress per trap (and nothing else that is not Get/Set)
	// reached the fabric.
	if d := fab.Stats().Others - others0; d != uint64(r.Traps) {
		t.Fatalf("%d non-Get/Set SMPs sent for %d traps", d, r.Traps)
	}
	out := sink.String()
	for _, want := range []string{`"trap":128`, `"guid":"0x` + strings.TrimPrefix(hex16(l.A.GUID), "0x"), `"lid":`} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %s:\n%s", want, out)
		}
	}

	// Informational trap 144 is repressed and logged; no sweep.
	sender := trapSender(t, fab, l.B.GUID)
	others0 = fab.Stats().Others
	sendTrap(t, sender, smLID, lidOf(l.B.GUID), smp.NewTrap144(smp.ProducerSwitch, smp.Trap144{LID: lidOf(l.B.GUID), CapabilityMask: smp.CapIsSM}), 7)
	quiet("trap 144", 200*time.Millisecond)
	if !sink.waitFor(`"trap":144`, 5*time.Second) {
		t.Fatalf("trap 144 not logged:\n%s", sink.String())
	}

	// A malformed trap (not a Notice) is repressed, warned about, ignored.
	var bad smp.SMP
	bad.InitLID(smp.MethodTrap, smp.AttrSMInfo, 0) // the SMA leaves SMInfo to the SM
	buf := make([]byte, smp.MADLen)
	must(t, bad.EncodeTo(buf))
	must(t, sender.Send(transport.Packet{DLID: smLID, SLID: lidOf(l.B.GUID), MAD: buf}))
	quiet("malformed trap", 200*time.Millisecond)
	if !sink.waitFor("other than Notice", 5*time.Second) {
		t.Fatalf("malformed trap not warned about:\n%s", sink.String())
	}

	// A burst of trap 128 with nothing changed: one sweep, no re-route.
	quiet("before the burst", 100*time.Millisecond)
	for i := 0; i < 10; i++ {
		sendTrap(t, sender, smLID, lidOf(l.B.GUID), smp.NewTrap128(lidOf(l.B.GUID)), uint64(100+i))
	}
	r = next("burst")
	if r.Traps != 10 || r.Rerouted || !r.Incremental {
		t.Fatalf("burst: %+v", r)
	}
	quiet("after the burst", 150*time.Millisecond)
	// 12 traps sent through the fabric (144, malformed, 10 × 128) and 12
	// TrapRepress.
	if d := fab.Stats().Others - others0; d != 24 {
		t.Fatalf("%d TrapRepress for 12 traps", d)
	}

	// Trap 128 from a LID the plan does not hold: every switch is polled
	// (no full re-discovery) and the link that came back is found.
	must(t, fab.LinkUp(l.A.GUID, uint8(l.PA)))
	r = next("link up")
	if !r.Rerouted || r.Links != 16 {
		t.Fatalf("link up: %+v", r)
	}
	sendTrap(t, sender, smLID, lidOf(l.B.GUID), smp.NewTrap128(0x7777), 200)
	r = next("unknown LID")
	if !r.Incremental || r.Rerouted || r.Fallback != "" {
		t.Fatalf("unknown LID: %+v", r)
	}
	if !strings.Contains(sink.String(), "polling every switch") {
		t.Fatalf("no log of why every switch was polled:\n%s", sink.String())
	}
	checkProgrammed(t, fab, s)
	sameAsFull(t, "after traps", s, tr)
}

func hex16(v uint64) string {
	const digits = "0123456789abcdef"
	b := []byte("0x0000000000000000")
	for i := 17; i >= 2; i-- {
		b[i] = digits[v&0xF]
		v >>= 4
	}
	return string(b)
}

// TestIncrementalSweepsInARow takes random cables of a 3-level fat tree
// down and up with one incremental sweep after each step and no heavy
// sweep between, so that each sweep's bookkeeping starts from the clean
// model the one before left (it then looks at the changed nodes only):
// after each, the fabric holds the plan, the model is clean and equals a
// full discovery.
func TestIncrementalSweepsInARow(t *testing.T) {
	t.Parallel()
	f, err := topogen.FatTree{Radix: 4, Levels: 3}.Generate()
	must(t, err)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8, LIDFile: filepath.Join(t.TempDir(), "guid2lid")}, nil)
	s.CrossCheck()
	ctx := context.Background()
	_, err = s.HeavySweep(ctx)
	must(t, err)
	must(t, s.CleanModelHolds())
	links := f.Links()
	sm0, _ := fab.DefaultSMPort()
	down := map[int]bool{}
	rng := rand.New(rand.NewPCG(14, 16))
	for step := 0; step < 30; step++ {
		i := rng.IntN(len(links))
		if step%2 == 1 && len(down) > 0 {
			// Bring back a cable that is down: its ports come up in
			// Init, for the sweep to activate.
			for _, j := range slices.Sorted(maps.Keys(down)) {
				if down[j] {
					i = j
					break
				}
			}
		}
		l := links[i]
		if l.A.GUID == sm0 || l.B.GUID == sm0 {
			continue
		}
		if down[i] {
			must(t, fab.LinkUp(l.A.GUID, uint8(l.PA)))
		} else {
			must(t, fab.LinkDown(l.A.GUID, uint8(l.PA)))
		}
		down[i] = !down[i]
		name := fmt.Sprintf("step %d: %#x/%d down=%v", step, l.A.GUID, l.PA, down[i])
		ch, full, err := s.LightSweepChanges(ctx)
		must(t, err)
		if full != "" || ch.Empty() {
			t.Fatalf("%s: light sweep found %+v (full: %q)", name, ch, full)
		}
		rep, err := s.IncrementalSweep(ctx, ch)
		must(t, err)
		if !rep.Incremental || rep.Fallback != "" {
			t.Fatalf("%s: report %+v", name, rep)
		}
		checkProgrammed(t, fab, s)
		if err := s.CleanModelHolds(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		model, _ := fullModel(t, tr)
		if d := discoverytest.Diff(s.Fabric(), model); len(d) != 0 {
			t.Fatalf("%s: SM model differs from a full discovery:\n%s", name, strings.Join(d, "\n"))
		}
		// A late trap from a switch that changed nothing since: the
		// sweep keeps the plan, and its model is as clean.
		rep, err = s.IncrementalSweep(ctx, discovery.Changes{Switches: ch.Switches[:1]})
		must(t, err)
		if rep.Rerouted {
			t.Fatalf("%s: a sweep that found nothing re-routed", name)
		}
		if err := s.CleanModelHolds(); err != nil {
			t.Fatalf("%s, nothing changed since: %v", name, err)
		}
	}
}

// A CA port that names another SM LID (another SM programmed it since) is
// found by the light sweep's CA check; the incremental sweep that re-read
// it writes nothing and elects first.
func TestIncrementalSweepStopsAtForeignSMLID(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8, CAChecksPerSweep: 100}, nil)
	s.CrossCheck()
	ctx := context.Background()
	_, err := s.HeavySweep(ctx)
	must(t, err)
	must(t, s.CleanModelHolds())
	l := lastCA(f)
	must(t, fab.SetMasterSMLID(l.A.GUID, uint8(l.PA), 0x7777))
	ch, _, err := s.LightSweepChanges(ctx)
	must(t, err)
	if len(ch.Ports) != 1 || ch.Ports[0].GUID != l.A.GUID {
		t.Fatalf("light sweep found %+v; want the CA port", ch)
	}
	sets0 := tr.Stats().Sets
	_, err = s.IncrementalSweep(ctx, ch)
	if err == nil || !strings.Contains(err.Error(), "another SM set it") {
		t.Fatalf("incremental sweep: %v; want it to stop for the other SM's LID", err)
	}
	if n := tr.Stats().Sets - sets0; n != 0 {
		t.Fatalf("%d Sets written past another SM's LID", n)
	}
}

// A CA that comes back holding a LID guid2lid no longer lists (its cable
// was down at the last save) keeps it when nothing else claims it: the
// LIDs asked to be kept are not guid2lid's alone then.
func TestIncrementalSweepKeepsFabricLID(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8, LIDFile: filepath.Join(t.TempDir(), "guid2lid")}, nil)
	s.CrossCheck()
	ctx := context.Background()
	_, err := s.HeavySweep(ctx)
	must(t, err)
	l := lastCA(f)
	sweep := func(name string) {
		t.Helper()
		ch, _, err := s.LightSweepChanges(ctx)
		must(t, err)
		if _, err := s.IncrementalSweep(ctx, ch); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	must(t, fab.LinkDown(l.A.GUID, uint8(l.PA)))
	sweep("CA cable down")
	const lid = 0x300
	must(t, fab.SetPortLID(l.A.GUID, uint8(l.PA), lid, 0))
	must(t, fab.LinkUp(l.A.GUID, uint8(l.PA)))
	sweep("CA cable up")
	checkProgrammed(t, fab, s)
	a := s.Applied()
	for i, ep := range a.Topo.Endpoints() {
		if a.Topo.PortGUID(ep) == l.A.Ports[l.PA].GUID {
			if got := a.Result.Realized.LIDs.Ports[i].Base; got != lid {
				t.Fatalf("CA back with LID %#x got %#x; want its own kept", lid, got)
			}
			return
		}
	}
	t.Fatal("the CA is not an endpoint of the plan in force")
}
