package sa

import (
	"encoding/binary"
	"errors"

	"github.com/ibsm/ibsm/host/mcast"
	"github.com/ibsm/ibsm/transport/smp"
)

// MCMemberRecord (IBA 15.2.5.17): SubnAdmSet joins (creating the group
// when it does not exist), SubnAdmDelete leaves, Get and GetTable list
// memberships. The groups live in the SM's mcast.Store; the SM recomputes
// and programs the changed group's tree after each change.

// Multicaster is what the agent's Source implements when the SM does
// multicast (*sm.SM after EnableMulticast).
type Multicaster interface {
	MulticastStore() *mcast.Store
}

var mcKinds = map[uint16]queryKind{
	smp.SAAttrMCMemberRecord: {name: "MCMemberRecord", stride: stride(smp.MCMemberRecordLen), table: true,
		run: runMCMemberRecord, set: setMCMemberRecord, del: deleteMCMemberRecord},
	smp.SAAttrMFTRecord: {name: "MulticastForwardingTableRecord", stride: stride(smp.MFTRecordLen), table: true, run: runMFTRecord},
}

var mcMemberFields = []field{
	{0, 128}, {128, 128}, {256, 32}, {288, 16}, // MGID PortGID Q_Key MLID
	{304, 2}, {306, 6}, {312, 8}, {320, 16}, // MTUSelector MTU TClass P_Key
	{336, 2}, {338, 6}, {344, 2}, {346, 6}, // RateSelector Rate PacketLifeTimeSelector PacketLifeTime
	{352, 4}, {356, 20}, {376, 8}, // SL FlowLabel HopLimit
	{384, 4}, {388, 4}, {392, 1}, // Scope JoinState ProxyJoin
}

const (
	// mcJoinComps must be set in every join and leave.
	mcJoinComps = smp.MCMCompMGID | smp.MCMCompPortGID | smp.MCMCompJoinState
	// mcCreateComps must be set, besides mcJoinComps, to create a group.
	mcCreateComps = smp.MCMCompQKey | smp.MCMCompPKey | smp.MCMCompSL | smp.MCMCompFlowLabel | smp.MCMCompTClass
	// Defaults for a new group's MTU (2048) and rate (10 Gb/s) when the
	// join leaves them open, as IPoIB broadcast groups commonly have.
	mcDefaultMTU  = 4
	mcDefaultRate = 3
)

// Selector values (IBA 15.2.5.16 for PathRecord; MCMemberRecord the same).
const (
	selGreater = 0
	selLess    = 1
	selExactly = 2
	selLargest = 3
)

func (q *query) mcStore() *mcast.Store {
	if m, ok := q.a.src.(Multicaster); ok {
		return m.MulticastStore()
	}
	return nil
}

// mcPort resolves a PortGID to the endpoint it names and its port GUID.
func (q *query) mcPort(gid [16]byte) (int32, uint64, bool) {
	pfx, guid := binary.BigEndian.Uint64(gid[:8]), binary.BigEndian.Uint64(gid[8:])
	if pfx != q.x.prefix && pfx != DefaultGIDPrefix {
		return -1, 0, false
	}
	e, ok := q.x.byGUID[guid]
	return e, guid, ok
}

// mcMayAct refuses a join or leave for another port than the requester's
// unless the request is trusted (IBA 15.2.5.17 ProxyJoin: only trusted
// requesters act for other ports).
func (q *query) mcMayAct(e int32) bool {
	if q.trusted {
		return true
	}
	return q.x.owner(q.src.SLID) == e
}

func mcRecord(g *mcast.Group, portGID [16]byte, state uint8, proxy bool) smp.MCMemberRecord {
	return smp.MCMemberRecord{
		MGID: g.MGID, PortGID: portGID, QKey: g.QKey, MLID: g.MLID,
		MTUSelector: selExactly, MTU: g.MTU, TClass: g.TClass, PKey: g.PKey,
		RateSelector: selExactly, Rate: g.Rate, PacketLifeTimeSelector: selExactly, PacketLifeTime: g.PacketLifeTime,
		SL: g.SL, FlowLabel: g.FlowLabel, HopLimit: g.HopLimit, Scope: g.Scope, JoinState: state, ProxyJoin: proxy,
	}
}

func encodeMC(r *smp.MCMemberRecord) ([]byte, uint16, string) {
	b := make([]byte, stride(smp.MCMemberRecordLen))
	if err := r.MarshalTo(b); err != nil {
		return nil, smp.SAStatusReqInvalid, "record does not encode: " + err.Error()
	}
	return b, 0, ""
}

// selected checks value v of the group against the request's value want
// under selector sel (IBA 15.2.5.16: greater than, less than, exactly,
// largest available). Rates compare by bandwidth, not code.
func selected(sel, v, want uint8, isRate bool) bool {
	a, b := int(v), int(want)
	if isRate {
		a, b = rateOf(v), rateOf(want)
	}
	switch sel {
	case selGreater:
		return a > b
	case selLess:
		return a < b
	case selExactly:
		return a == b
	}
	return true
}

// mcMismatch names the first parameter of a join that the group g does
// not satisfy, "" if none (IBA 15.2.5.17: a join must agree with the
// group's parameters it specifies).
func mcMismatch(g *mcast.Group, r *smp.MCMemberRecord, cm uint64) string {
	sel := func(selBit uint64, s uint8) uint8 {
		if cm&selBit == 0 {
			return selExactly
		}
		return s
	}
	switch {
	case cm&smp.MCMCompQKey != 0 && r.QKey != g.QKey:
		return "Q_Key"
	case cm&smp.MCMCompMLID != 0 && r.MLID != 0 && r.MLID != g.MLID:
		return "MLID"
	case cm&smp.MCMCompPKey != 0 && r.PKey&0x7FFF != g.PKey&0x7FFF:
		return "P_Key"
	case cm&smp.MCMCompTClass != 0 && r.TClass != g.TClass:
		return "TClass"
	case cm&smp.MCMCompSL != 0 && r.SL != g.SL:
		return "SL"
	case cm&smp.MCMCompFlowLabel != 0 && r.FlowLabel != g.FlowLabel:
		return "FlowLabel"
	case cm&smp.MCMCompHopLimit != 0 && r.HopLimit != g.HopLimit:
		return "HopLimit"
	case cm&smp.MCMCompScope != 0 && r.Scope != g.Scope:
		return "Scope"
	case cm&smp.MCMCompMTU != 0 && !selected(sel(smp.MCMCompMTUSelector, r.MTUSelector), g.MTU, r.MTU, false):
		return "MTU"
	case cm&smp.MCMCompRate != 0 && !selected(sel(smp.MCMCompRateSelector, r.RateSelector), g.Rate, r.Rate, true):
		return "Rate"
	case cm&smp.MCMCompPacketLifeTime != 0 && !selected(sel(smp.MCMCompPacketLifeTimeSelector, r.PacketLifeTimeSelector), g.PacketLifeTime, r.PacketLifeTime, false):
		return "PacketLifeTime"
	}
	return ""
}

// mcValue turns a requested value and selector into the value a new group
// gets: the largest the port carries (largest) that the selector allows;
// ok is false when none exists (less than the smallest code).
func mcValue(set bool, sel, v, largest, def uint8) (uint8, bool) {
	if !set {
		return def, true
	}
	switch sel {
	case selGreater:
		return v + 1, v+1 <= largest
	case selLess:
		return min(v-1, largest), v > 1
	case selLargest:
		return largest, true
	}
	return v, true
}

// mcRate is mcValue for a rate: codes are not ordered by speed, so
// "greater" and "less" step to the next defined rate (none below 2.5 Gb/s:
// osmtest o15.0.1.8 expects ERR_REQ_INVALID) and a reserved code is none.
func mcRate(set bool, sel, v, largest, def uint8) (uint8, bool) {
	if !set {
		return def, true
	}
	switch sel {
	case selGreater:
		c := rateAbove(rateOf(v))
		return c, c != 0 && rateOf(c) <= rateOf(largest)
	case selLess:
		c := rateBelow(rateOf(v))
		if rateOf(c) > rateOf(largest) {
			c = largest
		}
		return c, c != 0 && rateOf(v) != 0
	case selLargest:
		return largest, true
	}
	return v, rateOf(v) != 0
}

// badMGID says why a group may not be created with the requested MGID
// (IBA 4.1.1 multicast GID: 0xFF, then flags whose three high bits are
// reserved, then the scope), "" if it may. IPoIB MGIDs (signatures 0x401B,
// 0x601B) are taken as they are; the 0xA01B signature is the form the SA
// allocates from, which a client may not claim with link-local scope.
// Refusals are ERR_REQ_INVALID, as OpenSM answers and osmtest (o15.0.1.6)
// expects.
func badMGID(m [16]byte) string {
	switch sig := uint16(m[2])<<8 | uint16(m[3]); {
	case m[0] != 0xFF:
		return "MGID is not a multicast GID (first byte 0xFF)"
	case sig == 0x401B || sig == 0x601B:
		return ""
	case m[1]&0xE0 != 0:
		return "MGID sets reserved flag bits"
	case sig == 0xA01B && m[1]&0xF == 2:
		return "MGID claims the SA-assigned form (0xA01B) with link-local scope"
	}
	return ""
}

func setMCMemberRecord(q *query) ([]byte, uint16, string) {
	store := q.mcStore()
	if store == nil {
		return nil, smp.SAStatusNoResources, "this SM does no multicast (no multicast router configured)"
	}
	var r smp.MCMemberRecord
	_ = r.Unmarshal(q.req.Data[:]) // 200 bytes: cannot fail
	cm := q.req.ComponentMask
	if cm>>len(mcMemberFields) != 0 {
		return nil, smp.SAStatusReqInvalid, "MCMemberRecord component mask selects bits beyond the record's fields"
	}
	if cm&(smp.MCMCompPortGID|smp.MCMCompJoinState) != smp.MCMCompPortGID|smp.MCMCompJoinState {
		return nil, smp.SAStatusInsufficientComponents, "a join needs the PortGID and JoinState components"
	}
	if r.JoinState == 0 {
		return nil, smp.SAStatusReqInvalid, "JoinState 0 joins nothing"
	}
	e, guid, ok := q.mcPort(r.PortGID)
	if !ok {
		return nil, smp.SAStatusInvalidGID, "PortGID names no port of this subnet"
	}
	if !q.mcMayAct(e) {
		return nil, smp.SAStatusReqInvalid, "join for another port than the requester's, without our SM_Key"
	}
	zeroMGID := cm&smp.MCMCompMGID == 0 || r.MGID == ([16]byte{})
	ep := q.x.eps[e]
	portMTU := q.x.portMTU(ep)
	portRate := rateCode(q.x.portRate(ep))
	member := mcast.Member{PortGID: r.PortGID, State: r.JoinState, ProxyJoin: r.ProxyJoin}
	if !zeroMGID {
		if g, ok := store.Get(r.MGID); ok {
			if what := mcMismatch(&g, &r, cm); what != "" {
				return nil, smp.SAStatusReqInvalid, "join disagrees with the group's " + what
			}
			if !q.mcPortFits(e, &g, portMTU, portRate) {
				return nil, smp.SAStatusReqInvalid, "the port cannot carry the group's MTU, rate or P_Key"
			}
			g, err := store.Join(r.MGID, guid, member)
			if err != nil {
				return nil, smp.SAStatusReqInvalid, err.Error()
			}
			out := mcRecord(&g, r.PortGID, g.Members[guid].State, r.ProxyJoin)
			return encodeMC(&out)
		}
	}
	// Create: only a full member (or send-only full member) may, and it
	// must say the group's parameters.
	if r.JoinState&(smp.JoinFullMember|smp.JoinSendOnlyFullMember) == 0 {
		return nil, smp.SAStatusReqInvalid, "no such group, and only a full member join creates one"
	}
	if cm&mcCreateComps != mcCreateComps {
		return nil, smp.SAStatusInsufficientComponents, "creating a group needs Q_Key, P_Key, SL, FlowLabel and TClass"
	}
	if !zeroMGID {
		if why := badMGID(r.MGID); why != "" {
			return nil, smp.SAStatusReqInvalid, why
		}
	}
	if portMTU == 0 {
		portMTU = 5
	}
	if portRate == 0 {
		portRate = mcDefaultRate
	}
	g := mcast.Group{MGID: r.MGID, QKey: r.QKey, PKey: r.PKey | smp.PKeyFullMember, SL: r.SL, FlowLabel: r.FlowLabel,
		TClass: r.TClass, HopLimit: r.HopLimit, Scope: r.Scope, PacketLifeTime: q.a.opts.PacketLifeTime}
	var mtuOK, rateOK, pltOK bool
	g.MTU, mtuOK = mcValue(cm&smp.MCMCompMTU != 0, r.MTUSelector, r.MTU, portMTU, min(mcDefaultMTU, portMTU))
	g.Rate, rateOK = mcRate(cm&smp.MCMCompRate != 0, r.RateSelector, r.Rate, portRate, mcDefaultRate)
	g.PacketLifeTime, pltOK = mcValue(cm&smp.MCMCompPacketLifeTime != 0, r.PacketLifeTimeSelector, r.PacketLifeTime, 0x3F, q.a.opts.PacketLifeTime)
	if cm&smp.MCMCompScope == 0 && !zeroMGID {
		g.Scope = r.MGID[1] & 0xF
	}
	if !mtuOK || !rateOK || !pltOK || g.MTU == 0 || g.MTU > 5 || g.SL > 15 {
		return nil, smp.SAStatusReqInvalid, "the MTU, rate or packet lifetime asked for cannot be met"
	}
	if !q.mcPortFits(e, &g, portMTU, portRate) {
		return nil, smp.SAStatusReqInvalid, "the port cannot carry the group's MTU, rate or P_Key"
	}
	g.Members = map[uint64]mcast.Member{guid: member}
	created, err := store.Create(g)
	switch {
	case errors.Is(err, mcast.ErrNoMLID):
		return nil, smp.SAStatusNoResources, err.Error()
	case errors.Is(err, mcast.ErrExists):
		// Another join created it a moment ago: join that one.
		if cur, ok := store.Get(g.MGID); ok && mcMismatch(&cur, &r, cm) == "" {
			cur, err = store.Join(g.MGID, guid, member)
			if err == nil {
				out := mcRecord(&cur, r.PortGID, cur.Members[guid].State, r.ProxyJoin)
				return encodeMC(&out)
			}
		}
		return nil, smp.SAStatusReqInvalid, "the group exists with other parameters"
	case err != nil:
		return nil, smp.SAStatusReqInvalid, err.Error()
	}
	q.a.ReportMulticastGroup(true, created.MGID)
	out := mcRecord(&created, r.PortGID, r.JoinState, r.ProxyJoin)
	return encodeMC(&out)
}

// mcPortFits: the port's MTU and rate carry the group's (unknown values do
// not constrain) and it holds the group's partition.
func (q *query) mcPortFits(e int32, g *mcast.Group, mtu, rate uint8) bool {
	if mtu != 0 && g.MTU > mtu {
		return false
	}
	if rate != 0 && rateOf(g.Rate) > rateOf(rate) {
		return false
	}
	keys := defaultKeys
	if pl := q.pkeyPlan(); pl != nil {
		keys, _ = q.x.pkeyTable(pl, e, q.x.eps[e].Port)
	}
	for _, k := range keys {
		if k&0x7FFF == g.PKey&0x7FFF && k&0x7FFF != 0 {
			return true
		}
	}
	return false
}

func deleteMCMemberRecord(q *query) ([]byte, uint16, string) {
	store := q.mcStore()
	if store == nil {
		return nil, smp.SAStatusNoResources, "this SM does no multicast (no multicast router configured)"
	}
	var r smp.MCMemberRecord
	_ = r.Unmarshal(q.req.Data[:])
	cm := q.req.ComponentMask
	if cm>>len(mcMemberFields) != 0 {
		return nil, smp.SAStatusReqInvalid, "MCMemberRecord component mask selects bits beyond the record's fields"
	}
	if cm&mcJoinComps != mcJoinComps {
		return nil, smp.SAStatusInsufficientComponents, "a leave needs the MGID, PortGID and JoinState components"
	}
	e, guid, ok := q.mcPort(r.PortGID)
	if !ok {
		return nil, smp.SAStatusInvalidGID, "PortGID names no port of this subnet"
	}
	if !q.mcMayAct(e) {
		return nil, smp.SAStatusReqInvalid, "leave for another port than the requester's, without our SM_Key"
	}
	g, deleted, err := store.Leave(r.MGID, guid, r.JoinState)
	switch {
	case errors.Is(err, mcast.ErrNoGroup):
		return nil, smp.SAStatusReqInvalid, "no group with this MGID"
	case errors.Is(err, mcast.ErrNotMember):
		return nil, smp.SAStatusReqInvalid, "the port is not a member in the join state it leaves"
	case err != nil:
		return nil, smp.SAStatusReqInvalid, err.Error()
	}
	if deleted {
		q.a.ReportMulticastGroup(false, g.MGID)
	}
	// The answer holds the join state the port keeps, 0 when it left
	// (o15-0.1.14; OpenSM answers so and osmtest checks it).
	out := mcRecord(&g, r.PortGID, g.Members[guid].State, r.ProxyJoin)
	return encodeMC(&out)
}

// runMCMemberRecord answers Get and GetTable. A trusted requester (our
// SM_Key) sees every membership; others see their own memberships and,
// unless they asked for a PortGID, each group once with PortGID and
// JoinState zero (IBA 15.2.5.17: group parameters are public, who belongs
// is not).
func runMCMemberRecord(q *query, t *table, limit int) (uint16, string) {
	store := q.mcStore()
	cm := q.req.ComponentMask
	if cm>>len(mcMemberFields) != 0 {
		return smp.SAStatusReqInvalid, "MCMemberRecord component mask selects bits beyond the record's fields"
	}
	if store == nil {
		return 0, ""
	}
	var req smp.MCMemberRecord
	_ = req.Unmarshal(q.req.Data[:])
	// Selectors and values compare through mcMismatch; raw fields the rest.
	const viaSelect = smp.MCMCompMTUSelector | smp.MCMCompMTU | smp.MCMCompRateSelector | smp.MCMCompRate |
		smp.MCMCompPacketLifeTimeSelector | smp.MCMCompPacketLifeTime | smp.MCMCompQKey | smp.MCMCompPKey |
		smp.MCMCompTClass | smp.MCMCompSL | smp.MCMCompFlowLabel | smp.MCMCompHopLimit | smp.MCMCompScope
	own := q.x.owner(q.src.SLID)
	var ownGUID uint64
	if own >= 0 {
		ownGUID = q.x.topo.PortGUID(q.x.eps[own])
	}
	var buf [56]byte
	emit := func(rec *smp.MCMemberRecord) bool {
		if err := rec.MarshalTo(buf[:]); err != nil {
			return true
		}
		if cm&smp.MCMCompMGID != 0 && rec.MGID != req.MGID {
			return true
		}
		if cm&smp.MCMCompMLID != 0 && rec.MLID != req.MLID {
			return true
		}
		raw := cm &^ (viaSelect | smp.MCMCompMGID | smp.MCMCompMLID)
		for i := 1; raw != 0 && i < len(mcMemberFields); i++ {
			if raw&(1<<i) != 0 && !sameBits(q.req.Data[:], buf[:], mcMemberFields[i]) {
				return true
			}
			raw &^= 1 << i
		}
		return t.add(buf[:], limit)
	}
	for _, g := range store.Groups() {
		if mcMismatch(&g, &req, cm&viaSelect) != "" {
			continue
		}
		if !q.trusted && cm&smp.MCMCompPortGID == 0 {
			rec := mcRecord(&g, [16]byte{}, 0, false)
			if cm&smp.MCMCompJoinState != 0 {
				if m, ok := g.Members[ownGUID]; ok {
					rec.JoinState, rec.PortGID = m.State, m.PortGID
				}
			}
			if !emit(&rec) {
				break
			}
			continue
		}
		stop := false
		for guid, m := range g.Members {
			if !q.trusted && guid != ownGUID {
				continue
			}
			rec := mcRecord(&g, m.PortGID, m.State, m.ProxyJoin)
			if !emit(&rec) {
				stop = true
				break
			}
		}
		if stop {
			break
		}
	}
	return 0, ""
}
