package sm

import (
	"context"
	"fmt"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

const (
	defaultTrapCoalesce    = 50 * time.Millisecond
	defaultTrapMinInterval = 500 * time.Millisecond
	defaultCAChecks        = 64
	defaultSweepInterval   = 10 * time.Second
	// trapLogBurst is how many traps per second are logged one by one; the
	// rest are counted and reported with the sweep that answers them.
	trapLogBurst = 20
)

// Run sweeps until ctx is done: a heavy sweep first, then light sweeps every
// SweepInterval. What a light sweep or a trap reports changed is
// re-discovered incrementally and re-routed; Trigger() and failures start
// a heavy sweep. Sweep failures are logged and retried.
func (s *SM) Run(ctx context.Context, trigger <-chan struct{}, onSweep func(*Report, error)) error {
	interval := s.sweepInterval()
	coalesce, minGap := s.Opts.TrapCoalesce, s.Opts.TrapMinInterval
	if coalesce <= 0 {
		coalesce = defaultTrapCoalesce
	}
	if minGap <= 0 {
		minGap = defaultTrapMinInterval
	}
	report := func(rep *Report, err error) {
		s.afterSweep(rep, err) // candidate {}: shadow, rollout health gate
		if onSweep != nil {
			onSweep(rep, err)
		}
	}
	// A transport that can end on its own (umad: the HCA was removed)
	// ends the loop with its error, so ibsm reports it and exits.
	var ended <-chan struct{}
	endable, ok := s.T.(interface {
		Done() <-chan struct{}
		Err() error
	})
	if ok {
		ended = endable.Done()
	}
	heavy := true
	tick := time.NewTicker(interval)
	defer tick.Stop()
	// The election's clock: a standby polls its master; a master checks
	// the SMs it knows and, every PollRetries ticks, reads every end
	// port's IsSM bit to find new ones (an SM that started without a trap
	// 144 reaching us); a second master after a merge comes with a link
	// up, which the light sweep turns into a discovery.
	pollEvery, peerTicks := s.pollSettings()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	s.learnOwnPort(ctx)
	polls := 0
	// elect: an SM trap asked for an election sweep within the last poll
	// interval; lastElect: when a trap last caused one.
	elect, lastElect := false, time.Time{}
	traps := s.demux(ctx)

	// Traps wait in pend until the coalescing timer fires.
	var (
		pend      trapBatch
		timer     *time.Timer
		timerC    <-chan time.Time
		lastTrap  time.Time
		logBudget = newLogBudget(trapLogBurst)
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if heavy {
			rep, err := s.HeavySweep(ctx)
			report(rep, err)
			heavy = err != nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ended:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the fabric transport ended: %w", endable.Err())
		case <-trigger:
			heavy = true
			if d := s.sweepInterval(); d != interval {
				interval = d
				tick.Reset(d)
			}
			if d, n := s.pollSettings(); d != pollEvery {
				pollEvery, peerTicks = d, n
				poll.Reset(pollEvery)
			} else {
				peerTicks = n
			}
		case <-s.elect.wake:
			heavy = true // handed mastership, or told to discover
		case <-poll.C:
			switch s.State() {
			case smp.SMStateStandby:
				heavy = heavy || s.pollMaster(ctx)
			case smp.SMStateMaster:
				if polls++; polls%peerTicks == 0 && s.newSMs(ctx) || elect || s.peersChanged(ctx) {
					heavy = true
				}
			}
			elect = false
		case pkt, ok := <-traps:
			if !ok {
				traps = nil // transport closed: stop selecting on it
				continue
			}
			if !s.mayProgram() {
				continue // traps are the master's; a standby writes nothing, not even TrapRepress
			}
			sweep := s.handleTrap(pkt, &pend, logBudget)
			if lid, ok := smTrapLID(pkt); ok {
				// An SM port came up or an SM's priority changed: know
				// it from now on (peersChanged, checkAlone) and elect at
				// once if it is master or due a handover, at most once
				// per poll interval (else at the next poll tick).
				if s.learnSM(ctx, lid) {
					if time.Since(lastElect) >= pollEvery {
						heavy, lastElect = true, time.Now()
					} else {
						elect = true
					}
				}
			}
			if !sweep || timer != nil {
				continue
			}
			wait := coalesce
			if gap := time.Until(lastTrap.Add(minGap)); gap > wait {
				wait = gap // rate limit: a flapping link re-routes at most every minGap
			}
			timer = time.NewTimer(wait)
			timerC = timer.C
		case <-timerC:
			timer, timerC = nil, nil
			b := pend
			pend = trapBatch{}
			lastTrap = time.Now()
			if heavy || !s.mayProgram() {
				continue // a heavy sweep is due anyway
			}
			rep, err := s.trapSweep(ctx, b, logBudget.take())
			report(rep, err)
			heavy = err != nil
		case <-tick.C:
			if heavy || !s.mayProgram() {
				continue
			}
			// Another master may have started since the last check:
			// what it programmed would look like drift to repair.
			if s.peersChanged(ctx) {
				heavy = true
				continue
			}
			heavy = s.periodic(ctx, report)
			if !heavy {
				s.rolloutTick(ctx) // candidate {}: requests, stages
			}
		}
	}
}

// periodic is one tick of the sweep loop: the light sweep, the incremental
// sweep it calls for, then the audit over the fabric as it now stands (so
// a re-route after a link loss is not delayed by reads over the dead
// link), and the incremental sweep of switches the audit found reset. It
// reports whether a heavy sweep is due.
func (s *SM) periodic(ctx context.Context, report func(*Report, error)) bool {
	t0, st0 := time.Now(), s.T.Stats()
	ch, full, err := s.pollAndCheck(ctx)
	s.observeLight(time.Since(t0), st0, err)
	if err != nil {
		s.Log.Warn("light sweep failed", "error", err)
	}
	if full != "" {
		s.Log.Info("light sweep: full re-discovery", "reason", full)
		return true
	}
	if !ch.Empty() {
		rep, err := s.IncrementalSweep(ctx, ch)
		report(rep, err)
		if err != nil {
			return true
		}
	}
	if reset := s.audit(ctx, s.Fabric()); len(reset) > 0 {
		rep, err := s.IncrementalSweep(ctx, discovery.Changes{Ports: reset})
		report(rep, err)
		return err != nil
	}
	return false
}

// trapBatch is what a burst of traps asks for.
type trapBatch struct {
	changes discovery.Changes
	// poll is why the batch needs every switch polled (a trap whose source
	// the plan does not know); "" if it does not.
	poll  string
	traps int
}

// logBudget lets n traps per second be logged one by one.
type logBudget struct {
	n, used    int
	window     time.Time
	suppressed int
}

func newLogBudget(n int) *logBudget { return &logBudget{n: n} }

func (b *logBudget) allow() bool {
	now := time.Now()
	if now.Sub(b.window) >= time.Second {
		b.window, b.used = now, 0
	}
	if b.used < b.n {
		b.used++
		return true
	}
	b.suppressed++
	return false
}

// take returns and resets the count of traps not logged.
func (b *logBudget) take() int {
	n := b.suppressed
	b.suppressed = 0
	return n
}

// isTrap reports whether p is a whole MAD whose method is Trap.
func isTrap(p transport.Packet) bool {
	return len(p.MAD) >= smp.MADLen && smp.PeekMethod(p.MAD) == smp.MethodTrap
}

// handleTrap answers a trap with TrapRepress, logs it and adds what it
// reports to b. It reports whether the trap calls for a sweep. Traps are
// untrusted input: every line it logs, malformed traps included, comes out
// of lb's budget.
func (s *SM) handleTrap(p transport.Packet, b *trapBatch, lb *logBudget) bool {
	if !isTrap(p) {
		return false
	}
	warn := func(msg string, kv ...any) {
		if lb.allow() {
			s.Log.Warn(msg, append([]any{"from_lid", p.SLID}, kv...)...)
		}
	}
	var req smp.SMP
	if err := req.Decode(p.MAD); err != nil {
		warn("malformed trap ignored", "error", err)
		return false
	}
	// Repress first, whatever the trap says: the sender stops repeating it.
	rep := req
	rep.Method = smp.MethodTrapRepress
	buf := make([]byte, smp.MADLen)
	if err := rep.EncodeTo(buf); err != nil {
		warn("TrapRepress not encoded", "error", err)
	} else if err := s.T.Send(transport.Packet{DLID: p.SLID, SL: p.SL, MAD: buf}); err != nil {
		warn("TrapRepress not sent", "error", err)
	}
	if req.AttrID != smp.AttrNotice {
		warn("trap with an attribute other than Notice ignored", "attr", fmt.Sprintf("%#04x", req.AttrID))
		return false
	}
	var n smp.Notice
	if err := req.Attr(&n); err != nil {
		warn("malformed trap ignored", "error", err)
		return false
	}
	s.forwardTrap(n, p.SLID) // to InformInfo subscribers
	s.observeTrap(n, p.SLID)
	if !n.IsGeneric {
		if lb.allow() {
			s.Log.Info("vendor trap ignored", "from_lid", p.SLID, "issuer_lid", n.IssuerLID, "device_id", n.TrapNumber)
		}
		return false
	}
	log := func(msg string, kv ...any) {
		if lb.allow() {
			s.Log.Info(msg, append([]any{"trap", n.TrapNumber, "from_lid", p.SLID, "issuer_lid", n.IssuerLID}, kv...)...)
		}
	}
	switch n.TrapNumber {
	case smp.TrapPortStateChange:
		lid, err := n.Trap128()
		if err != nil {
			warn("malformed trap ignored", "trap", n.TrapNumber, "error", err)
			return false
		}
		ref, ok := s.portOfLID(lid)
		if !ok || ref.Port != 0 {
			log("port state change from a LID the plan does not hold as a switch", "lid", lid)
			b.poll = fmt.Sprintf("trap 128 from LID %d, which the plan does not hold as a switch", lid)
		} else {
			log("port state change", "lid", lid, "guid", fmt.Sprintf("0x%016x", ref.GUID))
			b.changes.Switches = append(b.changes.Switches, ref.GUID)
		}
	case smp.TrapLinkIntegrity, smp.TrapBufferOverrun, smp.TrapFlowControlWatchdog:
		lid, port, err := n.LinkTrap()
		if err != nil {
			warn("malformed trap ignored", "trap", n.TrapNumber, "error", err)
			return false
		}
		ref, ok := s.portOfLID(lid)
		if !ok {
			log("link trap from a LID the plan does not hold; polling switches", "lid", lid, "port", port)
			b.poll = fmt.Sprintf("trap %d from LID %d, which the plan does not hold", n.TrapNumber, lid)
			break
		}
		if ref.Port == 0 { // a switch: the trap names one of its ports
			// A port the switch does not have would make the update
			// give up and re-discover everything, at every trap: such a
			// trap is malformed, whoever sent it.
			if fab := s.Fabric(); fab == nil || fab.Nodes[ref.GUID] == nil || int(port) >= len(fab.Nodes[ref.GUID].Ports) {
				warn("link trap names a port the switch does not have; ignored", "trap", n.TrapNumber, "lid", lid, "port", port)
				return false
			}
			ref.Port = port
		}
		log("link trap; re-reading the port", "lid", lid, "guid", fmt.Sprintf("0x%016x", ref.GUID), "port", ref.Port)
		b.changes.Ports = append(b.changes.Ports, discovery.PortRef{GUID: ref.GUID, Port: ref.Port})
	case smp.TrapCapabilityMaskChange:
		d, err := n.Trap144()
		if err != nil {
			warn("malformed trap ignored", "trap", n.TrapNumber, "error", err)
			return false
		}
		ref, _ := s.portOfLID(d.LID)
		log("capability mask change (informational, no sweep)", "lid", d.LID, "guid", fmt.Sprintf("0x%016x", ref.GUID),
			"port", ref.Port, "capability_mask", fmt.Sprintf("%#08x", d.CapabilityMask), "is_sm", d.CapabilityMask&smp.CapIsSM != 0)
		return false
	case smp.TrapBadMKey:
		s.badMKey(n, warn)
		return false
	default:
		log("trap ignored (no action defined)")
		return false
	}
	b.traps++
	return true
}

// trapSweep re-routes after a coalesced burst of traps.
func (s *SM) trapSweep(ctx context.Context, b trapBatch, suppressed int) (*Report, error) {
	ch := b.changes
	if b.poll != "" {
		s.Log.Info("polling every switch instead of trusting the trap source", "reason", b.poll)
		if s.Fabric() == nil {
			rep, err := s.fullInstead(ctx, b.poll)
			return withTraps(rep, b, suppressed), err
		}
		more, full, err := s.pollAndCheck(ctx)
		if err != nil {
			s.Log.Warn("light sweep failed", "error", err)
		}
		if full != "" {
			rep, err := s.fullInstead(ctx, full)
			return withTraps(rep, b, suppressed), err
		}
		ch.Merge(more)
	}
	rep, err := s.IncrementalSweep(ctx, ch)
	return withTraps(rep, b, suppressed), err
}

func withTraps(rep *Report, b trapBatch, suppressed int) *Report {
	if rep != nil {
		rep.Traps = b.traps
	}
	if suppressed > 0 && rep != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d traps were not logged one by one (more than %d per second)", suppressed, trapLogBurst))
	}
	return rep
}

// fullInstead runs a heavy sweep where an incremental one was meant, and
// says why in the log and the report.
func (s *SM) fullInstead(ctx context.Context, why string) (*Report, error) {
	s.Log.Warn("full re-discovery instead of an incremental one", "reason", why)
	rep, err := s.HeavySweep(ctx)
	if rep != nil {
		rep.Fallback = why
	}
	return rep, err
}

// IncrementalSweep re-reads what ch names, brings the fabric model up to
// date (discovery.Update), and re-routes and re-programs if the plan
// changed. When the update cannot be trusted it logs why and runs a heavy
// sweep instead (Report.Fallback).
func (s *SM) IncrementalSweep(ctx context.Context, ch discovery.Changes) (*Report, error) {
	old := s.Fabric()
	if old == nil || s.Applied() == nil {
		return s.fullInstead(ctx, "no plan in force yet")
	}
	rep := &Report{Incremental: true}
	start := time.Now()
	st0 := s.T.Stats()
	// Clear PortStateChange before reading the ports: a change after the
	// read sets it again and is seen by the next light sweep.
	// A switch behind another changed one may sit behind the link that
	// went down, and one that is gone cannot answer at all: their bit is
	// cleared after the update, over their new routes, if they are still
	// there.
	front, unclear := old.Order(ch.Switches)
	if len(front) > 0 {
		_, failed, _ := s.pollSwitches(ctx, old, front, true)
		unclear = append(unclear, failed...)
	}
	fab, sum, err := s.disc.Update(ctx, old, ch)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return s.fullInstead(ctx, err.Error())
	}
	topo, err := fab.Topology()
	if err != nil {
		return s.fullInstead(ctx, fmt.Sprintf("updated fabric model is inconsistent: %v", err))
	}
	rep.Update = sum
	var still []uint64
	for _, g := range unclear {
		if fab.Nodes[g] != nil {
			still = append(still, g)
		}
	}
	if len(still) > 0 {
		if _, _, err := s.pollSwitches(ctx, fab, still, true); err != nil {
			s.Log.Warn("incremental sweep: PortStateChange not cleared; the next light sweep re-reads the switch", "error", err)
		}
	}
	st1 := s.T.Stats()
	rep.Discovery = Phase{Time: time.Since(start)}
	rep.Discovery.Gets, rep.Discovery.Sets = delta(st0, st1)
	s.Log.Debug("incremental discovery", "switches", len(ch.Switches), "ports", len(ch.Ports), "ports_read", sum.PortsRead,
		"links_down", sum.LinksDown, "links_up", sum.LinksUp, "new_nodes", sum.NewNodes, "dropped", sum.Dropped, "rounds", sum.Rounds)
	return s.route(ctx, rep, fab, topo, start, st0, []uint64{})
}

// lightSweep is pollAndCheck, then, if that found nothing to re-read,
// the audit of the next share of what the programmer wrote (a switch the
// audit finds reset is returned as a changed port 0). Run does the same in
// periodic, auditing after the incremental sweep instead of skipping.
func (s *SM) lightSweep(ctx context.Context) (discovery.Changes, string, error) {
	ch, full, err := s.pollAndCheck(ctx)
	if full != "" || !ch.Empty() {
		return ch, full, err
	}
	ch.Ports = s.audit(ctx, s.Fabric())
	return ch, full, err
}

// pollAndCheck polls every switch's PortStateChange, then reads the SM's
// own port and the next share of CA ports and compares them with the plan.
// It returns what changed, or why a full discovery is needed.
//
// What it sees: any port going to or from Down on a switch (both ends of
// a switch-to-switch cable, the switch end of a CA cable, so CA link loss
// too), a switch that stops answering, the SM's own port leaving Active or
// losing its LID, and — within ceil(CAs/CAChecksPerSweep) light sweeps — a
// CA port whose LID, LMC, SM LID or state no longer match the plan (a
// reset HCA, a LID changed behind the SM's back). What it does not see:
// changes that leave these fields alone, e.g. a CA's NodeDescription or a
// link retraining at a different width without going Down. (Tables and
// settings changed behind the SM's back are the audit's: see lightSweep.)
func (s *SM) pollAndCheck(ctx context.Context) (discovery.Changes, string, error) {
	var ch discovery.Changes
	fab, a := s.Fabric(), s.Applied()
	if fab == nil || a == nil {
		return ch, "no plan in force yet", nil
	}
	changed, _, err := s.pollSwitches(ctx, fab, nil, false)
	ch.Switches = changed
	if err != nil {
		// A switch that does not answer is re-read by the update, which
		// drops it if its neighbours report it gone and gives up (full
		// sweep) otherwise.
		s.Log.Info("light sweep: a switch did not answer", "error", err)
	}
	ports, full := s.checkEndpoints(ctx, fab, a)
	ch.Ports = ports
	return ch, full, nil
}

// checkEndpoints reads the SM's own port and the next CAChecksPerSweep CA
// ports and returns those that differ from the plan.
func (s *SM) checkEndpoints(ctx context.Context, fab *discovery.Fabric, a *Applied) ([]discovery.PortRef, string) {
	n := s.Opts.CAChecksPerSweep
	if n == 0 {
		n = defaultCAChecks
	}
	topo, res := a.Topo, a.Result
	eps := topo.Endpoints()
	smLID := smLIDOf(topo, res)
	var cas []int
	for i, ep := range eps {
		if topo.Nodes[ep.Node].Type != topology.Switch && topo.Nodes[ep.Node].GUID != fab.SMGUID {
			cas = append(cas, i)
		}
	}
	pick := []int{}
	if i := topo.EndpointIndex(topo.SM); topo.SM.Connected() && i >= 0 {
		pick = append(pick, int(i))
	}
	s.mu.Lock()
	for k := 0; n > 0 && k < n && k < len(cas); k++ {
		pick = append(pick, cas[(s.caNext+k)%len(cas)])
	}
	if len(cas) > 0 && n > 0 {
		s.caNext = (s.caNext + min(n, len(cas))) % len(cas)
	}
	s.mu.Unlock()
	var out []discovery.PortRef
	for _, i := range pick {
		ep := eps[i]
		guid := topo.Nodes[ep.Node].GUID
		node := fab.Nodes[guid]
		if node == nil {
			continue
		}
		var pi smp.PortInfo
		if err := s.client.Get(ctx, node.Path, smp.AttrPortInfo, uint32(ep.Port), &pi); err != nil {
			if guid == fab.SMGUID {
				return nil, fmt.Sprintf("the SM's own port does not answer: %v", err)
			}
			// Its switch reports the link if it went down; a lost MAD is
			// checked again next time round.
			s.Log.Debug("light sweep: CA port did not answer", "guid", fmt.Sprintf("0x%016x", guid), "port", ep.Port, "error", err)
			continue
		}
		want := res.LIDs.Ports[i]
		if pi.LID != want.Base || pi.LMC != want.LMC || pi.MasterSMLID != smLID || pi.PortState != smp.PortStateActive {
			s.Log.Info("light sweep: port differs from the plan", "guid", fmt.Sprintf("0x%016x", guid), "port", ep.Port,
				"lid", pi.LID, "plan_lid", want.Base, "sm_lid", pi.MasterSMLID, "state", pi.PortState)
			out = append(out, discovery.PortRef{GUID: guid, Port: ep.Port})
		}
	}
	return out, ""
}

func smLIDOf(topo *topology.Topology, res *pipeline.Result) uint16 {
	if topo.SM.Connected() {
		if i := topo.EndpointIndex(topo.SM); i >= 0 {
			return res.Realized.LIDs.Ports[i].Base
		}
	}
	return 0
}

// lidIndex maps the LIDs of the plan in force to ports.
type lidIndex struct {
	of    *Applied
	ports map[uint16]discovery.PortRef
}

// portOfLID returns the port the plan in force gave lid (port 0 for a
// switch).
func (s *SM) portOfLID(lid uint16) (discovery.PortRef, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.applied
	if a == nil {
		return discovery.PortRef{}, false
	}
	if s.lids == nil || s.lids.of != a {
		idx := &lidIndex{of: a, ports: map[uint16]discovery.PortRef{}}
		for i, ep := range a.Topo.Endpoints() {
			pl := a.Result.LIDs.Ports[i]
			ref := discovery.PortRef{GUID: a.Topo.Nodes[ep.Node].GUID, Port: ep.Port}
			for k := 0; k < pl.Count(); k++ {
				idx.ports[pl.Base+uint16(k)] = ref
			}
		}
		s.lids = idx
	}
	r, ok := s.lids.ports[lid]
	return r, ok
}

// drift reports whether the fabric holds other LIDs, SM LIDs or
// LinearFDBTops than the plan (a port reset behind the SM's back).
func drift(fab *discovery.Fabric, topo *topology.Topology, res *pipeline.Result) bool {
	smLID := smLIDOf(topo, res)
	for i, ep := range topo.Endpoints() {
		n := fab.Nodes[topo.Nodes[ep.Node].GUID]
		pt := &n.Ports[ep.Port]
		want := res.Realized.LIDs.Ports[i]
		if pt.Valid && (pt.Info.LID != want.Base || pt.Info.LMC != want.LMC || pt.Info.MasterSMLID != smLID) {
			return true
		}
	}
	for _, node := range topo.Switches() {
		n := fab.Nodes[topo.Nodes[node].GUID]
		if n.Switch != nil && n.Switch.LinearFDBTop != res.Realized.TopLID {
			return true
		}
	}
	return false
}

// activating lists the switches with a live port the programmer will arm
// and activate (their PortStateChange is cleared after programming, as a
// heavy sweep clears every switch's).
func activating(fab *discovery.Fabric) []uint64 {
	var out []uint64
	for g, n := range fab.Nodes {
		if n.Info.NodeType != smp.NodeTypeSwitch {
			continue
		}
		for p := 1; p < len(n.Ports); p++ {
			pt := &n.Ports[p]
			if pt.Valid && pt.PeerGUID != 0 && pt.Info.PortState >= smp.PortStateInit && pt.Info.PortState < smp.PortStateActive {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// programmed returns a copy of fab holding what the programmer wrote for
// res: endpoint LIDs, LMCs, SM LID and GID prefix, LinearFDBTop, and live links
// Active. fab (as discovered) is left alone.
func programmed(fab *discovery.Fabric, topo *topology.Topology, res *pipeline.Result) *discovery.Fabric {
	out := fab.Clone()
	smLID := smLIDOf(topo, res)
	rz := res.Realized
	for i, ep := range topo.Endpoints() {
		n := out.Nodes[topo.Nodes[ep.Node].GUID]
		pt := &n.Ports[ep.Port]
		if !pt.Valid {
			continue
		}
		old := pt.Info
		want := rz.LIDs.Ports[i]
		set := func(pi *smp.PortInfo) {
			pi.LID, pi.LMC, pi.MasterSMLID, pi.GIDPrefix = want.Base, want.LMC, smLID, program.SubnetPrefix
		}
		set(&pt.Info)
		if ep.Port == 0 {
			// A switch's other ports report port 0's addressing where the
			// device mirrors it (the simulator and ibsim do).
			for p := 1; p < len(n.Ports); p++ {
				q := &n.Ports[p].Info
				if n.Ports[p].Valid && q.LID == old.LID && q.LMC == old.LMC && q.MasterSMLID == old.MasterSMLID {
					set(q)
				}
			}
		}
	}
	for _, n := range out.Nodes {
		if n.Switch != nil {
			n.Switch.LinearFDBTop = rz.TopLID
		}
		for p := 1; p < len(n.Ports); p++ {
			pt := &n.Ports[p]
			if pt.Valid && pt.PeerGUID != 0 && pt.Info.PortState >= smp.PortStateInit && pt.Info.PortState < smp.PortStateActive {
				pt.Info.PortState = smp.PortStateActive
			}
		}
	}
	return out
}
