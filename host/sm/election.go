package sm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// The SM-to-SM protocol of IBA 14.4: every SM port is found during
// discovery (PortInfo CapabilityMask IsSM), asked for its SMInfo, and the
// SMs rank by priority, then by lower port GUID. A master that discovers a
// better master steps down; a discovering SM that finds a master becomes
// its standby and polls it; a standby takes over after PollRetries failed
// polls; a master hands over to a better standby (HonorPriority) with a
// SubnSet(SMInfo) HANDOVER, which that standby answers and acknowledges.
// Only a master writes to the fabric.

// SMInfo Set attribute modifiers (IBA 14.2.5.13).
const (
	smCtlHandover    = 1
	smCtlAcknowledge = 2
	smCtlDisable     = 3
	smCtlStandby     = 4
	smCtlDiscover    = 5
)

// SMStateNotActive is SMInfo.SMState 0 (the smp package names 1..3).
const SMStateNotActive = 0

// Defaults for the election settings left zero.
const (
	DefaultPollInterval = 10 * time.Second
	DefaultPollRetries  = 4
)

// ElectionOptions are the SM's settings in the SMInfo protocol; all of
// them may change at run time (SetElection).
type ElectionOptions struct {
	Priority uint8  // 0..15, higher wins
	SMKey    uint64 // SMInfo Sets must carry it; revealed only to who presents it
	// PollInterval and PollRetries: a standby polls the master this
	// often and takes over after this many polls in a row failed.
	PollInterval time.Duration
	PollRetries  int
	// HonorPriority: a master hands over to a better SM that appears.
	// Off, a master keeps mastership once it holds it (no flapping when a
	// higher-priority SM restarts).
	HonorPriority bool
}

// election is the SM's state in that protocol.
type election struct {
	mu    sync.Mutex
	opts  ElectionOptions
	state uint8
	// master is the SM a standby follows (its port GUID); 0 if none.
	master uint64
	failed int
	// handover is the SM that handed mastership to us and awaits our
	// ACKNOWLEDGE (its port GUID); 0 if none.
	handover uint64
	// wake asks the sweep loop for a heavy sweep (we became master by
	// HANDOVER, or were told to DISCOVER).
	wake chan struct{}
	// own is this SM's port GUID, read before the first discovery so that
	// SMInfo never reports GUID 0 (OpenSM drops such an answer, ERR 2F19).
	own uint64
	// newTerm: this SM became master and the next heavy sweep starts its
	// term (clients re-register). followed: another SM was master (or
	// was waited for) since this SM last programmed the fabric, so the
	// fabric, not this SM's memory, holds the truth: the term adopts the
	// LIDs the ports hold and reads back what the switches hold.
	newTerm, followed bool
	// contested: this SM is master but another master is on the subnet;
	// it writes nothing until one of them steps down. rival and
	// rivalSeen count how many checks in a row a master with another
	// SM_Key (which can neither hand over to us nor take our HANDOVER)
	// stayed beside this one.
	contested bool
	rival     uint64
	rivalSeen int
	warned    map[uint64]bool // SMs with another SM_Key already reported
	// nudges is how many trap 144s this standby sent the master it
	// outranks (nudgedFor), asking it to hand over.
	nudges    int
	nudgedFor uint64
	// extra are SMs learnt from their trap 144 since the last discovery
	// (an SM that started): checked with the ones discovery found.
	extra map[uint64]remoteSM
	// stats for status and tests
	takeovers, stepDowns, handovers int
	refused                         int // SMInfo Sets with a wrong SM_Key
}

func newElection(o ElectionOptions) *election {
	return &election{opts: o, state: smp.SMStateDiscovering, wake: make(chan struct{}, 1), warned: map[uint64]bool{}}
}

func (e *election) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// SetElection applies new election settings (SIGHUP).
func (s *SM) SetElection(o ElectionOptions) {
	s.elect.mu.Lock()
	s.elect.opts = o
	s.elect.mu.Unlock()
}

// State is the SM's SMInfo state (SMStateNotActive, smp.SMStateDiscovering,
// smp.SMStateStandby, smp.SMStateMaster).
func (s *SM) State() uint8 {
	s.elect.mu.Lock()
	defer s.elect.mu.Unlock()
	return s.elect.state
}

// IsMaster reports whether this SM is master. A master beside another
// master (contested) still writes nothing: see mayProgram.
func (s *SM) IsMaster() bool { return s.State() == smp.SMStateMaster }

// mayProgram reports whether this SM may write to the fabric now: it is
// master and no other master is on the subnet.
func (s *SM) mayProgram() bool {
	s.elect.mu.Lock()
	defer s.elect.mu.Unlock()
	return s.elect.state == smp.SMStateMaster && !s.elect.contested
}

// ElectionStats says how often this SM took over, stepped down, handed
// over and refused an SMInfo Set for a wrong SM_Key.
type ElectionStats struct {
	State                                    uint8
	Master                                   uint64 // the master a standby follows
	Contested                                bool   // master, but another master is on the subnet
	Takeovers, StepDowns, Handovers, Refused int
}

// ElectionStats returns the election counters.
func (s *SM) ElectionStats() ElectionStats {
	e := s.elect
	e.mu.Lock()
	defer e.mu.Unlock()
	return ElectionStats{State: e.state, Master: e.master, Contested: e.contested, Takeovers: e.takeovers, StepDowns: e.stepDowns, Handovers: e.handovers, Refused: e.refused}
}

func (e *election) set(state uint8, master uint64) {
	e.state, e.master, e.failed = state, master, 0
	if state != smp.SMStateMaster {
		e.contested, e.rival, e.rivalSeen = false, 0, 0
	}
	if state == smp.SMStateStandby {
		e.followed = true
	}
}

// becomeMaster makes this SM master (e.mu held); a new term begins.
func (e *election) becomeMaster() bool {
	if e.state == smp.SMStateMaster {
		return false
	}
	e.takeovers++
	e.newTerm = true
	e.set(smp.SMStateMaster, 0)
	return true
}

// ownPortGUID is the GUID of the port the SM is attached through.
func ownPortGUID(fab *discovery.Fabric) uint64 {
	if fab == nil {
		return 0
	}
	if n := fab.Nodes[fab.SMGUID]; n != nil && int(fab.SMPort) < len(n.Ports) {
		if g := n.Ports[fab.SMPort].GUID; g != 0 {
			return g
		}
		return n.Info.PortGUID
	}
	return 0
}

// learnOwnPort reads the GUID of the SM's port (NodeInfo at hop 0 names
// the port the SMP entered by), so SMInfo answers carry it before the
// first discovery ends. A failure is left to discovery.
func (s *SM) learnOwnPort(ctx context.Context) {
	var ni smp.NodeInfo
	if err := s.client.Get(ctx, nil, smp.AttrNodeInfo, 0, &ni); err != nil {
		s.Log.Debug("own NodeInfo not read before discovery", "error", err)
		return
	}
	s.elect.mu.Lock()
	if s.elect.own == 0 {
		s.elect.own = ni.PortGUID
	}
	s.elect.mu.Unlock()
}

// ownGUID is this SM's port GUID as last discovered (or read at start).
func (s *SM) ownGUID() uint64 {
	if g := ownPortGUID(s.Fabric()); g != 0 {
		return g
	}
	s.elect.mu.Lock()
	defer s.elect.mu.Unlock()
	return s.elect.own
}

// keyHidden reports whether this SM's port is M_Key protected (as last
// discovered): then only a requester that presents our SM_Key learns it.
func (s *SM) keyHidden() bool {
	fab := s.Fabric()
	if fab == nil {
		return false
	}
	if n := fab.Nodes[fab.SMGUID]; n != nil && int(fab.SMPort) < len(n.Ports) {
		pi := &n.Ports[fab.SMPort].Info
		return pi.MKey != 0 && pi.MKeyProtectBits > 0
	}
	return false
}

// SMInfo is what this SM reports about itself. The SM_Key is revealed to a
// requester that presented it (revealKey), and to every requester while
// this SM's port has no M_Key protection: the requester then passes the
// M_Key check, which is the authentication IBA 14.2.5.13 asks for and
// what OpenSM applies; OpenSM ignores an SM whose SMInfo shows another
// SM_Key than its own (ERR 2F18), zero included, so hiding it would make
// OpenSM a second master beside us.
func (s *SM) SMInfo(revealKey bool) smp.SMInfo {
	hidden := !revealKey && s.keyHidden()
	e := s.elect
	e.mu.Lock()
	si := smp.SMInfo{Priority: e.opts.Priority, SMState: e.state}
	if !hidden {
		si.SMKey = e.opts.SMKey
	}
	e.mu.Unlock()
	// ActCount is a heartbeat (IBA 14.4.1): it grows while the SM works.
	si.ActCount = uint32(s.T.Stats().Sent)
	si.GUID = s.ownGUID()
	return si
}

// HandleSMInfoSet carries out an SMInfo Set another SM sent us (from the
// SA agent's goroutine) and returns the SMInfo to answer with. A Set
// without our SM_Key changes nothing (IBA 14.4.2), with one exception:
// a HANDOVER from the master this SM follows may carry SM_Key 0, because
// OpenSM shows its key only to an SM it knows as master (its standby is
// not). HANDOVER, DISABLE, STANDBY and DISCOVER come from a master (the
// sender's SMInfo says so) or are ignored, as OpenSM does.
func (s *SM) HandleSMInfoSet(mod uint32, req smp.SMInfo) smp.SMInfo {
	e := s.elect
	e.mu.Lock()
	keyOK := e.opts.SMKey == 0 || req.SMKey == e.opts.SMKey
	if !keyOK && mod == smCtlHandover && req.SMKey == 0 && e.state == smp.SMStateStandby && req.GUID == e.master {
		keyOK = true
	}
	from := fmt.Sprintf("%#016x", req.GUID)
	fromMaster := req.SMState == smp.SMStateMaster
	switch {
	case !keyOK:
		e.refused++
		n := e.refused
		e.mu.Unlock()
		if n <= 5 || n%1000 == 0 { // a rogue SM must not flood the log
			s.Log.Warn("SMInfo Set with a wrong SM_Key ignored", "from", from, "control", mod, "refused_total", n)
		}
		return s.SMInfo(false)
	case mod != smCtlAcknowledge && !fromMaster:
		s.Log.Debug("SMInfo Set from an SM that is not master ignored", "from", from, "control", mod, "sender_state", req.SMState)
	case mod == smCtlHandover && (e.state == smp.SMStateStandby || e.state == smp.SMStateDiscovering):
		e.becomeMaster()
		e.handover = req.GUID
		e.poke()
		s.Log.Info("mastership handed over to us", "from", from)
	case mod == smCtlHandover && e.state == smp.SMStateMaster:
		// Another master relinquishes its part of the subnet (IBA
		// C14-60.2.1): sweep and take all of it.
		e.handover = req.GUID
		e.poke()
		s.Log.Info("another master handed its part of the subnet over to us", "from", from)
	case mod == smCtlAcknowledge:
		s.Log.Debug("handover acknowledged", "by", from)
	case mod == smCtlDisable && (e.state == smp.SMStateStandby || e.state == smp.SMStateDiscovering):
		e.set(SMStateNotActive, 0)
		s.Log.Warn("disabled by another SM (SMInfo DISABLE); this SM stays inactive until told to DISCOVER", "from", from)
	case mod == smCtlStandby && (e.state == smp.SMStateDiscovering || e.state == SMStateNotActive):
		e.set(smp.SMStateStandby, req.GUID)
		s.Log.Info("told to stand by", "master", from)
	case mod == smCtlDiscover && (e.state == SMStateNotActive || e.state == smp.SMStateStandby):
		e.set(smp.SMStateDiscovering, 0)
		e.poke()
		s.Log.Info("told to discover (SMInfo DISCOVER)", "from", from)
	default:
		s.Log.Debug("SMInfo Set ignored in this state", "from", from, "control", mod, "state", e.state)
	}
	e.mu.Unlock()
	return s.SMInfo(true)
}

// remoteSM is another SM port found during discovery.
type remoteSM struct {
	guid uint64 // port GUID
	node uint64 // node GUID (0: not from a fabric model)
	path mad.Path
	port uint8
	info smp.SMInfo
	ok   bool // answered
}

// better reports whether (pa, ga) outranks (pb, gb): higher priority, then
// lower GUID (IBA 14.4.1.1).
func better(pa uint8, ga uint64, pb uint8, gb uint64) bool {
	if pa != pb {
		return pa > pb
	}
	return ga < gb
}

// remoteSMs lists every other port of fab that advertises IsSM.
func remoteSMs(fab *discovery.Fabric) []remoteSM {
	own := ownPortGUID(fab)
	var out []remoteSM
	for guid, n := range fab.Nodes {
		out = nodeSMs(out, fab, own, guid, n)
	}
	sortSMs(out)
	return out
}

// nodeSMs appends the ports of node n (GUID guid) of fab that advertise
// IsSM, but for this SM's own (port GUID own).
func nodeSMs(out []remoteSM, fab *discovery.Fabric, own, guid uint64, n *discovery.Node) []remoteSM {
	for p := range n.Ports {
		pt := &n.Ports[p]
		if !pt.Valid || pt.Info.CapabilityMask&smp.CapIsSM == 0 {
			continue
		}
		isSwitch := n.Info.NodeType == smp.NodeTypeSwitch
		if isSwitch != (p == 0) {
			continue // an SM sits on a switch's port 0 or a CA's port
		}
		g := pt.GUID
		if g == 0 {
			g = n.Info.PortGUID
		}
		if g == own || (guid == fab.SMGUID && uint8(p) == fab.SMPort) {
			continue
		}
		out = append(out, remoteSM{guid: g, node: guid, path: n.Path, port: uint8(p)})
	}
	return out
}

// sortSMs orders remote SMs by port GUID (then node and port, so that
// the order does not depend on the model's map order).
func sortSMs(rs []remoteSM) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := &rs[i], &rs[j]
		if a.guid != b.guid {
			return a.guid < b.guid
		}
		if a.node != b.node {
			return a.node < b.node
		}
		return a.port < b.port
	})
}

// newSMs reads the PortInfo of every end port of the fabric last seen (CA
// ports, switch port 0) and reports whether one is an SM (IsSM) this SM
// does not know. It is the master's periodic look for SMs that started
// without a trap 144 reaching it: one Get per end port where a full
// re-discovery reads NodeInfo and PortInfo of every port (ft3-36: about
// 13 k Gets instead of 123 k). Nodes that joined since are found by the
// light sweep's port state changes, which re-discover anyway.
//
// At ft3-56 that is 47,824 Gets, seconds of the sweep loop on a loaded
// host: it stops sending when yield (nil: never) says a trap waits, and
// reports done false, so the caller looks again at its next tick.
func (s *SM) newSMs(ctx context.Context, yield func() bool) (found, done bool) {
	fab := s.Fabric()
	if fab == nil {
		return true, true
	}
	known := map[uint64]bool{ownPortGUID(fab): true}
	for _, r := range s.knownSMs(fab) {
		known[r.guid] = true
	}
	var mu sync.Mutex
	smPort := uint64(0)
	g := fanout.New(s.Opts.Parallel)
	done = true
scan:
	for _, n := range fab.Nodes {
		for p := range n.Ports {
			if yield != nil && yield() {
				done = false
				break scan
			}
			pt := &n.Ports[p]
			isSwitch := n.Info.NodeType == smp.NodeTypeSwitch
			if isSwitch != (p == 0) || !pt.Valid || !isSwitch && pt.PeerGUID == 0 {
				continue
			}
			guid := pt.GUID
			if guid == 0 {
				guid = n.Info.PortGUID
			}
			if known[guid] {
				continue
			}
			g.Go(func() error {
				var pi smp.PortInfo
				if err := s.client.Get(ctx, n.Path, smp.AttrPortInfo, uint32(p), &pi); err != nil {
					return nil // gone or busy: the light sweep sees what changed
				}
				if pi.CapabilityMask&smp.CapIsSM != 0 {
					mu.Lock()
					smPort = guid
					mu.Unlock()
				}
				return nil
			})
		}
	}
	g.Wait("looking for new SMs")
	if smPort != 0 {
		s.Log.Info("a port became an SM since the last discovery; discovering to elect", "port_guid", fmt.Sprintf("%#016x", smPort))
	}
	return smPort != 0, done
}

// requeryUnanswered asks once more the SMs whose SMInfo did not come back:
// an SM that is not master yet would otherwise take one lost or late
// answer for an SM that is gone and become a second master (until the
// next discovery hands over). A dead SM port costs one more timeout.
func (s *SM) requeryUnanswered(ctx context.Context, rs []remoteSM) {
	if n := s.querySMs(ctx, rs); n > 0 {
		s.Log.Debug("asked again the SMs whose SMInfo did not answer", "asked", n)
	}
}

// querySMs reads the SMInfo of each remote SM that has not answered yet
// (concurrently; one that does not answer is left !ok) and returns how
// many it asked.
func (s *SM) querySMs(ctx context.Context, rs []remoteSM) int {
	var wg sync.WaitGroup
	asked := 0
	for i := range rs {
		if rs[i].ok {
			continue
		}
		asked++
		wg.Add(1)
		go func() {
			defer wg.Done()
			var si smp.SMInfo
			if err := s.client.Get(ctx, rs[i].path, smp.AttrSMInfo, 0, &si); err == nil {
				rs[i].info, rs[i].ok = si, true
			}
		}()
	}
	wg.Wait()
	return asked
}

// arbitrate runs the election on a fresh discovery and reports whether
// this SM may program the fabric afterwards: it is master and no other
// master is on the subnet. It may send a HANDOVER (to a better master or a
// better standby) or an ACKNOWLEDGE (to the SM that handed over to us).
//
// The rules (IBA 14.4, as OpenSM 3.3 applies them):
//   - an SM that is not master follows a master it finds (standby),
//     whatever the priorities; else it waits for a better SM that is
//     discovering or standing by (that one takes the subnet), else it
//     becomes master;
//   - a master that finds a better master hands its part of the subnet
//     over to it (HANDOVER) and stands by; one that finds a worse master
//     waits for that one's HANDOVER and writes nothing meanwhile;
//   - a master hands over to a better SM that is discovering or
//     standing by when HonorPriority is set;
//   - an SM whose SM_Key differs from ours (as its SMInfo shows it) takes
//     neither our HANDOVER nor our mastership (OpenSM ignores it
//     outright), so it is never handed anything: when it is master, this
//     SM stands by (at once if it ranks higher, else after PollRetries
//     checks in a row, which lets a worse ibsm step down first), and when
//     it is not, it is not waited for.
func (s *SM) arbitrate(ctx context.Context, fab *discovery.Fabric) bool {
	rs := s.knownSMs(fab)
	s.elect.mu.Lock()
	s.elect.extra = nil // this discovery sees every SM port
	s.elect.mu.Unlock()
	s.querySMs(ctx, rs)
	if s.State() != smp.SMStateMaster {
		s.requeryUnanswered(ctx, rs)
	}
	own := ownPortGUID(fab)
	e := s.elect
	e.mu.Lock()
	if e.own == 0 {
		e.own = own
	}
	state, prio, honor, key, ack, retries := e.state, e.opts.Priority, e.opts.HonorPriority, e.opts.SMKey, e.handover, e.opts.PollRetries
	e.handover = 0
	e.mu.Unlock()
	if retries <= 0 {
		retries = DefaultPollRetries
	}
	if state == SMStateNotActive {
		return false
	}
	if ack != 0 {
		// The ACKNOWLEDGE answers the HANDOVER in the role this SM had
		// when it got it: OpenSM takes it only from a standby (else
		// ERR 2F04, "Check legality failed").
		for _, r := range rs {
			if r.guid == ack {
				s.sendControl(ctx, r, smCtlAcknowledge, key, smp.SMStateStandby)
			}
		}
	}
	// master: the best remote master with our SM_Key; foreign: the best
	// remote master with another; best: the best remote SM with our
	// SM_Key that is discovering or standing by.
	var master, foreign, best *remoteSM
	pick := func(cur, r *remoteSM) *remoteSM {
		if cur == nil || better(r.info.Priority, r.guid, cur.info.Priority, cur.guid) {
			return r
		}
		return cur
	}
	for i := range rs {
		r := &rs[i]
		if !r.ok || r.info.SMState == SMStateNotActive || r.info.SMState > smp.SMStateMaster {
			continue
		}
		alien := r.info.SMKey != key
		if alien {
			s.warnForeign(r)
		}
		switch {
		case r.info.SMState == smp.SMStateMaster && alien:
			foreign = pick(foreign, r)
		case r.info.SMState == smp.SMStateMaster:
			master = pick(master, r)
		case !alien:
			best = pick(best, r)
		}
	}
	outranks := func(r *remoteSM) bool { return better(r.info.Priority, r.guid, prio, own) }

	if state != smp.SMStateMaster {
		switch {
		case master != nil:
			s.follow(master, "found a master")
		case foreign != nil:
			s.follow(foreign, "found a master with another SM_Key (it takes no handover from this SM)")
		case best != nil && outranks(best):
			s.follow(best, "a better SM is discovering or standing by; it takes the subnet")
		default:
			e.mu.Lock()
			e.becomeMaster()
			e.mu.Unlock()
			s.Log.Info("this SM is master", "priority", prio, "guid", fmt.Sprintf("%#016x", own), "other_sms", len(rs))
			return true
		}
		return false
	}

	// This SM is master.
	if master != nil {
		if outranks(master) {
			// Two masters (subnets merged, or an election race): the
			// worse one hands its part over and stands by.
			s.handOver(ctx, master, key, "another master outranks this one")
			return false
		}
		s.contest(master, "another master with this SM's SM_Key ranks below this one; waiting for its HANDOVER")
		return false
	}
	if foreign != nil {
		e.mu.Lock()
		if e.rival != foreign.guid {
			e.rival, e.rivalSeen = foreign.guid, 0
		}
		e.rivalSeen++
		seen := e.rivalSeen
		e.mu.Unlock()
		if outranks(foreign) || seen >= retries {
			e.mu.Lock()
			e.stepDowns++
			e.mu.Unlock()
			s.follow(foreign, "a master with another SM_Key will not step down for this SM; standing by")
			return false
		}
		s.contest(foreign, "a master with another SM_Key is on the subnet; this SM stands by if it stays")
		return false
	}
	e.mu.Lock()
	if e.contested {
		s.Log.Info("no other master on the subnet any more; programming again")
	}
	e.contested, e.rival, e.rivalSeen = false, 0, 0
	e.mu.Unlock()
	if best != nil && outranks(best) && honor {
		if s.handOver(ctx, best, key, "a better SM stands by (honor_priority)") {
			return false
		}
	}
	return true
}

// contest records that this master has another master beside it and
// writes nothing until one of them steps down.
func (s *SM) contest(r *remoteSM, why string) {
	e := s.elect
	e.mu.Lock()
	first := !e.contested
	e.contested = true
	e.mu.Unlock()
	if first {
		s.Log.Warn("two masters on the subnet: "+why, "other", fmt.Sprintf("%#016x", r.guid), "other_priority", r.info.Priority, "other_state", r.info.SMState)
	}
}

// warnForeign reports, once per SM, an SM whose SM_Key differs from ours.
func (s *SM) warnForeign(r *remoteSM) {
	e := s.elect
	e.mu.Lock()
	first := !e.warned[r.guid]
	e.warned[r.guid] = true
	e.mu.Unlock()
	if first {
		s.Log.Warn("an SM with another SM_Key is on the subnet: no handover is possible between us (set the same sm_key on every SM)",
			"guid", fmt.Sprintf("%#016x", r.guid), "priority", r.info.Priority, "state", r.info.SMState)
	}
}

// handOver makes this master the standby of r and sends r a HANDOVER. The
// state changes first, so the subnet never has two masters on our account
// (at worst none, while r starts its term). If r does not answer, a
// master r is followed anyway (it polls as master) and this SM stays
// master beside a standby r. It reports whether this SM stood down.
func (s *SM) handOver(ctx context.Context, r *remoteSM, key uint64, why string) bool {
	e := s.elect
	e.mu.Lock()
	e.set(smp.SMStateStandby, r.guid)
	e.mu.Unlock()
	ok := s.sendControl(ctx, *r, smCtlHandover, key, smp.SMStateMaster)
	if !ok && r.info.SMState != smp.SMStateMaster {
		e.mu.Lock()
		if e.state == smp.SMStateStandby && e.master == r.guid {
			e.set(smp.SMStateMaster, 0)
		}
		e.mu.Unlock()
		s.Log.Warn("handover to a better SM not answered; staying master", "guid", fmt.Sprintf("%#016x", r.guid))
		return false
	}
	e.mu.Lock()
	if r.info.SMState == smp.SMStateMaster {
		e.stepDowns++
	} else {
		e.handovers++
	}
	e.mu.Unlock()
	s.Log.Info("standing by: handed mastership over", "reason", why, "to", fmt.Sprintf("%#016x", r.guid), "to_priority", r.info.Priority, "answered", ok)
	return true
}

// follow makes this SM the standby of r.
func (s *SM) follow(r *remoteSM, why string) {
	e := s.elect
	e.mu.Lock()
	changed := e.state != smp.SMStateStandby || e.master != r.guid
	if e.state == smp.SMStateStandby && e.master == r.guid {
		e.failed = 0
	} else {
		e.set(smp.SMStateStandby, r.guid)
	}
	e.mu.Unlock()
	if changed {
		s.Log.Info("standing by", "reason", why, "master", fmt.Sprintf("%#016x", r.guid), "master_priority", r.info.Priority, "master_state", r.info.SMState)
	}
}

// sendControl sends SubnSet(SMInfo) with control code mod to r, speaking
// as an SM in state as, and reports whether r answered.
func (s *SM) sendControl(ctx context.Context, r remoteSM, mod uint32, key uint64, as uint8) bool {
	si := s.SMInfo(true)
	si.SMKey, si.SMState = key, as
	var out smp.SMInfo
	if err := s.client.Set(ctx, r.path, smp.AttrSMInfo, mod, &si, &out); err != nil {
		s.Log.Warn("SMInfo Set not answered", "to", fmt.Sprintf("%#016x", r.guid), "control", mod, "error", err)
		return false
	}
	return true
}

// pollMaster is a standby's poll of its master: it reports whether the
// master is gone (PollRetries polls in a row failed, or it stopped being
// master) and the SM must discover again.
func (s *SM) pollMaster(ctx context.Context) bool {
	e := s.elect
	e.mu.Lock()
	master, retries := e.master, e.opts.PollRetries
	e.mu.Unlock()
	if retries <= 0 {
		retries = DefaultPollRetries
	}
	fab := s.Fabric()
	var target *remoteSM
	if fab != nil {
		for _, r := range s.knownSMs(fab) {
			if r.guid == master {
				target = &r
				break
			}
		}
	}
	ok := false
	if target != nil {
		var si smp.SMInfo
		err := s.client.Get(ctx, target.path, smp.AttrSMInfo, 0, &si)
		ok = err == nil && si.SMState == smp.SMStateMaster
		if ok {
			s.nudge(fab, target, si)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != smp.SMStateStandby {
		return false
	}
	if ok {
		e.failed = 0
		return false
	}
	e.failed++
	s.Log.Info("master poll failed", "master", fmt.Sprintf("%#016x", master), "failed", e.failed, "of", retries)
	if e.failed < retries {
		return false
	}
	e.set(smp.SMStateDiscovering, 0)
	s.Log.Warn("the master is gone; discovering to take over", "master", fmt.Sprintf("%#016x", master))
	return true
}

// pollSettings returns the election's tick and how many ticks a master
// waits between re-discoveries.
func (s *SM) pollSettings() (time.Duration, int) {
	e := s.elect
	e.mu.Lock()
	defer e.mu.Unlock()
	d, n := e.opts.PollInterval, e.opts.PollRetries
	if d <= 0 {
		d = DefaultPollInterval
	}
	if n <= 0 {
		n = DefaultPollRetries
	}
	return d, n
}

// peersChanged is a master's cheap check of the SMs it knows: true when
// one of them is master too, or outranks this SM while discovering or
// standing by with our SM_Key and HonorPriority is set (a handover is
// due), so the caller sweeps and elects.
func (s *SM) peersChanged(ctx context.Context) bool {
	fab := s.Fabric()
	if fab == nil {
		return false
	}
	rs := s.knownSMs(fab)
	if len(rs) == 0 {
		return false
	}
	s.querySMs(ctx, rs)
	e := s.elect
	e.mu.Lock()
	prio, honor, key, contested := e.opts.Priority, e.opts.HonorPriority, e.opts.SMKey, e.contested
	e.mu.Unlock()
	own := ownPortGUID(fab)
	for _, r := range rs {
		if !r.ok {
			continue
		}
		switch {
		case r.info.SMState == smp.SMStateMaster:
			return true
		case honor && r.info.SMKey == key && r.info.SMState != SMStateNotActive && better(r.info.Priority, r.guid, prio, own):
			return true
		}
	}
	return contested // the other master is gone: elect again, then program
}

// startTerm begins this SM's term as master on the heavy sweep that
// follows its election: clients re-register (PortInfo ClientReregister,
// IBA 14.4.11). If another SM ran the subnet since this one last
// programmed it, what this SM remembers is stale: the plan in force is
// dropped (the LIDs come from the fabric, see previousLIDs) and the
// programmer forgets what it wrote, so nothing is skipped on the strength
// of a table the other SM may have rewritten.
func (s *SM) startTerm() {
	e := s.elect
	e.mu.Lock()
	nt, adopt := e.newTerm, e.followed
	e.newTerm = false
	e.mu.Unlock()
	if !nt {
		return
	}
	s.mu.Lock()
	kept := s.regsKept
	s.regsKept = false // once: a later term may follow another SM's
	s.mu.Unlock()
	if kept && !adopt {
		s.prog.ReregisterStrangers()
	} else {
		s.prog.Reregister()
	}
	if !adopt {
		return
	}
	s.mu.Lock()
	had := s.applied != nil
	s.applied, s.lids = nil, nil
	s.mu.Unlock()
	if had {
		s.prog.Forget()
	}
}

// KeepRegistrations tells the SM that the SA registrations (multicast
// joins, services, subscriptions) of its last term were restored from the
// state directory: its first term as master then asks only the CA ports
// whose MasterSMLID is not its own to re-register (ClientReregister, IBA
// 14.4.11); the ports it served keep what they registered. Unless it
// follows another master first (startTerm's adopt): that one's clients
// registered with it.
func (s *SM) KeepRegistrations() {
	s.mu.Lock()
	s.regsKept = true
	s.mu.Unlock()
}

// programmed records that this master programmed the subnet: from now on
// its own plan and guid2lid are the truth again.
func (e *election) programmed() {
	e.mu.Lock()
	if e.state == smp.SMStateMaster {
		e.followed = false
	}
	e.mu.Unlock()
}

// adopting reports whether the next plan takes the LIDs the fabric holds
// over those this SM remembers: it is master and another SM ran the
// subnet since this one last programmed it.
func (e *election) adopting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state == smp.SMStateMaster && e.followed
}

// maxNudges bounds the trap 144s a standby sends one master.
const maxNudges = 3

// nudge tells a master this standby outranks (same SM_Key) that it
// should hand over, as OpenSM's standby does: a trap 144 with "SM
// priority changed" to the master's LID. OpenSM sweeps on it and hands
// over; a master that keeps its mastership (ibsm without honor_priority)
// ignores it. It is sent at most maxNudges times per master, one per
// PollRetries polls.
func (s *SM) nudge(fab *discovery.Fabric, master *remoteSM, si smp.SMInfo) {
	e := s.elect
	own := ownPortGUID(fab)
	e.mu.Lock()
	prio, key, retries := e.opts.Priority, e.opts.SMKey, max(e.opts.PollRetries, 1)
	if si.SMKey != key || !better(prio, own, si.Priority, master.guid) {
		e.mu.Unlock()
		return
	}
	if e.nudgedFor != master.guid {
		e.nudgedFor, e.nudges = master.guid, 0
	}
	n := e.nudges
	e.nudges++
	e.mu.Unlock()
	if n%retries != 0 || n/retries >= maxNudges {
		return
	}
	mn, on := fab.Nodes[fab.SMGUID], (*discovery.Node)(nil)
	for _, nd := range fab.Nodes {
		if int(master.port) < len(nd.Ports) && nd.Ports[master.port].Valid && (nd.Ports[master.port].GUID == master.guid || (nd.Ports[master.port].GUID == 0 && nd.Info.PortGUID == master.guid)) {
			on = nd
			break
		}
	}
	if mn == nil || on == nil || int(fab.SMPort) >= len(mn.Ports) {
		return
	}
	ownPI, masterLID := mn.Ports[fab.SMPort].Info, on.Ports[master.port].Info.LID
	if masterLID == 0 || ownPI.LID == 0 {
		return
	}
	producer := uint32(mn.Info.NodeType)
	notice := smp.NewTrap144(producer, smp.Trap144{LID: ownPI.LID, CapabilityMask: ownPI.CapabilityMask, ChangeFlags: trap144SMPriority})
	req := smp.SMP{MgmtClass: smp.ClassSMPLID, ClassVersion: smp.SMPClassVersion, Method: smp.MethodTrap, TID: uint64(time.Now().UnixNano()) & 0xFFFFFFFF}
	buf := make([]byte, smp.MADLen)
	if err := req.SetAttr(notice); err != nil {
		s.Log.Debug("trap 144 not built", "error", err)
		return
	}
	if err := req.EncodeTo(buf); err != nil {
		s.Log.Debug("trap 144 not encoded", "error", err)
		return
	}
	if err := s.T.Send(transport.Packet{DLID: masterLID, MAD: buf}); err != nil {
		s.Log.Debug("trap 144 not sent", "to_lid", masterLID, "error", err)
		return
	}
	s.Log.Info("this standby outranks its master; asked it to hand over (trap 144, SM priority changed)",
		"master", fmt.Sprintf("%#016x", master.guid), "master_lid", masterLID, "master_priority", si.Priority, "priority", prio)
}

// trap144SMPriority is trap 144's "SM priority changed" flag.
const trap144SMPriority = 0x0008

// smTrapLID returns the LID a trap 144 about an SM comes from: the port
// now advertises IsSM (an SM started there) or says its SM priority
// changed (a standby that outranks the master asks for a handover).
func smTrapLID(p transport.Packet) (uint16, bool) {
	if len(p.MAD) < smp.MADLen || smp.PeekMethod(p.MAD) != smp.MethodTrap || smp.PeekAttrID(p.MAD) != smp.AttrNotice {
		return 0, false
	}
	var req smp.SMP
	if err := req.Decode(p.MAD); err != nil {
		return 0, false
	}
	var n smp.Notice
	if err := req.Attr(&n); err != nil || !n.IsGeneric || n.TrapNumber != smp.TrapCapabilityMaskChange {
		return 0, false
	}
	d, err := n.Trap144()
	if err != nil || (d.CapabilityMask&smp.CapIsSM == 0 && d.ChangeFlags&trap144SMPriority == 0) || d.LID == 0 {
		return 0, false
	}
	return d.LID, true
}

// learnSM asks the port at lid (from a trap 144 about an SM) for its
// SMInfo and, if an SM answers, keeps it among the SMs this master checks
// (peersChanged, checkAlone) until the next discovery. It reports whether
// an election is due now: that SM is master, or outranks this one with
// our SM_Key while HonorPriority is set.
func (s *SM) learnSM(ctx context.Context, lid uint16) bool {
	fab := s.Fabric()
	if fab == nil {
		return true
	}
	var r *remoteSM
	for _, nd := range fab.Nodes {
		for p := range nd.Ports {
			pt := &nd.Ports[p]
			isSwitch := nd.Info.NodeType == smp.NodeTypeSwitch
			if !pt.Valid || pt.Info.LID != lid || isSwitch != (p == 0) {
				continue
			}
			g := pt.GUID
			if g == 0 {
				g = nd.Info.PortGUID
			}
			r = &remoteSM{guid: g, path: nd.Path, port: uint8(p)}
		}
	}
	if r == nil || r.guid == ownPortGUID(fab) {
		return false
	}
	var si smp.SMInfo
	if err := s.client.Get(ctx, r.path, smp.AttrSMInfo, 0, &si); err != nil {
		s.Log.Debug("trap 144 about an SM: its SMInfo not read", "lid", lid, "error", err)
		return false
	}
	r.info, r.ok = si, true
	e := s.elect
	e.mu.Lock()
	if e.extra == nil {
		e.extra = map[uint64]remoteSM{}
	}
	_, known := e.extra[r.guid]
	e.extra[r.guid] = *r
	prio, honor, key := e.opts.Priority, e.opts.HonorPriority, e.opts.SMKey
	e.mu.Unlock()
	if !known {
		s.Log.Info("an SM announced itself (trap 144)", "guid", fmt.Sprintf("%#016x", r.guid), "lid", lid, "priority", si.Priority, "state", si.SMState)
	}
	return si.SMState == smp.SMStateMaster || (honor && si.SMKey == key && si.SMState != SMStateNotActive && better(si.Priority, r.guid, prio, ownPortGUID(fab)))
}

// knownSMs are the remote SMs of fab and those learnt from traps since.
// The fabric's own are remembered for the last fabric asked (a model never
// changes once made): a sweep asks twice and the next tick again, and at
// ft3-56 each look is a pass over 311 k ports.
func (s *SM) knownSMs(fab *discovery.Fabric) []remoteSM {
	s.mu.Lock()
	c := s.smsOf
	s.mu.Unlock()
	if c.fab != fab {
		c = fabricSMs{fab: fab, rs: remoteSMs(fab)}
		s.mu.Lock()
		s.smsOf = c
		s.mu.Unlock()
	}
	rs := slices.Clone(c.rs)
	e := s.elect
	e.mu.Lock()
	defer e.mu.Unlock()
	for g, r := range e.extra {
		dup := false
		for _, q := range rs {
			dup = dup || q.guid == g
		}
		if !dup {
			rs = append(rs, remoteSM{guid: r.guid, path: r.path, port: r.port})
		}
	}
	return rs
}

// checkAlone is a master's last look before it writes: if an SM it knows
// (in fab or in the fabric it last saw) now says it is master, nothing is
// written and a heavy sweep elects. It catches a master that started
// between two elections, whose Sets a light sweep would otherwise take
// for drift and undo. An incremental sweep (which elects nothing) also
// stops when a port it re-read names an SM LID other than the one this
// SM programmed: another SM set it, maybe one that started as master
// since the last discovery.
//
// lin, when not nil, says that only its changed nodes may name another SM
// LID: every other endpoint holds the one this SM programmed.
func (s *SM) checkAlone(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, res *pipeline.Result, incremental bool, lin *since) error {
	if a := s.Applied(); incremental && a != nil {
		ours := smLIDOf(a.Topo, a.Result)
		if ours != 0 && ours == smLIDOf(topo, res) {
			eps := topo.Endpoints()
			if lin != nil && lin.cur == a {
				eps = lin.endpoints(topo)
			}
			err := foreignSMLID(fab, topo, eps, ours)
			if s.crossCheck && len(eps) != len(topo.Endpoints()) {
				if all := foreignSMLID(fab, topo, topo.Endpoints(), ours); fmt.Sprint(all) != fmt.Sprint(err) {
					return fmt.Errorf("cross-check: the changed nodes' SM LIDs say %v, all say %v", err, all)
				}
			}
			if err != nil {
				s.elect.poke()
				return err
			}
		}
	}
	seen := map[uint64]bool{}
	var rs []remoteSM
	for i, f := range []*discovery.Fabric{fab, s.Fabric()} {
		if f == nil || i > 0 && f == fab {
			continue // route made fab the fabric last seen
		}
		for _, r := range s.knownSMs(f) {
			if !seen[r.guid] {
				seen[r.guid] = true
				rs = append(rs, r)
			}
		}
	}
	if len(rs) == 0 {
		return nil
	}
	s.querySMs(ctx, rs)
	for _, r := range rs {
		if r.ok && r.info.SMState == smp.SMStateMaster {
			s.elect.poke()
			return fmt.Errorf("another master (%#016x, priority %d) is on the subnet: nothing written, electing first", r.guid, r.info.Priority)
		}
	}
	return nil
}

// foreignSMLID names the first of the endpoints eps of topo whose port in
// fab names an SM LID other than ours.
func foreignSMLID(fab *discovery.Fabric, topo *topology.Topology, eps []topology.PortRef, ours uint16) error {
	for _, ep := range eps {
		n := fab.Nodes[topo.Nodes[ep.Node].GUID]
		if n == nil || int(ep.Port) >= len(n.Ports) {
			continue
		}
		if pt := &n.Ports[ep.Port]; pt.Valid && pt.Info.MasterSMLID != 0 && pt.Info.MasterSMLID != ours {
			return fmt.Errorf("port %#016x/%d names SM LID %d, not this SM's %d: another SM set it; nothing written, electing first",
				n.Info.NodeGUID, ep.Port, pt.Info.MasterSMLID, ours)
		}
	}
	return nil
}

// fabricSMs are the remote SMs found in one fabric model.
type fabricSMs struct {
	fab *discovery.Fabric
	rs  []remoteSM
}
