package sm_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/lidstore"
	"github.com/ibsm/ibsm/host/sa"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// These tests run several SMs, each with its SA agent (which hands SMInfo
// to the election), on one embedded fabric: the SMInfo protocol between
// real SM instances, in process.

const (
	pollEvery  = 40 * time.Millisecond
	pollTries  = 3
	sweepEvery = 80 * time.Millisecond
)

// safeBuf is a log sink shared by an SM's goroutines.
type safeBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *safeBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *safeBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// peer is one SM running on the shared fabric.
type peer struct {
	name   string
	s      *sm.SM
	tr     transport.Transport
	guid   uint64 // port GUID
	log    *safeBuf
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	reports []*sm.Report

	agent sm.Agent
	// deaf drops the SMInfo requests other SMs send (they time out), so
	// that a starting SM does not see this one: two masters, as when two
	// subnets are joined.
	deaf atomic.Bool
}

// Handle is the peer's agent, deaf to SMInfo when asked to be.
func (p *peer) Handle(ctx context.Context, pk transport.Packet) bool {
	if p.deaf.Load() && (smp.PeekClass(pk.MAD) == smp.ClassSMPDR || smp.PeekClass(pk.MAD) == smp.ClassSMPLID) && smp.PeekAttrID(pk.MAD) == smp.AttrSMInfo {
		return true
	}
	return p.agent.Handle(ctx, pk)
}

// startPeer attaches an SM to port 1 of CA node ca and runs it. stop (or
// the test's end) ends its Run but leaves the attachment in place, as a
// kill -9 leaves an ibsim client: its port keeps IsSM and answers nothing.
func startPeer(t *testing.T, fab *sim.Fabric, name string, ca *netfile.Node, el sm.ElectionOptions, stateDir string) *peer {
	t.Helper()
	conn, err := fab.Attach(ca.GUID, 1)
	must(t, err)
	tr := transport.New(conn, transport.Options{Timeout: 20 * time.Millisecond, Retries: 1, Window: 16})
	t.Cleanup(func() { tr.Close() })
	if el.PollInterval == 0 {
		el.PollInterval = pollEvery
	}
	if el.PollRetries == 0 {
		el.PollRetries = pollTries
	}
	buf := &safeBuf{}
	log := hclog.New(&hclog.LoggerOptions{Name: name, Output: buf, Level: hclog.Debug})
	opts := sm.Options{Parallel: 8, SweepInterval: sweepEvery, Election: el}
	if stateDir != "" {
		opts.LIDFile = filepath.Join(stateDir, "guid2lid")
	}
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), opts, log)
	p := &peer{name: name, s: s, tr: tr, guid: ca.Ports[1].GUID, log: buf, done: make(chan struct{})}
	p.agent = sa.New(s, tr, sa.Options{Priority: el.Priority, SMKey: el.SMKey}, log.Named("sa"))
	s.Agent = p
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		_ = s.Run(ctx, nil, func(r *sm.Report, err error) {
			if err == nil && r != nil {
				p.mu.Lock()
				p.reports = append(p.reports, r)
				p.mu.Unlock()
			}
		})
	}()
	t.Cleanup(p.stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, tail(p.log.String(), 6000))
		}
	})
	return p
}

func (p *peer) stop() {
	p.cancel()
	<-p.done
}

// master reports whether p runs and is master (a stopped SM keeps its last
// state in memory but is gone from the subnet).
func (p *peer) master() bool {
	select {
	case <-p.done:
		return false
	default:
		return p.s.State() == smp.SMStateMaster
	}
}

// lastProgrammed is the last report of a sweep that programmed.
func (p *peer) lastProgrammed() *sm.Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.reports) - 1; i >= 0; i-- {
		if r := p.reports[i]; r.Rerouted {
			return r
		}
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// watch samples the peers' states until stop and fails the test if two
// were master at once. States are read forward then backward: a peer
// counts as master only if both reads say so, so a handover between two
// reads is not mistaken for two masters (mastership is an interval: if X
// is master at both its reads, it is master at every read in between).
func watch(t *testing.T, peers ...*peer) (stop func() (samples int)) {
	t.Helper()
	peers = append([]*peer(nil), peers...)
	quit := make(chan struct{})
	var n int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		first := make([]bool, len(peers))
		for {
			select {
			case <-quit:
				return
			default:
			}
			for i, p := range peers {
				first[i] = p.master()
			}
			var masters []string
			for i := len(peers) - 1; i >= 0; i-- {
				if first[i] && peers[i].master() {
					masters = append(masters, peers[i].name)
				}
			}
			n++
			if len(masters) > 1 {
				t.Errorf("two masters at once: %v", masters)
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return func() int {
		close(quit)
		wg.Wait()
		return n
	}
}

// elections lets one election test run at a time. They run in parallel
// with the package's other tests (which mostly wait on MAD timeouts), but
// not with each other: several SMs polling every 40 ms with 20 ms MAD
// timeouts, times a few tests, starve each other on two cores until a
// standby misses its polls and takes over from a live master.
var elections sync.Mutex

func oneElection(t *testing.T) {
	elections.Lock()
	t.Cleanup(elections.Unlock)
}

// waitFor polls cond until it holds or within passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("not within %s: %s", within, what)
	return 0
}

func isState(p *peer, st uint8) func() bool {
	return func() bool { return p.s.State() == st }
}

// programmedBy waits until p is master and has programmed the fabric.
func programmedBy(t *testing.T, p *peer, within time.Duration) {
	t.Helper()
	waitFor(t, within, p.name+" master with a plan in force", func() bool {
		return p.s.State() == smp.SMStateMaster && p.s.Applied() != nil && p.lastProgrammed() != nil
	})
}

// fabricLIDs reads every endpoint's LID and SM LID from the fabric.
func fabricLIDs(t *testing.T, fab *sim.Fabric, f *netfile.File) (lids map[uint64]uint16, smLIDs map[uint16]int) {
	t.Helper()
	lids, smLIDs = map[uint64]uint16{}, map[uint16]int{}
	for _, n := range f.Nodes {
		ports := []uint8{0}
		if n.Type != topology.Switch {
			ports = ports[:0]
			for p := 1; p < len(n.Ports); p++ {
				if n.Ports[p].Peer != nil {
					ports = append(ports, uint8(p))
				}
			}
		}
		for _, p := range ports {
			ps, err := fab.PortInfo(n.GUID, p)
			must(t, err)
			key := n.GUID
			if n.Type != topology.Switch {
				key = n.Ports[p].GUID
			}
			lids[key] = ps.LID
			smLIDs[ps.MasterSMLID]++
		}
	}
	return lids, smLIDs
}

func cas(f *netfile.File) []*netfile.Node {
	var out []*netfile.Node
	for _, n := range f.Nodes {
		if n.Type != topology.Switch {
			out = append(out, n)
		}
	}
	return out
}

func lidOf(p *peer) uint16 {
	a := p.s.Applied()
	for i, ep := range a.Topo.Endpoints() {
		if a.Topo.PortGUID(ep) == p.guid {
			return a.Result.LIDs.Ports[i].Base
		}
	}
	return 0
}

// TestElectionStandbyAndFailover: the first SM is master, a second one
// with a lower priority stands by and writes nothing; when the master
// stops answering (killed: its port still says IsSM) the standby takes
// over within PollInterval × PollRetries plus a sweep, keeps every LID,
// sends no LFT block (it reads the tables back) and points every port at
// itself.
func TestElectionStandbyAndFailover(t *testing.T) {
	t.Parallel()
	oneElection(t)
	f := fatTree(t)
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	hosts := cas(f)
	a := startPeer(t, fab, "a", hosts[0], sm.ElectionOptions{Priority: 10}, t.TempDir())
	programmedBy(t, a, 5*time.Second)
	b := startPeer(t, fab, "b", hosts[5], sm.ElectionOptions{Priority: 5}, t.TempDir())
	stopW := watch(t, a, b)
	waitFor(t, 3*time.Second, "b standing by", isState(b, smp.SMStateStandby))
	if st := b.s.ElectionStats(); st.Master != a.guid {
		t.Fatalf("b follows %#x, want a %#x", st.Master, a.guid)
	}
	// A standby polls and writes nothing for a while.
	sets0 := b.tr.Stats().Sets
	time.Sleep(10 * pollEvery)
	if d := b.tr.Stats().Sets - sets0; d != 0 {
		t.Fatalf("standby b sent %d Sets", d)
	}
	if a.s.State() != smp.SMStateMaster || b.s.State() != smp.SMStateStandby {
		t.Fatalf("a %d b %d; want master, standby", a.s.State(), b.s.State())
	}
	lids0, sm0 := fabricLIDs(t, fab, f)
	if len(sm0) != 1 || sm0[lidOf(a)] == 0 {
		t.Fatalf("SM LIDs in the fabric %v; want all %d (a)", sm0, lidOf(a))
	}

	a.stop() // killed: no more answers, the port still advertises IsSM
	killed := time.Now()
	programmedBy(t, b, 3*time.Second)
	took := time.Since(killed)
	stopW()
	if limit := pollEvery*pollTries + 2*sweepEvery + 500*time.Millisecond; took > limit {
		t.Errorf("takeover took %s; want within %s", took, limit)
	}
	rep := b.lastProgrammed()
	if rep.Program.LFTBlocksSent != 0 || rep.Program.LFTBlocksRead == 0 {
		t.Errorf("takeover on an unchanged fabric sent %d LFT blocks (read back %d); want 0 sent", rep.Program.LFTBlocksSent, rep.Program.LFTBlocksRead)
	}
	if rep.Program.Reregistered == 0 {
		t.Errorf("takeover asked no client to re-register")
	}
	lids1, sm1 := fabricLIDs(t, fab, f)
	for g, l := range lids0 {
		if lids1[g] != l {
			t.Errorf("port %#x: LID %d before the takeover, %d after", g, l, lids1[g])
		}
	}
	if len(sm1) != 1 || sm1[lidOf(b)] == 0 {
		t.Errorf("SM LIDs after the takeover %v; want all %d (b)", sm1, lidOf(b))
	}
	if st := b.s.ElectionStats(); st.Takeovers != 1 {
		t.Errorf("b stats %+v; want one takeover", st)
	}
	t.Logf("takeover after %s: %+v", took.Round(time.Millisecond), rep.Program)
}

// TestElectionHandover: a better SM that joins a running master gets the
// subnet by HANDOVER when the master honors priorities, and stands by when
// it does not.
func TestElectionHandover(t *testing.T) {
	t.Parallel()
	oneElection(t)
	for _, honor := range []bool{true, false} {
		t.Run(fmt.Sprintf("honor=%v", honor), func(t *testing.T) {
			f := fatTree(t)
			fab, err := sim.New(f, sim.Options{})
			must(t, err)
			hosts := cas(f)
			a := startPeer(t, fab, "a", hosts[0], sm.ElectionOptions{Priority: 3, HonorPriority: honor}, t.TempDir())
			programmedBy(t, a, 5*time.Second)
			b := startPeer(t, fab, "b", hosts[6], sm.ElectionOptions{Priority: 12, HonorPriority: honor}, t.TempDir())
			stop := watch(t, a, b)
			if !honor {
				waitFor(t, 3*time.Second, "b standing by", isState(b, smp.SMStateStandby))
				time.Sleep(3 * pollTries * pollEvery) // a re-discovers and sees b: still no handover
				stop()
				if a.s.State() != smp.SMStateMaster || b.s.State() != smp.SMStateStandby {
					t.Fatalf("without honor_priority: a %d b %d; want master, standby", a.s.State(), b.s.State())
				}
				// b asked a to hand over, as OpenSM's standby would
				// (trap 144), a bounded number of times.
				if n := strings.Count(b.log.String(), "asked it to hand over"); n == 0 || n > 3 {
					t.Errorf("b sent %d trap 144s to a; want 1..3", n)
				}
				if !strings.Contains(a.log.String(), "trap=144") {
					t.Errorf("a never received b's trap 144")
				}
				return
			}
			programmedBy(t, b, 5*time.Second)
			waitFor(t, time.Second, "a standing by", isState(a, smp.SMStateStandby))
			time.Sleep(5 * pollEvery)
			stop()
			if st := a.s.ElectionStats(); st.Handovers != 1 || st.Master != b.guid {
				t.Errorf("a %+v; want one handover to b", st)
			}
			if rep := b.lastProgrammed(); rep.Program.LFTBlocksSent != 0 {
				t.Errorf("b sent %d LFT blocks after the handover of an unchanged fabric", rep.Program.LFTBlocksSent)
			}
			_, smLIDs := fabricLIDs(t, fab, f)
			if len(smLIDs) != 1 || smLIDs[lidOf(b)] == 0 {
				t.Errorf("SM LIDs after the handover %v; want all %d (b)", smLIDs, lidOf(b))
			}
		})
	}
}

// TestElectionEqualPriority: with equal priorities the lower port GUID
// wins, whichever starts first.
func TestElectionEqualPriority(t *testing.T) {
	t.Parallel()
	oneElection(t)
	f := fatTree(t)
	hosts := cas(f)
	for _, lowFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("lowFirst=%v", lowFirst), func(t *testing.T) {
			fab, err := sim.New(f, sim.Options{})
			must(t, err)
			low, high := hosts[1], hosts[4] // port GUIDs grow with the node order
			if low.Ports[1].GUID > high.Ports[1].GUID {
				low, high = high, low
			}
			first, second := low, high
			if !lowFirst {
				first, second = high, low
			}
			el := sm.ElectionOptions{Priority: 7, HonorPriority: true}
			p1 := startPeer(t, fab, "first", first, el, t.TempDir())
			programmedBy(t, p1, 5*time.Second)
			p2 := startPeer(t, fab, "second", second, el, t.TempDir())
			stop := watch(t, p1, p2)
			winner, loser := p1, p2
			if !lowFirst {
				winner, loser = p2, p1
			}
			programmedBy(t, winner, 5*time.Second)
			waitFor(t, 2*time.Second, "loser standing by", isState(loser, smp.SMStateStandby))
			time.Sleep(4 * pollTries * pollEvery)
			stop()
			if winner.s.State() != smp.SMStateMaster || loser.s.State() != smp.SMStateStandby {
				t.Fatalf("winner %d loser %d", winner.s.State(), loser.s.State())
			}
		})
	}
}

// TestElectionSMKeys: SMs with different SM_Keys never hand over to each
// other: the first master keeps the subnet whatever the priorities, the
// other stands by and still takes over when the master dies.
func TestElectionSMKeys(t *testing.T) {
	t.Parallel()
	oneElection(t)
	f := fatTree(t)
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	hosts := cas(f)
	a := startPeer(t, fab, "a", hosts[0], sm.ElectionOptions{Priority: 1, SMKey: 0xaaaa, HonorPriority: true}, t.TempDir())
	programmedBy(t, a, 5*time.Second)
	b := startPeer(t, fab, "b", hosts[3], sm.ElectionOptions{Priority: 15, SMKey: 0xbbbb, HonorPriority: true}, t.TempDir())
	stop := watch(t, a, b)
	waitFor(t, 3*time.Second, "b standing by", isState(b, smp.SMStateStandby))
	time.Sleep(4 * pollTries * pollEvery)
	if a.s.State() != smp.SMStateMaster || b.s.State() != smp.SMStateStandby {
		t.Fatalf("a %d b %d; want a master (first, other key), b standby", a.s.State(), b.s.State())
	}
	if st := a.s.ElectionStats(); st.Handovers != 0 {
		t.Fatalf("a handed over to an SM with another SM_Key: %+v", st)
	}
	if !strings.Contains(a.log.String(), "another SM_Key") || !strings.Contains(b.log.String(), "another SM_Key") {
		t.Errorf("the key mismatch is not reported in both logs")
	}
	a.stop()
	programmedBy(t, b, 3*time.Second)
	stop()
}

// TestElectionRotation: three SMs with the same settings; the master is
// killed and restarted as a standby, five times: a standby is master again
// each time, never two at once, every LID stays and no LFT block is sent.
func TestElectionRotation(t *testing.T) {
	t.Parallel()
	oneElection(t)
	f := fatTree(t)
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	hosts := cas(f)
	el := sm.ElectionOptions{Priority: 8}
	nodes := []*netfile.Node{hosts[0], hosts[3], hosts[6]}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	peers := make([]*peer, 3)
	peers[0] = startPeer(t, fab, "sm0", nodes[0], el, dirs[0])
	programmedBy(t, peers[0], 5*time.Second)
	peers[1] = startPeer(t, fab, "sm1", nodes[1], el, dirs[1])
	peers[2] = startPeer(t, fab, "sm2", nodes[2], el, dirs[2])
	waitFor(t, 3*time.Second, "two standbys", func() bool {
		return peers[1].s.State() == smp.SMStateStandby && peers[2].s.State() == smp.SMStateStandby
	})
	lids0, _ := fabricLIDs(t, fab, f)
	for round := 0; round < 5; round++ {
		m := -1
		for i, p := range peers {
			if p.master() {
				m = i
			}
		}
		if m < 0 {
			t.Fatalf("round %d: no master", round)
		}
		stop := watch(t, peers...)
		peers[m].stop()
		killed := time.Now()
		var next *peer
		waitFor(t, 3*time.Second, "a new master", func() bool {
			for i, p := range peers {
				if i != m && p.s.State() == smp.SMStateMaster && p.lastProgrammed() != nil && p.s.ElectionStats().Takeovers > 0 {
					next = p
					return true
				}
			}
			return false
		})
		programmedBy(t, next, 3*time.Second)
		took := time.Since(killed)
		rep := next.lastProgrammed()
		if rep.Program.LFTBlocksSent != 0 {
			t.Errorf("round %d: %s sent %d LFT blocks on takeover", round, next.name, rep.Program.LFTBlocksSent)
		}
		lids, smLIDs := fabricLIDs(t, fab, f)
		for g, l := range lids0 {
			if lids[g] != l {
				t.Errorf("round %d: port %#x LID %d, was %d", round, g, lids[g], l)
			}
		}
		if len(smLIDs) != 1 || smLIDs[lidOf(next)] == 0 {
			t.Errorf("round %d: SM LIDs %v; want all %d", round, smLIDs, lidOf(next))
		}
		// The killed one comes back (a new process: its port is attached
		// anew) and stands by.
		stop()
		peers[m] = restartPeer(t, fab, peers[m], nodes[m], el, dirs[m])
		stop = watch(t, peers...)
		waitFor(t, 3*time.Second, "the restarted SM standing by", isState(peers[m], smp.SMStateStandby))
		time.Sleep(pollTries * pollEvery)
		stop()
		t.Logf("round %d: %s killed, %s master after %s", round, peers[m].name, next.name, took.Round(time.Millisecond))
	}
}

// restartPeer replaces a stopped peer by a new SM on the same node: the
// old attachment is closed first, as ibsim drops a dead client.
func restartPeer(t *testing.T, fab *sim.Fabric, old *peer, node *netfile.Node, el sm.ElectionOptions, dir string) *peer {
	t.Helper()
	old.stop()
	old.tr.Close()
	return startPeer(t, fab, old.name, node, el, dir)
}

// TestSMInfoSets: what each control code does in each state, the SM_Key
// check, and OpenSM's HANDOVER with SM_Key 0.
func TestSMInfoSets(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	hosts := cas(f)
	conn, err := fab.Attach(hosts[0].GUID, 1)
	must(t, err)
	tr := transport.New(conn, transport.Options{Timeout: 20 * time.Millisecond})
	defer tr.Close()
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Election: sm.ElectionOptions{Priority: 4, SMKey: 0x1234}}, nil)
	master := smp.SMInfo{GUID: 0x99, SMKey: 0x1234, Priority: 9, SMState: smp.SMStateMaster}
	wrong := master
	wrong.SMKey = 0x4321

	if _, err := s.HeavySweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if si := s.SMInfo(false); si.GUID != hosts[0].Ports[1].GUID || si.SMKey != 0x1234 || si.SMState != smp.SMStateMaster {
		t.Fatalf("SMInfo %+v: want own port GUID, the key (no M_Key on the port), master", si)
	}
	steps := []struct {
		what string
		mod  uint32
		req  smp.SMInfo
		want uint8
	}{
		{"STANDBY to a master is ignored", 4, master, smp.SMStateMaster},
		{"DISABLE to a master is ignored", 3, master, smp.SMStateMaster},
	}
	for _, st := range steps {
		if got := s.HandleSMInfoSet(st.mod, st.req); got.SMState != st.want || s.State() != st.want {
			t.Fatalf("%s: answered %d, state %d; want %d", st.what, got.SMState, s.State(), st.want)
		}
	}
	// A master that hands its part over to us: we stay master and sweep.
	s.HandleSMInfoSet(1, master)
	if s.State() != smp.SMStateMaster {
		t.Fatal("HANDOVER to a master changed its state")
	}
	if st := s.ElectionStats(); st.Refused != 0 {
		t.Fatalf("refused %d", st.Refused)
	}
	// Wrong key: nothing changes, the Set is counted.
	s2 := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Election: sm.ElectionOptions{Priority: 4, SMKey: 0x1234}}, nil)
	for _, mod := range []uint32{1, 3, 4, 5} {
		s2.HandleSMInfoSet(mod, wrong)
	}
	if st := s2.ElectionStats(); st.Refused != 4 || st.State != smp.SMStateDiscovering {
		t.Fatalf("after 4 Sets with a wrong key: %+v", st)
	}
	// STANDBY from a master while discovering, then OpenSM's HANDOVER
	// with SM_Key 0 from that master: taken.
	s2.HandleSMInfoSet(4, master)
	if st := s2.ElectionStats(); st.State != smp.SMStateStandby || st.Master != 0x99 {
		t.Fatalf("after STANDBY: %+v", st)
	}
	zero := master
	zero.SMKey = 0
	other := zero
	other.GUID = 0x77
	s2.HandleSMInfoSet(1, other) // key 0 from an SM we do not follow: refused
	if s2.State() != smp.SMStateStandby {
		t.Fatal("HANDOVER with SM_Key 0 from an SM this one does not follow was taken")
	}
	s2.HandleSMInfoSet(1, zero)
	if st := s2.ElectionStats(); st.State != smp.SMStateMaster || st.Takeovers != 1 {
		t.Fatalf("HANDOVER with SM_Key 0 from the followed master: %+v", st)
	}
	// A Set from an SM that does not claim to be master changes nothing.
	s3 := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Election: sm.ElectionOptions{Priority: 4}}, nil)
	notMaster := master
	notMaster.SMState = smp.SMStateStandby
	s3.HandleSMInfoSet(3, notMaster)
	if s3.State() != smp.SMStateDiscovering {
		t.Fatal("DISABLE from a standby was taken")
	}
	s3.HandleSMInfoSet(3, master)
	if s3.State() != sm.SMStateNotActive {
		t.Fatal("DISABLE from a master while discovering not taken")
	}
	s3.HandleSMInfoSet(5, master)
	if s3.State() != smp.SMStateDiscovering {
		t.Fatal("DISCOVER after DISABLE not taken")
	}
}

// TestTakeoverAdoptsFabricLIDs: a standby whose guid2lid is stale (another
// SM renumbered ports since it was last master) takes the LIDs the fabric
// holds when it takes over; at a plain start its guid2lid wins.
func TestTakeoverAdoptsFabricLIDs(t *testing.T) {
	t.Parallel()
	oneElection(t)
	f := fatTree(t)
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	hosts := cas(f)
	a := startPeer(t, fab, "a", hosts[0], sm.ElectionOptions{Priority: 10}, t.TempDir())
	programmedBy(t, a, 5*time.Second)
	lids0, _ := fabricLIDs(t, fab, f)
	// b's state dir remembers other LIDs for every port (a stale file).
	dir := t.TempDir()
	stale := map[uint64]lidstore.Range{}
	for g, l := range lids0 {
		stale[g] = lidstore.Range{Min: l + 200, Max: l + 200}
	}
	must(t, lidstore.Save(filepath.Join(dir, "guid2lid"), stale))
	b := startPeer(t, fab, "b", hosts[5], sm.ElectionOptions{Priority: 5}, dir)
	waitFor(t, 3*time.Second, "b standing by", isState(b, smp.SMStateStandby))
	a.stop()
	programmedBy(t, b, 3*time.Second)
	lids1, _ := fabricLIDs(t, fab, f)
	for g, l := range lids0 {
		if lids1[g] != l {
			t.Errorf("port %#x: LID %d before the takeover, %d after (stale guid2lid won)", g, l, lids1[g])
		}
	}
	if !strings.Contains(b.log.String(), "taking over: keeping the LIDs the fabric holds") {
		t.Error("takeover did not log that it keeps the fabric's LIDs")
	}
	// guid2lid now holds the fabric's LIDs.
	m, err := lidstore.Load(filepath.Join(dir, "guid2lid"))
	must(t, err)
	for g, l := range lids0 {
		if m[g].Min != l {
			t.Errorf("guid2lid after the takeover: %#x → %d, fabric %d", g, m[g].Min, l)
			break
		}
	}
}

// TestElectionMerge: two masters meet (the first one was deaf to SMInfo
// while the second came up, as when two subnets are cabled together).
// With the same SM_Key the worse one hands its part over to the better
// (IBA C14-60.2.1) and the better one, which writes nothing while another
// master is on the subnet, programs the whole of it. With different
// SM_Keys no handover is possible: the worse stands by at once and the
// better keeps the subnet.
func TestElectionMerge(t *testing.T) {
	t.Parallel()
	oneElection(t)
	for _, tc := range []struct {
		name         string
		keyA, keyB   uint64
		prioA, prioB uint8
	}{
		{"same key, first better", 7, 7, 12, 3},
		{"same key, second better", 7, 7, 3, 12},
		{"other key, first better", 7, 9, 12, 3},
		{"other key, second better", 7, 9, 3, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fatTree(t)
			fab, err := sim.New(f, sim.Options{})
			must(t, err)
			hosts := cas(f)
			a := startPeer(t, fab, "a", hosts[0], sm.ElectionOptions{Priority: tc.prioA, SMKey: tc.keyA}, t.TempDir())
			programmedBy(t, a, 5*time.Second)
			a.deaf.Store(true)
			b := startPeer(t, fab, "b", hosts[5], sm.ElectionOptions{Priority: tc.prioB, SMKey: tc.keyB}, t.TempDir())
			programmedBy(t, b, 5*time.Second)
			if !a.master() {
				// a saw b's SM LID on the ports it re-reads and elected
				// already (it can still ask b): the merge is then over
				// before it starts, the outcome must be the same.
				t.Log("a elected on the drift b caused before the merge")
			}
			a.deaf.Store(false)
			winner, loser := a, b
			if tc.prioB > tc.prioA {
				winner, loser = b, a
			}
			if tc.keyA != tc.keyB && winner == a {
				// While deaf, a saw b stay master over its sweeps and may
				// have stood by for good before b could see it: with
				// another SM_Key neither can hand over, and a master does
				// not yield to a better standby (honor_priority is off),
				// so b keeps the subnet. Either way one master remains.
				aBy, bBy := isState(a, smp.SMStateStandby), isState(b, smp.SMStateStandby)
				waitFor(t, 10*time.Second, "one master, the other standing by", func() bool {
					return (a.master() && bBy()) || (b.master() && aBy())
				})
				if b.master() {
					if a.s.ElectionStats().StepDowns == 0 {
						t.Fatal("b is master but a never stood by for it")
					}
					t.Log("a stood by for b before the merge: b keeps the subnet")
					winner, loser = b, a
				}
			}
			waitFor(t, 10*time.Second, "one master", func() bool { return winner.master() && !loser.master() })
			waitFor(t, 10*time.Second, loser.name+" standing by", isState(loser, smp.SMStateStandby))
			// The winner programs the whole subnet again: every port
			// points at it.
			waitFor(t, 10*time.Second, "every port pointing at the winner", func() bool {
				if winner.s.Applied() == nil || winner.s.ElectionStats().Contested {
					return false
				}
				_, smLIDs := fabricLIDs(t, fab, f)
				return len(smLIDs) == 1 && smLIDs[lidOf(winner)] > 0
			})
			stop := watch(t, a, b)
			time.Sleep(4 * pollTries * pollEvery)
			stop()
			if st := loser.s.ElectionStats(); st.State != smp.SMStateStandby || st.Master != winner.guid {
				t.Errorf("loser %+v; want standby of the winner", st)
			}
		})
	}
}
