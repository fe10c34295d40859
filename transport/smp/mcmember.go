package smp

import (
	"encoding/binary"
)

// MCMemberRecordLen is the wire size of an MCMemberRecord (IBA 15.2.5.17,
// table 208): 52 bytes, a 56-byte stride in tables.
const MCMemberRecordLen = 52

// JoinState bits (IBA 15.2.5.17; SendOnlyFullMember is IBA 1.3's).
const (
	JoinFullMember         = 1 << 0
	JoinNonMember          = 1 << 1
	JoinSendOnlyNonMember  = 1 << 2
	JoinSendOnlyFullMember = 1 << 3
)

// MCMemberRecord component mask bits (IBA 15.2.5.17: one per field in
// layout order, reserved fields included).
const (
	MCMCompMGID = 1 << iota
	MCMCompPortGID
	MCMCompQKey
	MCMCompMLID
	MCMCompMTUSelector
	MCMCompMTU
	MCMCompTClass
	MCMCompPKey
	MCMCompRateSelector
	MCMCompRate
	MCMCompPacketLifeTimeSelector
	MCMCompPacketLifeTime
	MCMCompSL
	MCMCompFlowLabel
	MCMCompHopLimit
	MCMCompScope
	MCMCompJoinState
	MCMCompProxyJoin
)

// MCMemberRecord is the SA MCMemberRecord (attribute SAAttrMCMemberRecord):
// one port's membership of one multicast group and the group's parameters.
type MCMemberRecord struct {
	MGID    [16]byte // bits 0..127
	PortGID [16]byte // 128..255
	QKey    uint32   // 256
	MLID    uint16   // 288
	// MTUSelector, RateSelector, PacketLifeTimeSelector (2 bits each):
	// 0 greater than, 1 less than, 2 exactly, 3 largest available.
	MTUSelector            uint8 // 304, 2
	MTU                    uint8 // 306, 6
	TClass                 uint8 // 312
	PKey                   uint16
	RateSelector           uint8  // 336, 2
	Rate                   uint8  // 338, 6
	PacketLifeTimeSelector uint8  // 344, 2
	PacketLifeTime         uint8  // 346, 6
	SL                     uint8  // 352, 4
	FlowLabel              uint32 // 356, 20
	HopLimit               uint8  // 376, 8
	Scope                  uint8  // 384, 4
	JoinState              uint8  // 388, 4
	ProxyJoin              bool   // 392, 1; 23 bits reserved
}

func (*MCMemberRecord) AttrID() uint16 { return SAAttrMCMemberRecord }

func (r *MCMemberRecord) MarshalTo(b []byte) error {
	if err := need("MCMemberRecord", b, MCMemberRecordLen); err != nil {
		return err
	}
	clear64(b[:MCMemberRecordLen])
	copy(b[0:16], r.MGID[:])
	copy(b[16:32], r.PortGID[:])
	binary.BigEndian.PutUint32(b[32:], r.QKey)
	binary.BigEndian.PutUint16(b[36:], r.MLID)
	w := bitWriter{b: b, attr: "MCMemberRecord"}
	w.put("MTUSelector", 304, 2, uint64(r.MTUSelector))
	w.put("MTU", 306, 6, uint64(r.MTU))
	b[39] = r.TClass
	binary.BigEndian.PutUint16(b[40:], r.PKey)
	w.put("RateSelector", 336, 2, uint64(r.RateSelector))
	w.put("Rate", 338, 6, uint64(r.Rate))
	w.put("PacketLifeTimeSelector", 344, 2, uint64(r.PacketLifeTimeSelector))
	w.put("PacketLifeTime", 346, 6, uint64(r.PacketLifeTime))
	if r.FlowLabel >= 1<<20 {
		w.put("FlowLabel", 356, 20, uint64(r.FlowLabel)) // records the error
	}
	w.put("SL", 352, 4, uint64(r.SL))
	if w.err == nil {
		// SL (4 bits) and FlowLabel (20 bits) share bytes 44..46.
		v := uint32(r.SL)<<28 | r.FlowLabel<<8 | uint32(r.HopLimit)
		binary.BigEndian.PutUint32(b[44:], v)
	}
	w.put("Scope", 384, 4, uint64(r.Scope))
	w.put("JoinState", 388, 4, uint64(r.JoinState))
	w.bool("ProxyJoin", 392, r.ProxyJoin)
	return w.err
}

func (r *MCMemberRecord) Unmarshal(b []byte) error {
	if err := need("MCMemberRecord", b, MCMemberRecordLen); err != nil {
		return err
	}
	copy(r.MGID[:], b[0:16])
	copy(r.PortGID[:], b[16:32])
	r.QKey = binary.BigEndian.Uint32(b[32:])
	r.MLID = binary.BigEndian.Uint16(b[36:])
	r.MTUSelector = uint8(getBits(b, 304, 2))
	r.MTU = uint8(getBits(b, 306, 6))
	r.TClass = b[39]
	r.PKey = binary.BigEndian.Uint16(b[40:])
	r.RateSelector = uint8(getBits(b, 336, 2))
	r.Rate = uint8(getBits(b, 338, 6))
	r.PacketLifeTimeSelector = uint8(getBits(b, 344, 2))
	r.PacketLifeTime = uint8(getBits(b, 346, 6))
	v := binary.BigEndian.Uint32(b[44:])
	r.SL, r.FlowLabel, r.HopLimit = uint8(v>>28), v>>8&0xFFFFF, uint8(v)
	r.Scope = uint8(getBits(b, 384, 4))
	r.JoinState = uint8(getBits(b, 388, 4))
	r.ProxyJoin = getBits(b, 392, 1) == 1
	return nil
}
