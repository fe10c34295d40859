package smp

import (
	"encoding/binary"
	"fmt"
)

// TrapBadMKey is the security trap a port sends when an SMP fails its M_Key
// check (IBA 14.2.5.1 table 138, trap 256).
const TrapBadMKey = 256

// Trap256 is the DataDetails of trap 256 (IBA 14.2.5.1 table 140): who
// sent the refused SMP and what it asked. Byte offsets in DataDetails: 16
// reserved bits, LIDADDR 2, DRSLID 4, Method 6, reserved, AttributeID 8,
// AttributeModifier 10, M_Key 14, reserved, DRNotice|DRPathTruncated|
// DRHopCount 23, DRNoticeReturnPath 24..53 (the layout Linux SMAs fill in).
type Trap256 struct {
	// LID is LIDADDR: the port that refused the SMP.
	LID uint16
	// DRSLID is the DR SMP's DrSLID (directed route only).
	DRSLID  uint16
	Method  uint8
	AttrID  uint16
	AttrMod uint32
	// MKey is the M_Key the refused SMP carried.
	MKey uint64
	// DRNotice: the refused SMP was directed route; DRHops of its return
	// path are in DRReturnPath (DRTruncated when it had more than 30).
	DRNotice, DRTruncated bool
	DRHops                uint8
	DRReturnPath          [30]byte
}

// NewTrap256 builds the Bad M_Key notice a port of producerType issues.
func NewTrap256(producerType uint32, t Trap256) *Notice {
	n := &Notice{IsGeneric: true, Type: NoticeSecurity, ProducerType: producerType & 0xFFFFFF,
		TrapNumber: TrapBadMKey, IssuerLID: t.LID}
	d := n.DataDetails[:]
	binary.BigEndian.PutUint16(d[2:], t.LID)
	binary.BigEndian.PutUint16(d[4:], t.DRSLID)
	d[6] = t.Method
	binary.BigEndian.PutUint16(d[8:], t.AttrID)
	binary.BigEndian.PutUint32(d[10:], t.AttrMod)
	binary.BigEndian.PutUint64(d[14:], t.MKey)
	if t.DRNotice {
		d[23] = 0x80 | t.DRHops&0x3F
		if t.DRTruncated {
			d[23] |= 0x40
		}
		copy(d[24:54], t.DRReturnPath[:])
	}
	return n
}

// Trap256 decodes the DataDetails of a trap 256 notice.
func (n *Notice) Trap256() (Trap256, error) {
	if !n.IsGeneric || n.TrapNumber != TrapBadMKey {
		return Trap256{}, fmt.Errorf("smp: notice is not generic trap 256 (generic %v, trap %d)", n.IsGeneric, n.TrapNumber)
	}
	d := n.DataDetails[:]
	t := Trap256{
		LID:         binary.BigEndian.Uint16(d[2:]),
		DRSLID:      binary.BigEndian.Uint16(d[4:]),
		Method:      d[6],
		AttrID:      binary.BigEndian.Uint16(d[8:]),
		AttrMod:     binary.BigEndian.Uint32(d[10:]),
		MKey:        binary.BigEndian.Uint64(d[14:]),
		DRNotice:    d[23]&0x80 != 0,
		DRTruncated: d[23]&0x40 != 0,
		DRHops:      d[23] & 0x3F,
	}
	if t.DRNotice {
		copy(t.DRReturnPath[:], d[24:54])
	}
	return t, nil
}
