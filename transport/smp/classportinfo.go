package smp

import (
	"encoding/binary"
	"fmt"
)

// ClassPortInfoLen is the wire size of ClassPortInfo.
const ClassPortInfoLen = 72

// ClassPortInfo is the ClassPortInfo attribute every GSI class answers
// (IBA 13.4.8.1, 72 bytes). saquery -c and SwitchInfoRecord queries ask the
// SA for it first. Redirect and trap addressing is kept as raw fields.
type ClassPortInfo struct {
	BaseVersion     uint8
	ClassVersion    uint8
	CapabilityMask  uint16
	CapabilityMask2 uint32 // 27 bits
	RespTimeValue   uint8  // 5 bits
	RedirectGID     [16]byte
	RedirectTC      uint8
	RedirectSL      uint8  // 4 bits
	RedirectFL      uint32 // 20 bits
	RedirectLID     uint16
	RedirectPKey    uint16
	RedirectQP      uint32 // 24 bits
	RedirectQKey    uint32
	TrapGID         [16]byte
	TrapTC          uint8
	TrapSL          uint8  // 4 bits
	TrapFL          uint32 // 20 bits
	TrapLID         uint16
	TrapPKey        uint16
	TrapHL          uint8
	TrapQP          uint32 // 24 bits
	TrapQKey        uint32
}

func (*ClassPortInfo) AttrID() uint16 { return SAAttrClassPortInfo }

func (c *ClassPortInfo) MarshalTo(b []byte) error {
	if err := need("ClassPortInfo", b, ClassPortInfoLen); err != nil {
		return err
	}
	if c.CapabilityMask2 > 0x7FFFFFF || c.RespTimeValue > 0x1F || c.RedirectSL > 15 || c.RedirectFL > 0xFFFFF ||
		c.RedirectQP > 0xFFFFFF || c.TrapSL > 15 || c.TrapFL > 0xFFFFF || c.TrapQP > 0xFFFFFF {
		return fmt.Errorf("smp: ClassPortInfo field out of range (CapabilityMask2 %#x/27b, RespTimeValue %d/5b, SL %d,%d/4b, FL %#x,%#x/20b, QP %#x,%#x/24b)",
			c.CapabilityMask2, c.RespTimeValue, c.RedirectSL, c.TrapSL, c.RedirectFL, c.TrapFL, c.RedirectQP, c.TrapQP)
	}
	b[0], b[1] = c.BaseVersion, c.ClassVersion
	binary.BigEndian.PutUint16(b[2:], c.CapabilityMask)
	binary.BigEndian.PutUint32(b[4:], c.CapabilityMask2<<5|uint32(c.RespTimeValue))
	copy(b[8:24], c.RedirectGID[:])
	binary.BigEndian.PutUint32(b[24:], uint32(c.RedirectTC)<<24|uint32(c.RedirectSL)<<20|c.RedirectFL)
	binary.BigEndian.PutUint16(b[28:], c.RedirectLID)
	binary.BigEndian.PutUint16(b[30:], c.RedirectPKey)
	binary.BigEndian.PutUint32(b[32:], c.RedirectQP) // byte 32 reserved: QP < 2^24
	binary.BigEndian.PutUint32(b[36:], c.RedirectQKey)
	copy(b[40:56], c.TrapGID[:])
	binary.BigEndian.PutUint32(b[56:], uint32(c.TrapTC)<<24|uint32(c.TrapSL)<<20|c.TrapFL)
	binary.BigEndian.PutUint16(b[60:], c.TrapLID)
	binary.BigEndian.PutUint16(b[62:], c.TrapPKey)
	binary.BigEndian.PutUint32(b[64:], uint32(c.TrapHL)<<24|c.TrapQP)
	binary.BigEndian.PutUint32(b[68:], c.TrapQKey)
	return nil
}

func (c *ClassPortInfo) Unmarshal(b []byte) error {
	if err := need("ClassPortInfo", b, ClassPortInfoLen); err != nil {
		return err
	}
	c.BaseVersion, c.ClassVersion = b[0], b[1]
	c.CapabilityMask = binary.BigEndian.Uint16(b[2:])
	w := binary.BigEndian.Uint32(b[4:])
	c.CapabilityMask2, c.RespTimeValue = w>>5, uint8(w&0x1F)
	copy(c.RedirectGID[:], b[8:24])
	w = binary.BigEndian.Uint32(b[24:])
	c.RedirectTC, c.RedirectSL, c.RedirectFL = uint8(w>>24), uint8(w>>20&0xF), w&0xFFFFF
	c.RedirectLID = binary.BigEndian.Uint16(b[28:])
	c.RedirectPKey = binary.BigEndian.Uint16(b[30:])
	c.RedirectQP = binary.BigEndian.Uint32(b[32:]) & 0xFFFFFF
	c.RedirectQKey = binary.BigEndian.Uint32(b[36:])
	copy(c.TrapGID[:], b[40:56])
	w = binary.BigEndian.Uint32(b[56:])
	c.TrapTC, c.TrapSL, c.TrapFL = uint8(w>>24), uint8(w>>20&0xF), w&0xFFFFF
	c.TrapLID = binary.BigEndian.Uint16(b[60:])
	c.TrapPKey = binary.BigEndian.Uint16(b[62:])
	w = binary.BigEndian.Uint32(b[64:])
	c.TrapHL, c.TrapQP = uint8(w>>24), w&0xFFFFFF
	c.TrapQKey = binary.BigEndian.Uint32(b[68:])
	return nil
}

// RMPPHeaderEnd is where the RMPP payload starts: PayloadLength counts the
// bytes from here (for SA: the 20-byte SA header, then the records).
const RMPPHeaderEnd = 36

// RMPPMessageLen returns how many bytes of the SA MAD in b are meaningful:
// for an RMPP-active DATA MAD whose First flag is set, RMPPHeaderEnd +
// PayloadLength (what the kernel reports to a umad reader after
// reassembly, and what libibumad tools divide by AttributeOffset to count
// SA records); for anything else len(b). It never exceeds len(b) and
// returns len(b) for a PayloadLength that is zero or larger than b. Only
// class 0x03 is interpreted: in other classes bytes 24..35 are not an RMPP
// header (an SMP's M_Key lives there).
// Transports that carry a length next to the MAD (ibsim's sim_request,
// umad's ib_user_mad) should send this value.
func RMPPMessageLen(b []byte) int {
	if len(b) < MADLen || b[1] != ClassSA || b[24] == 0 || b[25] != RMPPTypeData ||
		b[26]&RMPPFlagActive == 0 || b[26]&RMPPFlagFirst == 0 {
		return len(b)
	}
	n := RMPPHeaderEnd + int(binary.BigEndian.Uint32(b[32:]))
	if n <= RMPPHeaderEnd || n > len(b) {
		return len(b)
	}
	return n
}
