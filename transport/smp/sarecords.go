package smp

import "encoding/binary"

// SA records that wrap SM attributes (IBA 15.2.5). Their lengths are the
// spec's; SARecordStride gives the AttributeOffset to use in GetTableResp.

// NodeRecordLen is the wire size of NodeRecord: LID, 16 reserved bits,
// NodeInfo (40) and NodeDescription (64).
const NodeRecordLen = 108

// NodeRecord is the SA NodeRecord (attribute SAAttrNodeRecord).
type NodeRecord struct {
	LID             uint16
	NodeInfo        NodeInfo
	NodeDescription NodeDescription
}

func (*NodeRecord) AttrID() uint16 { return SAAttrNodeRecord }

func (r *NodeRecord) MarshalTo(b []byte) error {
	if err := need("NodeRecord", b, NodeRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[0:], r.LID)
	b[2], b[3] = 0, 0
	if err := r.NodeInfo.MarshalTo(b[4:44]); err != nil {
		return err
	}
	return r.NodeDescription.MarshalTo(b[44:108])
}

func (r *NodeRecord) Unmarshal(b []byte) error {
	if err := need("NodeRecord", b, NodeRecordLen); err != nil {
		return err
	}
	r.LID = binary.BigEndian.Uint16(b[0:])
	if err := r.NodeInfo.Unmarshal(b[4:44]); err != nil {
		return err
	}
	return r.NodeDescription.Unmarshal(b[44:108])
}

// PortInfoRecordLen is the wire size of PortInfoRecord: EndportLID,
// PortNum, Options and PortInfo (64).
const PortInfoRecordLen = 68

// PortInfoRecord is the SA PortInfoRecord (attribute SAAttrPortInfoRecord).
type PortInfoRecord struct {
	EndportLID uint16
	PortNum    uint8
	Options    uint8 // IBA 1.3; reserved (0) before
	PortInfo   PortInfo
}

func (*PortInfoRecord) AttrID() uint16 { return SAAttrPortInfoRecord }

func (r *PortInfoRecord) MarshalTo(b []byte) error {
	if err := need("PortInfoRecord", b, PortInfoRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[0:], r.EndportLID)
	b[2], b[3] = r.PortNum, r.Options
	return r.PortInfo.MarshalTo(b[4:68])
}

func (r *PortInfoRecord) Unmarshal(b []byte) error {
	if err := need("PortInfoRecord", b, PortInfoRecordLen); err != nil {
		return err
	}
	r.EndportLID = binary.BigEndian.Uint16(b[0:])
	r.PortNum, r.Options = b[2], b[3]
	return r.PortInfo.Unmarshal(b[4:68])
}

// SMInfoRecordLen is the wire size of SMInfoRecord: LID, 16 reserved bits
// and SMInfo (21).
const SMInfoRecordLen = 25

// SMInfoRecord is the SA SMInfoRecord (attribute SAAttrSMInfoRecord).
type SMInfoRecord struct {
	LID    uint16
	SMInfo SMInfo
}

func (*SMInfoRecord) AttrID() uint16 { return SAAttrSMInfoRecord }

func (r *SMInfoRecord) MarshalTo(b []byte) error {
	if err := need("SMInfoRecord", b, SMInfoRecordLen); err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[0:], r.LID)
	b[2], b[3] = 0, 0
	return r.SMInfo.MarshalTo(b[4:25])
}

func (r *SMInfoRecord) Unmarshal(b []byte) error {
	if err := need("SMInfoRecord", b, SMInfoRecordLen); err != nil {
		return err
	}
	r.LID = binary.BigEndian.Uint16(b[0:])
	return r.SMInfo.Unmarshal(b[4:25])
}
