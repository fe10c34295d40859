package smp

import (
	"encoding/binary"
	"fmt"
)

// Sizes of the fixed MAD layouts (IBA vol 1 13.4.2, 14.2.1).
const (
	MADLen    = 256 // every MAD handled here is exactly 256 bytes
	HeaderLen = 24  // common MAD header
	DataLen   = 64  // SMP data area
	// DataOffset is where the SMP data area starts in both layouts.
	DataOffset = 64
	MaxHops    = 63 // largest directed-route hop count
)

// BaseVersion is the only MAD base version defined by the spec.
const BaseVersion = 1

// Management classes (IBA 13.4.4).
const (
	ClassSMPLID = 0x01 // LID-routed subnet management
	ClassSMPDR  = 0x81 // directed-route subnet management
	ClassSA     = 0x03 // subnet administration
	ClassPerf   = 0x04 // performance management
)

// Class versions.
const (
	SMPClassVersion = 1
	SAClassVersion  = 2
)

// Methods (IBA 13.4.5). MethodResponse is the R bit; a response method is
// the request method with that bit set.
const (
	MethodGet          = 0x01
	MethodSet          = 0x02
	MethodSend         = 0x03
	MethodTrap         = 0x05
	MethodReport       = 0x06
	MethodTrapRepress  = 0x07
	MethodGetTable     = 0x12
	MethodGetMulti     = 0x14
	MethodDelete       = 0x15
	MethodResponse     = 0x80
	MethodGetResp      = MethodResponse | MethodGet      // 0x81
	MethodReportResp   = MethodResponse | MethodReport   // 0x86
	MethodGetTableResp = MethodResponse | MethodGetTable // 0x92
	MethodGetMultiResp = MethodResponse | MethodGetMulti // 0x94
	MethodDeleteResp   = MethodResponse | MethodDelete   // 0x95
)

// Subnet management attribute IDs (IBA 14.2.5).
const (
	AttrNotice                   = 0x0002
	AttrNodeDescription          = 0x0010
	AttrNodeInfo                 = 0x0011
	AttrSwitchInfo               = 0x0012
	AttrGUIDInfo                 = 0x0014
	AttrPortInfo                 = 0x0015
	AttrPKeyTable                = 0x0016
	AttrSLtoVLMappingTable       = 0x0017
	AttrVLArbitrationTable       = 0x0018
	AttrLinearForwardingTable    = 0x0019
	AttrMulticastForwardingTable = 0x001B
	AttrSMInfo                   = 0x0020
)

// MAD status bits and invalid-field codes (IBA 13.4.7, table 131). For
// directed-route SMPs only the low 15 bits exist; bit 15 is the D bit.
const (
	StatusBusy                  = 0x0001
	StatusRedirect              = 0x0002
	StatusBadVersion            = 1 << 2 // 0x0004: bad base/class version
	StatusUnsupportedMethod     = 2 << 2 // 0x0008
	StatusUnsupportedMethodAttr = 3 << 2 // 0x000C
	StatusInvalidField          = 7 << 2 // 0x001C: invalid attribute or modifier value
	StatusCodeMask              = 0x001C
)

// PermissiveLID routes to the port that receives it; DR SMPs use it as
// DrSLID/DrDLID for the purely directed-route case and in the LRH DLID.
const PermissiveLID = 0xFFFF

// Header is the common 24-byte MAD header (IBA 13.4.3).
type Header struct {
	BaseVersion   uint8
	MgmtClass     uint8
	ClassVersion  uint8
	Method        uint8 // includes the R bit (MethodResponse)
	Status        uint16
	ClassSpecific uint16
	TID           uint64
	AttrID        uint16
	AttrMod       uint32
}

// IsResponse reports whether the R bit is set.
func (h *Header) IsResponse() bool { return h.Method&MethodResponse != 0 }

// EncodeTo writes the header into b[0:24]. Reserved bytes 18-19 are zeroed.
func (h *Header) EncodeTo(b []byte) error {
	if len(b) < HeaderLen {
		return fmt.Errorf("smp: MAD header needs %d bytes, buffer has %d", HeaderLen, len(b))
	}
	b[0] = h.BaseVersion
	b[1] = h.MgmtClass
	b[2] = h.ClassVersion
	b[3] = h.Method
	binary.BigEndian.PutUint16(b[4:], h.Status)
	binary.BigEndian.PutUint16(b[6:], h.ClassSpecific)
	binary.BigEndian.PutUint64(b[8:], h.TID)
	binary.BigEndian.PutUint16(b[16:], h.AttrID)
	b[18], b[19] = 0, 0
	binary.BigEndian.PutUint32(b[20:], h.AttrMod)
	return nil
}

// Decode reads a header from b. It checks only the length and BaseVersion;
// class-specific decoders check the rest.
func (h *Header) Decode(b []byte) error {
	if len(b) < HeaderLen {
		return fmt.Errorf("smp: MAD is %d bytes, shorter than the %d-byte header", len(b), HeaderLen)
	}
	if b[0] != BaseVersion {
		return fmt.Errorf("smp: MAD BaseVersion %d, only %d is defined", b[0], BaseVersion)
	}
	h.BaseVersion = b[0]
	h.MgmtClass = b[1]
	h.ClassVersion = b[2]
	h.Method = b[3]
	h.Status = binary.BigEndian.Uint16(b[4:])
	h.ClassSpecific = binary.BigEndian.Uint16(b[6:])
	h.TID = binary.BigEndian.Uint64(b[8:])
	h.AttrID = binary.BigEndian.Uint16(b[16:])
	h.AttrMod = binary.BigEndian.Uint32(b[20:])
	return nil
}

// Raw accessors for code that moves MADs without decoding them (the
// transport's TID matching, simulators). They return zero values when b is
// shorter than the header instead of panicking.

// PeekTID returns the TID of the MAD in b.
func PeekTID(b []byte) uint64 {
	if len(b) < HeaderLen {
		return 0
	}
	return binary.BigEndian.Uint64(b[8:])
}

// PutTID overwrites the TID of the MAD in b; it reports false if b is too short.
func PutTID(b []byte, tid uint64) bool {
	if len(b) < HeaderLen {
		return false
	}
	binary.BigEndian.PutUint64(b[8:], tid)
	return true
}

// PeekClass returns the management class of the MAD in b.
func PeekClass(b []byte) uint8 {
	if len(b) < HeaderLen {
		return 0
	}
	return b[1]
}

// PeekMethod returns the method (with the R bit) of the MAD in b.
func PeekMethod(b []byte) uint8 {
	if len(b) < HeaderLen {
		return 0
	}
	return b[3]
}

// PeekAttrID returns the attribute ID of the MAD in b.
func PeekAttrID(b []byte) uint16 {
	if len(b) < HeaderLen {
		return 0
	}
	return binary.BigEndian.Uint16(b[16:])
}
