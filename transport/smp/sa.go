package smp

import (
	"encoding/binary"
	"fmt"
)

// SA attribute IDs (IBA 15.2.5, table 197).
const (
	SAAttrClassPortInfo    = 0x0001
	SAAttrNotice           = 0x0002
	SAAttrInformInfo       = 0x0003
	SAAttrNodeRecord       = 0x0011
	SAAttrPortInfoRecord   = 0x0012
	SAAttrSwitchInfoRecord = 0x0014
	SAAttrLFTRecord        = 0x0015
	SAAttrSMInfoRecord     = 0x0018
	SAAttrLinkRecord       = 0x0020
	SAAttrServiceRecord    = 0x0031
	SAAttrPKeyTableRecord  = 0x0033
	SAAttrPathRecord       = 0x0035
	SAAttrMCMemberRecord   = 0x0038
	SAAttrMultiPathRecord  = 0x003A
)

// SA-specific MAD status codes (bits 15..8, IBA 15.2.1.1 table 192).
const (
	SAStatusNoResources            = 1 << 8
	SAStatusReqInvalid             = 2 << 8
	SAStatusNoRecords              = 3 << 8
	SAStatusTooManyRecords         = 4 << 8
	SAStatusInvalidGID             = 5 << 8
	SAStatusInsufficientComponents = 6 << 8
)

// RMPP types and flags (IBA 13.6.2).
const (
	RMPPTypeData  = 1
	RMPPTypeAck   = 2
	RMPPTypeStop  = 3
	RMPPTypeAbort = 4

	RMPPFlagActive = 0x1
	RMPPFlagFirst  = 0x2
	RMPPFlagLast   = 0x4
)

// SA MAD layout offsets.
const (
	SADataOffset = 56
	SADataLen    = MADLen - SADataOffset // 200
)

// SAMAD is a Subnet Administration MAD (IBA 15.2.1): the common header, the
// RMPP header (13.6.2), SM_Key, AttributeOffset, ComponentMask and 200
// bytes of data. Header.BaseVersion, MgmtClass and ClassVersion must be 1,
// 0x03 and 2 (NewSAMAD sets them).
type SAMAD struct {
	Header
	RMPPVersion   uint8
	RMPPType      uint8
	RRespTime     uint8 // 5 bits
	RMPPFlags     uint8 // 3 bits: RMPPFlagActive|First|Last
	RMPPStatus    uint8
	SegmentNumber uint32 // RMPP Data1 for DATA segments
	PayloadLength uint32 // RMPP Data2 for DATA segments
	SMKey         uint64
	// AttributeOffset is the distance between records in 8-byte words, as
	// used by GetTableResp (see SARecordStride).
	AttributeOffset uint16
	ComponentMask   uint64
	Data            [SADataLen]byte
}

// NewSAMAD returns an SA MAD with versions and class filled in.
func NewSAMAD(method uint8, attr uint16) *SAMAD {
	return &SAMAD{Header: Header{BaseVersion: BaseVersion, MgmtClass: ClassSA, ClassVersion: SAClassVersion,
		Method: method, AttrID: attr}}
}

// SARecordStride returns AttributeOffset for records of recLen bytes:
// their size rounded up to 8-byte words.
func SARecordStride(recLen int) uint16 { return uint16((recLen + 7) / 8) }

func (m *SAMAD) check() error {
	if m.BaseVersion != BaseVersion || m.MgmtClass != ClassSA || m.ClassVersion != SAClassVersion {
		return fmt.Errorf("smp: SA MAD needs BaseVersion 1, class 0x03, ClassVersion 2; got %d, %#02x, %d",
			m.BaseVersion, m.MgmtClass, m.ClassVersion)
	}
	return nil
}

// EncodeTo writes m into b[0:256] without allocating.
func (m *SAMAD) EncodeTo(b []byte) error {
	if len(b) < MADLen {
		return fmt.Errorf("smp: SA MAD needs a %d-byte buffer, got %d", MADLen, len(b))
	}
	if err := m.check(); err != nil {
		return err
	}
	if m.RRespTime > 0x1F || m.RMPPFlags > 0x7 {
		return fmt.Errorf("smp: RMPP RRespTime %d (5 bits) or flags %#x (3 bits) out of range", m.RRespTime, m.RMPPFlags)
	}
	if err := m.Header.EncodeTo(b); err != nil {
		return err
	}
	b[24], b[25] = m.RMPPVersion, m.RMPPType
	b[26] = m.RRespTime<<3 | m.RMPPFlags
	b[27] = m.RMPPStatus
	binary.BigEndian.PutUint32(b[28:], m.SegmentNumber)
	binary.BigEndian.PutUint32(b[32:], m.PayloadLength)
	binary.BigEndian.PutUint64(b[36:], m.SMKey)
	binary.BigEndian.PutUint16(b[44:], m.AttributeOffset)
	b[46], b[47] = 0, 0
	binary.BigEndian.PutUint64(b[48:], m.ComponentMask)
	copy(b[SADataOffset:MADLen], m.Data[:])
	return nil
}

// Decode parses a 256-byte SA MAD.
func (m *SAMAD) Decode(b []byte) error {
	if len(b) < MADLen {
		return fmt.Errorf("%w: SA MAD is %d bytes, want %d", ErrShort, len(b), MADLen)
	}
	if err := m.Header.Decode(b); err != nil {
		return err
	}
	if err := m.check(); err != nil {
		return err
	}
	m.RMPPVersion, m.RMPPType = b[24], b[25]
	m.RRespTime, m.RMPPFlags = b[26]>>3, b[26]&0x7
	m.RMPPStatus = b[27]
	m.SegmentNumber = binary.BigEndian.Uint32(b[28:])
	m.PayloadLength = binary.BigEndian.Uint32(b[32:])
	m.SMKey = binary.BigEndian.Uint64(b[36:])
	m.AttributeOffset = binary.BigEndian.Uint16(b[44:])
	m.ComponentMask = binary.BigEndian.Uint64(b[48:])
	copy(m.Data[:], b[SADataOffset:MADLen])
	return nil
}

// PathRecord component mask bits (IBA 15.2.5.16 table 209).
const (
	PRCompServiceID           = 3 << 0 // ServiceID occupies bits 0 and 1
	PRCompDGID                = 1 << 2
	PRCompSGID                = 1 << 3
	PRCompDLID                = 1 << 4
	PRCompSLID                = 1 << 5
	PRCompRawTraffic          = 1 << 6
	PRCompFlowLabel           = 1 << 8
	PRCompHopLimit            = 1 << 9
	PRCompTClass              = 1 << 10
	PRCompReversible          = 1 << 11
	PRCompNumbPath            = 1 << 12
	PRCompPKey                = 1 << 13
	PRCompQoSClass            = 1 << 14
	PRCompSL                  = 1 << 15
	PRCompMTUSelector         = 1 << 16
	PRCompMTU                 = 1 << 17
	PRCompRateSelector        = 1 << 18
	PRCompRate                = 1 << 19
	PRCompPktLifeTimeSelector = 1 << 20
	PRCompPktLifeTime         = 1 << 21
	PRCompPreference          = 1 << 22
)

// PathRecordLen is the wire size of PathRecord.
const PathRecordLen = 64

// PathRecord is the SA PathRecord (IBA 15.2.5.16, 64 bytes).
type PathRecord struct {
	ServiceID              uint64   // 0, 64
	DGID                   [16]byte // 64, 128
	SGID                   [16]byte // 192, 128
	DLID                   uint16   // 320, 16
	SLID                   uint16   // 336, 16
	RawTraffic             bool     // 352
	FlowLabel              uint32   // 356, 20
	HopLimit               uint8    // 376, 8
	TClass                 uint8    // 384, 8
	Reversible             bool     // 392
	NumbPath               uint8    // 393, 7
	PKey                   uint16   // 400, 16
	QoSClass               uint16   // 416, 12
	SL                     uint8    // 428, 4
	MTUSelector            uint8    // 432, 2
	MTU                    uint8    // 434, 6
	RateSelector           uint8    // 440, 2
	Rate                   uint8    // 442, 6
	PacketLifeTimeSelector uint8    // 448, 2
	PacketLifeTime         uint8    // 450, 6
	Preference             uint8    // 456, 8
}

func (*PathRecord) AttrID() uint16 { return SAAttrPathRecord }

func (p *PathRecord) MarshalTo(b []byte) error {
	if err := need("PathRecord", b, PathRecordLen); err != nil {
		return err
	}
	if p.FlowLabel > 0xFFFFF || p.NumbPath > 0x7F || p.QoSClass > 0xFFF || p.SL > 15 ||
		p.MTUSelector > 3 || p.MTU > 0x3F || p.RateSelector > 3 || p.Rate > 0x3F ||
		p.PacketLifeTimeSelector > 3 || p.PacketLifeTime > 0x3F {
		return fmt.Errorf("smp: PathRecord field out of range (FlowLabel %#x/20b, NumbPath %d/7b, QoSClass %#x/12b, SL %d/4b, MTU %d:%d, Rate %d:%d, PacketLifeTime %d:%d)",
			p.FlowLabel, p.NumbPath, p.QoSClass, p.SL, p.MTUSelector, p.MTU, p.RateSelector, p.Rate, p.PacketLifeTimeSelector, p.PacketLifeTime)
	}
	binary.BigEndian.PutUint64(b[0:], p.ServiceID)
	copy(b[8:24], p.DGID[:])
	copy(b[24:40], p.SGID[:])
	binary.BigEndian.PutUint16(b[40:], p.DLID)
	binary.BigEndian.PutUint16(b[42:], p.SLID)
	w := p.FlowLabel<<8 | uint32(p.HopLimit)
	if p.RawTraffic {
		w |= 1 << 31
	}
	binary.BigEndian.PutUint32(b[44:], w)
	b[48] = p.TClass
	b[49] = p.NumbPath
	if p.Reversible {
		b[49] |= 0x80
	}
	binary.BigEndian.PutUint16(b[50:], p.PKey)
	binary.BigEndian.PutUint16(b[52:], p.QoSClass<<4|uint16(p.SL))
	b[54] = p.MTUSelector<<6 | p.MTU
	b[55] = p.RateSelector<<6 | p.Rate
	b[56] = p.PacketLifeTimeSelector<<6 | p.PacketLifeTime
	b[57] = p.Preference
	clear64(b[58:64])
	return nil
}

func (p *PathRecord) Unmarshal(b []byte) error {
	if err := need("PathRecord", b, PathRecordLen); err != nil {
		return err
	}
	p.ServiceID = binary.BigEndian.Uint64(b[0:])
	copy(p.DGID[:], b[8:24])
	copy(p.SGID[:], b[24:40])
	p.DLID = binary.BigEndian.Uint16(b[40:])
	p.SLID = binary.BigEndian.Uint16(b[42:])
	w := binary.BigEndian.Uint32(b[44:])
	p.RawTraffic = w>>31 != 0
	p.FlowLabel = w >> 8 & 0xFFFFF
	p.HopLimit = uint8(w)
	p.TClass = b[48]
	p.Reversible, p.NumbPath = b[49]&0x80 != 0, b[49]&0x7F
	q := binary.BigEndian.Uint16(b[52:])
	p.PKey = binary.BigEndian.Uint16(b[50:])
	p.QoSClass, p.SL = q>>4, uint8(q&0xF)
	p.MTUSelector, p.MTU = b[54]>>6, b[54]&0x3F
	p.RateSelector, p.Rate = b[55]>>6, b[55]&0x3F
	p.PacketLifeTimeSelector, p.PacketLifeTime = b[56]>>6, b[56]&0x3F
	p.Preference = b[57]
	return nil
}
