package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibsm/ibsm/integration/diags"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestIBSimHostilePeers attaches a fuzzing client (Go, transport/ibsim, a
// plain CA port: not an SM) to the fabric ibsm manages and sends the SM
// 100,000 random and mutated SMPs and SA MADs, then floods it for 10 s with
// 10,000 SA queries/s and 1,000 traps/s, then sends the hostile requests
// whose answers the spec fixes (bad class versions, a wrong SM_Key, SMInfo
// Sets from a rogue SM) and a PortInfo Set that moves the SM's own LID.
// Throughout, a legitimate saquery (infiniband-diags under libumad2sim,
// from another CA) and a legitimate Go client (a third CA) must be
// answered within 1 s. Afterwards ibsm must be alive and master, every LID
// and every LFT (dump_fts) as before, its RSS bounded, and its log bounded
// with the flood counters in it.
func TestIBSimHostilePeers(t *testing.T) {
	if testing.Short() {
		t.Skip("ibsim fuzzing and floods: about 25 s")
	}
	const netPath = "diags/testdata/random-6sw-8ca-seed3.net"
	nf, err := netfile.ParseFile(netPath)
	if err != nil {
		t.Fatal(err)
	}
	cas := caNodes(nf)
	smNode, fuzzNode, probeNode, toolNode := cas[0], cas[1], cas[2], cas[len(cas)-1]
	r := startRig(t, netPath, toolNode.Name)
	const smKey = 0x5eed_0000_ca11_ab1e
	cfg := hostileConfig(t, r, smNode.Name, filepath.Join(r.dir, "state"), smKey)
	sm := startIBSM(t, cfg)
	start := time.Now()
	sm.waitUp(t, 1, 60*time.Second)
	t.Logf("ibsm SUBNET UP after %s", time.Since(start).Round(time.Millisecond))
	pid := sm.cmd.Process.Pid
	ctx := context.Background()

	// What ibsm programmed, before anyone misbehaves.
	d0, _, err := r.env.Discover(ctx)
	if err != nil {
		t.Fatalf("ibnetdiscover: %v", err)
	}
	fts0, _, err := r.env.DumpFTs(ctx)
	if err != nil {
		t.Fatalf("dump_fts: %v", err)
	}
	smGUID := smNode.Ports[1].GUID
	smLID := d0.LIDs[smGUID]
	toolLID, probeLID := d0.LIDs[toolNode.Ports[1].GUID], d0.LIDs[probeNode.Ports[1].GUID]
	var maxLID uint16
	for _, l := range d0.LIDs {
		maxLID = max(maxLID, l)
	}
	if smLID == 0 || toolLID == 0 || probeLID == 0 {
		t.Fatalf("LIDs after SUBNET UP: SM %d, tool %d, probe %d", smLID, toolLID, probeLID)
	}
	rss0 := vmRSS(t, pid)
	logLines0 := strings.Count(sm.log.String(), "\n")

	fz := dialClient(t, r, fuzzNode.Name)
	probe := dialClient(t, r, probeNode.Name)
	pt := transport.New(probe, transport.Options{Timeout: time.Second, Retries: -1, Window: 4})
	t.Cleanup(func() { pt.Close() })

	// The legitimate clients, until stop: saquery from the tool CA (one
	// process after the other) and a Go PathRecord Get from the probe CA
	// every 50 ms, each with a 1 s deadline.
	stop := make(chan struct{})
	var legit sync.WaitGroup
	var saq, goq latencies
	legit.Add(2)
	go func() {
		defer legit.Done()
		env := *r.env
		env.Timeout = 5 * time.Second
		dst := d0.LIDs[cas[3].Ports[1].GUID]
		for {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			prs, err := env.PathRecords(ctx, toolLID, dst)
			if err == nil && len(prs) == 0 {
				err = errors.New("no PathRecord")
			}
			saq.add(time.Since(t0), err)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	go func() {
		defer legit.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			req := smp.NewSAMAD(smp.MethodGet, smp.SAAttrPathRecord)
			req.ComponentMask = smp.PRCompSLID | smp.PRCompDLID
			pr := smp.PathRecord{SLID: probeLID, DLID: smLID}
			_ = pr.MarshalTo(req.Data[:])
			buf := make([]byte, smp.MADLen)
			_ = req.EncodeTo(buf)
			t0 := time.Now()
			c, cancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := pt.Do(c, transport.Packet{DLID: smLID, QP: 1, MAD: buf})
			cancel()
			if err == nil && binary.BigEndian.Uint16(resp.MAD[4:]) != 0 {
				err = fmt.Errorf("status %#04x", binary.BigEndian.Uint16(resp.MAD[4:]))
			}
			goq.add(time.Since(t0), err)
		}
	}()
	stopLegit := func() {
		select {
		case <-stop:
		default:
			close(stop)
			legit.Wait()
		}
	}
	defer stopLegit()

	// The fuzzer reads everything that comes back and checks each answer
	// against the request it answers.
	f := newFuzzer(t, fz, smLID, hostilePath(t, fuzzNode, smNode), []uint16{smLID, toolLID, probeLID})
	for _, sw := range nf.Nodes {
		if sw.Type == topology.Switch {
			if l := d0.LIDs[sw.GUID]; l != 0 {
				f.switchLIDs = append(f.switchLIDs, l)
			}
		}
	}
	recvDone := f.receive()

	// Phase 1: 100,000 random and mutated MADs at about 20,000/s.
	start = time.Now()
	fuzzStart := start
	pace(100_000, 20_000, func(i int) { f.sendFuzz() })
	t.Logf("fuzz: %d MADs sent in %s (%d send errors)", f.sent.Load(), time.Since(start).Round(time.Millisecond), f.sendErrs.Load())
	rssFuzz := vmRSS(t, pid)

	// Phase 2: 10 s of 10,000 SA queries/s and 1,000 traps/s.
	floodStart := time.Now()
	sentBefore := f.sent.Load()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pace(100_000, 10_000, func(i int) { f.sendQuery(i) }) }()
	go func() { defer wg.Done(); pace(10_000, 1_000, func(i int) { f.sendTrap(i) }) }()
	var rssPeak int64
	for done := false; !done; {
		select {
		case <-waitChan(&wg):
			done = true
		case <-time.After(500 * time.Millisecond):
			rssPeak = max(rssPeak, vmRSS(t, pid))
		}
	}
	floodTime := time.Since(floodStart)
	t.Logf("flood: %d SA queries and traps sent in %s", f.sent.Load()-sentBefore, floodTime.Round(time.Millisecond))
	time.Sleep(time.Second) // answers in flight
	stopLegit()
	f.stopRecv()
	<-recvDone

	// The legitimate clients were answered, within 1 s, all along.
	t.Logf("saquery (tool CA, a process each): %s", saq.summary())
	t.Logf("Go PathRecord Get (probe CA): %s", goq.summary())
	for _, l := range []*latencies{&saq, &goq} {
		if l.n() == 0 {
			t.Errorf("a legitimate client made no query")
		}
		if len(l.errs) > 0 {
			t.Errorf("legitimate queries failed: %d, first: %v", len(l.errs), l.errs[0])
		}
	}
	if m := goq.max(); m > time.Second {
		t.Errorf("the SA took %s to answer a legitimate PathRecord Get during the flood (bound 1s)", m)
	}
	if m := saq.max(); m > time.Second {
		t.Errorf("a legitimate saquery took %s during the flood (bound 1s, process start included)", m)
	}
	t.Logf("fuzzer: %s", f.summary())
	if f.bad.Load() > 0 {
		t.Errorf("%d answers did not answer what was asked; first: %s", f.bad.Load(), f.firstBad())
	}

	// Phase 3: requests with an answer the spec fixes, from the probe.
	checkSpecAnswers(t, pt, r.sim.LogPath, smLID, smGUID, smKey, hostilePath(t, probeNode, smNode))

	// Phase 4: a PortInfo Set to the SM's own port moves its LID; ibsm
	// puts it back.
	repairSMLID(t, pt, hostilePath(t, probeNode, smNode), smLID)

	// ibsm is alive, master, and the fabric is what it was.
	select {
	case err := <-sm.done:
		t.Fatalf("ibsm exited: %v\n%s", err, tail(sm.log.String(), 4000))
	default:
	}
	d1, _, err := r.env.Discover(ctx)
	if err != nil {
		t.Fatalf("ibnetdiscover after: %v", err)
	}
	if err := diags.CheckLIDs(d1, d0.LIDs); err != nil {
		t.Errorf("LIDs changed:\n%v", err)
	}
	fts1, _, err := r.env.DumpFTs(ctx)
	if err != nil {
		t.Fatalf("dump_fts after: %v", err)
	}
	if err := diags.CheckLFTs(fts1, fts0, maxLID); err != nil {
		t.Errorf("dump_fts differs from before the fuzzing:\n%v", err)
	}
	si, err := r.env.SMInfo(ctx)
	if err != nil {
		t.Errorf("sminfo: %v", err)
	} else if si.State != diags.SMStateMaster || si.GUID != smGUID || si.LID != smLID {
		t.Errorf("sminfo after: %+v; want master, guid %#x, lid %d", si, smGUID, smLID)
	}
	rss1 := vmRSS(t, pid)
	t.Logf("ibsm VmRSS: %d KiB before, %d KiB after the fuzz, %d KiB peak during the flood, %d KiB after all", rss0, rssFuzz, rssPeak, rss1)
	if rss1 > 2*rss0+64<<10 || rssPeak > 2*rss0+64<<10 {
		t.Errorf("ibsm's memory grew from %d KiB to %d KiB (peak %d KiB)", rss0, rss1, rssPeak)
	}

	// The log: no panic, the flood counted, and bounded.
	log := sm.log.String()
	for _, bad := range []string{"panic", "BUG:", "goroutine "} {
		if strings.Contains(log, bad) {
			t.Errorf("ibsm's log has %q:\n%s", bad, tail(log, 4000))
		}
	}
	lines := strings.Split(log, "\n")[logLines0:]
	for _, want := range []string{"SA requests dropped:", "traps dropped:", "SMInfo Set with a wrong SM_Key ignored"} {
		if !strings.Contains(log, want) {
			t.Errorf("ibsm's log has no %q line", want)
		}
	}
	perSec := float64(len(lines)) / time.Since(fuzzStart).Seconds()
	t.Logf("ibsm logged %d lines (%.1f/s) from the first fuzzed MAD on; by message:\n%s\nthe counters:\n%s",
		len(lines), perSec, logHistogram(lines), grepLines(lines, "dropped"))
	// Hostile traps may make ibsm poll switches (a light sweep, at most
	// every trap_min_interval), never re-discover the whole fabric.
	if full := grepLines(lines, "full re-discovery"); full != "" {
		t.Errorf("hostile input made ibsm re-discover the fabric:\n%s", full)
	}
	if perSec > 30 {
		t.Errorf("ibsm logged %d lines (%.0f/s) under attack; want the counters, not a line per MAD:\n%s", len(lines), perSec, tail(strings.Join(lines, "\n"), 3000))
	}
}

// hostileConfig is ibsimConfig with an SM_Key.
func hostileConfig(t *testing.T, r *rig, smNode, stateDir string, key uint64) string {
	t.Helper()
	path := ibsimConfig(t, r.dir, "ibsm.hcl", "ibsim", r, smNode, stateDir, 5)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "  priority = 14\n", fmt.Sprintf("  priority = 14\n  sm_key = \"%#016x\"\n", key), 1)
	if s == string(b) {
		t.Fatal("ibsimConfig no longer writes priority = 14; update hostileConfig")
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func dialClient(t *testing.T, r *rig, node string) *ibsim.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ibsim.Dial(ctx, ibsim.Options{SockName: r.env.Sockname, Attach: node, RecvBuffer: 8192})
	if err != nil {
		t.Fatalf("attaching to %s: %v", node, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// hostilePath is the directed route from CA from (port 1) to CA to, in
// NewDRGet's form: the originator's port, then each switch's egress port.
func hostilePath(t *testing.T, from, to *netfile.Node) []uint8 {
	t.Helper()
	type hop struct {
		n    *netfile.Node
		path []uint8
	}
	first := from.Ports[1].Peer
	queue := []hop{{first, []uint8{1}}}
	seen := map[*netfile.Node]bool{first: true}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		for p := 1; p <= h.n.NumPorts(); p++ {
			peer := h.n.Ports[p].Peer
			path := append(append([]uint8(nil), h.path...), uint8(p))
			if peer == to {
				return path
			}
			if peer != nil && peer.Type == topology.Switch && !seen[peer] {
				seen[peer] = true
				queue = append(queue, hop{peer, path})
			}
		}
	}
	t.Fatalf("no route from %s to %s", from.Name, to.Name)
	return nil
}

// pace calls send n times at about perSec a second and returns: a bounded
// loop that ends by itself.
func pace(n, perSec int, send func(i int)) {
	start := time.Now()
	for i := 0; i < n; {
		due := min(n, int(time.Since(start).Seconds()*float64(perSec))+1)
		for ; i < due; i++ {
			send(i)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitChan(wg *sync.WaitGroup) <-chan struct{} {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	return c
}

// vmRSS is a process's resident set in KiB.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading ibsm's status: %v", err)
	}
	m := regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

var reLogMsg = regexp.MustCompile(`^\S+ \[(\w+)\] +([^:]+(?::[^=:]+)?)`)

// logHistogram counts hclog lines by level and message (without the
// key=value pairs), most frequent first.
func logHistogram(lines []string) string {
	n := map[string]int{}
	for _, l := range lines {
		if m := reLogMsg.FindStringSubmatch(l); m != nil {
			n[m[1]+" "+m[2]]++
		}
	}
	var keys []string
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] || n[keys[i]] == n[keys[j]] && keys[i] < keys[j] })
	var b strings.Builder
	for i, k := range keys {
		if i == 15 {
			fmt.Fprintf(&b, "  … %d more kinds\n", len(keys)-15)
			break
		}
		fmt.Fprintf(&b, "  %5d %s\n", n[k], k)
	}
	return b.String()
}

func grepLines(lines []string, s string) string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// latencies collects the durations and errors of a client's queries.
type latencies struct {
	mu   sync.Mutex
	d    []time.Duration
	errs []error
}

func (l *latencies) add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("after %s: %w", d.Round(time.Millisecond), err))
		return
	}
	l.d = append(l.d, d)
}

func (l *latencies) n() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.d) + len(l.errs)
}

func (l *latencies) max() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m time.Duration
	for _, d := range l.d {
		m = max(m, d)
	}
	return m
}

func (l *latencies) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := append([]time.Duration(nil), l.d...)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d) == 0 {
		return fmt.Sprintf("no answer, %d errors", len(l.errs))
	}
	q := func(p float64) time.Duration {
		return d[min(len(d)-1, int(p*float64(len(d))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("%d answered, %d failed; latency p50 %s, p99 %s, max %s", len(d), len(l.errs), q(0.5), q(0.99), d[len(d)-1].Round(10*time.Microsecond))
}

// fuzzer sends hostile MADs to the SM and checks what comes back.
type fuzzer struct {
	t          *testing.T
	c          *ibsim.Conn
	smLID      uint16
	path       []uint8 // directed route to the SM
	protected  map[uint16]bool
	switchLIDs []uint16

	mu   sync.Mutex
	rng  *rand.Rand
	sent atomic.Uint64
	reqs map[uint64]reqInfo // by TID (low 48 bits)
	seq  uint64

	sendErrs, answers, bounced, bad atomic.Uint64
	byStatus                        sync.Map // "class/status" -> *atomic.Uint64
	badMu                           sync.Mutex
	badFirst                        string
	cancel                          context.CancelFunc
	ctx                             context.Context
}

type reqInfo struct {
	class uint8
	attr  uint16
}

func newFuzzer(t *testing.T, c *ibsim.Conn, smLID uint16, path []uint8, protected []uint16) *fuzzer {
	f := &fuzzer{t: t, c: c, smLID: smLID, path: path, rng: rand.New(rand.NewSource(20261124)),
		reqs: map[uint64]reqInfo{}, protected: map[uint16]bool{}}
	for _, l := range protected {
		f.protected[l] = true
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f
}

func (f *fuzzer) stopRecv() { f.cancel() }

// ibsimSMA lists the SMP attributes ibsim's own SMA answers at the SM's CA
// port (they never reach ibsm, and Sets of them change the port itself:
// that is phase 4's business).
var ibsimSMA = map[uint16]bool{0x10: true, 0x11: true, 0x12: true, 0x14: true, 0x15: true, 0x16: true,
	0x17: true, 0x18: true, 0x19: true, 0x1B: true, 0xFF90: true}

// send sends mad to the SM (LID-routed unless it is a DR SMP), with the
// next TID in its low 48 bits, and remembers what it asked.
func (f *fuzzer) send(mad []byte, slid uint16, qp uint32) {
	f.mu.Lock()
	f.seq++
	tid := f.seq
	if mad[3]&smp.MethodResponse == 0 {
		binary.BigEndian.PutUint64(mad[8:], tid)
		f.reqs[tid] = reqInfo{class: mad[1], attr: binary.BigEndian.Uint16(mad[16:])}
	}
	f.mu.Unlock()
	p := transport.Packet{DLID: f.smLID, SLID: slid, QP: qp, MAD: mad}
	if mad[1] == smp.ClassSMPDR {
		p.DLID, p.SLID = smp.PermissiveLID, smp.PermissiveLID
	}
	f.sent.Add(1)
	if err := f.c.Send(p); err != nil {
		f.sendErrs.Add(1)
	}
}

// sendFuzz sends one random or mutated MAD.
func (f *fuzzer) sendFuzz() {
	f.mu.Lock()
	rng := f.rng
	var mad []byte
	qp := uint32(1)
	kind := rng.Intn(100)
	switch {
	case kind < 35: // a valid SA request, mutated
		mad = f.validSA(rng)
		mutate(rng, mad)
		mad[1] = smp.ClassSA // a flipped class could make ibsim's SMA take a Set
	case kind < 45: // random bytes as an SA MAD
		mad = make([]byte, smp.MADLen)
		rng.Read(mad)
		mad[0], mad[1] = 1, smp.ClassSA
		mad[2] = []uint8{0, 1, 2, 2, 2, 3, 255}[rng.Intn(7)]
	case kind < 70: // a LID-routed SMP to the SM
		mad = f.smpMAD(rng, false)
		qp = 0
	case kind < 80: // a directed-route SMP to the SM
		mad = f.smpMAD(rng, true)
		qp = 0
	case kind < 90: // a trap
		mad = f.trap(rng)
		mutate(rng, mad)
		mad[1], mad[3] = smp.ClassSMPLID, smp.MethodTrap
		qp = 0
	default: // random bytes as a LID-routed SMP
		mad = make([]byte, smp.MADLen)
		rng.Read(mad)
		mad[0], mad[1] = 1, smp.ClassSMPLID
		if ibsimSMA[binary.BigEndian.Uint16(mad[16:])] {
			binary.BigEndian.PutUint16(mad[16:], smp.AttrSMInfo)
		}
		qp = 0
	}
	// Now and then a forged source LID (never one of the legitimate
	// clients' or the SM's: this test is not about SLID spoofing).
	var slid uint16
	if rng.Intn(20) == 0 {
		if l := uint16(1 + rng.Intn(0xBFFE)); !f.protected[l] {
			slid = l
		}
	}
	f.mu.Unlock()
	f.send(mad, slid, qp)
}

// mutate flips a few bits of mad, now and then truncates it (zeroes its
// tail: ibsim carries whole 256-byte MADs).
func mutate(rng *rand.Rand, mad []byte) {
	for k := rng.Intn(4) + 1; k > 0; k-- {
		i := rng.Intn(len(mad))
		if rng.Intn(4) == 0 {
			i = rng.Intn(64) // the headers more often
		}
		mad[i] ^= byte(1 << rng.Intn(8))
	}
	if rng.Intn(10) == 0 {
		clear(mad[24+rng.Intn(len(mad)-24):])
	}
	mad[0] = 1 // ibsim drops other base versions before anyone sees them
}

func (f *fuzzer) validSA(rng *rand.Rand) []byte {
	attrs := []uint16{smp.SAAttrPathRecord, smp.SAAttrNodeRecord, smp.SAAttrPortInfoRecord, smp.SAAttrSMInfoRecord,
		smp.SAAttrClassPortInfo, smp.SAAttrLinkRecord, smp.SAAttrServiceRecord, smp.SAAttrMCMemberRecord, smp.SAAttrInformInfo}
	methods := []uint8{smp.MethodGet, smp.MethodGetTable, smp.MethodSet, smp.MethodDelete, smp.MethodGetMulti, 0x13, smp.MethodSend, smp.MethodReport, 0x7F}
	r := smp.NewSAMAD(methods[rng.Intn(len(methods))], attrs[rng.Intn(len(attrs))])
	switch rng.Intn(4) {
	case 0:
		r.ComponentMask = ^uint64(0)
	case 1:
		r.ComponentMask = rng.Uint64()
	case 2:
		r.ComponentMask = smp.PRCompSLID | smp.PRCompDLID
	}
	if rng.Intn(5) == 0 {
		r.SMKey = rng.Uint64()
	}
	r.AttrMod = uint32(rng.Intn(3))
	rng.Read(r.Data[:rng.Intn(len(r.Data))])
	b := make([]byte, smp.MADLen)
	_ = r.EncodeTo(b)
	return b
}

// smpMAD is an SMP to the SM: SMInfo Gets and Sets (a rogue SM with the
// wrong SM_Key: HANDOVER, ACKNOWLEDGE, DISABLE, STANDBY, DISCOVER),
// attributes no SMA answers, undefined methods, forged responses.
func (f *fuzzer) smpMAD(rng *rand.Rand, dr bool) []byte {
	attr := uint16(smp.AttrSMInfo)
	if rng.Intn(4) == 0 {
		for attr = uint16(rng.Intn(0x10000)); ibsimSMA[attr]; attr = uint16(rng.Intn(0x10000)) {
		}
	}
	var s *smp.SMP
	if dr {
		s, _ = smp.NewDRGet(attr, 0, f.path)
	} else {
		s = smp.NewLIDGet(attr, 0)
	}
	s.Method = []uint8{smp.MethodGet, smp.MethodSet, smp.MethodSet, smp.MethodSet, smp.MethodSend, 0x10, smp.MethodTrapRepress, smp.MethodGetResp}[rng.Intn(8)]
	s.AttrMod = uint32(rng.Intn(7))
	si := smp.SMInfo{GUID: rng.Uint64(), SMKey: rng.Uint64(), Priority: 15, SMState: uint8(rng.Intn(4))}
	_ = si.MarshalTo(s.Data[:])
	b, _ := s.Encode()
	if s.Method == smp.MethodGetResp {
		// A forged response: ibsim hands it to the client whose slot is in
		// the TID's top bits (ibsm's, if the guess is right).
		binary.BigEndian.PutUint64(b[8:], uint64(rng.Intn(10))<<48|uint64(rng.Intn(1<<20)))
	}
	if rng.Intn(3) == 0 {
		b[2] = []uint8{0, 2}[rng.Intn(2)] // bad class version (ibsim drops > 2)
	}
	if !dr && rng.Intn(2) == 0 {
		mutate(rng, b)
		b[1] = smp.ClassSMPLID
		if ibsimSMA[binary.BigEndian.Uint16(b[16:])] {
			binary.BigEndian.PutUint16(b[16:], smp.AttrSMInfo)
		}
	}
	return b
}

// trap is a Trap(Notice): 128 from a switch the SM knows or from nowhere,
// 129 on a real switch port, 144, a vendor trap, or an undefined one.
func (f *fuzzer) trap(rng *rand.Rand) []byte {
	var n *smp.Notice
	sw := f.switchLIDs[rng.Intn(len(f.switchLIDs))]
	switch rng.Intn(6) {
	case 0, 1:
		n = smp.NewTrap128(sw)
	case 2:
		n = smp.NewTrap128(uint16(rng.Intn(0x10000)))
	case 3:
		n, _ = smp.NewLinkTrap(smp.TrapLinkIntegrity, 2, sw, uint8(1+rng.Intn(8)))
	case 4:
		n = smp.NewTrap144(3, smp.Trap144{LID: uint16(rng.Intn(0x10000)), CapabilityMask: rng.Uint32()})
	default:
		n = &smp.Notice{IsGeneric: rng.Intn(2) == 0, TrapNumber: uint16(rng.Intn(0x10000)), IssuerLID: uint16(rng.Intn(0x10000))}
	}
	s := smp.NewLIDGet(smp.AttrNotice, 0)
	s.Method = smp.MethodTrap
	_ = s.SetAttr(n)
	b, _ := s.Encode()
	return b
}

// sendQuery sends one flood query: the SA requests a client would send.
func (f *fuzzer) sendQuery(i int) {
	f.mu.Lock()
	rng := f.rng
	var r *smp.SAMAD
	switch i % 4 {
	case 0, 1:
		r = smp.NewSAMAD(smp.MethodGet, smp.SAAttrPathRecord)
		r.ComponentMask = smp.PRCompSLID | smp.PRCompDLID
		pr := smp.PathRecord{SLID: f.switchLIDs[0], DLID: f.switchLIDs[rng.Intn(len(f.switchLIDs))]}
		_ = pr.MarshalTo(r.Data[:])
	case 2:
		r = smp.NewSAMAD(smp.MethodGetTable, smp.SAAttrNodeRecord)
	default:
		r = smp.NewSAMAD(smp.MethodGetTable, smp.SAAttrPathRecord)
		r.ComponentMask = ^uint64(0) // absurd
	}
	f.mu.Unlock()
	b := make([]byte, smp.MADLen)
	_ = r.EncodeTo(b)
	f.send(b, 0, 1)
}

// sendTrap sends one flood trap.
func (f *fuzzer) sendTrap(i int) {
	f.mu.Lock()
	b := f.trap(f.rng)
	f.mu.Unlock()
	f.send(b, 0, 0)
}

// receive reads until stopRecv, checking every answer.
func (f *fuzzer) receive() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			p, err := f.c.Recv(f.ctx)
			var be *transport.BounceError
			switch {
			case errors.As(err, &be):
				f.bounced.Add(1)
				continue
			case err != nil:
				return
			}
			f.check(p)
		}
	}()
	return done
}

func (f *fuzzer) check(p transport.Packet) {
	m := p.MAD
	if len(m) < 24 || m[3]&smp.MethodResponse == 0 {
		return // a request for us (none expected) or a runt
	}
	f.answers.Add(1)
	tid := binary.BigEndian.Uint64(m[8:]) & (1<<48 - 1)
	f.mu.Lock()
	req, ok := f.reqs[tid]
	f.mu.Unlock()
	status := binary.BigEndian.Uint16(m[4:])
	if m[1] == smp.ClassSMPDR {
		status &= 0x7FFF
	}
	key := fmt.Sprintf("class %#02x status %#04x", m[1], status)
	v, _ := f.byStatus.LoadOrStore(key, new(atomic.Uint64))
	v.(*atomic.Uint64).Add(1)
	var why string
	switch {
	case !ok:
		why = "answers no request"
	case m[1] != req.class:
		why = fmt.Sprintf("class %#02x for a request of class %#02x", m[1], req.class)
	case binary.BigEndian.Uint16(m[16:]) != req.attr:
		why = fmt.Sprintf("attribute %#04x for a request of %#04x", binary.BigEndian.Uint16(m[16:]), req.attr)
	case m[1] == smp.ClassSA && m[2] != smp.SAClassVersion, m[1] != smp.ClassSA && m[2] != smp.SMPClassVersion:
		why = fmt.Sprintf("class version %d", m[2])
	}
	if why != "" {
		if f.bad.Add(1) == 1 {
			f.badMu.Lock()
			f.badFirst = fmt.Sprintf("%s: %x", why, m[:64])
			f.badMu.Unlock()
		}
	}
}

func (f *fuzzer) firstBad() string {
	f.badMu.Lock()
	defer f.badMu.Unlock()
	return f.badFirst
}

func (f *fuzzer) summary() string {
	var keys []string
	f.byStatus.Range(func(k, v any) bool {
		keys = append(keys, fmt.Sprintf("%s: %d", k, v.(*atomic.Uint64).Load()))
		return true
	})
	sort.Strings(keys)
	return fmt.Sprintf("%d sent, %d send errors, %d answers, %d bounced by ibsim; answers by status: %s",
		f.sent.Load(), f.sendErrs.Load(), f.answers.Load(), f.bounced.Load(), strings.Join(keys, ", "))
}

// checkSpecAnswers sends, from a client no limit has touched, the hostile
// requests whose answer the spec fixes, and checks it.
func checkSpecAnswers(t *testing.T, pt transport.Transport, simLog string, smLID uint16, smGUID, smKey uint64, path []uint8) {
	t.Helper()
	ctx := context.Background()
	ask := func(mad []byte, dr bool) (transport.Packet, error) {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		p := transport.Packet{DLID: smLID, QP: 1, MAD: mad}
		if mad[1] == smp.ClassSMPLID {
			p.QP = 0
		}
		if dr {
			p.DLID, p.QP = smp.PermissiveLID, 0
		}
		return pt.Do(c, p)
	}
	// No answer shows as the transport's timeout or, when the context's
	// second runs out first under load, as the context's deadline.
	unanswered := func(err error) bool {
		return errors.Is(err, transport.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
	}
	sa := func(version uint8, key uint64) []byte {
		r := smp.NewSAMAD(smp.MethodGetTable, smp.SAAttrNodeRecord)
		r.SMKey = key
		b := make([]byte, smp.MADLen)
		_ = r.EncodeTo(b)
		b[2] = version
		return b
	}
	// SA class versions: 0 and 1 reach ibsm and are answered "bad
	// version"; ibsim itself drops class versions above 2
	// (decode_sim_MAD: "bad smp headers (1st word)"), so 3 and 255 get no
	// answer on this transport (host/sa's unit tests show ibsm's answer).
	for _, v := range []uint8{0, 1} {
		resp, err := ask(sa(v, 0), false)
		if err != nil {
			t.Errorf("SA class version %d: %v", v, err)
		} else if st := binary.BigEndian.Uint16(resp.MAD[4:]); st != smp.StatusBadVersion || resp.MAD[2] != smp.SAClassVersion {
			t.Errorf("SA class version %d: answered version %d status %#04x, want 2 and %#04x", v, resp.MAD[2], st, smp.StatusBadVersion)
		}
	}
	badHeaders := func() int {
		b, _ := os.ReadFile(simLog)
		return strings.Count(string(b), "bad smp headers (1st word)")
	}
	before := badHeaders()
	for _, v := range []uint8{3, 255} {
		if _, err := ask(sa(v, 0), false); !unanswered(err) {
			t.Errorf("SA class version %d: %v; ibsim drops class versions above 2, expected no answer", v, err)
		}
	}
	if n := badHeaders() - before; n != 2 {
		t.Logf("ibsim logged %d 'bad smp headers' drops for the 2 SA MADs of class version 3 and 255", n)
	}
	// A wrong SM_Key: discarded (C15-0.1.5); the right one or none: answered.
	if _, err := ask(sa(2, smKey^1), false); !unanswered(err) {
		t.Errorf("SA request with a wrong SM_Key: %v, want no answer", err)
	}
	for _, key := range []uint64{0, smKey} {
		if resp, err := ask(sa(2, key), false); err != nil || binary.BigEndian.Uint16(resp.MAD[4:]) != 0 {
			t.Errorf("SA request with SM_Key %#x: %v", key, err)
		}
	}
	// Undefined SA method: 0x0008.
	if resp, err := ask(func() []byte { b := sa(2, 0); b[3] = 0x10; return b }(), false); err != nil ||
		binary.BigEndian.Uint16(resp.MAD[4:]) != smp.StatusUnsupportedMethod {
		t.Errorf("SA method 0x10: %v %x", err, resp.MAD)
	}
	// A rogue SM's SMInfo Sets (wrong SM_Key, best priority, lowest
	// GUID): answered with our SMInfo; ibsm stays master. (Whether the
	// answer shows our SM_Key is the election's rule: IBA 14.2.5.13 hides
	// it only behind M_Key protection, which this fabric does not use.)
	for _, dr := range []bool{false, true} {
		for _, ctl := range []uint32{1, 2, 3, 4, 5} { // HANDOVER, ACKNOWLEDGE, DISABLE, STANDBY, DISCOVER
			var s *smp.SMP
			if dr {
				s, _ = smp.NewDRSet(smp.AttrSMInfo, ctl, path, nil)
			} else {
				s, _ = smp.NewLIDSet(smp.AttrSMInfo, ctl, nil)
			}
			_ = s.SetAttr(&smp.SMInfo{GUID: 1, SMKey: smKey + 1, Priority: 15, SMState: smp.SMStateMaster})
			b, _ := s.Encode()
			resp, err := ask(b, dr)
			if err != nil {
				t.Errorf("rogue SMInfo Set control %d (DR %v): %v", ctl, dr, err)
				continue
			}
			got, err := smp.Decode(resp.MAD)
			var si smp.SMInfo
			if err == nil {
				err = got.Attr(&si)
			}
			if err != nil || got.Status != 0 || si.GUID != smGUID || si.SMState != smp.SMStateMaster {
				t.Errorf("rogue SMInfo Set control %d (DR %v): answer %+v status %#x (%v); want our SMInfo, master", ctl, dr, si, got.Status, err)
			}
		}
	}
	// SMP class version 0 or 2 (ibsim passes them): 0x0004.
	for _, v := range []uint8{0, 2} {
		b, _ := smp.NewLIDGet(smp.AttrSMInfo, 0).Encode()
		b[2] = v
		resp, err := ask(b, false)
		if err != nil || binary.BigEndian.Uint16(resp.MAD[4:]) != smp.StatusBadVersion {
			t.Errorf("SMP class version %d: %v %x", v, err, resp.MAD)
		}
	}
}

// repairSMLID sets the SM's own port to another LID with a directed-route
// PortInfo Set and waits for ibsm to put the LID back.
func repairSMLID(t *testing.T, pt transport.Transport, path []uint8, smLID uint16) {
	t.Helper()
	ctx := context.Background()
	read := func() (smp.PortInfo, error) {
		var pi smp.PortInfo
		s, _ := smp.NewDRGet(smp.AttrPortInfo, 0, path)
		b, _ := s.Encode()
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		resp, err := pt.Do(c, transport.Packet{DLID: smp.PermissiveLID, MAD: b})
		if err != nil {
			return pi, err
		}
		got, err := smp.Decode(resp.MAD)
		if err != nil {
			return pi, err
		}
		return pi, got.Attr(&pi)
	}
	pi, err := read()
	if err != nil || pi.LID != smLID {
		t.Fatalf("SM port PortInfo: LID %d (%v), want %d", pi.LID, err, smLID)
	}
	moved := smLID + 500
	pi.LID = moved
	pi.PortState, pi.PortPhysicalState = 0, 0 // no change
	var data [smp.DataLen]byte
	_ = pi.MarshalTo(data[:])
	s, _ := smp.NewDRSet(smp.AttrPortInfo, 0, path, data[:])
	b, _ := s.Encode()
	c, cancel := context.WithTimeout(ctx, time.Second)
	_, err = pt.Do(c, transport.Packet{DLID: smp.PermissiveLID, MAD: b})
	cancel()
	if err != nil {
		t.Fatalf("PortInfo Set to the SM's port: %v", err)
	}
	start := time.Now()
	sawMoved := false
	for time.Since(start) < 10*time.Second {
		pi, err := read()
		if err == nil && pi.LID == moved {
			sawMoved = true
		}
		if err == nil && pi.LID == smLID {
			if !sawMoved {
				t.Logf("the SM port's LID was back before the first read")
			}
			t.Logf("PortInfo Set moved the SM's LID %d → %d; ibsm put it back within %s", smLID, moved, time.Since(start).Round(10*time.Millisecond))
			time.Sleep(time.Second) // the sweep that repaired it ends
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("the SM port's LID is not back to %d 10 s after a PortInfo Set moved it to %d", smLID, moved)
}
