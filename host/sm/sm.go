// Package sm is the subnet manager's sweep loop: heavy sweeps (discover,
// plan, program), light sweeps (poll switches for port state changes) and
// trap handling, with the phase times and SMP counts reported at SUBNET UP.
package sm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/internal/flood"
	"github.com/ibsm/ibsm/host/lidstore"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Options configure an SM.
type Options struct {
	LMC           uint8
	SweepInterval time.Duration
	// LIDFile is where port GUID → LID persists ("" = not persisted).
	LIDFile string
	// ProgrammedFile, when set, records what was last programmed (in the
	// background) for ibsm plan diff (rollout.ProgrammedFile).
	ProgrammedFile string
	// Parallel bounds the goroutines of the SMPs still sent one Set or Get
	// at a time (polls, SL2VL and VLArbitration tables, ports with a foreign
	// M_Key); discovery and the bulk of programming go out in batches that
	// the MAD window bounds.
	Parallel int
	// TrapCoalesce is how long the sweep loop waits at most after a trap
	// for more traps before it re-routes once for all of them (default
	// 50ms); it sweeps sooner once no trap came for TrapQuiet (default
	// 10ms, at most TrapCoalesce).
	TrapCoalesce, TrapQuiet time.Duration
	// TrapMinInterval is the least time between two trap-driven sweeps, so
	// a flapping link cannot keep the SM re-routing (default 500ms).
	TrapMinInterval time.Duration
	// CAChecksPerSweep is how many CA ports each light sweep re-reads (in
	// turn, so every CA port is checked every ceil(CAs/N) light sweeps) to
	// catch changes no switch reports, e.g. a CA whose LID was reset
	// (default 64; negative disables).
	CAChecksPerSweep int
	// AuditSMPs is how many items of what the programmer wrote each
	// periodic light sweep reads back (LFT blocks, switch port-0 PortInfo
	// and SwitchInfo, SL2VL and VLArbitration tables, OperationalVLs), in
	// turn, so all of it is checked every ceil(items/AuditSMPs) light
	// sweeps; a difference is repaired with one more SMP. Default (0):
	// enough for one rotation per DefaultAuditPeriod, at least
	// DefaultAuditSMPs; negative disables.
	AuditSMPs int
	// ArmAhead moves the switch ports of Init–Init links to Armed while
	// the plan is computed (armAhead): on a fabric whose SMPs wait on the
	// wire that overlaps a share of distribution with the routing phase,
	// but a plan refused afterwards leaves those ports Armed (Armed
	// forwards no data). Off, nothing is written before a plan is verified.
	ArmAhead bool
	// Election are the SM's settings in the SMInfo protocol (priority,
	// SM_Key, polling of the master, handover).
	Election ElectionOptions
}

// Agent answers the requests other nodes address to the SM (SA queries,
// SMInfo). Handle runs on its own goroutine, concurrently with sweeps.
type Agent interface {
	// Handle answers p if it is a request for the agent and reports whether
	// it was one.
	Handle(ctx context.Context, p transport.Packet) bool
}

// Observer hears what the sweep loop does besides heavy and incremental
// sweeps. Calls come from the sweep loop and must not block.
type Observer interface {
	// LightSweep: one periodic poll of the switches and CA share, its
	// SMPs (requests sent) and its error.
	LightSweep(took time.Duration, smps uint64, err error)
	// Trap: a Notice trap arrived (generic: its trap number; vendor: 0).
	Trap(number, fromLID uint16)
}

func (s *SM) observeLight(took time.Duration, st0 transport.Stats, err error) {
	if s.Observer != nil {
		st := s.T.Stats()
		s.Observer.LightSweep(took, (st.Gets+st.Sets+st.Others)-(st0.Gets+st0.Sets+st0.Others), err)
	}
}

func (s *SM) observeTrap(n smp.Notice, slid uint16) {
	if s.Observer != nil {
		num := n.TrapNumber
		if !n.IsGeneric {
			num = 0
		}
		s.Observer.Trap(num, slid)
	}
}

// SM drives one subnet.
type SM struct {
	T    transport.Transport
	Pipe *pipeline.Runner
	Opts Options
	Log  hclog.Logger
	// Agent, when set, answers SA and SMInfo requests while Run sweeps.
	Agent Agent
	// Observer, when set before Run, hears light sweeps and traps
	// (status and metrics; heavy sweeps go to Run's onSweep).
	Observer Observer

	client *mad.Client
	disc   *discovery.Discoverer
	prog   *program.Programmer

	mu      sync.Mutex
	fabric  *discovery.Fabric
	snap    snapshot // fabric's topology, for the next incremental sweep to patch
	clean   cleanModel
	smsOf   fabricSMs // the remote SMs of the last fabric model asked (knownSMs)
	applied *Applied
	lids    *lidIndex // LID → port of applied, built on first use
	caNext  int       // light sweep CA check cursor
	// regsKept: the SA registrations of this SM's last term were restored
	// (KeepRegistrations); its first term re-registers only strangers.
	regsKept bool

	auditItems atomic.Int64 // what one audit rotation covers, as last seen

	mc *multicast // multicast.go; nil until EnableMulticast

	elect *election
	cand  *candidate        // candidate {}: shadow plan and staged rollout (candidate.go)
	rec   *rollout.Recorder // Opts.ProgrammedFile's writer (plandiff.go)

	parts partitionState // P_Key tables (partitions.go)
	// lidFile is Opts.LIDFile as last read or written (lidfile.go).
	lidFile lidFile

	progress Progress // progress.go; nil: nobody draws progress
	notices  noticeQueue
	counts   topoCounts // the last snapshot route counted

	// crossCheck (tests only): compute the bookkeeping an incremental
	// sweep restricts to the changed nodes (since) also whole, and fail
	// the sweep where the two differ.
	crossCheck bool
}

// Applied is the plan currently programmed.
type Applied struct {
	Topo   *topology.Topology
	Result *pipeline.Result
	At     time.Time
}

// Phase is the time and SMPs one phase took.
type Phase struct {
	Time time.Duration
	Gets uint64
	Sets uint64
}

// Report describes one heavy sweep.
type Report struct {
	Discovery, Routing, Distribution Phase
	// Partitions is the P_Key tables' programming after distribution (zero
	// when partitions are not managed); PKeys says what it read and sent.
	Partitions Phase
	PKeys      program.PKeyStats
	// PKeysKept: the sweep changed nothing the P_Key plan in force
	// depends on (a cable between switches) and kept it without a read.
	PKeysKept                   bool
	Total                       time.Duration
	Nodes, Switches, CAs, Links int
	// Rerouted is false when the fabric and config were unchanged and the
	// plan in force was kept (no plugin call, no Set).
	Rerouted    bool
	Engine      string
	PluginCalls int
	// Stages splits the routing phase (cached stages take ~0).
	Stages   pipeline.Timings
	Program  program.Stats
	Warnings []string
	Retries  uint64
	Timeouts uint64
	Attempts []pipeline.Attempt
	// Incremental is set when discovery re-read only what changed
	// (Update says what it found); Fallback says why a sweep that was
	// meant to be incremental re-discovered everything instead.
	Incremental bool
	Update      discovery.UpdateSummary
	Fallback    string
	// Traps is how many traps this sweep answers (coalesced).
	Traps int
	// State is the SM's SMInfo state after the sweep's election (only a
	// heavy sweep elects): a sweep that left the SM standby programmed
	// nothing.
	State uint8
}

// New wires an SM.
func New(t transport.Transport, pipe *pipeline.Runner, opts Options, log hclog.Logger) *SM {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := &mad.Client{T: t}
	rec := newRecorder(opts.ProgrammedFile, log)
	return &SM{
		T: t, Pipe: pipe, Opts: opts, Log: log,
		client: c,
		disc:   &discovery.Discoverer{C: c, Log: log.Named("discovery")},
		prog:   &program.Programmer{C: c, Log: log.Named("program"), Parallel: opts.Parallel, Record: programRecord(rec, opts.AuditSMPs < 0)},
		elect:  newElection(opts.Election),
		rec:    rec,
	}
}

// Reconfigure swaps in a new pipeline and LMC; the next heavy sweep uses
// them. Stage results of unchanged plugins stay cached.
func (s *SM) Reconfigure(p *pipeline.Runner, lmc uint8) {
	s.mu.Lock()
	s.Pipe, s.Opts.LMC = p, lmc
	s.mu.Unlock()
}

func (s *SM) pipe() (*pipeline.Runner, uint8) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Pipe, s.Opts.LMC
}

// SetSweepInterval changes the light sweep period (SIGHUP); Run takes it
// up at its next trigger.
func (s *SM) SetSweepInterval(d time.Duration) {
	s.mu.Lock()
	s.Opts.SweepInterval = d
	s.mu.Unlock()
}

func (s *SM) sweepInterval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Opts.SweepInterval <= 0 {
		return defaultSweepInterval
	}
	return s.Opts.SweepInterval
}

// Pipeline returns the pipeline the next heavy sweep runs (status names
// its plugins).
func (s *SM) Pipeline() *pipeline.Runner {
	p, _ := s.pipe()
	return p
}

// Applied returns the plan in force (nil before the first SUBNET UP).
func (s *SM) Applied() *Applied {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// Fabric returns the last discovered fabric.
func (s *SM) Fabric() *discovery.Fabric {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fabric
}

func delta(a, b transport.Stats) (gets, sets uint64) { return b.Gets - a.Gets, b.Sets - a.Sets }

// Plan discovers the fabric and computes a verified plan without
// programming anything (ibsm verify / dump).
func (s *SM) Plan(ctx context.Context) (*discovery.Fabric, *topology.Topology, *pipeline.Result, error) {
	fab, topo, err := s.discover(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	res, _, err := s.plan(ctx, fab, topo)
	return fab, topo, res, err
}

// discover walks the fabric and cuts its snapshot.
func (s *SM) discover(ctx context.Context) (*discovery.Fabric, *topology.Topology, error) {
	s.phase("discovery")
	fab, err := s.disc.Run(ctx)
	if err != nil {
		return nil, nil, err
	}
	topo, err := fab.Topology()
	if err != nil {
		return nil, nil, fmt.Errorf("discovered fabric is inconsistent: %w", err)
	}
	return fab, topo, nil
}

// plan runs the pipeline on topo with the LIDs to keep (previousLIDs); it
// also returns how many plugin calls that took.
func (s *SM) plan(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology) (*pipeline.Result, int, error) {
	pipe, lmc := s.pipe()
	prev, err := s.previousLIDs(fab, topo, lmc)
	if err != nil {
		return nil, 0, err
	}
	calls0 := pipe.Calls()
	s.phase("routing")
	res, err := pipe.Run(ctx, pipeline.Input{Topo: topo, LMC: lmc, Previous: prev})
	return res, int(pipe.Calls() - calls0), err
}

// HeavySweep discovers the fabric and, if it or the plan inputs changed,
// computes, verifies and programs a new plan. On any planning error the
// plan in force stays programmed and the error is returned.
func (s *SM) HeavySweep(ctx context.Context) (*Report, error) {
	s.client.Forget() // routes found dead before may answer now
	rep := &Report{}
	start := time.Now()
	st0 := s.T.Stats()
	fab, topo, err := s.discover(ctx)
	if err != nil {
		return nil, err
	}
	master := s.arbitrate(ctx, fab)
	st1 := s.T.Stats()
	rep.Discovery = Phase{Time: time.Since(start)}
	rep.Discovery.Gets, rep.Discovery.Sets = delta(st0, st1)
	rep.State = s.State()
	if !master {
		// A standby (or inactive) SM writes nothing, nor does a master
		// beside another master: it keeps the fabric it saw, so its
		// polls and a takeover start from it.
		countTopo(rep, topo)
		s.mu.Lock()
		s.fabric, s.snap = fab, snapshot{fab: fab, topo: topo}
		s.mu.Unlock()
		rep.Total = time.Since(start)
		s.finishStats(rep, st0)
		return rep, nil
	}
	s.startTerm()
	rep, err = s.route(ctx, rep, fab, topo, start, st0, nil, false, nil)
	if err == nil {
		s.elect.programmed()
	}
	return rep, err
}

// route plans and programs a freshly discovered fabric. clear lists the
// switches whose PortStateChange to clear after programming (nil: all).
// keepPKeys: the fabric changed nothing the P_Key plan in force depends on
// (unaffected); it is kept if the plan's LIDs are the same too.
//
// lin, when not nil, says how fab differs from the clean model of the plan
// in force (an incremental sweep's since): the bookkeeping looks at the
// changed nodes only.
func (s *SM) route(ctx context.Context, rep *Report, fab *discovery.Fabric, topo *topology.Topology, start time.Time, st0 transport.Stats, clear []uint64, keepPKeys bool, lin *since) (*Report, error) {
	rep.Warnings = fab.Warnings
	s.mu.Lock()
	s.counts = s.counts.count(rep, topo)
	s.fabric, s.snap = fab, snapshot{fab: fab, topo: topo}
	cur := s.applied
	if lin != nil && lin.cur != cur {
		lin = nil
	}
	s.mu.Unlock()
	if s.crossCheck {
		var whole Report
		countTopo(&whole, topo)
		if whole.Nodes != rep.Nodes || whole.Switches != rep.Switches || whole.CAs != rep.CAs || whole.Links != rep.Links {
			return rep, fmt.Errorf("cross-check: counted %d nodes, %d links from the last snapshot; whole %d, %d", rep.Nodes, rep.Links, whole.Nodes, whole.Links)
		}
	}

	t1 := time.Now()
	var pkeys *pkeyRead
	if !keepPKeys {
		pkeys = s.readPartitions(ctx, fab) // its Gets overlap routing, which sends none
	}
	var arm *armAhead
	if clear == nil {
		arm = s.armAhead(ctx, fab, topo, pkeys) // Armed Sets, after the P_Key Gets
	}
	res, calls, err := s.plan(ctx, fab, topo)
	rep.Routing = Phase{Time: time.Since(t1)}
	rep.PluginCalls = calls
	arm.finish()
	pkeys.wait() // before anything else is sent: each phase counts its own SMPs
	if err != nil {
		var pe *pipeline.PlanError
		if errors.As(err, &pe) {
			rep.Attempts = pe.Attempts
		}
		return rep, err
	}
	rep.Engine = res.Engine
	rep.Attempts = res.Attempts
	rep.Stages = res.Timings
	// With other LIDs the P_Key programmer's record is stale: syncing
	// without a read-back started reads back itself.
	keepPKeys = keepPKeys && samePKeyLIDs(cur, topo, res)
	rep.PKeysKept = keepPKeys
	var prep *partsPrep // started beside distribution
	partitions := func() error {
		if keepPKeys {
			return nil
		}
		return s.syncPartitions(ctx, fab, topo, res, rep, pkeys, prep)
	}
	if s.crossCheck && lin != nil && cur != nil && cur.Result.Key == res.Key &&
		(needsStateChange(fab, lin) != needsStateChange(fab, nil) || drift(fab, topo, res, lin) != drift(fab, topo, res, nil) ||
			gidPrefixesSet(fab, topo, res, lin) != gidPrefixesSet(fab, topo, res, nil)) {
		return rep, errors.New("cross-check: the changed nodes' state, drift or GID prefixes say otherwise than all nodes'")
	}
	if cur != nil && cur.Result.Key == res.Key && !needsStateChange(fab, lin) && !drift(fab, topo, res, lin) {
		// Unchanged plan (its key covers the topology hash) that the
		// fabric holds: nothing to send but P_Key blocks that differ.
		// The next cable's tables may be realised from res's.
		s.prog.Same(cur.Result.Realized, res.Realized)
		if gidPrefixesSet(fab, topo, res, lin) {
			// The model holds the plan in force as the programmer
			// would leave it: the next incremental sweep's bookkeeping
			// can look at what it changes only.
			s.mu.Lock()
			if s.applied == cur && s.fabric == fab {
				s.clean = cleanModel{fab: fab, of: cur}
			}
			s.mu.Unlock()
		}
		err := partitions()
		rep.Total = time.Since(start)
		s.finishStats(rep, st0)
		return rep, err
	}
	if err := s.checkAlone(ctx, fab, topo, res, clear != nil, lin); err != nil {
		// Another master started since the last election: what looked
		// like drift to repair is its work. Elect first.
		rep.Total = time.Since(start)
		s.finishStats(rep, st0)
		return rep, err
	}
	rep.Rerouted = true
	res = s.recoverRollout(ctx, fab, topo, res, cur) // a rollout a restart interrupted
	t2 := time.Now()
	st2 := s.T.Stats()
	if clear != nil {
		if lin != nil {
			act := activatingIn(lin.nodes(fab))
			if s.crossCheck && !sameSet(act, activating(fab)) {
				return rep, fmt.Errorf("cross-check: switches to activate %x, computed whole %x", act, activating(fab))
			}
			clear = append(clear, act...)
		} else {
			clear = append(clear, activating(fab)...)
		}
	}
	if !keepPKeys {
		prep = s.preparePartitions(topo, res, pkeys)
	}
	s.phase("programming")
	if prep != nil {
		s.prog.EnforceOnActive(prep)
	}
	var pst program.Stats
	if lin != nil && lin.samePlan(topo, res) {
		// Only the changed nodes' end ports and port states can want Sets.
		pst, err = s.prog.ApplyChanged(ctx, fab, topo, res.Realized, res.VLs, lin.changed)
	} else {
		pst, err = s.prog.Apply(ctx, fab, topo, res.Realized, res.VLs)
	}
	rep.Program = pst
	if err == nil {
		if clear == nil {
			err = s.clearPortStateChange(ctx, fab)
		} else {
			_, _, err = s.pollSwitches(ctx, fab, clear, true)
		}
	}
	st3 := s.T.Stats()
	rep.Distribution = Phase{Time: time.Since(t2)}
	rep.Distribution.Gets, rep.Distribution.Sets = delta(st2, st3)
	arm.addTo(&rep.Distribution)
	if err != nil {
		return rep, fmt.Errorf("programming the fabric: %w (the next sweep retries)", err)
	}
	if err := s.saveLIDs(topo, res); err != nil {
		s.Log.Error("could not persist LIDs", "file", s.Opts.LIDFile, "error", err)
	}
	s.record(planOf(res), res.Engine, res.Key.String(), "")
	// The model now holds what was written, so the next incremental sweep
	// diffs against the fabric as programmed.
	done, activated := programmed(fab, topo, res, lin)
	if s.crossCheck && lin != nil {
		all, act := programmed(fab, topo, res, nil)
		if err := sameModel(done, all); err != nil || !sameSet(activated, act) {
			return rep, fmt.Errorf("cross-check: programmed model differs from the one computed whole (%v; activated %x vs %x)", err, activated, act)
		}
	}
	s.mu.Lock()
	s.fabric, s.snap = done, snapshot{fab: done, topo: topo, dirty: activated}
	if len(activated) > 0 {
		// After a bring-up that is every node: patch them now, not in
		// the first cable event.
		go s.settleSnapshot(done, topo, activated)
	}
	s.applied = &Applied{Topo: topo, Result: res, At: time.Now()}
	s.clean = cleanModel{fab: done, of: s.applied}
	if s.smsOf.fab == fab {
		// The programmer changes no port's IsSM, GUID or route.
		s.smsOf.fab = done
	}
	s.lids = nil
	s.mu.Unlock()
	s.multicastAfterRoute(ctx)
	s.notifyEndpoints(cur, topo) // InformInfo subscribers: traps 64/65
	err = partitions()
	rep.Total = time.Since(start)
	s.finishStats(rep, st0)
	if pipe, _ := s.pipe(); pipe != nil {
		// The fabric is up: what the next re-route's check needs is
		// counted now, not when a cable goes down.
		go pipe.Prepare()
	}
	return rep, err
}

func (s *SM) finishStats(rep *Report, st0 transport.Stats) {
	st := s.T.Stats()
	rep.Retries, rep.Timeouts = st.Retries-st0.Retries, st.Timeouts-st0.Timeouts
}

func countTopo(rep *Report, t *topology.Topology) {
	rep.Nodes = len(t.Nodes)
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if n.Type == topology.Switch {
			rep.Switches++
		} else {
			rep.CAs++
		}
		for p := 1; p < len(n.Ports); p++ {
			if pr := n.Ports[p].Peer; pr.Connected() && (pr.Node > int32(i) || (pr.Node == int32(i) && pr.Port > uint8(p))) {
				rep.Links++
			}
		}
	}
}

// topoCounts is what countTopo found in a snapshot, so that the next
// one, patched from it, is counted by its changed nodes (a cable event:
// not 311 k ports at ft3-56).
type topoCounts struct {
	topo                        *topology.Topology
	nodes, switches, cas, links int
}

// count fills rep's counts of t, from c when t was patched from c.topo;
// it returns t's counts.
func (c topoCounts) count(rep *Report, t *topology.Topology) topoCounts {
	changed, ok := t.Unshared(c.topo)
	if !ok || len(changed) > len(t.Nodes)/8 {
		// Whole: counting links at the changed nodes costs a search
		// per port.
		countTopo(rep, t)
		return topoCounts{t, rep.Nodes, rep.Switches, rep.CAs, rep.Links}
	}
	c.links += linksAt(t, changed) - linksAt(c.topo, changed)
	c.topo = t
	rep.Nodes, rep.Switches, rep.CAs, rep.Links = c.nodes, c.switches, c.cas, c.links
	return c
}

// linksAt counts the links of t with an end at one of the nodes (node
// indices, ascending), each once.
func linksAt(t *topology.Topology, nodes []int32) int {
	n := 0
	for _, i := range nodes {
		for p := 1; p < len(t.Nodes[i].Ports); p++ {
			pr := t.Nodes[i].Ports[p].Peer
			if !pr.Connected() {
				continue
			}
			// A link between two of the nodes counts at its lower end.
			if _, found := slices.BinarySearch(nodes, pr.Node); found && (pr.Node < i || pr.Node == i && pr.Port < uint8(p)) {
				continue
			}
			n++
		}
	}
	return n
}

// needsStateChange reports whether some live link has a port not yet Active
// (lin: among the changed nodes; the clean model has none).
func needsStateChange(f *discovery.Fabric, lin *since) bool {
	if lin != nil {
		return slices.ContainsFunc(lin.nodes(f), toActivate)
	}
	for _, n := range f.Nodes {
		if toActivate(n) {
			return true
		}
	}
	return false
}

func (s *SM) saveLIDs(t *topology.Topology, res *pipeline.Result) error {
	if s.Opts.LIDFile == "" || s.lidFile.holds(s.Opts.LIDFile, t, res.LIDs.Ports) {
		return nil
	}
	m := map[uint64]lidstore.Range{}
	whole := true
	for i, ep := range t.Endpoints() {
		pl := res.LIDs.Ports[i]
		g := t.Port(ep).GUID
		m[g] = lidstore.Range{Min: pl.Base, Max: pl.Base + uint16(pl.Count()) - 1}
		whole = whole && g != 0
	}
	return s.lidFile.saveOf(s.Opts.LIDFile, m, t, res.LIDs.Ports, whole)
}

// clearPortStateChange reads every switch's SwitchInfo and clears a set
// PortStateChange bit (write 1 to clear), so that the next light sweep sees
// only changes that happened after this sweep (our own port activations
// set the bit too).
func (s *SM) clearPortStateChange(ctx context.Context, fab *discovery.Fabric) error {
	_, _, err := s.pollSwitches(ctx, fab, nil, true)
	return err
}

// pollSwitches Gets SwitchInfo of the given switches (nil: every switch of
// fab) and returns those that had PortStateChange set or did not answer,
// and separately those that did not answer; it clears the bit if asked.
// The error names the switches that failed.
//
// The switches are asked nearest the SM first, one route length at a
// time, and one whose route crosses a switch that did not answer is not
// asked: it fails at once. A cable that dies under a light sweep then
// costs the timeouts of the switches right behind it, not those of every
// switch routed over it (on ft3-56, an aggregation-core cable of the SM's
// pod has 1,596 behind it: the light sweep took 268 s, one switch after
// another as the transport's window shrank on the timeouts).
func (s *SM) pollSwitches(ctx context.Context, fab *discovery.Fabric, which []uint64, clear bool) ([]uint64, []uint64, error) {
	if which == nil {
		for guid, n := range fab.Nodes {
			if n.Info.NodeType == smp.NodeTypeSwitch {
				which = append(which, guid)
			}
		}
	}
	var byLen [][]*discovery.Node
	seen := map[uint64]bool{}
	for _, guid := range which {
		n := fab.Nodes[guid]
		if seen[guid] || n == nil || n.Info.NodeType != smp.NodeTypeSwitch {
			continue
		}
		seen[guid] = true
		for len(byLen) <= len(n.Path) {
			byLen = append(byLen, nil)
		}
		byLen[len(n.Path)] = append(byLen[len(n.Path)], n)
	}
	var mu sync.Mutex
	var changed, failed []uint64
	var quiet []*discovery.Node // asked, nothing came back (a timeout)
	mark := func(g uint64) { mu.Lock(); changed = append(changed, g); mu.Unlock() }
	fail := func(g uint64) { mu.Lock(); changed, failed = append(changed, g), append(failed, g); mu.Unlock() }
	g := fanout.New(s.Opts.Parallel)
	var err error
	silent := map[*discovery.Node]bool{} // of the shorter routes, those that did not answer
	skipped := 0
	for _, ns := range byLen {
		for _, n := range ns {
			guid := n.Info.NodeGUID
			if via := fab.Crosses(n, silent); via != nil {
				fail(guid)
				skipped++
				continue
			}
			g.Go(func() error {
				var si smp.SwitchInfo
				if err := s.client.Get(ctx, n.Path, smp.AttrSwitchInfo, 0, &si); err != nil {
					fail(guid)
					if errors.Is(err, transport.ErrTimeout) {
						mu.Lock()
						quiet = append(quiet, n)
						mu.Unlock()
					}
					return fmt.Errorf("switch 0x%016x: %w", guid, err)
				}
				if !si.PortStateChange {
					return nil
				}
				mark(guid)
				if !clear {
					return nil
				}
				if err := s.client.Set(ctx, n.Path, smp.AttrSwitchInfo, 0, &si, nil); err != nil {
					fail(guid)
					return fmt.Errorf("switch 0x%016x: clearing PortStateChange: %w", guid, err)
				}
				return nil
			})
		}
		// The next route length waits for this one's answers.
		err = g.Wait("polling SwitchInfo")
		for _, q := range quiet {
			silent[q] = true
		}
	}
	if skipped > 0 {
		err = fmt.Errorf("%w; %d switches whose route crosses one that did not answer were not asked", err, skipped)
	}
	sort.Slice(changed, func(i, j int) bool { return changed[i] < changed[j] })
	return changed, failed, err
}

// demux reads unsolicited MADs: traps go to the sweep loop, everything else
// to the Agent, so SA queries are answered while a heavy sweep runs. It
// never blocks on the sweep loop: traps over their source's rate
// (trapRate), or that find the loop's queue full (it is sweeping), are
// dropped and counted (package flood logs the counts, a bounded number of
// lines); the light sweep's PortStateChange poll finds what they reported,
// as it does for traps the fabric lost.
func (s *SM) demux(ctx context.Context) <-chan transport.Packet {
	traps := make(chan transport.Packet, 64)
	in := s.T.Unsolicited()
	limit := flood.New(flood.Config{Kind: "traps", Rate: trapRate, Burst: trapBurst}, s.Log)
	go func() {
		defer close(traps)
		defer limit.Flush()
		for {
			select {
			case <-ctx.Done():
				return
			case p, ok := <-in:
				if !ok {
					return
				}
				if isTrap(p) {
					src := flood.SourceOf(p.MAD, p.SLID)
					if !limit.Allow(src) {
						continue
					}
					select {
					case traps <- p:
					default:
						limit.Drop(src, "sweep loop busy")
					}
					continue
				}
				if s.Agent == nil || !s.Agent.Handle(ctx, p) {
					s.Log.Debug("unsolicited MAD ignored", "slid", p.SLID, "len", len(p.MAD))
				}
			}
		}
	}()
	return traps
}
