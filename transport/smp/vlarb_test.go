package smp

import (
	"bytes"
	"testing"
)

func TestVLArbBlockWire(t *testing.T) {
	var blk VLArbBlock
	blk[0] = VLArbEntry{VL: 0, Weight: 64}
	blk[1] = VLArbEntry{VL: 1, Weight: 64}
	blk[31] = VLArbEntry{VL: 14, Weight: 0xFF}
	b := make([]byte, VLArbLen)
	mustVL(t, blk.MarshalTo(b))
	want := make([]byte, VLArbLen)
	want[0], want[1], want[2], want[3], want[62], want[63] = 0x00, 0x40, 0x01, 0x40, 0x0E, 0xFF
	if !bytes.Equal(b, want) {
		t.Fatalf("wire\n got % x\nwant % x", b, want)
	}
	// The reserved nibble is ignored on decode.
	b[2] |= 0xA0
	var back VLArbBlock
	mustVL(t, back.Unmarshal(b))
	if back != blk {
		t.Fatalf("decoded %v, want %v", back, blk)
	}
	bad := blk
	bad[5].VL = 16
	if err := bad.MarshalTo(b); err == nil {
		t.Fatal("VL 16 encoded")
	}
	if err := blk.MarshalTo(b[:VLArbLen-1]); err == nil {
		t.Fatal("short buffer accepted")
	}
}

func TestVLArbMod(t *testing.T) {
	tests := []struct {
		mod         uint32
		port, block uint8
		ok          bool
	}{
		{VLArbMod(7, VLArbLowBlock0), 7, 1, true},
		{0x00040024, 0x24, 4, true},
		{0x00000003, 0, 0, false}, // block 0
		{0x00050001, 0, 0, false}, // block 5
		{0x00010100, 0, 0, false}, // reserved bits
	}
	for _, tc := range tests {
		p, b, err := VLArbPorts(tc.mod)
		if (err == nil) != tc.ok || p != tc.port || b != tc.block {
			t.Errorf("VLArbPorts(%#x) = %d, %d, %v; want %d, %d, ok=%v", tc.mod, p, b, err, tc.port, tc.block, tc.ok)
		}
	}
	if VLArbMod(3, VLArbHighBlock0) != 0x00030003 {
		t.Fatalf("VLArbMod(3, 3) = %#x", VLArbMod(3, VLArbHighBlock0))
	}
}

func FuzzVLArbBlock(f *testing.F) {
	f.Add(make([]byte, VLArbLen))
	f.Add(bytes.Repeat([]byte{0xF1, 0x40}, VLArbBlockLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		var blk VLArbBlock
		if err := blk.Unmarshal(b); err != nil {
			return
		}
		enc := make([]byte, VLArbLen)
		if err := blk.MarshalTo(enc); err != nil {
			t.Fatalf("decoded block does not encode: %v", err)
		}
		for i := range enc {
			w := b[i]
			if i%2 == 0 {
				w &= 0x0F
			}
			if enc[i] != w {
				t.Fatalf("byte %d: %#02x re-encoded as %#02x", i, b[i], enc[i])
			}
		}
	})
}

func mustVL(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
