package sa

import (
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// MultiPathRecord (IBA 15.2.5.20): SubnAdmGetMulti with SGIDCount source
// and DGIDCount destination GIDs asks for PathRecords between every
// (source, destination) pair, NumbPath in all, with PathRecord's
// selectors. Each pair is answered as a PathRecord GetTable for that pair
// would be (runPath: partitions, SL, MTU and rate selectors), so the two
// never disagree.
//
// Not implemented: IndependenceSelector (paths are not chosen for
// independence; the plan's preferred path comes first), multicast GIDs
// (ERR_REQ_INVALID_GID), and requests longer than one MAD: on a transport
// with RMPP a GetMulti request may span several MADs, but the agent reads
// the first, so at most MultiPathMaxGIDs (11) GIDs.

var multiPathKinds = map[uint16]queryKind{
	smp.SAAttrMultiPathRecord: {name: "MultiPathRecord", stride: stride(smp.PathRecordLen), multi: runMultiPath},
}

// mprToPR maps MultiPathRecord component bits to the PathRecord bits of
// the same selectors.
var mprToPR = [...]struct{ mpr, pr uint64 }{
	{smp.MPRCompRawTraffic, smp.PRCompRawTraffic}, {smp.MPRCompFlowLabel, smp.PRCompFlowLabel},
	{smp.MPRCompHopLimit, smp.PRCompHopLimit}, {smp.MPRCompTClass, smp.PRCompTClass},
	{smp.MPRCompReversible, smp.PRCompReversible}, {smp.MPRCompPKey, smp.PRCompPKey},
	{smp.MPRCompQoSClass, smp.PRCompQoSClass}, {smp.MPRCompSL, smp.PRCompSL},
	{smp.MPRCompMTUSelector, smp.PRCompMTUSelector}, {smp.MPRCompMTU, smp.PRCompMTU},
	{smp.MPRCompRateSelector, smp.PRCompRateSelector}, {smp.MPRCompRate, smp.PRCompRate},
	{smp.MPRCompPktLifeSel, smp.PRCompPktLifeTimeSelector}, {smp.MPRCompPktLife, smp.PRCompPktLifeTime},
}

// mprHighestBit is the last component bit of MultiPathRecord's header.
const mprHighestBit = 21

func runMultiPath(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if cm>>(mprHighestBit+1) != 0 {
		return smp.SAStatusReqInvalid, "MultiPathRecord component mask has bits above 21"
	}
	if cm&smp.MPRCompSGIDCount == 0 || cm&smp.MPRCompDGIDCount == 0 {
		return smp.SAStatusInsufficientComponents, "MultiPathRecord needs SGIDCount and DGIDCount"
	}
	var m smp.MultiPathRecord
	if err := m.Unmarshal(q.req.Data[:]); err != nil {
		return smp.SAStatusReqInvalid, "MultiPathRecord names more GIDs than one MAD holds: " + err.Error()
	}
	if m.SGIDCount == 0 || m.DGIDCount == 0 {
		return smp.SAStatusInsufficientComponents, "MultiPathRecord needs at least one source and one destination GID"
	}
	for _, g := range m.GIDs {
		if g[0] == 0xFF {
			return smp.SAStatusInvalidGID, "multicast GIDs in a MultiPathRecord are not supported"
		}
	}
	pr := smp.PathRecord{RawTraffic: m.RawTraffic, FlowLabel: m.FlowLabel, HopLimit: m.HopLimit, TClass: m.TClass,
		Reversible: m.Reversible, PKey: m.PKey, QoSClass: m.QoSClass, SL: m.SL, MTUSelector: m.MTUSelector, MTU: m.MTU,
		RateSelector: m.RateSelector, Rate: m.Rate, PacketLifeTimeSelector: m.PacketLifeTimeSelector, PacketLifeTime: m.PacketLifeTime}
	prMask := uint64(smp.PRCompSGID | smp.PRCompDGID)
	for _, b := range mprToPR {
		if cm&b.mpr != 0 {
			prMask |= b.pr
		}
	}
	asked := false // the limit is NumbPath, not the MAD's room
	if cm&smp.MPRCompNumbPath != 0 && m.NumbPath > 0 && (limit == 0 || int(m.NumbPath) < limit) {
		limit, asked = int(m.NumbPath), true
	}
	// One PathRecord GetTable per pair, into the same table.
	sub := *q.req
	sub.Method, sub.AttrID, sub.ComponentMask = smp.MethodGetTable, smp.SAAttrPathRecord, prMask
	pq := *q
	pq.req = &sub
	for _, s := range m.GIDs[:m.SGIDCount] {
		for _, d := range m.GIDs[m.SGIDCount:] {
			pr.SGID, pr.DGID = s, d
			sub.Data = [smp.SADataLen]byte{}
			if err := pr.MarshalTo(sub.Data[:]); err != nil {
				return smp.SAStatusReqInvalid, "MultiPathRecord selectors out of range: " + err.Error()
			}
			if st, why := runPath(&pq, t, limit); st != 0 {
				return st, why
			}
			if t.more {
				t.more = !asked // NumbPath paths found: nothing was cut off
				return 0, ""
			}
		}
	}
	return 0, ""
}

// answerMulti runs a GetMulti and answers with GetMultiResp, one RMPP
// message like a GetTable (trimmed to one MAD without RMPP).
func (a *Agent) answerMulti(p transport.Packet, q *query, kind queryKind) {
	limit := 0
	if !a.opts.RMPP {
		limit = singleMADData / kind.stride
	}
	t := &table{stride: kind.stride}
	if st, why := kind.multi(q, t, limit); st != 0 {
		a.saError(p, q.req, smp.MethodGetMultiResp, st, why)
		return
	}
	if t.more && !a.opts.RMPP {
		a.warnOnce(kind.name, "SA GetMulti answer truncated to one MAD: this transport has no RMPP (ibsim); the requester sees only the first records",
			"query", kind.name, "records_sent", t.n, "slid", p.SLID)
	}
	a.replyRMPP(p, q.req, smp.MethodGetMultiResp, t)
}
