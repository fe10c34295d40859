package integration

// Helpers for the SM election tests (election_test.go): subnet manager
// processes (ibsm or OpenSM) attached to chosen CAs of one ibsim, and an
// observer that reads every SM's SMInfo and every CA's PortInfo over raw
// SMPs, fast enough to sample the subnet continuously.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/integration/diags"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// Election timing used by every SM in these tests (ibsm and OpenSM alike).
const (
	elPoll    = time.Second // polling_interval, sminfo_polling_timeout
	elRetries = 3           // polling_retries, polling_retry_number
	elSweep   = time.Second // sweep_interval
)

// smKind is the SM implementation a process runs.
type smKind string

const (
	kindIBSM   smKind = "ibsm"
	kindOpenSM smKind = "opensm"
)

// smSpec is what an SM is told in its config.
type smSpec struct {
	kind     smKind
	priority int
	key      uint64 // SM_Key; OpenSM's default is 1
	honor    bool   // ibsm honor_priority (OpenSM always hands over to a better SM)
}

// smProc is one SM process attached to a CA of the rig; it can be killed
// (SIGKILL) and started again with the same config and state directory.
type smProc struct {
	t    *testing.T
	r    *rig
	name string
	spec smSpec
	node *netfile.Node
	dir  string
	cfg  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	out    *lockedBuffer // stdout+stderr of every start, in turn
	starts int
}

func (p *smProc) portGUID() uint64 { return p.node.Ports[1].GUID }

// newSM prepares (does not start) an SM named name on CA node.
func newSM(t *testing.T, r *rig, name string, node *netfile.Node, spec smSpec) *smProc {
	t.Helper()
	p := &smProc{t: t, r: r, name: name, spec: spec, node: node, dir: filepath.Join(r.dir, name), out: &lockedBuffer{}}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	switch spec.kind {
	case kindIBSM:
		fmt.Fprintf(&b, "fabric {\n  transport = \"ibsim\"\n  socket = %q\n  attach = %q\n}\n", r.env.Sockname, node.Name)
		fmt.Fprintf(&b, "sm {\n  state_dir = %q\n  mad_timeout = \"200ms\"\n  mad_retries = 3\n  sweep_interval = %q\n  plugin_timeout = \"60s\"\n",
			filepath.Join(p.dir, "state"), elSweep)
		fmt.Fprintf(&b, "  priority = %d\n  polling_interval = %q\n  polling_retries = %d\n  honor_priority = %v\n", spec.priority, elPoll, elRetries, spec.honor)
		// Always written: ibsm's default (OpenSM's, 1) is not the 0 a spec
		// without a key means.
		fmt.Fprintf(&b, "  sm_key = \"%#016x\"\n", spec.key)
		b.WriteString("}\n")
		for _, pl := range []struct{ kind, name string }{{"routing_engine", "updn"}, {"lid_assigner", "sequential"}, {"vl_assigner", "single"}} {
			fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n}\n", pl.kind, pl.name, filepath.Join(binDir, "ibsm-plugin-"+pl.name))
		}
		b.WriteString("routing {\n  engine = \"updn\"\n  lid_assigner = \"sequential\"\n  vl_assigner = \"single\"\n}\n")
		p.cfg = filepath.Join(p.dir, "ibsm.hcl")
	case kindOpenSM:
		fmt.Fprintf(&b, "sm_key %#016x\nsm_priority %d\nsweep_interval %d\nsminfo_polling_timeout %d\npolling_retry_number %d\n",
			spec.key, spec.priority, int(elSweep/time.Second), elPoll.Milliseconds(), elRetries)
		p.cfg = filepath.Join(p.dir, "opensm.conf")
	}
	if err := os.WriteFile(p.cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s (%s on %s) log:\n%s", name, spec.kind, node.Name, tail(p.logText(), 12000))
		}
	})
	return p
}

// start runs the SM (again).
func (p *smProc) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			p.t.Fatalf("%s started twice", p.name)
		}
	}
	var cmd *exec.Cmd
	switch p.spec.kind {
	case kindIBSM:
		cmd = exec.Command(filepath.Join(binDir, "ibsm"), "run", "--config", p.cfg)
	case kindOpenSM:
		log := filepath.Join(p.dir, fmt.Sprintf("osm-%d.log", p.starts))
		cmd = exec.Command(p.r.env.Paths["opensm"], "-F", p.cfg, "-f", log, "-D", "0x03")
		cmd.Env = append(os.Environ(), "LD_PRELOAD="+p.r.env.Preload, "IBSIM_SOCKNAME="+p.r.env.Sockname,
			"SIM_HOST="+p.node.Name, "OSM_CACHE_DIR="+p.dir, "OSM_TMP_DIR="+p.dir)
	}
	cmd.Dir = p.dir
	fmt.Fprintf(p.out, "==== start %d at %s\n", p.starts, time.Now().Format("15:04:05.000"))
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	p.starts++
}

// kill is kill -9 of the SM process (its plugins see their parent die).
func (p *smProc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	plugins := children(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	<-done
	fmt.Fprintf(p.out, "==== killed at %s\n", time.Now().Format("15:04:05.000"))
	// The plugins go by their parent-death signal; make sure.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		alive := 0
		for _, c := range plugins {
			if syscall.Kill(c, 0) == nil && !zombie(c) {
				alive++
			}
		}
		if alive == 0 {
			break
		}
	}
	for _, c := range plugins {
		syscall.Kill(c, syscall.SIGKILL)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// stop ends the SM at test end (SIGTERM, then SIGKILL).
func (p *smProc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	plugins := children(cmd.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for _, c := range plugins {
		syscall.Kill(c, syscall.SIGKILL)
	}
}

// logText is what the SM logged over all its starts.
func (p *smProc) logText() string {
	s := p.out.String()
	if p.spec.kind == kindOpenSM {
		for i := 0; i < p.starts; i++ {
			b, _ := os.ReadFile(filepath.Join(p.dir, fmt.Sprintf("osm-%d.log", i)))
			s += fmt.Sprintf("==== osm-%d.log\n%s", i, b)
		}
	}
	return s
}

var reUp = regexp.MustCompile(`SUBNET UP: .*\btotal=(\S+) .*\blft_blocks_sent=(\d+) lft_blocks_total=(\d+) lft_blocks_read=(\d+)`)

// ibsmUp is one "SUBNET UP" log line of ibsm.
type ibsmUp struct {
	total                  time.Duration
	sent, blocks, readBack int
}

// ups lists ibsm's SUBNET UP lines since its last start.
func (p *smProc) ups() []ibsmUp {
	s := p.out.String()
	if i := strings.LastIndex(s, "==== start "); i >= 0 {
		s = s[i:]
	}
	var out []ibsmUp
	for _, m := range reUp.FindAllStringSubmatch(s, -1) {
		d, _ := time.ParseDuration(m[1])
		sent, _ := strconv.Atoi(m[2])
		total, _ := strconv.Atoi(m[3])
		read, _ := strconv.Atoi(m[4])
		out = append(out, ibsmUp{d, sent, total, read})
	}
	return out
}

// observer is a plain (non-SM) client of ibsim at one CA that reads the
// SMInfo of the SMs and the PortInfo of every CA by directed route.
type observer struct {
	mu    sync.Mutex
	last  string // what settled found missing last
	c     *mad.Client
	tr    transport.Transport
	paths map[string]mad.Path // to every node, by name
	cas   []*netfile.Node
}

func newObserver(t *testing.T, r *rig, at *netfile.Node) *observer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := ibsim.Dial(ctx, ibsim.Options{SockName: r.env.Sockname, Attach: at.Name})
	if err != nil {
		t.Fatalf("observer: %v", err)
	}
	tr := transport.New(conn, transport.Options{Timeout: 300 * time.Millisecond, Retries: 1, Window: 16})
	t.Cleanup(func() { tr.Close() })
	o := &observer{c: &mad.Client{T: tr}, tr: tr, paths: drPaths(r.net.Node(at.Name))}
	for _, n := range r.net.Nodes {
		if n.Type == topology.CA && n.Ports[1].Peer != nil {
			o.cas = append(o.cas, n)
		}
	}
	return o
}

// drPaths are the directed routes from CA at (out of its port 1) to every
// node it reaches, by node name, shortest first.
func drPaths(at *netfile.Node) map[string]mad.Path {
	out := map[*netfile.Node]mad.Path{at: {}}
	byName := func() map[string]mad.Path {
		m := map[string]mad.Path{}
		for n, p := range out {
			m[n.Name] = p
		}
		return m
	}
	if at.Ports[1].Peer == nil {
		return byName()
	}
	first := at.Ports[1].Peer
	out[first] = mad.Path{1}
	queue := []*netfile.Node{first}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n.Type != topology.Switch {
			continue // DR SMPs are forwarded by switches only
		}
		for p := 1; p <= n.NumPorts(); p++ {
			m := n.Ports[p].Peer
			if m == nil {
				continue
			}
			if _, ok := out[m]; ok {
				continue
			}
			out[m] = append(append(mad.Path{}, out[n]...), uint8(p))
			queue = append(queue, m)
		}
	}
	return byName()
}

// smInfo reads the SMInfo of the SM attached at CA node.
func (o *observer) smInfo(ctx context.Context, node *netfile.Node) (smp.SMInfo, error) {
	var si smp.SMInfo
	path, ok := o.paths[node.Name]
	if !ok {
		return si, fmt.Errorf("no route to %s", node.Name)
	}
	err := o.c.Get(ctx, path, smp.AttrSMInfo, 0, &si)
	return si, err
}

// masters reads every SM's state twice, forward then backward, and
// returns those master at both reads: a handover between two reads is not
// mistaken for two masters, and any SM master at both of its reads was
// master at every read in between.
func (o *observer) masters(ctx context.Context, sms []*smProc) []*smProc {
	first := make([]bool, len(sms))
	for i, p := range sms {
		si, err := o.smInfo(ctx, p.node)
		first[i] = err == nil && si.SMState == smp.SMStateMaster
	}
	var out []*smProc
	for i := len(sms) - 1; i >= 0; i-- {
		if !first[i] {
			continue
		}
		if si, err := o.smInfo(ctx, sms[i].node); err == nil && si.SMState == smp.SMStateMaster {
			out = append(out, sms[i])
		}
	}
	return out
}

// portInfos reads port 1 of every CA: LIDs by port GUID and how many CA
// ports name each MasterSMLID.
func (o *observer) portInfos(ctx context.Context) (lids map[uint64]uint16, smLIDs map[uint16]int, err error) {
	lids, smLIDs = map[uint64]uint16{}, map[uint16]int{}
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, n := range o.cas {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var pi smp.PortInfo
			err := o.c.Get(ctx, o.paths[n.Name], smp.AttrPortInfo, 1, &pi)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = fmt.Errorf("PortInfo of %s: %w", n.Name, err)
				}
				return
			}
			lids[n.Ports[1].GUID] = pi.LID
			smLIDs[pi.MasterSMLID]++
		}()
	}
	wg.Wait()
	return lids, smLIDs, first
}

// sample is one observation of who is master.
type sample struct {
	at      time.Time
	masters []string
}

// sampler watches the masters in the background.
type sampler struct {
	mu      sync.Mutex
	samples []sample
	quit    chan struct{}
	done    chan struct{}
}

// sampleMasters samples o.masters(sms) every period until stop.
func (o *observer) sampleMasters(sms []*smProc, period time.Duration) *sampler {
	s := &sampler{quit: make(chan struct{}), done: make(chan struct{})}
	sms = append([]*smProc(nil), sms...)
	go func() {
		defer close(s.done)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			m := o.masters(ctx, sms)
			cancel()
			names := make([]string, len(m))
			for i, p := range m {
				names[i] = p.name
			}
			sort.Strings(names)
			s.mu.Lock()
			s.samples = append(s.samples, sample{time.Now(), names})
			s.mu.Unlock()
			select {
			case <-s.quit:
				return
			case <-time.After(period):
			}
		}
	}()
	return s
}

func (s *sampler) stop() []sample {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}

// firstMaster is the first sample at or after from in which name alone
// is master.
func (s *sampler) firstMaster(from time.Time, name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.samples {
		if !x.at.Before(from) && len(x.masters) == 1 && x.masters[0] == name {
			return x.at, true
		}
	}
	return time.Time{}, false
}

// doubleMasters are the stretches of samples with more than one master:
// their first and last sample times and who.
type window struct {
	from, to time.Time
	masters  []string
	samples  int
}

func doubleMasters(ss []sample) []window {
	var out []window
	var cur *window
	for _, x := range ss {
		if len(x.masters) > 1 {
			if cur == nil {
				out = append(out, window{from: x.at, masters: x.masters})
				cur = &out[len(out)-1]
			}
			cur.to = x.at
			cur.samples++
			continue
		}
		cur = nil
	}
	return out
}

// pollUntil polls cond until it holds (returning when) or fails the test,
// saying what why reports.
func pollUntil(t *testing.T, within time.Duration, what string, cond func(context.Context) bool, why ...func() string) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ok := cond(ctx)
		cancel()
		if ok {
			return time.Now()
		}
		if time.Now().After(deadline) {
			var last []string
			for _, w := range why {
				last = append(last, w())
			}
			t.Fatalf("not within %s: %s %s", within, what, strings.Join(last, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settled reports whether want is master, every other SM of sms standby,
// and every CA port names want's LID as its SM LID; it returns want's LID.
func (o *observer) settled(ctx context.Context, want *smProc, sms []*smProc) (uint16, bool) {
	lid, why := o.settledWhy(ctx, want, sms)
	o.mu.Lock()
	o.last = why
	o.mu.Unlock()
	return lid, why == ""
}

// settledWhy is settled saying what does not hold yet ("" if all does).
func (o *observer) settledWhy(ctx context.Context, want *smProc, sms []*smProc) (uint16, string) {
	for _, p := range sms {
		si, err := o.smInfo(ctx, p.node)
		if err != nil {
			return 0, fmt.Sprintf("%s: SMInfo: %v", p.name, err)
		}
		st := uint8(smp.SMStateStandby)
		if p == want {
			st = smp.SMStateMaster
		}
		if si.SMState != st {
			return 0, fmt.Sprintf("%s: state %d, want %d", p.name, si.SMState, st)
		}
	}
	lids, smLIDs, err := o.portInfos(ctx)
	if err != nil {
		return 0, err.Error()
	}
	lid := lids[want.portGUID()]
	if lid == 0 || len(smLIDs) != 1 || smLIDs[lid] != len(o.cas) {
		return lid, fmt.Sprintf("%s has LID %d; CA ports per SM LID: %v", want.name, lid, smLIDs)
	}
	return lid, ""
}

// lastWhy is what the last settled call found missing.
func (o *observer) lastWhy() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

// toolChecks runs the stock tools at a settled moment: sminfo from three
// CAs names master as the master at its LID, sminfo at each other SM's
// LID says standby, and smpquery portinfo of a sample of CAs shows
// master's LID as SMLid.
func toolChecks(t *testing.T, r *rig, master *smProc, lid uint16, others []*smProc, lids map[uint64]uint16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cas := caNodes(r.net)
	smNode := map[*netfile.Node]bool{master.node: true}
	for _, p := range others {
		smNode[p.node] = true
	}
	var hosts []*netfile.Node
	for _, i := range []int{0, len(cas) / 2, len(cas) - 1, 1, len(cas)/2 + 1, len(cas) - 2} {
		if n := cas[i]; !smNode[n] && len(hosts) < 3 {
			hosts = append(hosts, n)
		}
	}
	for _, h := range hosts {
		env := *r.env
		env.Host = h.Name
		si, err := env.SMInfo(ctx)
		if err != nil {
			t.Errorf("sminfo from %s: %v", h.Name, err)
			continue
		}
		if si.State != diags.SMStateMaster || si.GUID != master.portGUID() || si.LID != lid {
			t.Errorf("sminfo from %s: %+v; want master %s (guid %#x, lid %d)", h.Name, si, master.name, master.portGUID(), lid)
		}
	}
	env := *r.env
	env.Host = hosts[0].Name
	for _, p := range others {
		out, err := env.Run(ctx, "sminfo", strconv.Itoa(int(lids[p.portGUID()])))
		if err != nil {
			t.Errorf("sminfo at %s's LID %d: %v", p.name, lids[p.portGUID()], err)
			continue
		}
		si, err := diags.ParseSMInfo(out)
		if err != nil || si.State != 2 || si.GUID != p.portGUID() {
			t.Errorf("sminfo at %s's LID %d: %+v %v; want standby", p.name, lids[p.portGUID()], si, err)
		}
	}
	step := max(len(cas)/8, 1)
	for i := 0; i < len(cas); i += step {
		n := cas[i]
		out, err := env.Run(ctx, "smpquery", "portinfo", strconv.Itoa(int(lids[n.Ports[1].GUID])), "1")
		if err != nil {
			t.Errorf("smpquery portinfo of %s: %v", n.Name, err)
			continue
		}
		m := reSMLid.FindStringSubmatch(out)
		if m == nil || m[1] != strconv.Itoa(int(lid)) {
			t.Errorf("smpquery portinfo of %s (LID %d): SMLid %v; want %d", n.Name, lids[n.Ports[1].GUID], m, lid)
		}
	}
}

var reSMLid = regexp.MustCompile(`(?m)^SMLid:\.*(\d+)$`)

// fabricLIDs is every CA port's and switch's LID as ibnetdiscover shows it.
func fabricLIDs(t *testing.T, r *rig) map[uint64]uint16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, _, err := r.env.Discover(ctx)
	if err != nil {
		t.Fatalf("ibnetdiscover: %v", err)
	}
	if len(d.LIDs) == 0 {
		t.Fatal("ibnetdiscover shows no LIDs")
	}
	return d.LIDs
}

// sameLIDs reports every port whose LID differs between two
// ibnetdiscover runs (and ports without a LID).
func sameLIDs(before, after map[uint64]uint16) []string {
	var diff []string
	for g, l := range before {
		if after[g] != l || l == 0 {
			diff = append(diff, fmt.Sprintf("%#x: %d → %d", g, l, after[g]))
		}
	}
	for g := range after {
		if _, ok := before[g]; !ok {
			diff = append(diff, fmt.Sprintf("%#x: new", g))
		}
	}
	sort.Strings(diff)
	return diff
}

// percentile returns the p-th percentile (0..1) of ds, nearest rank.
func durStats(ds []time.Duration) (median, maxD time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		median = s[len(s)/2]
	} else {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return median, s[len(s)-1]
}
