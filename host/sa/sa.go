// Package sa is the SM's answering side: Subnet Administration queries
// (class 0x03: PathRecord, MultiPathRecord, NodeRecord, PortInfoRecord,
// LinkRecord, GUIDInfoRecord, SwitchInfoRecord, LinearForwardingTableRecord,
// SLtoVLMappingTableRecord, VLArbitrationTableRecord, P_KeyTableRecord,
// MCMemberRecord, MulticastForwardingTableRecord, SMInfoRecord,
// ClassPortInfo) and SMInfo SMPs, answered from the plan the SM has
// programmed (sm.Applied) and the discovered fabric, never by querying the
// fabric per request, except VLArbitrationTableRecord (read once per plan,
// see vlarb.go); and the SA's own state: ServiceRecord registrations
// (service.go) and InformInfo subscriptions with Report forwarding
// (inform.go).
//
// # Transports with and without RMPP
//
// A GetTable answer is one RMPP message (IBA 13.6). With Options.RMPP the
// agent builds the whole message as one buffer, RMPP-flagged, of exactly
// 56 + records×stride bytes (it may be shorter or longer than 256); the umad
// kernel agent segments and reassembles it. Without RMPP (ibsim, whose
// clients exchange single 256-byte MADs) the answer is one MAD holding as
// many records as fit in 160 data bytes (see singleMADData: the 200 a MAD
// has, less what umad2sim loses), still flagged as a
// single-segment RMPP message (Active|First|Last, segment 1, PayloadLength
// = 20 + records×stride) so that smp.RMPPMessageLen tells the transport the
// real length; records that did not fit are dropped and a warning is
// logged once per query kind. The requester then sees a truncated table:
// that is a limit of the transport, not of the SA.
//
// # What is not implemented
//
// No TraceRecord, no QoS classes, no off-subnet (router) paths;
// MultiPathRecord ignores IndependenceSelector and reads one MAD of GIDs; ServiceRecords and subscriptions live in
// memory only (a restarted SM forgets them: clients re-register). Over
// ibsim a single record longer than 160 bytes (ServiceRecord: 176) loses
// its tail in umad2sim, whatever the SA sends (see singleMADData).
// SMInfo Sets go to the Elector (the SM's election) when the Source is
// one.
//
// # Untrusted input
//
// Every MAD from the fabric may come from a hostile or broken peer. Each
// source (SLID, or the directed route of an SMP) is rate-limited before
// anything is decoded, and answered from a queue of its own, round robin
// with the others (see guard.go), so a flood costs the flooder its
// requests and nobody else theirs. Malformed MADs are dropped; MADs that
// can be answered get the spec's status: bad version (0x0004) for a class
// version other than the one the class defines, unsupported method
// (0x0008) or method/attribute (0x000C). SA requests with a non-zero
// SM_Key other than ours are dropped unanswered (IBA C15-0.1.5, as
// OpenSM does). Nothing a request says changes the agent's state.
package sa

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/flood"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Source gives the agent the SM's current state. *sm.SM implements it.
type Source interface {
	// Applied is the plan in force (nil before the first SUBNET UP).
	Applied() *sm.Applied
	// Fabric is the last discovered fabric: NodeInfo, NodeDescription and
	// PortInfo (MTU, speeds, capabilities) as the ports reported them.
	Fabric() *discovery.Fabric
}

// Options configure an Agent.
type Options struct {
	// RMPP: the transport segments RMPP messages (umad). False for ibsim
	// and the embedded fabric: every answer is one 256-byte MAD.
	RMPP bool
	// Priority is SMInfo.Priority (0..15).
	Priority uint8
	// SMKey is this SM's SM_Key. SA requests carrying it are trusted (they
	// see M_Keys and the SM_Key); SMInfo reveals it only to requesters that
	// present it. 0 means there is nothing to hide.
	SMKey uint64
	// PacketLifeTime is PathRecord.PacketLifeTime (6 bits; 0 selects 18,
	// about 1 s, the common SA default).
	PacketLifeTime uint8
	// SARate and SMPRate are how many SA requests and SMPs per second one
	// source may send (burst: one second's worth); 0 selects
	// DefaultSARate and DefaultSMPRate, a negative value no limit.
	SARate, SMPRate float64
	// QueuePerSource and QueueTotal bound the requests waiting for an
	// answer (0: DefaultQueuePerSource, DefaultQueueTotal).
	QueuePerSource, QueueTotal int
}

// DefaultPacketLifeTime is used when Options.PacketLifeTime is 0.
const DefaultPacketLifeTime = 18

// Agent answers SA and SMInfo requests; it implements sm.Agent.
type Agent struct {
	src  Source
	t    transport.Transport
	opts Options
	log  hclog.Logger

	mu     sync.Mutex
	idx    *index
	warned map[string]bool
	smKey  atomic.Uint64 // Options.SMKey, replaced by SetSMKey

	saLimit, smpLimit *flood.Limiter
	queue             *fairQueue

	services services      // ServiceRecord registrations (service.go)
	inform   subscriptions // InformInfo subscriptions (inform.go)
}

var _ sm.Agent = (*Agent)(nil)

// New returns an Agent that answers from src and sends on t.
func New(src Source, t transport.Transport, opts Options, log hclog.Logger) *Agent {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if opts.PacketLifeTime == 0 {
		opts.PacketLifeTime = DefaultPacketLifeTime
	}
	if opts.Priority > 15 {
		log.Warn("SM priority is 4 bits; clamping", "priority", opts.Priority, "used", 15)
		opts.Priority = 15
	}
	if opts.PacketLifeTime > 0x3F {
		log.Warn("packet lifetime is 6 bits; clamping", "packet_lifetime", opts.PacketLifeTime, "used", 0x3F)
		opts.PacketLifeTime = 0x3F
	}
	if opts.SARate == 0 {
		opts.SARate = DefaultSARate
	}
	if opts.SMPRate == 0 {
		opts.SMPRate = DefaultSMPRate
	}
	if opts.QueuePerSource <= 0 {
		opts.QueuePerSource = DefaultQueuePerSource
	}
	if opts.QueueTotal <= 0 {
		opts.QueueTotal = DefaultQueueTotal
	}
	a := &Agent{src: src, t: t, opts: opts, log: log, warned: map[string]bool{},
		saLimit:  flood.New(flood.Config{Kind: "SA requests", Rate: opts.SARate}, log),
		smpLimit: flood.New(flood.Config{Kind: "SMPs to the SM", Rate: opts.SMPRate, Burst: 2 * int(opts.SMPRate)}, log),
		queue:    newFairQueue(opts.QueuePerSource, opts.QueueTotal),
	}
	a.smKey.Store(opts.SMKey)
	return a
}

// Counters are the agent's drop counters (see package flood).
type Counters struct {
	SA, SMP flood.Stats
}

// Counters returns what the agent let through and dropped, per kind.
func (a *Agent) Counters() Counters {
	return Counters{SA: a.saLimit.Stats(), SMP: a.smpLimit.Stats()}
}

// SetSMKey replaces the SM_Key that makes SA requests trusted (SIGHUP).
func (a *Agent) SetSMKey(k uint64) { a.smKey.Store(k) }

// Handle takes p if it is an SA request or an SMP addressed to the SM
// (SMInfo, or any other attribute the fabric handed us because no SMA
// implements it) and reports whether it was. Traps are not ours. Handle
// never blocks: p is answered (or dropped, see guard.go) by the agent's
// worker.
func (a *Agent) Handle(ctx context.Context, p transport.Packet) (handled bool) {
	defer func() {
		// A bug here must not take the sweep loop down with it; say loudly
		// that a request went unanswered.
		if r := recover(); r != nil {
			a.log.Error("BUG: SA agent panicked; request dropped", "panic", r, "slid", p.SLID, "stack", string(debug.Stack()))
			handled = true
		}
	}()
	return a.admit(p)
}

func (a *Agent) handle(p transport.Packet) bool {
	switch smp.PeekClass(p.MAD) {
	case smp.ClassSA:
		a.handleSA(p)
		return true
	case smp.ClassSMPLID, smp.ClassSMPDR:
		return a.handleSMP(p)
	}
	return false
}

func (a *Agent) send(p transport.Packet, what string) {
	if err := a.t.Send(p); err != nil {
		a.log.Warn("answer not sent", "what", what, "dlid", p.DLID, "error", err)
	}
}

// warnOnce logs msg at Warn the first time for kind, at Debug afterwards.
func (a *Agent) warnOnce(kind, msg string, args ...any) {
	a.mu.Lock()
	first := !a.warned[kind]
	a.warned[kind] = true
	a.mu.Unlock()
	if first {
		a.log.Warn(msg, args...)
	} else {
		a.log.Debug(msg, args...)
	}
}

// current returns the index of the plan in force, building it on first
// use after the plan or the fabric changed; nil before the first plan.
func (a *Agent) current() *index {
	ap := a.src.Applied()
	if ap == nil {
		return nil
	}
	fab := a.src.Fabric()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.idx != nil && a.idx.applied == ap && a.idx.fabric == fab {
		return a.idx
	}
	x, err := buildIndex(ap, fab)
	if err != nil {
		a.log.Error("cannot answer SA queries from the applied plan", "error", err)
		a.idx = nil
		return nil
	}
	a.idx = x
	return x
}

// Elector is the SM's side of the SMInfo protocol (*sm.SM implements it):
// the agent answers SMInfo Gets with SMInfo and hands Sets to
// HandleSMInfoSet. A Source without it is reported as master once it has a
// plan, and SMInfo Sets change nothing.
type Elector interface {
	SMInfo(revealKey bool) smp.SMInfo
	HandleSMInfoSet(mod uint32, req smp.SMInfo) smp.SMInfo
}

// smInfo is what this SM reports about itself, and its LID.
func (a *Agent) smInfo(revealKey bool) (smp.SMInfo, uint16) {
	if el, ok := a.src.(Elector); ok {
		var lid uint16
		if x := a.current(); x != nil {
			lid = x.smLID
		}
		return el.SMInfo(revealKey), lid
	}
	si := smp.SMInfo{Priority: a.opts.Priority, SMState: smp.SMStateDiscovering}
	if key := a.smKey.Load(); revealKey || key == 0 {
		si.SMKey = key
	}
	// ActCount is a heartbeat (IBA 14.4.1): the SM's MAD activity grows
	// while it is alive.
	si.ActCount = uint32(a.t.Stats().Sent)
	var lid uint16
	if x := a.current(); x != nil {
		si.GUID, lid, si.SMState = x.smGUID, x.smLID, smp.SMStateMaster
	} else if f := a.src.Fabric(); f != nil {
		if n := f.Nodes[f.SMGUID]; n != nil && int(f.SMPort) < len(n.Ports) {
			si.GUID = n.Ports[f.SMPort].GUID
		}
	}
	return si, lid
}

// handleSMP answers SMPs the fabric delivered to the SM's port: SMInfo
// Get/Set, and Unsupported for attributes only an SMA would implement.
func (a *Agent) handleSMP(p transport.Packet) bool {
	m := smp.PeekMethod(p.MAD)
	if m&smp.MethodResponse != 0 || m == smp.MethodTrap || m == smp.MethodTrapRepress {
		return false
	}
	mad, badVersion := p.MAD, false
	if len(mad) >= smp.MADLen && mad[0] == smp.BaseVersion && mad[2] != smp.SMPClassVersion {
		// Answer in the version we speak, with the status that says why
		// (IBA 13.4.7.2); Decode refuses other versions.
		mad = append([]byte(nil), mad[:smp.MADLen]...)
		mad[2], badVersion = smp.SMPClassVersion, true
	}
	var s smp.SMP
	if err := s.Decode(mad); err != nil {
		a.log.Debug("malformed SMP dropped", "slid", p.SLID, "error", err)
		return true
	}
	if s.IsDR() && s.Direction {
		a.log.Debug("DR SMP request with the D bit set dropped", "slid", p.SLID)
		return true
	}
	var status uint16
	switch {
	case badVersion:
		status = smp.StatusBadVersion
	case s.Method != smp.MethodGet && s.Method != smp.MethodSet:
		status = smp.StatusUnsupportedMethod
	case s.AttrID != smp.AttrSMInfo:
		status = smp.StatusUnsupportedMethodAttr
	}
	reqInfo := smp.SMInfo{}
	_ = reqInfo.Unmarshal(s.Data[:]) // 64 bytes: cannot fail
	var si smp.SMInfo
	if status == 0 {
		el, isElector := a.src.(Elector)
		switch {
		case s.Method == smp.MethodSet && isElector:
			si = el.HandleSMInfoSet(s.AttrMod, reqInfo)
		case s.Method == smp.MethodSet:
			a.log.Debug("SMInfo Set answered with our state", "from_lid", p.SLID, "control", s.AttrMod)
			si, _ = a.smInfo(false)
		default:
			key := a.smKey.Load()
			si, _ = a.smInfo(key != 0 && reqInfo.SMKey == key)
		}
	}
	s.Data = [smp.DataLen]byte{}
	if status == 0 {
		if err := si.MarshalTo(s.Data[:]); err != nil {
			a.log.Error("BUG: SMInfo does not encode", "error", err)
			return true
		}
	}
	s.TurnAround(status)
	out := transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID}
	if !s.IsDR() {
		if p.SLID == 0 {
			a.log.Debug("LID-routed SMP without a source LID: cannot answer", "attr", s.AttrID)
			return true
		}
		out = transport.Packet{DLID: p.SLID, SL: p.SL, QP: p.QP}
	}
	buf := make([]byte, smp.MADLen)
	if err := s.EncodeTo(buf); err != nil {
		a.log.Debug("SMP answer does not encode", "error", err)
		return true
	}
	out.MAD = buf
	a.send(out, "SMInfo")
	return true
}
