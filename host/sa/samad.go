package sa

import (
	"encoding/binary"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// saHeaderLen is the SA header after the RMPP header (SM_Key,
// AttributeOffset, reserved, ComponentMask): PayloadLength counts it.
const saHeaderLen = smp.SADataOffset - smp.RMPPHeaderEnd // 20

// singleMADData is how many bytes of records a GetTable answer carries
// without RMPP. Not the 200 bytes a MAD has room for: umad2sim, through
// which infiniband-diags tools reach ibsim, hands its reader only the first
// 216 bytes of a MAD (it receives into a 288-byte sim_request buffer and
// takes its 72-byte umad header off that), so records past byte 216 would
// arrive as garbage. Seen with saquery -p: a third PathRecord came back
// with its DLID and SLID missing.
const singleMADData = 216 - smp.SADataOffset // 160

// rmppNoRespTime is the RRespTime a sender puts in RMPP DATA segments when
// it does not ask for a time (IBA 13.6.2.1; the Linux MAD layer does the same).
const rmppNoRespTime = 0x1F

// respMethod is the response method for request method m, and false for
// methods that are never answered.
func respMethod(m uint8) (uint8, bool) {
	switch m {
	case smp.MethodSet:
		return smp.MethodGetResp, true // SubnAdmSet is answered by SubnAdmGetResp
	case smp.MethodSend, smp.MethodTrap, smp.MethodReport, smp.MethodTrapRepress:
		return 0, false
	}
	return m | smp.MethodResponse, true
}

// table is a query's answer: n records of stride bytes each in data.
type table struct {
	data   []byte
	stride int
	n      int
	// more is set when records were left out because they did not fit.
	more bool
}

// add appends one record of rec.stride bytes and reports whether another
// one may follow (limit 0: no limit).
func (t *table) add(rec []byte, limit int) bool {
	if limit > 0 && t.n >= limit {
		t.more = true
		return false
	}
	t.data = append(t.data, rec[:t.stride]...)
	t.n++
	return true
}

// replyAddr addresses the answer to request p: back to its source LID and
// QP, with the request's SL (IBA 13.5.1.3). The source LID is left 0 for
// the transport to fill in with our port's LID.
func replyAddr(p transport.Packet) transport.Packet {
	return transport.Packet{DLID: p.SLID, SL: p.SL, QP: p.QP}
}

// header fills the response header shared by every SA answer: the request's
// TID (all 64 bits: ibsim routes answers by its top bits), attribute and
// modifier, SM_Key 0 (IBA C15-0.1.5) and the request's ComponentMask.
func respHeader(req *smp.SAMAD, method uint8, status uint16) smp.SAMAD {
	r := smp.NewSAMAD(method, req.AttrID)
	r.Status = status
	r.TID = req.TID
	r.AttrMod = req.AttrMod
	r.ComponentMask = req.ComponentMask
	return *r
}

// saError answers req with status and no data.
func (a *Agent) saError(p transport.Packet, req *smp.SAMAD, method uint8, status uint16, why string) {
	a.log.Debug("SA request refused", "slid", p.SLID, "attr", req.AttrID, "method", req.Method,
		"status", status, "why", why)
	r := respHeader(req, method, status)
	buf := make([]byte, smp.MADLen)
	if err := r.EncodeTo(buf); err != nil {
		a.log.Error("BUG: SA error answer does not encode", "error", err)
		return
	}
	out := replyAddr(p)
	out.MAD = buf
	a.send(out, "SA error")
}

// replyOne answers a Get, Set (method GetResp) or Delete (DeleteResp)
// with one record.
func (a *Agent) replyOne(p transport.Packet, req *smp.SAMAD, method uint8, rec []byte, stride int) {
	r := respHeader(req, method, 0)
	r.AttributeOffset = uint16(stride / 8)
	copy(r.Data[:], rec[:stride])
	buf := make([]byte, smp.MADLen)
	if err := r.EncodeTo(buf); err != nil {
		a.log.Error("BUG: SA answer does not encode", "error", err)
		return
	}
	out := replyAddr(p)
	out.MAD = buf
	a.send(out, "SA GetResp")
}

// replyTable answers a GetTable with t as one RMPP message (see the package
// comment for what happens without RMPP).
func (a *Agent) replyTable(p transport.Packet, req *smp.SAMAD, t *table) {
	a.replyRMPP(p, req, smp.MethodGetTableResp, t)
}

// replyRMPP answers req with t as one RMPP message of the given method
// (GetTableResp, GetMultiResp).
func (a *Agent) replyRMPP(p transport.Packet, req *smp.SAMAD, method uint8, t *table) {
	r := respHeader(req, method, 0)
	r.AttributeOffset = uint16(t.stride / 8)
	r.RMPPVersion, r.RMPPType = 1, smp.RMPPTypeData
	r.RRespTime = rmppNoRespTime
	r.RMPPFlags = smp.RMPPFlagActive | smp.RMPPFlagFirst | smp.RMPPFlagLast
	r.SegmentNumber = 1
	r.PayloadLength = uint32(saHeaderLen + len(t.data))
	size := smp.MADLen
	if a.opts.RMPP {
		size = smp.SADataOffset + len(t.data)
	}
	buf := make([]byte, max(size, smp.MADLen))
	if err := r.EncodeTo(buf); err != nil {
		a.log.Error("BUG: SA answer does not encode", "error", err)
		return
	}
	copy(buf[smp.SADataOffset:], t.data) // EncodeTo wrote the first 200 bytes
	out := replyAddr(p)
	out.MAD = buf[:size]
	a.send(out, "SA GetTableResp")
}

// handleSA answers one SA MAD.
func (a *Agent) handleSA(p transport.Packet) {
	b := p.MAD
	if len(b) < smp.MADLen {
		a.log.Debug("short SA MAD dropped", "slid", p.SLID, "len", len(b))
		return
	}
	if b[0] != smp.BaseVersion || b[3]&smp.MethodResponse != 0 {
		a.log.Debug("SA MAD dropped: not a version-1 request", "slid", p.SLID, "base_version", b[0], "method", b[3])
		return
	}
	method, answered := respMethod(b[3])
	if !answered {
		a.log.Debug("SA MAD with a method that takes no answer ignored", "slid", p.SLID, "method", b[3])
		return
	}
	var req smp.SAMAD
	if b[2] != smp.SAClassVersion {
		// Decode refuses other versions; answer from the raw header.
		_ = req.Header.Decode(b)
		req.MgmtClass, req.ClassVersion = smp.ClassSA, smp.SAClassVersion
		req.ComponentMask = binary.BigEndian.Uint64(b[48:])
		a.saError(p, &req, method, smp.StatusBadVersion, "SA class version is not 2")
		return
	}
	if err := req.Decode(b); err != nil {
		a.log.Debug("malformed SA MAD dropped", "slid", p.SLID, "error", err)
		return
	}
	if p.SLID == 0 {
		a.log.Debug("SA request without a source LID: cannot answer", "attr", req.AttrID)
		return
	}
	if req.SMKey != 0 && req.SMKey != a.smKey.Load() {
		// C15-0.1.5: SM_Key is 0 or the SM's; anything else is discarded
		// (OpenSM: ERR 1A04), not answered as if untrusted.
		a.saLimit.Drop(source(p), "wrong SM_Key")
		return
	}
	get, getTable := req.Method == smp.MethodGet, req.Method == smp.MethodGetTable
	switch req.Method {
	case smp.MethodGet, smp.MethodGetTable, smp.MethodSet, smp.MethodDelete, smp.MethodGetMulti, 0x13: // 0x13: GetTraceTable
	default:
		a.saError(p, &req, method, smp.StatusUnsupportedMethod, "method not defined for the SA class")
		return
	}
	kind, ok := queryKinds[req.AttrID]
	set := req.Method == smp.MethodSet && kind.set != nil
	del := req.Method == smp.MethodDelete && kind.del != nil
	multi := req.Method == smp.MethodGetMulti && kind.multi != nil
	if !ok || !((get && kind.run != nil) || (getTable && kind.table && kind.run != nil) || set || del || multi) {
		a.saError(p, &req, method, smp.StatusUnsupportedMethodAttr, "attribute/method not supported by this SA")
		return
	}
	x := a.current()
	if x == nil {
		a.saError(p, &req, method, smp.StatusBusy, "no plan programmed yet")
		return
	}
	// SM_Key 0 is what untrusted clients send (saquery's default).
	q := query{a: a, x: x, req: &req, trusted: req.SMKey != 0 && req.SMKey == a.smKey.Load(), src: p}
	if multi {
		a.answerMulti(p, &q, kind)
		return
	}
	if set || del {
		change := kind.set
		if del {
			change = kind.del
		}
		rec, status, why := change(&q)
		if status != 0 {
			a.saError(p, &req, method, status, why)
			return
		}
		a.replyOne(p, &req, method, rec, kind.stride)
		return
	}
	limit := 0
	switch {
	case get:
		limit = 1 // a second match means ERR_REQ_TOO_MANY
	case !a.opts.RMPP:
		limit = singleMADData / kind.stride
	}
	t := &table{stride: kind.stride}
	if status, why := kind.run(&q, t, limit); status != 0 {
		a.saError(p, &req, method, status, why)
		return
	}
	switch {
	case get && t.n == 0:
		a.saError(p, &req, method, smp.SAStatusNoRecords, "no record matches")
	case get && t.more:
		a.saError(p, &req, method, smp.SAStatusTooManyRecords, "more than one record matches a Get")
	case get:
		a.replyOne(p, &req, smp.MethodGetResp, t.data, t.stride)
	default:
		if t.more {
			a.warnOnce(kind.name, "SA GetTable answer truncated to one MAD: this transport has no RMPP (ibsim); the requester sees only the first records",
				"query", kind.name, "records_sent", t.n, "slid", p.SLID)
		}
		a.replyTable(p, &req, t)
	}
}
