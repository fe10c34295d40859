package smp

import (
	"encoding/binary"
	"testing"
)

func TestTrap256Bytes(t *testing.T) {
	tests := []struct {
		name string
		in   Trap256
	}{
		{"LID-routed Set", Trap256{LID: 7, Method: MethodSet, AttrID: AttrPortInfo, AttrMod: 1, MKey: 0x1122334455667788}},
		{"directed route, 3 hops", Trap256{LID: 9, DRSLID: 0xFFFF, Method: MethodGet, AttrID: AttrNodeInfo, MKey: 1,
			DRNotice: true, DRHops: 3, DRReturnPath: [30]byte{0, 4, 2, 1}}},
		{"truncated path", Trap256{LID: 1, DRNotice: true, DRTruncated: true, DRHops: 63}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := NewTrap256(ProducerCA, tc.in)
			b := make([]byte, NoticeSMPLen)
			if err := n.MarshalTo(b); err != nil {
				t.Fatal(err)
			}
			// Offsets of IBA table 140 within the Notice (DataDetails at 10).
			if binary.BigEndian.Uint16(b[4:]) != 256 || b[0] != 0x80|NoticeSecurity ||
				binary.BigEndian.Uint16(b[12:]) != tc.in.LID || b[16] != tc.in.Method ||
				binary.BigEndian.Uint16(b[18:]) != tc.in.AttrID || binary.BigEndian.Uint64(b[24:]) != tc.in.MKey {
				t.Fatalf("bytes % x", b)
			}
			var back Notice
			if err := back.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			got, err := back.Trap256()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.in {
				t.Fatalf("round trip: got %+v, want %+v", got, tc.in)
			}
		})
	}
	if _, err := (&Notice{IsGeneric: true, TrapNumber: 128}).Trap256(); err == nil {
		t.Fatal("trap 128 decoded as 256")
	}
}

func FuzzTrap256(f *testing.F) {
	b := make([]byte, NoticeSMPLen)
	_ = NewTrap256(ProducerSwitch, Trap256{LID: 3, DRNotice: true, DRHops: 2}).MarshalTo(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var n Notice
		if n.Unmarshal(b) != nil {
			return
		}
		tr, err := n.Trap256()
		if err != nil {
			return
		}
		// Re-encoding what was decoded gives the same details (reserved
		// bits and path bytes past a non-DR notice aside).
		again, _ := NewTrap256(n.ProducerType, tr).Trap256()
		if again != tr {
			t.Fatalf("re-encode: %+v != %+v", again, tr)
		}
	})
}
