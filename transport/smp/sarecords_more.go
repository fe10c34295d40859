package smp

import (
	"encoding/binary"
	"fmt"
)

// SA attributes beyond the ones in sa.go (IBA 15.2.5, table 197).
const (
	SAAttrSL2VLRecord      = 0x0013
	SAAttrGUIDInfoRecord   = 0x0030
	SAAttrVLArbRecord      = 0x0036
	SAAttrInformInfoRecord = 0x00F3
)

// Record lengths (IBA 15.2.5.x); SARecordStride rounds them to 8 bytes.
const (
	LinkRecordLen        = 8   // 15.2.5.13: FromLID, FromPort, ToPort, ToLID, 16 reserved bits
	GUIDInfoRecordLen    = 72  // 15.2.5.18: LID, BlockNum, 40 reserved bits, 8 GUIDs
	SwitchInfoRecordLen  = 24  // 15.2.5.4: LID, 16 reserved bits, SwitchInfo (20)
	LFTRecordLen         = 72  // 15.2.5.6: LID, BlockNum, 32 reserved bits, 64 ports
	SL2VLRecordLen       = 16  // 15.2.5.8: LID, InputPort, OutputPort, 32 reserved bits, table (8)
	VLArbRecordLen       = 72  // 15.2.5.9: LID, OutputPort, BlockNum, 32 reserved bits, block (64)
	ServiceRecordLen     = 176 // 15.2.5.14
	InformInfoLen        = 36  // 13.4.8.3
	InformInfoRecordLen  = 60  // 15.2.5.12: SubscriberGID, Enum, 48 reserved bits, InformInfo
	MultiPathHeaderLen   = 24  // 15.2.5.20: fixed part before the SGID/DGID list
	MultiPathMaxGIDs     = (SADataLen - MultiPathHeaderLen) / 16
	ServiceLeaseInfinite = 0xFFFFFFFF
)

// LinkRecord is the SA LinkRecord (IBA 15.2.5.13): one direction of a
// link between two ports, named by the LIDs of their nodes.
type LinkRecord struct {
	FromLID  uint16
	FromPort uint8
	ToPort   uint8
	ToLID    uint16
}

func (*LinkRecord) AttrID() uint16 { return SAAttrLinkRecord }

func (r *LinkRecord) MarshalTo(b []byte) error {
	if err := need("LinkRecord", b, LinkRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[0:], r.FromLID)
	b[2], b[3] = r.FromPort, r.ToPort
	binary.BigEndian.PutUint16(b[4:], r.ToLID)
	b[6], b[7] = 0, 0
	return nil
}

func (r *LinkRecord) Unmarshal(b []byte) error {
	if err := need("LinkRecord", b, LinkRecordLen); err != nil {
		return err
	}
	*r = LinkRecord{FromLID: binary.BigEndian.Uint16(b[0:]), FromPort: b[2], ToPort: b[3], ToLID: binary.BigEndian.Uint16(b[4:])}
	return nil
}

// GUIDInfoRecord is the SA GUIDInfoRecord (IBA 15.2.5.18): block BlockNum
// (8 GUIDs) of the GUIDInfo table (14.2.5.5) of the port at LID.
type GUIDInfoRecord struct {
	LID      uint16
	BlockNum uint8
	GUIDs    [8]uint64
}

func (*GUIDInfoRecord) AttrID() uint16 { return SAAttrGUIDInfoRecord }

func (r *GUIDInfoRecord) MarshalTo(b []byte) error {
	if err := need("GUIDInfoRecord", b, GUIDInfoRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[0:], r.LID)
	b[2] = r.BlockNum
	clear64(b[3:8])
	for i, g := range r.GUIDs {
		binary.BigEndian.PutUint64(b[8+8*i:], g)
	}
	return nil
}

func (r *GUIDInfoRecord) Unmarshal(b []byte) error {
	if err := need("GUIDInfoRecord", b, GUIDInfoRecordLen); err != nil {
		return err
	}
	r.LID, r.BlockNum = binary.BigEndian.Uint16(b[0:]), b[2]
	for i := range r.GUIDs {
		r.GUIDs[i] = binary.BigEndian.Uint64(b[8+8*i:])
	}
	return nil
}

// SwitchInfoRecord is the SA SwitchInfoRecord (IBA 15.2.5.4).
type SwitchInfoRecord struct {
	LID        uint16
	SwitchInfo SwitchInfo
}

func (*SwitchInfoRecord) AttrID() uint16 { return SAAttrSwitchInfoRecord }

func (r *SwitchInfoRecord) MarshalTo(b []byte) error {
	if err := need("SwitchInfoRecord", b, SwitchInfoRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[0:], r.LID)
	b[2], b[3] = 0, 0
	return r.SwitchInfo.MarshalTo(b[4:SwitchInfoRecordLen])
}

func (r *SwitchInfoRecord) Unmarshal(b []byte) error {
	if err := need("SwitchInfoRecord", b, SwitchInfoRecordLen); err != nil {
		return err
	}
	r.LID = binary.BigEndian.Uint16(b[0:])
	return r.SwitchInfo.Unmarshal(b[4:SwitchInfoRecordLen])
}

// LFTRecord is the SA LinearForwardingTableRecord (IBA 15.2.5.6): block
// BlockNum of the LFT of the switch at LID.
type LFTRecord struct {
	LID      uint16
	BlockNum uint16
	Block    LFTBlock
}

func (*LFTRecord) AttrID() uint16 { return SAAttrLFTRecord }

func (r *LFTRecord) MarshalTo(b []byte) error {
	if err := need("LinearForwardingTableRecord", b, LFTRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[0:], r.LID)
	binary.BigEndian.PutUint16(b[2:], r.BlockNum)
	clear64(b[4:8])
	copy(b[8:72], r.Block[:])
	return nil
}

func (r *LFTRecord) Unmarshal(b []byte) error {
	if err := need("LinearForwardingTableRecord", b, LFTRecordLen); err != nil {
		return err
	}
	r.LID, r.BlockNum = binary.BigEndian.Uint16(b[0:]), binary.BigEndian.Uint16(b[2:])
	copy(r.Block[:], b[8:72])
	return nil
}

// SL2VLRecord is the SA SLtoVLMappingTableRecord (IBA 15.2.5.8): the table
// of the (input, output) port pair of the node at LID (0, 0 for a CA port).
type SL2VLRecord struct {
	LID             uint16
	InPort, OutPort uint8
	Table           SL2VLTable
}

func (*SL2VLRecord) AttrID() uint16 { return SAAttrSL2VLRecord }

func (r *SL2VLRecord) MarshalTo(b []byte) error {
	if err := need("SLtoVLMappingTableRecord", b, SL2VLRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[0:], r.LID)
	b[2], b[3] = r.InPort, r.OutPort
	clear64(b[4:8])
	return r.Table.MarshalTo(b[8:16])
}

func (r *SL2VLRecord) Unmarshal(b []byte) error {
	if err := need("SLtoVLMappingTableRecord", b, SL2VLRecordLen); err != nil {
		return err
	}
	r.LID, r.InPort, r.OutPort = binary.BigEndian.Uint16(b[0:]), b[2], b[3]
	return r.Table.Unmarshal(b[8:16])
}

// VLArbRecord is the SA VLArbitrationTableRecord (IBA 15.2.5.9): block
// BlockNum (1..4, as the SMP modifier) of port OutPort of the node at LID.
type VLArbRecord struct {
	LID      uint16
	OutPort  uint8
	BlockNum uint8
	Block    VLArbBlock
}

func (*VLArbRecord) AttrID() uint16 { return SAAttrVLArbRecord }

func (r *VLArbRecord) MarshalTo(b []byte) error {
	if err := need("VLArbitrationTableRecord", b, VLArbRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[0:], r.LID)
	b[2], b[3] = r.OutPort, r.BlockNum
	clear64(b[4:8])
	return r.Block.MarshalTo(b[8:72])
}

func (r *VLArbRecord) Unmarshal(b []byte) error {
	if err := need("VLArbitrationTableRecord", b, VLArbRecordLen); err != nil {
		return err
	}
	r.LID, r.OutPort, r.BlockNum = binary.BigEndian.Uint16(b[0:]), b[2], b[3]
	return r.Block.Unmarshal(b[8:72])
}

// ServiceRecord is the SA ServiceRecord (IBA 15.2.5.14, 176 bytes).
type ServiceRecord struct {
	ID     uint64   // 0, 64
	GID    [16]byte // 64, 128
	PKey   uint16   // 192, 16 (then 16 reserved bits)
	Lease  uint32   // 224, 32: seconds; ServiceLeaseInfinite never expires
	Key    [16]byte // 256, 128
	Name   [64]byte // 384, 512: UTF-8, NUL padded
	Data8  [16]uint8
	Data16 [8]uint16
	Data32 [4]uint32
	Data64 [2]uint64
}

func (*ServiceRecord) AttrID() uint16 { return SAAttrServiceRecord }

func (r *ServiceRecord) MarshalTo(b []byte) error {
	if err := need("ServiceRecord", b, ServiceRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint64(b[0:], r.ID)
	copy(b[8:24], r.GID[:])
	binary.BigEndian.PutUint16(b[24:], r.PKey)
	b[26], b[27] = 0, 0
	binary.BigEndian.PutUint32(b[28:], r.Lease)
	copy(b[32:48], r.Key[:])
	copy(b[48:112], r.Name[:])
	copy(b[112:128], r.Data8[:])
	for i, v := range r.Data16 {
		binary.BigEndian.PutUint16(b[128+2*i:], v)
	}
	for i, v := range r.Data32 {
		binary.BigEndian.PutUint32(b[144+4*i:], v)
	}
	for i, v := range r.Data64 {
		binary.BigEndian.PutUint64(b[160+8*i:], v)
	}
	return nil
}

func (r *ServiceRecord) Unmarshal(b []byte) error {
	if err := need("ServiceRecord", b, ServiceRecordLen); err != nil {
		return err
	}
	r.ID = binary.BigEndian.Uint64(b[0:])
	copy(r.GID[:], b[8:24])
	r.PKey = binary.BigEndian.Uint16(b[24:])
	r.Lease = binary.BigEndian.Uint32(b[28:])
	copy(r.Key[:], b[32:48])
	copy(r.Name[:], b[48:112])
	copy(r.Data8[:], b[112:128])
	for i := range r.Data16 {
		r.Data16[i] = binary.BigEndian.Uint16(b[128+2*i:])
	}
	for i := range r.Data32 {
		r.Data32[i] = binary.BigEndian.Uint32(b[144+4*i:])
	}
	for i := range r.Data64 {
		r.Data64[i] = binary.BigEndian.Uint64(b[160+8*i:])
	}
	return nil
}

// InformInfo is the InformInfo attribute (IBA 13.4.8.3, 36 bytes): a
// subscription to the traps of the ports with LIDs in
// [LIDRangeBegin, LIDRangeEnd] (0xFFFF: all), or of the port GID when it is
// not zero. TrapNumber 0xFFFF, Type 0xFFFF and ProducerType 0xFFFFFF are
// wildcards. For vendor notices (IsGeneric false) TrapNumber is the
// DeviceID and ProducerType the VendorID.
type InformInfo struct {
	GID           [16]byte // 0, 128
	LIDRangeBegin uint16   // 128, 16
	LIDRangeEnd   uint16   // 144, 16 (then 16 reserved bits)
	IsGeneric     bool     // 176, 8
	Subscribe     bool     // 184, 8
	Type          uint16   // 192, 16
	TrapNumber    uint16   // 208, 16
	QPN           uint32   // 224, 24 (then 3 reserved bits)
	RespTimeValue uint8    // 251, 5 (then 8 reserved bits)
	ProducerType  uint32   // 264, 24
}

func (*InformInfo) AttrID() uint16 { return SAAttrInformInfo }

func (r *InformInfo) MarshalTo(b []byte) error {
	if err := need("InformInfo", b, InformInfoLen); err != nil {
		return err
	}
	if r.QPN > 0xFFFFFF || r.RespTimeValue > 0x1F || r.ProducerType > 0xFFFFFF {
		return fmt.Errorf("smp: InformInfo QPN %#x (24 bits), RespTimeValue %d (5 bits) or ProducerType %#x (24 bits) out of range",
			r.QPN, r.RespTimeValue, r.ProducerType)
	}
	copy(b[0:16], r.GID[:])
	binary.BigEndian.PutUint16(b[16:], r.LIDRangeBegin)
	binary.BigEndian.PutUint16(b[18:], r.LIDRangeEnd)
	b[20], b[21] = 0, 0
	b[22], b[23] = boolByte(r.IsGeneric), boolByte(r.Subscribe)
	binary.BigEndian.PutUint16(b[24:], r.Type)
	binary.BigEndian.PutUint16(b[26:], r.TrapNumber)
	binary.BigEndian.PutUint32(b[28:], r.QPN<<8|uint32(r.RespTimeValue))
	binary.BigEndian.PutUint32(b[32:], r.ProducerType) // byte 32 is reserved: 0
	return nil
}

// Unmarshal takes IsGeneric and Subscribe as true for any non-zero byte
// (the spec defines only 0 and 1).
func (r *InformInfo) Unmarshal(b []byte) error {
	if err := need("InformInfo", b, InformInfoLen); err != nil {
		return err
	}
	copy(r.GID[:], b[0:16])
	r.LIDRangeBegin = binary.BigEndian.Uint16(b[16:])
	r.LIDRangeEnd = binary.BigEndian.Uint16(b[18:])
	r.IsGeneric, r.Subscribe = b[22] != 0, b[23] != 0
	r.Type = binary.BigEndian.Uint16(b[24:])
	r.TrapNumber = binary.BigEndian.Uint16(b[26:])
	w := binary.BigEndian.Uint32(b[28:])
	r.QPN, r.RespTimeValue = w>>8, uint8(w&0x1F)
	r.ProducerType = binary.BigEndian.Uint32(b[32:]) & 0xFFFFFF
	return nil
}

// InformInfoRecord is the SA InformInfoRecord (IBA 15.2.5.12): one
// subscription, named by the subscriber's port GID and an enumerator.
type InformInfoRecord struct {
	SubscriberGID [16]byte
	Enum          uint16
	Info          InformInfo
}

func (*InformInfoRecord) AttrID() uint16 { return SAAttrInformInfoRecord }

func (r *InformInfoRecord) MarshalTo(b []byte) error {
	if err := need("InformInfoRecord", b, InformInfoRecordLen); err != nil {
		return err
	}
	copy(b[0:16], r.SubscriberGID[:])
	binary.BigEndian.PutUint16(b[16:], r.Enum)
	clear64(b[18:24])
	return r.Info.MarshalTo(b[24:60])
}

func (r *InformInfoRecord) Unmarshal(b []byte) error {
	if err := need("InformInfoRecord", b, InformInfoRecordLen); err != nil {
		return err
	}
	copy(r.SubscriberGID[:], b[0:16])
	r.Enum = binary.BigEndian.Uint16(b[16:])
	return r.Info.Unmarshal(b[24:60])
}

// MultiPathRecord component mask bits (IBA 15.2.5.20 table 215).
const (
	MPRCompRawTraffic     = 1 << 0
	MPRCompFlowLabel      = 1 << 2
	MPRCompHopLimit       = 1 << 3
	MPRCompTClass         = 1 << 4
	MPRCompReversible     = 1 << 5
	MPRCompNumbPath       = 1 << 6
	MPRCompPKey           = 1 << 7
	MPRCompQoSClass       = 1 << 8
	MPRCompSL             = 1 << 9
	MPRCompMTUSelector    = 1 << 10
	MPRCompMTU            = 1 << 11
	MPRCompRateSelector   = 1 << 12
	MPRCompRate           = 1 << 13
	MPRCompPktLifeSel     = 1 << 14
	MPRCompPktLife        = 1 << 15
	MPRCompServiceIDMSB   = 1 << 16
	MPRCompIndependence   = 1 << 17
	MPRCompSGIDCount      = 1 << 19
	MPRCompDGIDCount      = 1 << 20
	MPRCompServiceIDLSB   = 1 << 21
	mprCompHighestDefined = 21
)

// MultiPathRecord is the SA MultiPathRecord (IBA 15.2.5.20), the request
// of a GetMulti: path selectors, then SGIDCount source GIDs followed by
// DGIDCount destination GIDs. The answer is PathRecords.
type MultiPathRecord struct {
	RawTraffic             bool   // 0
	FlowLabel              uint32 // 4, 20
	HopLimit               uint8  // 24, 8
	TClass                 uint8  // 32, 8
	Reversible             bool   // 40
	NumbPath               uint8  // 41, 7
	PKey                   uint16 // 48, 16
	QoSClass               uint16 // 64, 12
	SL                     uint8  // 76, 4
	MTUSelector, MTU       uint8  // 80, 2 + 6
	RateSelector, Rate     uint8  // 88, 2 + 6
	PacketLifeTimeSelector uint8  // 96, 2
	PacketLifeTime         uint8  // 98, 6
	ServiceID              uint64 // bits 63..56 at 104, bits 55..0 at 136
	IndependenceSelector   uint8  // 112, 2
	SGIDCount, DGIDCount   uint8  // 120, 128
	GIDs                   [][16]byte
}

func (*MultiPathRecord) AttrID() uint16 { return SAAttrMultiPathRecord }

// MarshalTo writes the header and the GIDs; b must hold them all.
func (r *MultiPathRecord) MarshalTo(b []byte) error {
	n := MultiPathHeaderLen + 16*len(r.GIDs)
	if err := need("MultiPathRecord", b, n); err != nil {
		return err
	}
	if r.FlowLabel > 0xFFFFF || r.NumbPath > 0x7F || r.QoSClass > 0xFFF || r.SL > 15 || r.MTUSelector > 3 || r.MTU > 0x3F ||
		r.RateSelector > 3 || r.Rate > 0x3F || r.PacketLifeTimeSelector > 3 || r.PacketLifeTime > 0x3F || r.IndependenceSelector > 3 {
		return fmt.Errorf("smp: MultiPathRecord field out of range")
	}
	if int(r.SGIDCount)+int(r.DGIDCount) != len(r.GIDs) {
		return fmt.Errorf("smp: MultiPathRecord has %d GIDs for SGIDCount %d + DGIDCount %d", len(r.GIDs), r.SGIDCount, r.DGIDCount)
	}
	w := r.FlowLabel<<8 | uint32(r.HopLimit)
	if r.RawTraffic {
		w |= 1 << 31
	}
	binary.BigEndian.PutUint32(b[0:], w)
	b[4] = r.TClass
	b[5] = r.NumbPath
	if r.Reversible {
		b[5] |= 0x80
	}
	binary.BigEndian.PutUint16(b[6:], r.PKey)
	binary.BigEndian.PutUint16(b[8:], r.QoSClass<<4|uint16(r.SL))
	b[10] = r.MTUSelector<<6 | r.MTU
	b[11] = r.RateSelector<<6 | r.Rate
	b[12] = r.PacketLifeTimeSelector<<6 | r.PacketLifeTime
	b[13] = uint8(r.ServiceID >> 56)
	b[14] = r.IndependenceSelector << 6
	b[15], b[16] = r.SGIDCount, r.DGIDCount
	for i := 0; i < 7; i++ {
		b[17+i] = uint8(r.ServiceID >> (48 - 8*i))
	}
	for i, g := range r.GIDs {
		copy(b[MultiPathHeaderLen+16*i:], g[:])
	}
	return nil
}

// Unmarshal reads the header and as many of the SGIDCount+DGIDCount GIDs
// as b holds; it fails if b holds fewer than the counts say.
func (r *MultiPathRecord) Unmarshal(b []byte) error {
	if err := need("MultiPathRecord", b, MultiPathHeaderLen); err != nil {
		return err
	}
	w := binary.BigEndian.Uint32(b[0:])
	r.RawTraffic, r.FlowLabel, r.HopLimit = w>>31 != 0, w>>8&0xFFFFF, uint8(w)
	r.TClass = b[4]
	r.Reversible, r.NumbPath = b[5]&0x80 != 0, b[5]&0x7F
	r.PKey = binary.BigEndian.Uint16(b[6:])
	q := binary.BigEndian.Uint16(b[8:])
	r.QoSClass, r.SL = q>>4, uint8(q&0xF)
	r.MTUSelector, r.MTU = b[10]>>6, b[10]&0x3F
	r.RateSelector, r.Rate = b[11]>>6, b[11]&0x3F
	r.PacketLifeTimeSelector, r.PacketLifeTime = b[12]>>6, b[12]&0x3F
	r.ServiceID = uint64(b[13]) << 56
	r.IndependenceSelector = b[14] >> 6
	r.SGIDCount, r.DGIDCount = b[15], b[16]
	for i := 0; i < 7; i++ {
		r.ServiceID |= uint64(b[17+i]) << (48 - 8*i)
	}
	n := int(r.SGIDCount) + int(r.DGIDCount)
	if len(b) < MultiPathHeaderLen+16*n {
		return fmt.Errorf("%w: MultiPathRecord names %d GIDs, room for %d", ErrShort, n, (len(b)-MultiPathHeaderLen)/16)
	}
	r.GIDs = make([][16]byte, n)
	for i := range r.GIDs {
		copy(r.GIDs[i][:], b[MultiPathHeaderLen+16*i:])
	}
	return nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
