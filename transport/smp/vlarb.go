package smp

import "fmt"

// VLArbBlockLen is the number of entries in one VLArbitrationTable block.
const VLArbBlockLen = 32

// VLArbitrationTable blocks (IBA 14.2.5.9, attribute modifier bits 31..16).
const (
	VLArbLowBlock0  = 1 // low-priority entries 0..31
	VLArbLowBlock1  = 2 // low-priority entries 32..63
	VLArbHighBlock0 = 3 // high-priority entries 0..31
	VLArbHighBlock1 = 4 // high-priority entries 32..63
)

// VLArbEntry is one (VL, Weight) pair of a VLArbitrationTable. Weight is in
// units of 64 bytes; 0 means the entry is skipped.
type VLArbEntry struct {
	VL     uint8 // 4 bits
	Weight uint8
}

// VLArbBlock is the VLArbitrationTable attribute (IBA 14.2.5.9): 32 entries
// of two bytes each: 4 reserved bits and the VL in the low nibble of the
// first byte, the weight in the second.
type VLArbBlock [VLArbBlockLen]VLArbEntry

// VLArbLen is the wire size of one block.
const VLArbLen = 2 * VLArbBlockLen

func (*VLArbBlock) AttrID() uint16 { return AttrVLArbitrationTable }

func (t *VLArbBlock) MarshalTo(b []byte) error {
	if err := need("VLArbitrationTable", b, VLArbLen); err != nil {
		return err
	}
	for i, e := range t {
		if e.VL > 15 {
			return fmt.Errorf("smp: VLArbitrationTable entry %d: VL %d does not fit in 4 bits", i, e.VL)
		}
		b[2*i], b[2*i+1] = e.VL, e.Weight
	}
	return nil
}

// Unmarshal ignores the reserved high nibble of each entry's first byte.
func (t *VLArbBlock) Unmarshal(b []byte) error {
	if err := need("VLArbitrationTable", b, VLArbLen); err != nil {
		return err
	}
	for i := range t {
		t[i] = VLArbEntry{VL: b[2*i] & 0x0F, Weight: b[2*i+1]}
	}
	return nil
}

// VLArbMod builds the VLArbitrationTable modifier: block (1..4) in bits
// 31..16, port in bits 7..0 (switches; CAs apply the table to the port the
// SMP arrived on).
func VLArbMod(port, block uint8) uint32 { return uint32(block)<<16 | uint32(port) }

// VLArbPorts splits a VLArbitrationTable modifier into (port, block) and
// rejects blocks outside 1..4 and set reserved bits 15..8.
func VLArbPorts(mod uint32) (port, block uint8, err error) {
	blk := mod >> 16
	if blk < VLArbLowBlock0 || blk > VLArbHighBlock1 {
		return 0, 0, fmt.Errorf("smp: VLArbitrationTable modifier %#x: block %d is not 1..4", mod, blk)
	}
	if mod&0xFF00 != 0 {
		return 0, 0, fmt.Errorf("smp: VLArbitrationTable modifier %#x: reserved bits 15..8 set", mod)
	}
	return uint8(mod), uint8(blk), nil
}
