package smp

import (
	"encoding/binary"
	"fmt"
)

// Multicast LIDs and MulticastForwardingTable geometry (IBA 14.2.5.12).
const (
	// MulticastLIDBase is the first multicast LID; 0xFFFF is the
	// permissive LID, so the last multicast LID is 0xFFFE.
	MulticastLIDBase = 0xC000
	MaxMulticastLID  = 0xFFFE
	// MFTBlockLen MLIDs per block, each a 16-bit PortMask.
	MFTBlockLen = 32
	// MFTPortsPerPosition ports per PortMask: position p covers ports
	// 16p..16p+15 (bit i of the mask is port 16p+i).
	MFTPortsPerPosition = 16
	// MFTMaxPosition: positions are 4 bits (ports 0..255).
	MFTMaxPosition = 15
	// MFTMaxBlock: the block number is 9 bits (AttributeModifier 8..0).
	MFTMaxBlock = 511
)

// MFTBlock is one MulticastForwardingTable block (IBA 14.2.5.12): the
// PortMask of MLIDs 0xC000+32*block .. +31 for the ports of one position.
// The AttributeModifier (MFTMod) names position and block.
type MFTBlock [MFTBlockLen]uint16

// MFTBlockBytes is the block's wire size: 32 big-endian 16-bit masks.
const MFTBlockBytes = 2 * MFTBlockLen

func (*MFTBlock) AttrID() uint16 { return AttrMulticastForwardingTable }

func (m *MFTBlock) MarshalTo(b []byte) error {
	if err := need("MulticastForwardingTable", b, MFTBlockBytes); err != nil {
		return err
	}
	for i, v := range m {
		binary.BigEndian.PutUint16(b[2*i:], v)
	}
	return nil
}

func (m *MFTBlock) Unmarshal(b []byte) error {
	if err := need("MulticastForwardingTable", b, MFTBlockBytes); err != nil {
		return err
	}
	for i := range m {
		m[i] = binary.BigEndian.Uint16(b[2*i:])
	}
	return nil
}

// MFTMod is the AttributeModifier for a MulticastForwardingTable block:
// PortMask position in bits 31..28, block number in bits 8..0 (IBA
// 14.2.5.12, table 154 note; bits 27..9 reserved).
func MFTMod(position uint8, block uint16) (uint32, error) {
	if position > MFTMaxPosition || block > MFTMaxBlock {
		return 0, fmt.Errorf("smp: MFT position %d / block %d out of range (position ≤ %d, block ≤ %d)", position, block, MFTMaxPosition, MFTMaxBlock)
	}
	return uint32(position)<<28 | uint32(block), nil
}

// ParseMFTMod splits an MFT AttributeModifier into position and block; it
// fails when a reserved bit is set.
func ParseMFTMod(mod uint32) (position uint8, block uint16, err error) {
	if mod&0x0FFF_FE00 != 0 {
		return 0, 0, fmt.Errorf("smp: MFT attribute modifier %#08x has reserved bits set", mod)
	}
	return uint8(mod >> 28), uint16(mod & 0x1FF), nil
}

// MFTBlockOf returns the block and the index within it of a multicast LID.
func MFTBlockOf(mlid uint16) (block uint16, index int) {
	off := mlid - MulticastLIDBase
	return off / MFTBlockLen, int(off % MFTBlockLen)
}

// IsMulticastLID reports whether lid is in the multicast range.
func IsMulticastLID(lid uint16) bool { return lid >= MulticastLIDBase && lid <= MaxMulticastLID }
