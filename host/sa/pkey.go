package sa

import (
	"encoding/binary"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// Partitions. A Source that manages partitions (*sm.SM) hands the agent
// the P_Key plan in force; PathRecord answers only pairs that share a
// P_Key with at least one full member (IBA 10.9.3), and PKeyTableRecord
// answers from the tables that plan programmed. A Source without one (or
// before the first plan) has the default partition only: every port a
// full member of 0xFFFF, and no PKeyTableRecord.

// pkeySource is implemented by Sources that manage partitions.
type pkeySource interface {
	PKeyPlan() *program.PKeyPlan
}

var pkeyKinds = map[uint16]queryKind{
	smp.SAAttrPKeyTableRecord: {name: "PKeyTableRecord", stride: stride(pkeyTableRecordLen), table: true, run: runPKeyTableRecord},
}

// pkeyTableRecordLen is the PKeyTableRecord size (IBA 15.2.5.11): LID 16,
// BlockNum 16, PortNum 8, reserved 24, then one P_KeyTable block (64
// bytes).
const pkeyTableRecordLen = 72

var pkeyTableRecordFields = []field{{0, 16}, {16, 16}, {32, 8}, {40, 24}, {64, 512}}

// pkeyPlan is the P_Key plan in force, or nil (default partition only).
func (q *query) pkeyPlan() *program.PKeyPlan {
	if s, ok := q.a.src.(pkeySource); ok {
		return s.PKeyPlan()
	}
	return nil
}

// table returns the P_Key table port p of endpoint e's node holds in pl.
func (x *index) pkeyTable(pl *program.PKeyPlan, e int32, p uint8) ([]uint16, bool) {
	t, ok := pl.Tables[discovery.PortRef{GUID: x.topo.Nodes[x.eps[e].Node].GUID, Port: p}]
	return t, ok
}

// defaultKeys is what every port holds without a partition plan.
var defaultKeys = []uint16{0xFFFF}

// pathPKey picks the P_Key of a path from endpoint src to dst: the
// requested one (want, when set) or else the first key of src's table
// that dst holds too, such that at least one of them is a full member. It
// returns src's entry (with src's membership bit) and false when the two
// share no such key.
func (q *query) pathPKey(pl *program.PKeyPlan, src, dst int32, wantSet bool, want uint16) (uint16, bool) {
	keys := func(e int32) []uint16 {
		if pl == nil {
			return defaultKeys
		}
		t, _ := q.x.pkeyTable(pl, e, q.x.eps[e].Port)
		return t
	}
	sk, dk := keys(src), keys(dst)
	for _, s := range sk {
		base := s & 0x7FFF
		if base == 0 || wantSet && base != want&0x7FFF {
			continue
		}
		for _, d := range dk {
			if d&0x7FFF == base && (s|d)&smp.PKeyFullMember != 0 {
				return s, true
			}
		}
	}
	return 0, false
}

// runPKeyTableRecord answers PKeyTableRecord Get/GetTable: one record per
// 32-entry block of every programmed table, for CA ports and for a
// switch's port 0 and enforcing external ports (all under the switch's
// LID), filtered by the component mask (LID by range, BlockNum, PortNum).
// Only trusted requesters (our SM_Key) may read P_Key tables, as with
// OpenSM: who may talk to whom is not for every port to learn (osmtest's
// validation expects the refusal).
func runPKeyTableRecord(q *query, t *table, limit int) (uint16, string) {
	if !q.trusted {
		return smp.SAStatusReqInvalid, "PKeyTableRecord needs the SM_Key (a trusted requester)"
	}
	cm := q.req.ComponentMask
	if st, why := checkMask("PKeyTableRecord", pkeyTableRecordFields, cm); st != 0 {
		return st, why
	}
	pl := q.pkeyPlan()
	if pl == nil {
		return 0, ""
	}
	x := q.x
	var buf [pkeyTableRecordLen]byte
	q.lidEndpoints(func(e int32) bool {
		ep := x.eps[e]
		first, last := ep.Port, ep.Port
		if x.topo.Nodes[ep.Node].Type == topology.Switch {
			first, last = 0, uint8(x.topo.Nodes[ep.Node].NumPorts())
		}
		for p := int(first); p <= int(last); p++ {
			tbl, ok := x.pkeyTable(pl, e, uint8(p))
			if !ok {
				continue
			}
			for b := 0; b*smp.PKeyBlockLen < len(tbl); b++ {
				clear(buf[:])
				binary.BigEndian.PutUint16(buf[0:], x.lids.Ports[e].Base)
				binary.BigEndian.PutUint16(buf[2:], uint16(b))
				buf[4] = uint8(p)
				var blk smp.PKeyBlock
				copy(blk[:], tbl[b*smp.PKeyBlockLen:])
				_ = blk.MarshalTo(buf[8:]) // 64 bytes: cannot fail
				if !matches(pkeyTableRecordFields, cm, q.req.Data[:], buf[:]) {
					continue
				}
				if !t.add(buf[:], limit) {
					return false
				}
			}
		}
		return true
	})
	return 0, ""
}
