package sm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/verify"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// partitionState is the SM's P_Key side: the configured partitions, the
// programmer of P_Key tables and the plan in force. An SM whose
// SetPartitions was never called leaves P_Key tables alone.
type partitionState struct {
	mu    sync.Mutex
	parts []conf.Partition
	set   bool
	gen   uint64 // counts SetPartitions: a read-back started before one is stale
	pk    *program.PKeys
	plan  *program.PKeyPlan
	// planGen is gen when plan was made: a plan of other partitions is
	// never kept as it is (unaffected).
	planGen uint64
	stats   program.PKeyStats
	// warned is the last set of warnings logged: the same ones are not
	// logged again every sweep.
	warned string
}

// SetPartitions sets the partitions (at start and on SIGHUP); the next
// heavy sweep programs the P_Key blocks that differ from what the ports
// hold, and nothing else. An empty list stops P_Key management (the
// tables stay as they are): a configuration always has at least the
// default partition, so no list means the caller does not manage them.
func (s *SM) SetPartitions(ps []conf.Partition) {
	s.parts.mu.Lock()
	s.parts.parts, s.parts.set = append([]conf.Partition(nil), ps...), len(ps) > 0
	s.parts.gen++
	if !s.parts.set {
		s.parts.plan = nil
	}
	s.parts.mu.Unlock()
}

// PKeyPlan is the P_Key plan in force (nil before the first one was
// programmed, or when partitions are not managed).
func (s *SM) PKeyPlan() *program.PKeyPlan {
	s.parts.mu.Lock()
	defer s.parts.mu.Unlock()
	return s.parts.plan
}

// PKeyStats is what the last P_Key programming read and sent.
func (s *SM) PKeyStats() program.PKeyStats {
	s.parts.mu.Lock()
	defer s.parts.mu.Unlock()
	return s.parts.stats
}

// pkeyRead is the P_Key side of a sweep started before its routing: the
// partitions resolved on the discovered fabric and the tables read back
// (PKeys.Plan), which need no plan, so their Gets (48 k on ft3-36, 179 k on
// ft3-56) overlap the routing phase instead of following distribution.
type pkeyRead struct {
	done  chan struct{}
	gen   uint64
	parts int
	pk    *program.PKeys
	mem   program.Membership
	warns []string
	pl    *program.PKeyPlan
	st    program.PKeyStats
	took  time.Duration
	gets  uint64 // SMPs sent meanwhile (no other sweep phase sends during routing)
	sets  uint64
}

// readPartitions starts the P_Key read-back on fab and returns it (nil
// when partitions are not managed). The caller waits for it (wait) before
// it sends anything else, so each phase's SMP counts stay its own.
func (s *SM) readPartitions(ctx context.Context, fab *discovery.Fabric) *pkeyRead {
	s.parts.mu.Lock()
	parts, set, gen := s.parts.parts, s.parts.set, s.parts.gen
	if set && s.parts.pk == nil {
		s.parts.pk = &program.PKeys{C: s.client, Log: s.Log.Named("pkey"), Parallel: s.Opts.Parallel}
	}
	pk := s.parts.pk
	s.parts.mu.Unlock()
	if !set {
		return nil
	}
	r := &pkeyRead{done: make(chan struct{}), gen: gen, parts: len(parts), pk: pk}
	go func() {
		defer close(r.done)
		start, st0 := time.Now(), s.T.Stats()
		r.mem, r.warns = program.ResolvePartitions(parts, fab)
		r.pl, r.st = pk.Plan(ctx, fab, r.mem)
		r.took = time.Since(start)
		r.gets, r.sets = delta(st0, s.T.Stats())
	}()
	return r
}

// wait waits for the read-back (r may be nil).
func (r *pkeyRead) wait() {
	if r != nil {
		<-r.done
	}
}

// partsPrep is the work of syncPartitions that sends nothing — the check of
// the P_Key plan, the plan's LIDs by port, Apply's decisions — started as
// distribution starts: that phase keeps one core busy (the embedded
// fabric answers on the host's CPU), and at ft3-56 this is 0.4 s of CPU
// that otherwise followed it.
type partsPrep struct {
	done  chan struct{}
	pre   *pkeyRead
	check error
	apply *program.PKeyApply
	// enforced: switch ports distribution's Active Sets turned
	// enforcement on (Enforced).
	enforced []discovery.PortRef
}

// preparePartitions starts syncPartitions' work for pre (nil when pre is).
func (s *SM) preparePartitions(topo *topology.Topology, res *pipeline.Result, pre *pkeyRead) *partsPrep {
	if pre == nil {
		return nil
	}
	p := &partsPrep{done: make(chan struct{}), pre: pre}
	go func() {
		defer close(p.done)
		p.run(topo, res)
	}()
	return p
}

func (p *partsPrep) run(topo *topology.Topology, res *pipeline.Result) {
	pre := p.pre
	pre.wait()
	p.check = verify.CheckPKeys(verify.PKeyTables{Members: pre.mem, Tables: pre.pl.Tables, Enforce: pre.pl.Enforce}, 0)
	if p.check == nil {
		lids := planLIDs(topo, res)
		p.apply = pre.pk.Prepare(pre.pl, func(r discovery.PortRef) uint16 { return lids[r] })
	}
}

// Wanted names the switch ports whose enforcement bits the Active Sets
// of distribution turn on (program.Enforcer): those the P_Key plan has
// enforce, once it passed its check (none if it did not).
func (p *partsPrep) Wanted() func(discovery.PortRef) bool {
	<-p.done
	if p.check != nil {
		return nil
	}
	return func(r discovery.PortRef) bool {
		_, ok := p.pre.pl.Enforce[r]
		return ok
	}
}

// Enforced keeps the ports the Active Sets turned enforcement on, for
// syncPartitions (on the sweep's goroutine, as Apply that calls it).
func (p *partsPrep) Enforced(ports []discovery.PortRef) { p.enforced = ports }

// syncPartitions checks the P_Key plan of the partitions resolved on fab
// (as discovered) by pre, the read-back started with the sweep, and
// programs what differs; without pre, or when SetPartitions came since,
// it reads back itself. prep, when not nil, is the work for pre started
// beside distribution. A plan the verifier rejects is logged and changes
// nothing (the last one stays in force); a failed Set is returned, so the
// sweep is retried. The report's partitions phase is the time the sweep
// spent on P_Keys after distribution, its SMPs those of the read-back too.
func (s *SM) syncPartitions(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, res *pipeline.Result, rep *Report, pre *pkeyRead, prep *partsPrep) error {
	start, st0 := time.Now(), s.T.Stats()
	pre.wait()
	var before pkeyRead // what the read-back during routing sent
	if pre != nil {
		before = *pre
	}
	s.parts.mu.Lock()
	stale := pre == nil || pre.gen != s.parts.gen
	s.parts.mu.Unlock()
	var enforced []discovery.PortRef // facts about the ports, whatever the plan
	if prep != nil {
		<-prep.done
		enforced = prep.enforced
	}
	if stale || prep == nil {
		if stale {
			pre = s.readPartitions(ctx, fab)
		}
		prep = nil
		if pre != nil {
			prep = &partsPrep{pre: pre}
			prep.run(topo, res)
		}
	}
	if pre == nil {
		return nil
	}
	defer func() {
		rep.Partitions = Phase{Time: time.Since(start)}
		rep.Partitions.Gets, rep.Partitions.Sets = delta(st0, s.T.Stats())
		rep.Partitions.Gets += before.gets
		rep.Partitions.Sets += before.sets
	}()
	warns, pl, st := pre.warns, pre.pl, pre.st
	if stale {
		st.BlocksRead += before.st.BlocksRead // the stale read-back's blocks are known now
	}
	warns = append(warns, pl.Warnings...)
	s.warnPartitions(warns)
	rep.Warnings = append(rep.Warnings, warns...)
	if err := prep.check; err != nil {
		s.Log.Error("P_Key tables not programmed; the previous ones stay in force", "error", err)
		rep.Warnings = append(rep.Warnings, err.Error())
		return nil
	}
	ast, err := pre.pk.ApplyPrepared(ctx, prep.apply, enforced)
	ast.BlocksRead = st.BlocksRead
	rep.PKeys = ast
	s.parts.mu.Lock()
	s.parts.stats = ast
	if err == nil {
		s.parts.plan, s.parts.planGen = pl, pre.gen
	}
	s.parts.mu.Unlock()
	if err != nil {
		return fmt.Errorf("programming P_Key tables: %w (the next sweep retries)", err)
	}
	if ast.BlocksSent+ast.EnforceSets > 0 {
		s.Log.Info("P_Key tables programmed", "partitions", pre.parts, "ports", ast.Ports, "blocks_read", ast.BlocksRead,
			"blocks_sent", ast.BlocksSent, "enforcement_sets", ast.EnforceSets)
	}
	return nil
}

// warnPartitions logs the partition warnings when they differ from the
// last ones logged.
func (s *SM) warnPartitions(warns []string) {
	key := strings.Join(warns, "\n")
	s.parts.mu.Lock()
	same := key == s.parts.warned
	s.parts.warned = key
	s.parts.mu.Unlock()
	if same {
		return
	}
	for _, w := range warns {
		s.Log.Warn("partitions", "warning", w)
	}
}

// planLIDs maps every end port to the base LID the plan gives it.
func planLIDs(topo *topology.Topology, res *pipeline.Result) map[discovery.PortRef]uint16 {
	eps := topo.Endpoints()
	out := make(map[discovery.PortRef]uint16, len(eps))
	for i, ep := range eps {
		out[discovery.PortRef{GUID: topo.Nodes[ep.Node].GUID, Port: ep.Port}] = res.Realized.LIDs.Ports[i].Base
	}
	return out
}

// unaffected reports whether the update from old to fab (sum) leaves the
// P_Key plan in force as it is, so that the sweep neither reads the
// tables back nor resolves, checks and diffs 135 k ports' tables at
// ft3-56 (0.12-0.25 s of a cable event) to find nothing to send. That
// holds when no node came or went and the update changed no end port
// (CA ports, switch port 0: their links, states and LIDs, whose reset
// would reset the table) and no switch port cabled to a CA (enforcement):
// a cable between two switches. The LIDs must stay too (samePKeyLIDs,
// checked once the plan is known).
func (s *SM) unaffected(old, fab *discovery.Fabric, sum discovery.UpdateSummary) bool {
	s.parts.mu.Lock()
	inForce := s.parts.set && s.parts.plan != nil && s.parts.planGen == s.parts.gen
	s.parts.mu.Unlock()
	if !inForce || sum.NewNodes > 0 || sum.Dropped > 0 {
		return false
	}
	isCA := func(g uint64) bool {
		n := fab.Nodes[g]
		if n == nil {
			n = old.Nodes[g]
		}
		return g != 0 && (n == nil || n.Info.NodeType != smp.NodeTypeSwitch)
	}
	for _, g := range sum.Changed {
		n, o := fab.Nodes[g], old.Nodes[g]
		if o == nil || len(o.Ports) != len(n.Ports) {
			return false
		}
		for p := range n.Ports {
			np, op := &n.Ports[p], &o.Ports[p]
			if pkeyViewOf(np) == pkeyViewOf(op) {
				continue
			}
			if n.Info.NodeType != smp.NodeTypeSwitch || p == 0 || isCA(np.PeerGUID) || isCA(op.PeerGUID) {
				return false
			}
		}
	}
	return true
}

// pkeyView is what of a port the P_Key plan depends on.
type pkeyView struct {
	valid, up  bool
	guid, peer uint64
	peerPort   uint8
	lid        uint16
	lmc        uint8
}

func pkeyViewOf(pt *discovery.Port) pkeyView {
	return pkeyView{valid: pt.Valid, up: pt.Info.PortState >= smp.PortStateInit, guid: pt.GUID, peer: pt.PeerGUID, peerPort: pt.PeerPort, lid: pt.Info.LID, lmc: pt.Info.LMC}
}

// samePKeyLIDs reports whether res gives every end port the LIDs of the
// plan in force (cur), which the P_Key programmer keyed what it knows to.
func samePKeyLIDs(cur *Applied, topo *topology.Topology, res *pipeline.Result) bool {
	return cur != nil && slices.Equal(cur.Topo.Endpoints(), topo.Endpoints()) &&
		slices.Equal(cur.Result.Realized.LIDs.Ports, res.Realized.LIDs.Ports)
}
