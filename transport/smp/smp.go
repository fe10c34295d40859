package smp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// SMP is a subnet management packet in either layout (IBA 14.2.1):
//
//	LID-routed (class 0x01)            directed route (class 0x81)
//	 0..23  common MAD header           0..3   versions, class, method
//	                                    4..5   D bit (15) | Status (14..0)
//	                                    6      HopPointer
//	                                    7      HopCount
//	                                    8..23  TID, AttrID, AttrMod
//	24..31  M_Key                      24..31  M_Key
//	32..63  reserved                   32..33  DrSLID, 34..35 DrDLID
//	                                   36..63  reserved
//	64..127 SMP data                   64..127 SMP data
//	128..255 reserved                 128..191 InitialPath, 192..255 ReturnPath
//
// The DR-only fields (Direction, HopPointer, HopCount, DrSLID, DrDLID and the
// paths) are ignored when encoding a LID-routed SMP and zero after decoding
// one. InitialPath[0] and ReturnPath[0] are reserved by the spec; hop i of a
// route uses index i (1..HopCount).
type SMP struct {
	MgmtClass    uint8 // ClassSMPLID or ClassSMPDR
	ClassVersion uint8 // SMPClassVersion
	Method       uint8 // with the R bit for responses
	// Status is the MAD status. For DR SMPs it is 15 bits wide; the D bit
	// lives in Direction.
	Status uint16
	// Direction is the DR D bit: false outbound (SM to target), true
	// returning (responses, and traps sent back by DR).
	Direction   bool
	HopPointer  uint8
	HopCount    uint8
	TID         uint64
	AttrID      uint16
	AttrMod     uint32
	MKey        uint64
	DrSLID      uint16
	DrDLID      uint16
	Data        [DataLen]byte
	InitialPath [64]uint8
	ReturnPath  [64]uint8
}

// IsDR reports whether s is a directed-route SMP.
func (s *SMP) IsDR() bool { return s.MgmtClass == ClassSMPDR }

// IsResponse reports whether the method's R bit is set.
func (s *SMP) IsResponse() bool { return s.Method&MethodResponse != 0 }

// Outbound reports whether a DR SMP travels from its originator towards the
// destination (D bit clear). It is false for LID-routed SMPs.
func (s *SMP) Outbound() bool { return s.IsDR() && !s.Direction }

// Path returns the outbound port list InitialPath[1..HopCount] (aliasing s).
func (s *SMP) Path() []uint8 {
	n := int(s.HopCount)
	if n > MaxHops {
		n = MaxHops
	}
	return s.InitialPath[1 : 1+n]
}

// ErrShort is wrapped by decoders when the input is too short.
var ErrShort = errors.New("smp: buffer too short")

// Encode returns a freshly allocated 256-byte MAD. Prefer EncodeTo in hot paths.
func (s *SMP) Encode() ([]byte, error) {
	b := make([]byte, MADLen)
	if err := s.EncodeTo(b); err != nil {
		return nil, err
	}
	return b, nil
}

// EncodeTo writes s into b[0:256], zeroing every reserved byte, and does
// not allocate. It fails if b is short or a field is out of range.
func (s *SMP) EncodeTo(b []byte) error {
	if len(b) < MADLen {
		return fmt.Errorf("smp: SMP needs a %d-byte buffer, got %d", MADLen, len(b))
	}
	b = b[:MADLen]
	b[0] = BaseVersion
	b[1] = s.MgmtClass
	b[2] = s.ClassVersion
	b[3] = s.Method
	binary.BigEndian.PutUint64(b[8:], s.TID)
	binary.BigEndian.PutUint16(b[16:], s.AttrID)
	b[18], b[19] = 0, 0
	binary.BigEndian.PutUint32(b[20:], s.AttrMod)
	binary.BigEndian.PutUint64(b[24:], s.MKey)
	copy(b[DataOffset:DataOffset+DataLen], s.Data[:])
	switch s.MgmtClass {
	case ClassSMPLID:
		binary.BigEndian.PutUint16(b[4:], s.Status)
		b[6], b[7] = 0, 0
		clear64(b[32:64])
		clear64(b[128:256])
	case ClassSMPDR:
		if s.Status > 0x7FFF {
			return fmt.Errorf("smp: DR SMP status %#x does not fit in 15 bits (bit 15 is the D bit; use Direction)", s.Status)
		}
		if s.HopCount > MaxHops {
			return fmt.Errorf("smp: DR hop count %d exceeds %d", s.HopCount, MaxHops)
		}
		st := s.Status
		if s.Direction {
			st |= 0x8000
		}
		binary.BigEndian.PutUint16(b[4:], st)
		b[6] = s.HopPointer
		b[7] = s.HopCount
		binary.BigEndian.PutUint16(b[32:], s.DrSLID)
		binary.BigEndian.PutUint16(b[34:], s.DrDLID)
		clear64(b[36:64])
		copy(b[128:192], s.InitialPath[:])
		copy(b[192:256], s.ReturnPath[:])
	default:
		return fmt.Errorf("smp: management class %#02x is not an SMP class (want %#02x or %#02x)", s.MgmtClass, ClassSMPLID, ClassSMPDR)
	}
	return nil
}

// Decode parses a 256-byte SMP (longer input is accepted, the tail ignored)
// and validates versions, class and directed-route hop fields.
func Decode(b []byte) (*SMP, error) {
	s := new(SMP)
	if err := s.Decode(b); err != nil {
		return nil, err
	}
	return s, nil
}

// Decode parses b into s without allocating; see the package function.
// On error s is left partially written.
func (s *SMP) Decode(b []byte) error {
	if len(b) < MADLen {
		return fmt.Errorf("%w: SMP is %d bytes, want %d", ErrShort, len(b), MADLen)
	}
	if b[0] != BaseVersion {
		return fmt.Errorf("smp: BaseVersion %d, want %d", b[0], BaseVersion)
	}
	if b[1] != ClassSMPLID && b[1] != ClassSMPDR {
		return fmt.Errorf("smp: management class %#02x is not an SMP class", b[1])
	}
	if b[2] != SMPClassVersion {
		return fmt.Errorf("smp: SMP class version %d, want %d", b[2], SMPClassVersion)
	}
	s.MgmtClass = b[1]
	s.ClassVersion = b[2]
	s.Method = b[3]
	s.TID = binary.BigEndian.Uint64(b[8:])
	s.AttrID = binary.BigEndian.Uint16(b[16:])
	s.AttrMod = binary.BigEndian.Uint32(b[20:])
	s.MKey = binary.BigEndian.Uint64(b[24:])
	copy(s.Data[:], b[DataOffset:DataOffset+DataLen])
	st := binary.BigEndian.Uint16(b[4:])
	if s.MgmtClass == ClassSMPLID {
		s.Status = st
		s.Direction = false
		s.HopPointer, s.HopCount = 0, 0
		s.DrSLID, s.DrDLID = 0, 0
		s.InitialPath = [64]uint8{}
		s.ReturnPath = [64]uint8{}
		return nil
	}
	s.Direction = st&0x8000 != 0
	s.Status = st & 0x7FFF
	s.HopPointer = b[6]
	s.HopCount = b[7]
	if s.HopCount > MaxHops {
		return fmt.Errorf("smp: DR hop count %d exceeds %d", s.HopCount, MaxHops)
	}
	if s.HopPointer > s.HopCount+1 {
		return fmt.Errorf("smp: DR hop pointer %d beyond hop count %d + 1", s.HopPointer, s.HopCount)
	}
	s.DrSLID = binary.BigEndian.Uint16(b[32:])
	s.DrDLID = binary.BigEndian.Uint16(b[34:])
	copy(s.InitialPath[:], b[128:192])
	copy(s.ReturnPath[:], b[192:256])
	return nil
}

// InitDR resets s to a purely directed-route request (DrSLID = DrDLID =
// 0xFFFF, hop pointer 0) along path, where path[i] is the port to leave by
// at hop i+1 (path[0] is the originator's own port for a CA originator, or
// the switch port for an SM on switch port 0). An empty path addresses the
// originator's own node. It reuses s and does not allocate.
func (s *SMP) InitDR(method uint8, attr uint16, mod uint32, path []uint8) error {
	if len(path) > MaxHops {
		return fmt.Errorf("smp: DR path has %d hops, at most %d allowed", len(path), MaxHops)
	}
	*s = SMP{
		MgmtClass:    ClassSMPDR,
		ClassVersion: SMPClassVersion,
		Method:       method,
		HopCount:     uint8(len(path)),
		AttrID:       attr,
		AttrMod:      mod,
		DrSLID:       PermissiveLID,
		DrDLID:       PermissiveLID,
	}
	copy(s.InitialPath[1:], path)
	return nil
}

// InitLID resets s to a LID-routed request. The destination LID travels in
// the packet's LRH (transport.Packet.DLID), not in the SMP.
func (s *SMP) InitLID(method uint8, attr uint16, mod uint32) {
	*s = SMP{
		MgmtClass:    ClassSMPLID,
		ClassVersion: SMPClassVersion,
		Method:       method,
		AttrID:       attr,
		AttrMod:      mod,
	}
}

// NewDRGet builds a directed-route Get along path (see InitDR).
func NewDRGet(attr uint16, mod uint32, path []uint8) (*SMP, error) {
	s := new(SMP)
	return s, s.InitDR(MethodGet, attr, mod, path)
}

// NewDRSet builds a directed-route Set along path carrying data
// (at most 64 bytes; typically an attribute's MarshalTo output).
func NewDRSet(attr uint16, mod uint32, path []uint8, data []byte) (*SMP, error) {
	s := new(SMP)
	if err := s.InitDR(MethodSet, attr, mod, path); err != nil {
		return nil, err
	}
	if len(data) > DataLen {
		return nil, fmt.Errorf("smp: SMP data is %d bytes, at most %d fit", len(data), DataLen)
	}
	copy(s.Data[:], data)
	return s, nil
}

// NewLIDGet builds a LID-routed Get.
func NewLIDGet(attr uint16, mod uint32) *SMP {
	s := new(SMP)
	s.InitLID(MethodGet, attr, mod)
	return s
}

// NewLIDSet builds a LID-routed Set carrying data (at most 64 bytes).
func NewLIDSet(attr uint16, mod uint32, data []byte) (*SMP, error) {
	if len(data) > DataLen {
		return nil, fmt.Errorf("smp: SMP data is %d bytes, at most %d fit", len(data), DataLen)
	}
	s := new(SMP)
	s.InitLID(MethodSet, attr, mod)
	copy(s.Data[:], data)
	return s, nil
}

// SetAttr marshals a into the data area and sets AttrID from it.
func (s *SMP) SetAttr(a Attribute) error {
	s.Data = [DataLen]byte{}
	if err := a.MarshalTo(s.Data[:]); err != nil {
		return err
	}
	s.AttrID = a.AttrID()
	return nil
}

// Attr unmarshals the data area into a, checking the attribute ID.
func (s *SMP) Attr(a Attribute) error {
	if s.AttrID != a.AttrID() {
		return fmt.Errorf("smp: SMP carries attribute %#04x, not %#04x", s.AttrID, a.AttrID())
	}
	return a.Unmarshal(s.Data[:])
}

// Attribute is implemented by every attribute codec in this package.
// MarshalTo writes the attribute's wire layout into b (zeroing reserved
// bits) and fails if b is short or a field does not fit its width.
// Unmarshal parses b; reserved bits are ignored.
type Attribute interface {
	AttrID() uint16
	MarshalTo(b []byte) error
	Unmarshal(b []byte) error
}
