package sa

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Event forwarding (IBA 13.4.8.3 InformInfo, 15.2.5.12 InformInfoRecord,
// 13.4.11 Report). A port subscribes with SubnAdmSet(InformInfo,
// Subscribe=1) to a trap number (or all: 0xFFFF) from a GID or a LID
// range, and unsubscribes with Subscribe=0. The SA sends each matching
// notice to the subscriber as SubnAdmReport(Notice) on the QP it named and
// waits for SubnAdmReportResp; a report not acknowledged after
// reportAttempts tries (each through the transport's own retries) is
// dropped and logged. The notices: 64/65 (a port entered or left service:
// the SM calls PortsInService), 66/67 (a multicast group was created or
// deleted: ReportMulticastGroup), and the generic traps the fabric sends
// the SM (128, 129-131, 144: FabricTrap).
//
// Subscriptions live in memory, at most maxSubscriptionsPerPort per
// subscribing port; those of a port that leaves the subnet are dropped.

const (
	maxSubscriptionsPerPort = 64
	reportAttempts          = 3
	reportTimeout           = time.Second
	// maxReportsInFlight bounds the deliveries waiting for an
	// acknowledgement; past it a report is dropped (logged).
	maxReportsInFlight = 64
)

// Notices the SA issues itself (IBA 13.4.8.2, table 128).
const (
	TrapGIDInService    = 64
	TrapGIDOutOfService = 65
	TrapMcastCreated    = 66
	TrapMcastDeleted    = 67
)

var informKinds = map[uint16]queryKind{
	smp.SAAttrInformInfo: {name: "InformInfo", stride: stride(smp.InformInfoLen), run: runInformInfoGet, set: setInformInfo},
	smp.SAAttrInformInfoRecord: {name: "InformInfoRecord", stride: stride(smp.InformInfoRecordLen), table: true,
		run: runInformInfoRecord},
}

// informInfoRecordFields: SubscriberGID, Enum, reserved, then InformInfo
// (13.4.8.3) shifted by 192 bits.
var informInfoRecordFields = func() []field {
	f := []field{{0, 128}, {128, 16}, {144, 48}}
	for _, p := range []field{
		{0, 128}, {128, 16}, {144, 16}, {160, 16}, {176, 8}, {184, 8}, // GID LIDRange{Begin,End} reserved IsGeneric Subscribe
		{192, 16}, {208, 16}, {224, 24}, {248, 3}, {251, 5}, {256, 8}, {264, 24}, // Type TrapNumber QPN reserved RespTime reserved ProducerType
	} {
		f = append(f, field{p.off + 192, p.width})
	}
	return f
}()

const (
	lidRangeAll     = 0xFFFF
	anyTrapNumber   = 0xFFFF
	anyType         = 0xFFFF
	anyProducerType = 0xFFFFFF
)

type subscription struct {
	subscriber uint64 // port GUID
	enum       uint16
	info       smp.InformInfo
}

// subscriptions is the agent's list; the zero value is ready.
type subscriptions struct {
	mu       sync.Mutex
	subs     []*subscription
	inFlight int
	gen      uint64 // counts changes, for the saved SA state
}

// sameTopic reports whether a and b subscribe to the same thing (all but
// QPN and RespTimeValue, which say where reports go).
func sameTopic(a, b *smp.InformInfo) bool {
	return a.GID == b.GID && a.LIDRangeBegin == b.LIDRangeBegin && a.LIDRangeEnd == b.LIDRangeEnd &&
		a.IsGeneric == b.IsGeneric && a.Type == b.Type && a.TrapNumber == b.TrapNumber && a.ProducerType == b.ProducerType
}

func runInformInfoGet(*query, *table, int) (uint16, string) {
	return smp.StatusUnsupportedMethodAttr, "InformInfo is only Set (IBA 13.4.8.3); query InformInfoRecord"
}

// setInformInfo subscribes or unsubscribes the requesting port.
func setInformInfo(q *query) ([]byte, uint16, string) {
	var ii smp.InformInfo
	_ = ii.Unmarshal(q.req.Data[:]) // 200 bytes: cannot fail
	who := q.requester()
	if who == 0 {
		return nil, smp.SAStatusReqInvalid, "the request's source LID is no port's"
	}
	if ii.GID != ([16]byte{}) {
		if _, ok := q.x.portOfGID(ii.GID); !ok {
			return nil, smp.SAStatusInvalidGID, "InformInfo GID names no port of this subnet"
		}
	} else if ii.LIDRangeBegin != lidRangeAll && ii.LIDRangeEnd != 0 && ii.LIDRangeEnd < ii.LIDRangeBegin {
		return nil, smp.SAStatusReqInvalid, "InformInfo LIDRangeEnd is below LIDRangeBegin"
	}
	s := &q.a.inform
	s.mu.Lock()
	defer s.mu.Unlock()
	mine, at := 0, -1
	for i, sub := range s.subs {
		if sub.subscriber != who {
			continue
		}
		mine++
		if sameTopic(&sub.info, &ii) {
			at = i
		}
	}
	out := make([]byte, stride(smp.InformInfoLen))
	switch {
	case !ii.Subscribe && at < 0:
		return nil, smp.SAStatusReqInvalid, "unsubscribe from a subscription this port does not hold"
	case !ii.Subscribe:
		s.gen++
		s.subs = append(s.subs[:at], s.subs[at+1:]...)
		q.a.log.Debug("InformInfo unsubscribed", "subscriber", who, "trap", ii.TrapNumber)
	case at >= 0:
		s.gen++
		s.subs[at].info = ii // a new QPN or response time for the same topic
	case mine >= maxSubscriptionsPerPort:
		return nil, smp.SAStatusNoResources, "this port holds the most InformInfo subscriptions one port may; unsubscribe some first"
	default:
		s.gen++
		s.subs = append(s.subs, &subscription{subscriber: who, enum: nextEnum(s.subs, who), info: ii})
		q.a.log.Debug("InformInfo subscribed", "subscriber", who, "trap", ii.TrapNumber, "qpn", ii.QPN)
	}
	if err := ii.MarshalTo(out); err != nil {
		return nil, smp.SAStatusReqInvalid, "InformInfo does not encode: " + err.Error()
	}
	return out, 0, ""
}

// nextEnum is the lowest enumerator the subscriber does not use.
func nextEnum(subs []*subscription, who uint64) uint16 {
	used := map[uint16]bool{}
	for _, s := range subs {
		if s.subscriber == who {
			used[s.enum] = true
		}
	}
	var e uint16
	for used[e] {
		e++
	}
	return e
}

func runInformInfoRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("InformInfoRecord", informInfoRecordFields, cm); st != 0 {
		return st, why
	}
	s := &q.a.inform
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf [64]byte
	for _, sub := range s.subs {
		rec := smp.InformInfoRecord{SubscriberGID: q.x.portGID(sub.subscriber), Enum: sub.enum, Info: sub.info}
		if rec.MarshalTo(buf[:]) != nil {
			continue
		}
		// Bit 0 (SubscriberGID) is a field here, not a LID.
		if cm&1 != 0 && !sameBits(q.req.Data[:], buf[:], informInfoRecordFields[0]) || !matches(informInfoRecordFields, cm, q.req.Data[:], buf[:]) {
			continue
		}
		if !t.add(buf[:], limit) {
			break
		}
	}
	return 0, ""
}

// PortsInService reports traps 64 and 65 for the port GUIDs that entered
// and left service, and drops the subscriptions of the ports that left.
// It implements sm.Notifier.
func (a *Agent) PortsInService(in, out []uint64) {
	x := a.current()
	if x == nil {
		return
	}
	if len(out) > 0 {
		gone := make(map[uint64]bool, len(out))
		for _, g := range out {
			gone[g] = true
		}
		s := &a.inform
		s.mu.Lock()
		kept := s.subs[:0]
		for _, sub := range s.subs {
			if !gone[sub.subscriber] {
				kept = append(kept, sub)
			}
		}
		clear(s.subs[len(kept):])
		s.gen += uint64(len(s.subs) - len(kept))
		s.subs = kept
		s.mu.Unlock()
	}
	for _, g := range in {
		a.reportGID(x, TrapGIDInService, x.portGID(g))
	}
	for _, g := range out {
		a.reportGID(x, TrapGIDOutOfService, x.portGID(g))
	}
}

// ReportMulticastGroup reports trap 66 (created) or 67 (deleted) for the
// group mgid to the subscribers. The multicast side calls it.
func (a *Agent) ReportMulticastGroup(created bool, mgid [16]byte) {
	x := a.current()
	if x == nil {
		return
	}
	trap := uint16(TrapMcastDeleted)
	if created {
		trap = TrapMcastCreated
	}
	a.reportGID(x, trap, mgid)
}

// FabricTrap forwards a generic trap the SM received from the fabric. It
// implements sm.Notifier.
func (a *Agent) FabricTrap(n smp.Notice, slid uint16) {
	x := a.current()
	if x == nil || !n.IsGeneric {
		return
	}
	if e := x.owner(n.IssuerLID); e >= 0 {
		n.IssuerGID = x.gid(e)
	}
	a.report(x, n, n.IssuerGID, n.IssuerLID)
}

// portOfGID is the endpoint whose port GID is gid: the subnet prefix, or
// the GIDPrefix the port itself reported (a port the SM never gave a
// prefix holds 0 and builds its GID from that), with the port GUID.
func (x *index) portOfGID(gid [16]byte) (int32, bool) {
	e, ok := x.byGUID[getU64(gid[8:])]
	if !ok {
		return -1, false
	}
	if p := getU64(gid[:8]); p != x.prefix {
		ep := x.eps[e]
		if pi, ok := x.portInfo(ep.Node, ep.Port); !ok || pi.GIDPrefix != p {
			return -1, false
		}
	}
	return e, true
}

func (x *index) portGID(guid uint64) [16]byte {
	var g [16]byte
	putU64(g[:8], x.prefix)
	putU64(g[8:], guid)
	return g
}

// reportGID issues one of the SA's own notices about gid (DataDetails:
// 48 reserved bits, then GIDADDR; IBA 13.4.8.2 table 129).
func (a *Agent) reportGID(x *index, trap uint16, gid [16]byte) {
	n := smp.Notice{IsGeneric: true, Type: smp.NoticeInformational, ProducerType: smp.ProducerClassManager,
		TrapNumber: trap, IssuerLID: x.smLID}
	copy(n.DataDetails[6:22], gid[:])
	if x.smEP >= 0 {
		n.IssuerGID = x.gid(x.smEP)
	}
	subject := uint16(0)
	if e, ok := x.portOfGID(gid); ok {
		subject = x.lids.Ports[e].Base
	}
	a.report(x, n, gid, subject)
}

// wants reports whether sub asks for notice n about the port with gid and
// lid (lid 0: unknown).
func (sub *subscription) wants(n *smp.Notice, gid [16]byte, lid uint16) bool {
	ii := &sub.info
	if ii.IsGeneric != n.IsGeneric ||
		(ii.TrapNumber != anyTrapNumber && ii.TrapNumber != n.TrapNumber) ||
		(ii.Type != anyType && ii.Type != uint16(n.Type)) ||
		(ii.ProducerType != anyProducerType && ii.ProducerType != n.ProducerType) {
		return false
	}
	switch {
	case ii.GID != ([16]byte{}):
		return ii.GID == gid
	case ii.LIDRangeBegin == lidRangeAll:
		return true
	case ii.LIDRangeEnd == 0:
		return lid == ii.LIDRangeBegin
	}
	return lid >= ii.LIDRangeBegin && lid <= ii.LIDRangeEnd
}

// report sends n to every subscriber that wants it.
func (a *Agent) report(x *index, n smp.Notice, gid [16]byte, lid uint16) {
	s := &a.inform
	s.mu.Lock()
	var to []subscription
	for _, sub := range s.subs {
		if sub.wants(&n, gid, lid) {
			to = append(to, *sub)
		}
	}
	s.mu.Unlock()
	for _, sub := range to {
		e, ok := x.byGUID[sub.subscriber]
		if !ok {
			a.log.Debug("report not sent: the subscriber has no LID in the plan", "subscriber", sub.subscriber, "trap", n.TrapNumber)
			continue
		}
		if !a.reserveReport() {
			a.warnOnce("reports in flight", "report dropped: too many reports wait for an acknowledgement",
				"trap", n.TrapNumber, "subscriber", sub.subscriber, "limit", maxReportsInFlight)
			continue
		}
		// GMPs go to QP1 or a QP the subscriber named; QP0 carries only
		// SMPs (IBA 13.5.1), so a subscription naming QPN 0 gets QP1.
		qp := sub.info.QPN
		if qp == 0 {
			qp = 1
		}
		go a.deliver(transport.Packet{DLID: x.lids.Ports[e].Base, QP: qp}, n, sub.subscriber)
	}
}

func (a *Agent) reserveReport() bool {
	s := &a.inform
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight >= maxReportsInFlight {
		return false
	}
	s.inFlight++
	return true
}

// deliver sends one Report and waits for its ReportResp, reportAttempts
// times at most.
func (a *Agent) deliver(to transport.Packet, n smp.Notice, subscriber uint64) {
	defer func() {
		a.inform.mu.Lock()
		a.inform.inFlight--
		a.inform.mu.Unlock()
	}()
	m := smp.NewSAMAD(smp.MethodReport, smp.SAAttrNotice)
	if err := n.MarshalTo(m.Data[:smp.NoticeLen]); err != nil {
		a.log.Error("BUG: notice does not encode", "trap", n.TrapNumber, "error", err)
		return
	}
	m.AttributeOffset = smp.SARecordStride(smp.NoticeLen)
	buf := make([]byte, smp.MADLen)
	if err := m.EncodeTo(buf); err != nil {
		a.log.Error("BUG: report does not encode", "error", err)
		return
	}
	to.MAD = buf
	var err error
	for try := 1; try <= reportAttempts; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		var resp transport.Packet
		resp, err = a.t.Do(ctx, to)
		cancel()
		if err == nil && smp.PeekMethod(resp.MAD) == smp.MethodReportResp {
			a.log.Debug("report acknowledged", "trap", n.TrapNumber, "subscriber", subscriber, "try", try)
			return
		}
		if err == nil {
			err = errors.New("the answer is not a ReportResp")
		}
	}
	a.log.Warn("report dropped: the subscriber did not acknowledge it", "trap", n.TrapNumber,
		"subscriber", subscriber, "dlid", to.DLID, "attempts", reportAttempts, "error", err)
}
