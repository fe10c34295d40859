package sm

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
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
	// stats for status and tests
	takeovers, stepDowns, handovers int
	refused                         int // SMInfo Sets with a wrong SM_Key
}

func newElection(o ElectionOptions) *election {
	return &election{opts: o, state: smp.SMStateDiscovering, wake: make(chan struct{}, 1)}
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

// IsMaster reports whether this SM may write to the fabric.
func (s *SM) IsMaster() bool { return s.State() == smp.SMStateMaster }

// ElectionStats says how often this SM took over, stepped down, handed
// over and refused an SMInfo Set for a wrong SM_Key.
type ElectionStats struct {
	State                                  uint8
	Master                                 uint64 // the master a standby follows
	Takeovers, StepDowns, Handovers, Refused int
}

// ElectionStats returns the election counters.
func (s *SM) ElectionStats() ElectionStats {
	e := s.elect
	e.mu.Lock()
	defer e.mu.Unlock()
	return ElectionStats{State: e.state, Master: e.master, Takeovers: e.takeovers, StepDowns: e.stepDowns, Handovers: e.handovers, Refused: e.refused}
}

func (e *election) set(state uint8, master uint64) {
	e.state, e.master, e.failed = state, master, 0
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

// SMInfo is what this SM reports about itself; the SM_Key only when
// revealKey (the requester presented it) or when there is none to hide.
func (s *SM) SMInfo(revealKey bool) smp.SMInfo {
	e := s.elect
	e.mu.Lock()
	si := smp.SMInfo{Priority: e.opts.Priority, SMState: e.state}
	if revealKey || e.opts.SMKey == 0 {
		si.SMKey = e.opts.SMKey
	}
	e.mu.Unlock()
	// ActCount is a heartbeat (IBA 14.4.1): it grows while the SM works.
	si.ActCount = uint32(s.T.Stats().Sent)
	si.GUID = ownPortGUID(s.Fabric())
	return si
}

// HandleSMInfoSet carries out an SMInfo Set another SM sent us (from the
// SA agent's goroutine) and returns the SMInfo to answer with. A Set
// without our SM_Key changes nothing (IBA 14.4.2).
func (s *SM) HandleSMInfoSet(mod uint32, req smp.SMInfo) smp.SMInfo {
	e := s.elect
	e.mu.Lock()
	keyOK := e.opts.SMKey == 0 || req.SMKey == e.opts.SMKey
	from := fmt.Sprintf("%#016x", req.GUID)
	switch {
	case !keyOK:
		e.refused++
		n := e.refused
		e.mu.Unlock()
		if n <= 5 || n%1000 == 0 { // a rogue SM must not flood the log
			s.Log.Warn("SMInfo Set with a wrong SM_Key ignored", "from", from, "control", mod, "refused_total", n)
		}
		return s.SMInfo(false)
	case mod == smCtlHandover && (e.state == smp.SMStateStandby || e.state == smp.SMStateDiscovering):
		e.set(smp.SMStateMaster, 0)
		e.handover = req.GUID
		e.takeovers++
		s.prog.Reregister()
		e.poke()
		s.Log.Info("mastership handed over to us", "from", from)
	case mod == smCtlAcknowledge:
		s.Log.Debug("handover acknowledged", "by", from)
	case mod == smCtlDisable:
		e.set(SMStateNotActive, 0)
		s.Log.Warn("disabled by another SM (SMInfo DISABLE); this SM stays inactive until told to DISCOVER", "from", from)
	case mod == smCtlStandby && e.state == smp.SMStateDiscovering:
		e.set(smp.SMStateStandby, req.GUID)
		s.Log.Info("told to stand by", "master", from)
	case mod == smCtlDiscover && e.state == SMStateNotActive:
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
			out = append(out, remoteSM{guid: g, path: n.Path, port: uint8(p)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].guid < out[j].guid })
	return out
}

// querySMs reads the SMInfo of each remote SM (concurrently; one that does
// not answer is left !ok).
func (s *SM) querySMs(ctx context.Context, rs []remoteSM) {
	var wg sync.WaitGroup
	for i := range rs {
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
}

// arbitrate runs the election on a fresh discovery and reports whether
// this SM is master afterwards. It may send a HANDOVER (master to a better
// standby) or an ACKNOWLEDGE (new master to the SM that handed over).
func (s *SM) arbitrate(ctx context.Context, fab *discovery.Fabric) bool {
	rs := remoteSMs(fab)
	s.querySMs(ctx, rs)
	own := ownPortGUID(fab)
	e := s.elect
	e.mu.Lock()
	state, prio, honor, key, ack := e.state, e.opts.Priority, e.opts.HonorPriority, e.opts.SMKey, e.handover
	e.handover = 0
	e.mu.Unlock()
	if state == SMStateNotActive {
		return false
	}
	if ack != 0 {
		for _, r := range rs {
			if r.guid == ack {
				s.sendControl(ctx, r, smCtlAcknowledge, key)
			}
		}
	}
	var master, best *remoteSM // a remote master; the best remote SM still discovering or standing by
	for i := range rs {
		r := &rs[i]
		if !r.ok || r.info.SMState == SMStateNotActive {
			continue
		}
		if r.info.SMState == smp.SMStateMaster {
			if master == nil || better(r.info.Priority, r.guid, master.info.Priority, master.guid) {
				master = r
			}
			continue
		}
		if best == nil || better(r.info.Priority, r.guid, best.info.Priority, best.guid) {
			best = r
		}
	}
	switch {
	case master != nil && state != smp.SMStateMaster:
		s.follow(master, "found a master")
		return false
	case master != nil && better(master.info.Priority, master.guid, prio, own):
		// Two masters: the worse one steps down, so the better keeps the
		// subnet (its own sweep sees us as standby).
		e.mu.Lock()
		e.stepDowns++
		e.mu.Unlock()
		s.follow(master, "another master outranks this one; stepping down")
		return false
	case master != nil:
		s.Log.Warn("another master on the subnet ranks below this SM; it should step down", "guid", fmt.Sprintf("%#016x", master.guid), "priority", master.info.Priority)
	}
	if best != nil && better(best.info.Priority, best.guid, prio, own) {
		if state == smp.SMStateMaster && !honor {
			return true // honor_priority off: keep mastership
		}
		if state == smp.SMStateMaster {
			// Hand over: once the better SM answered our HANDOVER it is
			// master; from then on this one only follows it.
			if s.sendControl(ctx, *best, smCtlHandover, key) {
				e.mu.Lock()
				e.handovers++
				e.mu.Unlock()
				s.follow(best, "handed mastership to a better SM")
				return false
			}
			s.Log.Warn("handover to a better SM failed; staying master", "guid", fmt.Sprintf("%#016x", best.guid))
			return true
		}
		if best.info.SMState == smp.SMStateDiscovering {
			// It will be master; wait for it.
			s.follow(best, "a better SM is discovering")
			return false
		}
	}
	e.mu.Lock()
	if e.state != smp.SMStateMaster {
		e.takeovers++
		s.prog.Reregister() // clients re-register with the new master
		s.Log.Info("this SM is master", "priority", prio, "guid", fmt.Sprintf("%#016x", own), "other_sms", len(rs))
	}
	e.set(smp.SMStateMaster, 0)
	e.mu.Unlock()
	return true
}

// follow makes this SM the standby of r.
func (s *SM) follow(r *remoteSM, why string) {
	e := s.elect
	e.mu.Lock()
	changed := e.state != smp.SMStateStandby || e.master != r.guid
	e.set(smp.SMStateStandby, r.guid)
	e.mu.Unlock()
	if changed {
		s.Log.Info("standing by", "reason", why, "master", fmt.Sprintf("%#016x", r.guid), "master_priority", r.info.Priority)
	}
}

// sendControl sends SubnSet(SMInfo) with control code mod to r and reports
// whether r answered.
func (s *SM) sendControl(ctx context.Context, r remoteSM, mod uint32, key uint64) bool {
	si := s.SMInfo(true)
	si.SMKey = key
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
		for _, r := range remoteSMs(fab) {
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
// one of them is master too, or outranks this SM while standing by (a
// handover is due), so the caller sweeps and elects.
func (s *SM) peersChanged(ctx context.Context) bool {
	fab := s.Fabric()
	if fab == nil {
		return false
	}
	rs := remoteSMs(fab)
	if len(rs) == 0 {
		return false
	}
	s.querySMs(ctx, rs)
	e := s.elect
	e.mu.Lock()
	prio, honor := e.opts.Priority, e.opts.HonorPriority
	e.mu.Unlock()
	own := ownPortGUID(fab)
	for _, r := range rs {
		if !r.ok {
			continue
		}
		if r.info.SMState == smp.SMStateMaster || (honor && better(r.info.Priority, r.guid, prio, own)) {
			return true
		}
	}
	return false
}
