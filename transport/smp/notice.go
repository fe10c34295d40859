package smp

import (
	"encoding/binary"
	"fmt"
)

// Notice types (Notice.Type for generic notices, IBA 13.4.8.2 table 127).
const (
	NoticeFatal         = 0
	NoticeUrgent        = 1
	NoticeSecurity      = 2
	NoticeSubnetMgmt    = 3
	NoticeInformational = 4
)

// Producer types for generic notices.
const (
	ProducerCA           = 1
	ProducerSwitch       = 2
	ProducerRouter       = 3
	ProducerClassManager = 4
)

// Trap numbers the SM acts on (IBA 14.2.5.1 table 138).
const (
	TrapPortStateChange      = 128 // a switch port changed state; LIDADDR = switch
	TrapLinkIntegrity        = 129 // local link integrity threshold reached
	TrapBufferOverrun        = 130 // excessive buffer overrun
	TrapFlowControlWatchdog  = 131 // flow control update watchdog expired
	TrapCapabilityMaskChange = 144
)

// Notice lengths: an SMP carries the first 64 bytes; the IssuerGID (bytes
// 64..79) only exists where there is room, e.g. in SA Notice records.
const (
	NoticeSMPLen = 64
	NoticeLen    = 80
)

// Notice is the Notice attribute (IBA 13.4.8.2), sent in Trap MADs.
// For generic notices ProducerType/TrapNumber apply; for vendor notices the
// same bits hold VendorID/DeviceID.
type Notice struct {
	IsGeneric    bool
	Type         uint8  // 7 bits
	ProducerType uint32 // 24 bits; VendorID when !IsGeneric
	TrapNumber   uint16 // DeviceID when !IsGeneric
	IssuerLID    uint16
	NoticeToggle bool
	NoticeCount  uint16 // 15 bits
	DataDetails  [54]byte
	IssuerGID    [16]byte
}

func (*Notice) AttrID() uint16 { return AttrNotice }

// MarshalTo writes 64 bytes, plus the IssuerGID when b has 80 or more.
func (n *Notice) MarshalTo(b []byte) error {
	if err := need("Notice", b, NoticeSMPLen); err != nil {
		return err
	}
	if n.Type > 0x7F || n.ProducerType > 0xFFFFFF || n.NoticeCount > 0x7FFF {
		return fmt.Errorf("smp: Notice Type %d (7 bits), ProducerType %#x (24 bits) or NoticeCount %d (15 bits) out of range", n.Type, n.ProducerType, n.NoticeCount)
	}
	binary.BigEndian.PutUint32(b[0:], n.ProducerType)
	b[0] = n.Type
	if n.IsGeneric {
		b[0] |= 0x80
	}
	binary.BigEndian.PutUint16(b[4:], n.TrapNumber)
	binary.BigEndian.PutUint16(b[6:], n.IssuerLID)
	tc := n.NoticeCount
	if n.NoticeToggle {
		tc |= 0x8000
	}
	binary.BigEndian.PutUint16(b[8:], tc)
	copy(b[10:64], n.DataDetails[:])
	if len(b) >= NoticeLen {
		copy(b[64:80], n.IssuerGID[:])
	}
	return nil
}

// Unmarshal reads 64 bytes, plus the IssuerGID when b has 80 or more
// (otherwise IssuerGID is zeroed).
func (n *Notice) Unmarshal(b []byte) error {
	if err := need("Notice", b, NoticeSMPLen); err != nil {
		return err
	}
	n.IsGeneric = b[0]&0x80 != 0
	n.Type = b[0] & 0x7F
	n.ProducerType = binary.BigEndian.Uint32(b[0:]) & 0xFFFFFF
	n.TrapNumber = binary.BigEndian.Uint16(b[4:])
	n.IssuerLID = binary.BigEndian.Uint16(b[6:])
	tc := binary.BigEndian.Uint16(b[8:])
	n.NoticeToggle, n.NoticeCount = tc&0x8000 != 0, tc&0x7FFF
	copy(n.DataDetails[:], b[10:64])
	n.IssuerGID = [16]byte{}
	if len(b) >= NoticeLen {
		copy(n.IssuerGID[:], b[64:80])
	}
	return nil
}

// NewTrap128 builds the generic urgent trap a switch sends when one of its
// ports changes state; LIDADDR (DataDetails 0..1) is the switch's LID.
func NewTrap128(switchLID uint16) *Notice {
	n := &Notice{IsGeneric: true, Type: NoticeUrgent, ProducerType: ProducerSwitch,
		TrapNumber: TrapPortStateChange, IssuerLID: switchLID}
	binary.BigEndian.PutUint16(n.DataDetails[0:], switchLID)
	return n
}

// Trap128 returns LIDADDR of a trap 128 notice.
func (n *Notice) Trap128() (lid uint16, err error) {
	if !n.IsGeneric || n.TrapNumber != TrapPortStateChange {
		return 0, fmt.Errorf("smp: notice is not generic trap 128 (generic %v, trap %d)", n.IsGeneric, n.TrapNumber)
	}
	return binary.BigEndian.Uint16(n.DataDetails[0:]), nil
}

// NewLinkTrap builds trap 129, 130 or 131 for port of the node at lid,
// produced by a node of producerType (ProducerCA/Switch/Router). Its
// DataDetails are 16 reserved bits, LIDADDR, PORTNO.
func NewLinkTrap(trap uint16, producerType uint32, lid uint16, port uint8) (*Notice, error) {
	if trap < TrapLinkIntegrity || trap > TrapFlowControlWatchdog {
		return nil, fmt.Errorf("smp: trap %d is not a link trap (129..131)", trap)
	}
	if producerType > 0xFFFFFF {
		return nil, fmt.Errorf("smp: producer type %#x does not fit in 24 bits", producerType)
	}
	n := &Notice{IsGeneric: true, Type: NoticeUrgent, ProducerType: producerType, TrapNumber: trap, IssuerLID: lid}
	binary.BigEndian.PutUint16(n.DataDetails[2:], lid)
	n.DataDetails[4] = port
	return n, nil
}

// LinkTrap returns LIDADDR and PORTNO of a trap 129..131 notice.
func (n *Notice) LinkTrap() (lid uint16, port uint8, err error) {
	if !n.IsGeneric || n.TrapNumber < TrapLinkIntegrity || n.TrapNumber > TrapFlowControlWatchdog {
		return 0, 0, fmt.Errorf("smp: notice is not generic trap 129..131 (generic %v, trap %d)", n.IsGeneric, n.TrapNumber)
	}
	return binary.BigEndian.Uint16(n.DataDetails[2:]), n.DataDetails[4], nil
}

// Trap144 is the DataDetails of trap 144 (capability mask or other local
// change on a port).
type Trap144 struct {
	LID               uint16
	OtherLocalChanges bool
	CapabilityMask    uint32
	ChangeFlags       uint16
	CapabilityMask2   uint16
}

// NewTrap144 builds the informational trap 144 issued by a port at t.LID.
func NewTrap144(producerType uint32, t Trap144) *Notice {
	n := &Notice{IsGeneric: true, Type: NoticeInformational, ProducerType: producerType & 0xFFFFFF,
		TrapNumber: TrapCapabilityMaskChange, IssuerLID: t.LID}
	d := n.DataDetails[:]
	binary.BigEndian.PutUint16(d[2:], t.LID)
	if t.OtherLocalChanges {
		d[5] = 1
	}
	binary.BigEndian.PutUint32(d[6:], t.CapabilityMask)
	binary.BigEndian.PutUint16(d[10:], t.ChangeFlags)
	binary.BigEndian.PutUint16(d[12:], t.CapabilityMask2)
	return n
}

// Trap144 decodes the DataDetails of a trap 144 notice.
func (n *Notice) Trap144() (Trap144, error) {
	if !n.IsGeneric || n.TrapNumber != TrapCapabilityMaskChange {
		return Trap144{}, fmt.Errorf("smp: notice is not generic trap 144 (generic %v, trap %d)", n.IsGeneric, n.TrapNumber)
	}
	d := n.DataDetails[:]
	return Trap144{
		LID:               binary.BigEndian.Uint16(d[2:]),
		OtherLocalChanges: d[5]&1 != 0,
		CapabilityMask:    binary.BigEndian.Uint32(d[6:]),
		ChangeFlags:       binary.BigEndian.Uint16(d[10:]),
		CapabilityMask2:   binary.BigEndian.Uint16(d[12:]),
	}, nil
}
