package mkey_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/mkey"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
	"github.com/zclconf/go-cty/cty"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ---- in-process plugins: Up*/Down* from switch 0, sequential LIDs, one VL ----

type base struct{ name string }

func (b base) Info() sdk.Info            { return sdk.Info{Name: b.name, Version: "test"} }
func (b base) Schema() schema.Block      { return schema.Block{} }
func (b base) Configure(cty.Value) error { return nil }

type updn struct{ base }

func (updn) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	return analysistest.UpDown(req.Topo, 0), nil
}

type seqLIDs struct{ base }

func (seqLIDs) AssignLIDs(_ context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	eps := req.Topo.Endpoints()
	l := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps))}
	used := map[uint16]bool{}
	for i, ep := range eps {
		if b, ok := req.Previous[req.Topo.Port(ep).GUID]; ok {
			l.Ports[i].Base, used[b] = b, true
		}
	}
	next := uint16(1)
	for i := range eps {
		if l.Ports[i].Base != 0 {
			continue
		}
		for used[next] {
			next++
		}
		l.Ports[i].Base, used[next] = next, true
	}
	return l, nil
}

type oneVL struct{ base }

func (oneVL) AssignVLs(context.Context, sdk.VLRequest) (*plan.VLPlan, error) {
	return &plan.VLPlan{VLs: 1}, nil
}

func runner() *pipeline.Runner {
	return &pipeline.Runner{
		Engines: []pipeline.Engine{{Identity: pipeline.Identity{Name: "updn"}, Impl: updn{base{"updn"}}}},
		LID:     pipeline.LIDStage{Identity: pipeline.Identity{Name: "seq"}, Impl: seqLIDs{base{"seq"}}},
		VL:      pipeline.VLStage{Identity: pipeline.Identity{Name: "one"}, Impl: oneVL{base{"one"}}},
		Cache:   pipeline.NewCache(""),
		Verify: func(t *topology.Topology, r *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
			_, err := check.Check(check.Plan{Topo: t, Routes: r, LIDs: l, VLs: v, Realized: rz}, check.Options{})
			return err
		},
	}
}

// ---- the fabric and the clock its leases run on ----

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type bench struct {
	t    *testing.T
	f    *netfile.File
	fab  *sim.Fabric
	clk  *clock
	smG  uint64 // node and port the SM attaches to
	smP  uint8
	self uint64
}

func newBench(t *testing.T, levels int) *bench {
	f, err := topogen.FatTree{Radix: 4, Levels: levels}.Generate()
	must(t, err)
	clk := &clock{t: time.Unix(1e6, 0)}
	fab, err := sim.New(f, sim.Options{Now: clk.now})
	must(t, err)
	g, p := fab.DefaultSMPort()
	self, err := fab.PortGUID(g, p)
	must(t, err)
	return &bench{t: t, f: f, fab: fab, clk: clk, smG: g, smP: p, self: self}
}

// ibsm is one run of the SM on the bench.
type ibsm struct {
	s    *sm.SM
	ring *mkey.Ring
	tr   transport.Transport
}

func (b *bench) start(dir string, p mkey.Policy) *ibsm {
	b.t.Helper()
	conn, err := b.fab.Attach(b.smG, b.smP)
	must(b.t, err)
	ring, err := mkey.Open(mkey.Options{Policy: p, Dir: dir, Self: b.self, FlushDelay: -1})
	must(b.t, err)
	tr := mad.WithKeys(transport.New(conn, transport.Options{Timeout: 20 * time.Millisecond, Retries: 1, Window: 32}), ring)
	s := sm.New(tr, runner(), sm.Options{Parallel: 8, AuditSMPs: 100000, LIDFile: filepath.Join(dir, "guid2lid")}, nil)
	x := &ibsm{s: s, ring: ring, tr: tr}
	b.t.Cleanup(x.stop)
	return x
}

func (x *ibsm) stop() {
	if x.tr != nil {
		x.tr.Close()
		_ = x.ring.Close()
		x.tr = nil
	}
}

type portRef struct {
	Node *netfile.Node
	Port int
}

// endpoints lists the CA ports and switch port 0s of the fabric.
func (b *bench) endpoints() []portRef {
	var out []portRef
	for _, n := range b.f.Nodes {
		if n.Type == topology.Switch {
			out = append(out, portRef{Node: n, Port: 0})
			continue
		}
		for p := 1; p < len(n.Ports); p++ {
			if n.Ports[p].Peer != nil {
				out = append(out, portRef{Node: n, Port: p})
			}
		}
	}
	return out
}

// checkKeys asserts every endpoint holds the key p gives it, p's
// protection and lease, and returns how many ports it checked.
func (b *bench) checkKeys(p mkey.Policy) int {
	b.t.Helper()
	eps := b.endpoints()
	for _, ep := range eps {
		s, err := b.fab.PortInfo(ep.Node.GUID, uint8(ep.Port))
		must(b.t, err)
		g, err := b.fab.PortGUID(ep.Node.GUID, uint8(ep.Port))
		must(b.t, err)
		if s.MKey != p.KeyFor(g) || s.MKeyProtect != p.Protect || s.MKeyLease != p.LeaseSeconds() {
			b.t.Fatalf("%s[%d] (port GUID %#x): M_Key %#x protect %d lease %d; want %#x, %d, %d", ep.Node.Name, ep.Port, g,
				s.MKey, s.MKeyProtect, s.MKeyLease, p.KeyFor(g), p.Protect, p.LeaseSeconds())
		}
	}
	return len(eps)
}

// checkProgrammed asserts the fabric holds the plan in force.
func (b *bench) checkProgrammed(s *sm.SM) {
	b.t.Helper()
	a := s.Applied()
	if a == nil {
		b.t.Fatal("no plan applied")
	}
	for i, node := range a.Topo.Switches() {
		got, err := b.fab.LFT(a.Topo.Nodes[node].GUID)
		must(b.t, err)
		if !bytes.Equal(got, a.Result.Realized.LFT[i]) {
			b.t.Fatalf("switch %#x does not hold the plan's LFT", a.Topo.Nodes[node].GUID)
		}
	}
	for i, ep := range a.Topo.Endpoints() {
		snap, err := b.fab.PortInfo(a.Topo.Nodes[ep.Node].GUID, ep.Port)
		must(b.t, err)
		if snap.LID != a.Result.Realized.LIDs.Ports[i].Base || snap.State != smp.PortStateActive && ep.Port != 0 {
			b.t.Fatalf("endpoint %#x/%d: LID %d state %d, plan LID %d", a.Topo.Nodes[ep.Node].GUID, ep.Port, snap.LID, snap.State, a.Result.Realized.LIDs.Ports[i].Base)
		}
	}
}

// rogue is another agent on a CA: a host that would reprogram the fabric.
type rogue struct {
	c    *mad.Client
	node *netfile.Node
}

func (b *bench) rogue() *rogue {
	b.t.Helper()
	for _, n := range b.f.Nodes {
		if n.Type != topology.Switch && n.GUID != b.smG {
			conn, err := b.fab.Attach(n.GUID, 1)
			must(b.t, err)
			tr := transport.New(conn, transport.Options{Timeout: 20 * time.Millisecond, Retries: 1, Window: 4})
			b.t.Cleanup(func() { tr.Close() })
			return &rogue{c: &mad.Client{T: tr}, node: n}
		}
	}
	b.t.Fatal("no CA for the rogue")
	return nil
}

// sets sends the PortInfo Sets and Gets a tool such as ibportstate would:
// to its own port and to its switch. It returns how many were answered.
func (r *rogue) tryAll(t *testing.T) (answered int) {
	ctx := context.Background()
	for _, path := range []mad.Path{nil, {1}} {
		var pi smp.PortInfo
		if err := r.c.Get(ctx, path, smp.AttrPortInfo, 0, &pi); err == nil {
			answered++
		}
		evil := pi
		evil.LID, evil.MasterSMLID, evil.PortState, evil.PortPhysicalState = 0x99, 0x99, 0, 0
		evil.LinkSpeedEnabled, evil.LinkWidthEnabled = 0, 0
		if err := r.c.Set(ctx, path, smp.AttrPortInfo, 0, &evil, nil); err == nil {
			answered++
		} else if !errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("rogue Set via %v: %v; want a timeout (dropped by the port)", path, err)
		}
	}
	return answered
}

// TestManagedUnderMKeys: with m_key_secret and m_key_protect_bits 2 ibsm
// keys every port with its own derived key; another agent without the key
// can neither change nor read a port; ibsm goes on managing: unchanged
// sweeps send nothing, a link fault is re-routed, the audit repairs an LFT
// block changed by a tool that has the key and re-protects a port whose
// lease expired after a violation.
func TestManagedUnderMKeys(t *testing.T) {
	b := newBench(t, 2)
	ctx := context.Background()
	pol := mkey.Policy{Secret: "correct horse battery staple", Protect: 2, Lease: 10 * time.Second}
	dir := t.TempDir()
	x := b.start(dir, pol)

	rep, err := x.s.HeavySweep(ctx)
	must(t, err)
	n := b.checkKeys(pol)
	if rep.Program.Keyed != int64(n) {
		t.Fatalf("first sweep keyed %d ports, want %d", rep.Program.Keyed, n)
	}
	b.checkProgrammed(x.s)
	if st := x.ring.Status(); st.Ports != n || st.Holding != n || len(st.Hidden) != 0 {
		t.Fatalf("ring status %+v, want %d ports holding", st, n)
	}

	// Unchanged fabric: the keys are held, nothing is sent.
	rep, err = x.s.HeavySweep(ctx)
	must(t, err)
	if rep.Rerouted || rep.Distribution.Sets != 0 || rep.Discovery.Sets != 0 {
		t.Fatalf("second sweep: %+v", rep)
	}

	// Another host without the key: every Set and (level 2) every Get is
	// dropped; the ports count the violations; nothing changes.
	r := b.rogue()
	refused0 := b.fab.Stats().MKeyRefused
	if a := r.tryAll(t); a != 0 {
		t.Fatalf("the rogue got %d answers at protection level 2", a)
	}
	// Each of the rogue's 4 SMPs is sent twice (one retry).
	if d := b.fab.Stats().MKeyRefused - refused0; d != 8 {
		t.Fatalf("fabric refused %d SMPs, want 8", d)
	}
	own, _ := b.fab.PortInfo(r.node.GUID, 1)
	if own.LID == 0x99 || own.MasterSMLID == 0x99 || own.MKeyViolations != 4 || !own.LeaseRunning {
		t.Fatalf("rogue's own port after its Sets: %+v", own)
	}
	b.checkProgrammed(x.s)

	// ibsm still manages: its light sweep reads the ports (stopping the
	// lease timers the rogue started) and finds nothing to do.
	if need, err := x.s.LightSweep(ctx); err != nil || need {
		t.Fatalf("light sweep after the rogue: %v %v", need, err)
	}
	if own, _ = b.fab.PortInfo(r.node.GUID, 1); own.LeaseRunning {
		t.Fatal("ibsm's keyed read did not stop the lease timer the rogue started")
	}

	// A link fault is re-routed.
	var sw1, sw2 *netfile.Node
	var port int
	for _, l := range b.f.Links() {
		if l.A.Type == topology.Switch && l.B.Type == topology.Switch {
			sw1, sw2, port = l.A, l.B, l.PA
			break
		}
	}
	must(t, b.fab.LinkDown(sw1.GUID, uint8(port)))
	ch, full, err := x.s.LightSweepChanges(ctx)
	must(t, err)
	if full != "" || ch.Empty() {
		t.Fatalf("light sweep after a link fault: %+v %q", ch, full)
	}
	rep, err = x.s.IncrementalSweep(ctx, ch)
	must(t, err)
	if !rep.Rerouted || rep.Program.LFTBlocksSent == 0 || rep.Program.Keyed != 0 {
		t.Fatalf("re-route after the link fault: %+v", rep.Program)
	}
	b.checkProgrammed(x.s)
	_ = sw2

	// The audit repairs an LFT block a tool with the switch's key
	// overwrote, with a Set that carries the key.
	a := x.s.Applied()
	swG := a.Topo.Nodes[a.Topo.Switches()[0]].GUID
	conn, err := b.fab.Attach(swG, 0)
	must(t, err)
	tool := transport.New(conn, transport.Options{Timeout: 20 * time.Millisecond, Window: 4})
	defer tool.Close()
	tc := &mad.Client{T: tool, MKey: pol.KeyFor(swG)}
	var blk smp.LFTBlock
	must(t, tc.Get(ctx, nil, smp.AttrLinearForwardingTable, 0, &blk))
	blk[1] ^= 1
	must(t, tc.Set(ctx, nil, smp.AttrLinearForwardingTable, 0, &blk, nil))
	aud0 := x.s.AuditStats()
	if _, err := x.s.LightSweep(ctx); err != nil {
		t.Fatal(err)
	}
	if d := x.s.AuditStats().Repaired - aud0.Repaired; d != 1 {
		t.Fatalf("audit repaired %d items, want 1 (the LFT block)", d)
	}
	b.checkProgrammed(x.s)

	// A lease that runs out: the rogue's violation starts it, nobody with
	// the key touches the port for the lease period, the port's protection
	// drops to 0 (its key stays) — and the audit puts it back.
	r.tryAll(t)
	b.clk.add(pol.Lease + time.Second)
	if own, _ = b.fab.PortInfo(r.node.GUID, 1); own.MKeyProtect != 0 || own.MKey != pol.KeyFor(own0GUID(t, b, r.node)) {
		t.Fatalf("after the lease: %+v; want protection 0 and the key kept", own)
	}
	aud0 = x.s.AuditStats()
	if _, err := x.s.LightSweep(ctx); err != nil {
		t.Fatal(err)
	}
	if d := x.s.AuditStats().Repaired - aud0.Repaired; d < 1 {
		t.Fatalf("audit repaired %d items after the lease expired, want the rogue's port and switch", d)
	}
	b.checkKeys(pol)
	if a := r.tryAll(t); a != 0 {
		t.Fatalf("the rogue got %d answers after ibsm re-protected the ports", a)
	}
}

func own0GUID(t *testing.T, b *bench, n *netfile.Node) uint64 {
	g, err := b.fab.PortGUID(n.GUID, 1)
	must(t, err)
	return g
}

// TestRestartSameSecret: ibsm restarted with the same secret manages every
// port again: at once with its state directory (guid2mkey and neighbors:
// not a Set sent), and with a fresh one too — at protection level 2 it
// cannot tell which port sits behind a route it has never seen, so it
// waits for their leases (one hop from the SM per lease) without routing
// a partial fabric, then manages every port.
func TestRestartSameSecret(t *testing.T) {
	b := newBench(t, 2)
	ctx := context.Background()
	pol := mkey.Policy{Secret: "correct horse battery staple", Protect: 2, Lease: 30 * time.Second}
	dir := t.TempDir()
	x := b.start(dir, pol)
	_, err := x.s.HeavySweep(ctx)
	must(t, err)
	b.checkKeys(pol)
	lft0 := b.lfts()
	x.stop()

	t.Run("same state dir", func(t *testing.T) {
		b.t = t
		y := b.start(dir, pol)
		rep, err := y.s.HeavySweep(ctx)
		must(t, err)
		// Only the ClientReregister every start-up asks of the CAs.
		if p := rep.Program; p.Keyed != 0 || p.LFTBlocksSent != 0 || p.PortInfoSets != p.Reregistered || p.Sets() != p.PortInfoSets {
			t.Fatalf("restart sent Sets: %+v", rep.Program)
		}
		b.checkProgrammed(y.s)
		b.checkKeys(pol)
		y.stop()
	})

	t.Run("fresh state dir", func(t *testing.T) {
		b.t = t
		y := b.start(t.TempDir(), pol)
		var sweeps, locked int
		for ; sweeps < 10; sweeps++ {
			_, err := y.s.HeavySweep(ctx)
			var le *discovery.LockedError
			if err == nil {
				break
			}
			if !errors.As(err, &le) {
				t.Fatalf("sweep %d: %v", sweeps, err)
			}
			locked++
			// The tables in place stay while ports are locked.
			if !lftsEqual(lft0, b.lfts()) {
				t.Fatalf("sweep %d changed the LFTs while ports were locked", sweeps)
			}
			b.clk.add(pol.Lease + time.Second)
		}
		if sweeps == 10 {
			t.Fatal("still locked after 10 lease periods")
		}
		t.Logf("fresh state dir at protection level 2: %d sweeps refused (locked ports), then every port managed", locked)
		if locked == 0 {
			t.Fatal("a fresh ibsm reached protected ports without their keys")
		}
		b.checkProgrammed(y.s)
		b.checkKeys(pol)
		if st := y.ring.Status(); st.Holding != st.Ports || st.Ports != len(b.endpoints()) {
			t.Fatalf("ring after recovery: %+v", st)
		}
		y.stop()
	})

}

func (b *bench) lfts() map[uint64][]uint8 {
	m := map[uint64][]uint8{}
	for _, n := range b.f.Nodes {
		if n.Type == topology.Switch {
			l, err := b.fab.LFT(n.GUID)
			must(b.t, err)
			m[n.GUID] = l
		}
	}
	return m
}

func lftsEqual(a, b map[uint64][]uint8) bool {
	if len(a) != len(b) {
		return false
	}
	for g, l := range a {
		if !bytes.Equal(l, b[g]) {
			return false
		}
	}
	return true
}

// TestRestartSingleKeyFreshState: with one configured key (m_key) a port's
// key does not depend on which port it is, so even a fresh state directory
// reaches every level-2 port at once.
func TestRestartSingleKeyFreshState(t *testing.T) {
	b := newBench(t, 2)
	ctx := context.Background()
	pol := mkey.Policy{Key: 0x5eed, Protect: 2, Lease: 30 * time.Second}
	x := b.start(t.TempDir(), pol)
	_, err := x.s.HeavySweep(ctx)
	must(t, err)
	b.checkKeys(pol)
	x.stop()
	y := b.start(t.TempDir(), pol)
	rep, err := y.s.HeavySweep(ctx)
	must(t, err)
	if rep.Program.Keyed != 0 || rep.Program.LFTBlocksSent != 0 || len(rep.Warnings) != 0 {
		t.Fatalf("restart: %+v, warnings %q", rep.Program, rep.Warnings)
	}
	b.checkKeys(pol)
	b.checkProgrammed(y.s)
}

// TestPolicyChange: a new policy (SIGHUP: another secret, level, lease)
// re-keys every port through the audit, using the keys the ports hold now;
// a policy without keys takes them off.
func TestPolicyChange(t *testing.T) {
	b := newBench(t, 2)
	ctx := context.Background()
	old := mkey.Policy{Secret: "the first secret, 0123456789", Protect: 2, Lease: 30 * time.Second}
	x := b.start(t.TempDir(), old)
	_, err := x.s.HeavySweep(ctx)
	must(t, err)
	b.checkKeys(old)
	for _, pol := range []mkey.Policy{
		{Secret: "the second secret, 987654321", Protect: 3, Lease: time.Minute},
		{Key: 0xabc, Protect: 1},
		{},
	} {
		x.ring.SetPolicy(pol)
		// The audit re-keys in the next light sweep; a Set lost to the
		// 20 ms timeout on a loaded machine is re-sent by the one after.
		for i := 0; ; i++ {
			if need, err := x.s.LightSweep(ctx); err != nil || need {
				t.Fatalf("light sweep after the policy change: %v %v", need, err)
			}
			st := x.ring.Status()
			if st.Holding == st.Ports {
				break
			}
			if i == 2 {
				t.Fatalf("ring three light sweeps after the change to %+v: %+v", pol, st)
			}
		}
		b.checkKeys(pol)
	}
}
