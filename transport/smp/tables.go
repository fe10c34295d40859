package smp

import (
	"encoding/binary"
	"fmt"
)

// LFTBlockLen is the number of LIDs per LinearForwardingTable block.
const LFTBlockLen = 64

// LFTUnreachable is the LFT entry for "no route" that switches reset to.
const LFTUnreachable = 0xFF

// LFTBlock is one LinearForwardingTable block (IBA 14.2.5.10): the egress
// port for LIDs 64*block .. 64*block+63. The block number is the attribute
// modifier (LFTBlockMod).
type LFTBlock [LFTBlockLen]uint8

func (*LFTBlock) AttrID() uint16 { return AttrLinearForwardingTable }

func (l *LFTBlock) MarshalTo(b []byte) error {
	if err := need("LinearForwardingTable", b, LFTBlockLen); err != nil {
		return err
	}
	copy(b, l[:])
	return nil
}

func (l *LFTBlock) Unmarshal(b []byte) error {
	if err := need("LinearForwardingTable", b, LFTBlockLen); err != nil {
		return err
	}
	copy(l[:], b)
	return nil
}

// MaxLFTBlock is the last block the 16-bit LID space can need (LID 0xBFFF
// is the last unicast LID: block 767).
const MaxLFTBlock = 0xBFFF / LFTBlockLen

// LFTBlockMod returns the attribute modifier for the block holding lid.
func LFTBlockMod(lid uint16) uint32 { return uint32(lid) / LFTBlockLen }

// SL2VLTable is the SLtoVLMappingTable attribute (IBA 14.2.5.8): the VL
// for each of the 16 SLs, packed as nibbles with SL0 in the high nibble of
// byte 0. For switches the modifier names an input/output port pair.
type SL2VLTable [16]uint8

// SL2VLLen is the number of meaningful bytes.
const SL2VLLen = 8

func (*SL2VLTable) AttrID() uint16 { return AttrSLtoVLMappingTable }

func (t *SL2VLTable) MarshalTo(b []byte) error {
	if err := need("SLtoVLMappingTable", b, SL2VLLen); err != nil {
		return err
	}
	for sl, vl := range t {
		if vl > 15 {
			return fmt.Errorf("smp: SLtoVLMappingTable SL%d -> VL %d does not fit in 4 bits", sl, vl)
		}
	}
	for i := 0; i < SL2VLLen; i++ {
		b[i] = t[2*i]<<4 | t[2*i+1]
	}
	return nil
}

func (t *SL2VLTable) Unmarshal(b []byte) error {
	if err := need("SLtoVLMappingTable", b, SL2VLLen); err != nil {
		return err
	}
	for i := 0; i < SL2VLLen; i++ {
		t[2*i], t[2*i+1] = b[i]>>4, b[i]&0x0F
	}
	return nil
}

// SL2VLMod builds the SLtoVLMappingTable modifier for a switch: input port
// in bits 15..8, output port in bits 7..0 (IBA 14.2.5.8). CAs and routers
// use modifier 0 for their own port.
func SL2VLMod(inPort, outPort uint8) uint32 { return uint32(inPort)<<8 | uint32(outPort) }

// SL2VLPorts splits an SLtoVLMappingTable modifier into (input, output).
// Bits 31..16 must be zero; they carry optimized-programming flags this
// package does not implement.
func SL2VLPorts(mod uint32) (in, out uint8, err error) {
	if mod>>16 != 0 {
		return 0, 0, fmt.Errorf("smp: SLtoVLMappingTable modifier %#x has bits above 15 set; only explicit port pairs are supported", mod)
	}
	return uint8(mod >> 8), uint8(mod), nil
}

// PKeyBlockLen is the number of P_Keys per P_KeyTable block.
const PKeyBlockLen = 32

// PKeyFullMember is the membership bit of a P_Key.
const PKeyFullMember = 0x8000

// PKeyBlock is one P_KeyTable block (IBA 14.2.5.7): 32 P_Keys of 16 bits
// (bit 15 = full member, 14..0 = base).
type PKeyBlock [PKeyBlockLen]uint16

func (*PKeyBlock) AttrID() uint16 { return AttrPKeyTable }

func (p *PKeyBlock) MarshalTo(b []byte) error {
	if err := need("P_KeyTable", b, 2*PKeyBlockLen); err != nil {
		return err
	}
	for i, k := range p {
		binary.BigEndian.PutUint16(b[2*i:], k)
	}
	return nil
}

func (p *PKeyBlock) Unmarshal(b []byte) error {
	if err := need("P_KeyTable", b, 2*PKeyBlockLen); err != nil {
		return err
	}
	for i := range p {
		p[i] = binary.BigEndian.Uint16(b[2*i:])
	}
	return nil
}

// PKeyBlockMod builds the P_KeyTable modifier: block in bits 15..0 and, for
// switch external ports, the port number in bits 31..16 (IBA 14.2.5.7).
func PKeyBlockMod(port uint8, block uint16) uint32 { return uint32(port)<<16 | uint32(block) }

// PKeyBlockPort splits a P_KeyTable modifier into (port, block).
func PKeyBlockPort(mod uint32) (port uint8, block uint16, err error) {
	if mod>>24 != 0 {
		return 0, 0, fmt.Errorf("smp: P_KeyTable modifier %#x: port number above 255", mod)
	}
	return uint8(mod >> 16), uint16(mod), nil
}
