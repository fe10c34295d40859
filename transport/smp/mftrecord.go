package smp

import (
	"encoding/binary"
	"fmt"
)

// SAAttrMFTRecord is MulticastForwardingTableRecord (IBA 15.2.5.8).
const SAAttrMFTRecord = 0x0017

// MFTRecordLen is the wire size of an MFTRecord: LID, Position (4 bits),
// 3 reserved bits, BlockNum (9 bits), 32 reserved bits, then the 64-byte
// MulticastForwardingTable block.
const MFTRecordLen = 72

// MFTRecord component mask bits (IBA 15.2.5.8: LID, Position, reserved,
// BlockNum).
const (
	MFTRCompLID      = 1 << 0
	MFTRCompPosition = 1 << 1
	MFTRCompBlockNum = 1 << 3
)

// MFTRecord is one switch's MFT block as the SA reports it.
type MFTRecord struct {
	LID      uint16
	Position uint8  // 4 bits
	BlockNum uint16 // 9 bits
	Block    MFTBlock
}

func (*MFTRecord) AttrID() uint16 { return SAAttrMFTRecord }

func (r *MFTRecord) MarshalTo(b []byte) error {
	if err := need("MFTRecord", b, MFTRecordLen); err != nil {
		return err
	}
	clear64(b[:8])
	binary.BigEndian.PutUint16(b[0:], r.LID)
	if r.Position > MFTMaxPosition || r.BlockNum > MFTMaxBlock {
		return fmt.Errorf("smp: MFTRecord position %d / block %d out of range", r.Position, r.BlockNum)
	}
	// Position in bits 16..19, BlockNum in bits 23..31 (spans two bytes).
	binary.BigEndian.PutUint16(b[2:], uint16(r.Position)<<12|r.BlockNum)
	return r.Block.MarshalTo(b[8:])
}

func (r *MFTRecord) Unmarshal(b []byte) error {
	if err := need("MFTRecord", b, MFTRecordLen); err != nil {
		return err
	}
	r.LID = binary.BigEndian.Uint16(b[0:])
	r.Position = uint8(getBits(b, 16, 4))
	r.BlockNum = uint16(binary.BigEndian.Uint16(b[2:]) & 0x1FF)
	return r.Block.Unmarshal(b[8:])
}
