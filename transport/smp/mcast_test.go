package smp

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestMFTBlockBytes(t *testing.T) {
	var m MFTBlock
	m[0], m[1], m[31] = 0x8001, 0x0002, 0xFFFF
	b := make([]byte, MFTBlockBytes)
	if err := m.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:4], []byte{0x80, 0x01, 0x00, 0x02}) || b[62] != 0xFF || b[63] != 0xFF {
		t.Fatalf("wire bytes %x", b)
	}
	var back MFTBlock
	if err := back.Unmarshal(b); err != nil || back != m {
		t.Fatalf("round trip: %v %v", err, back)
	}
	if err := back.Unmarshal(b[:63]); err == nil {
		t.Fatal("short block accepted")
	}
}

func TestMFTMod(t *testing.T) {
	for _, tc := range []struct {
		pos   uint8
		block uint16
		mod   uint32
		bad   bool
	}{
		{0, 0, 0, false},
		{2, 31, 0x2000_001F, false},
		{15, 511, 0xF000_01FF, false},
		{16, 0, 0, true},
		{0, 512, 0, true},
	} {
		mod, err := MFTMod(tc.pos, tc.block)
		if (err != nil) != tc.bad || mod != tc.mod {
			t.Errorf("MFTMod(%d,%d) = %#x, %v; want %#x bad=%v", tc.pos, tc.block, mod, err, tc.mod, tc.bad)
		}
		if tc.bad {
			continue
		}
		p, b, err := ParseMFTMod(mod)
		if err != nil || p != tc.pos || b != tc.block {
			t.Errorf("ParseMFTMod(%#x) = %d %d %v", mod, p, b, err)
		}
	}
	if _, _, err := ParseMFTMod(0x0000_0200); err == nil {
		t.Error("reserved modifier bit accepted")
	}
	if b, i := MFTBlockOf(0xC021); b != 1 || i != 1 {
		t.Errorf("MFTBlockOf(0xC021) = %d %d", b, i)
	}
}

// The IPoIB broadcast group join an ipoib driver sends for P_Key 0xFFFF:
// fields checked against the offsets of IBA 15.2.5.17 table 208.
func TestMCMemberRecordBytes(t *testing.T) {
	r := MCMemberRecord{
		QKey: 0x0B1B, MLID: 0xC001, MTUSelector: 2, MTU: 4, TClass: 0x12, PKey: 0xFFFF,
		RateSelector: 2, Rate: 3, PacketLifeTimeSelector: 2, PacketLifeTime: 18,
		SL: 5, FlowLabel: 0xABCDE, HopLimit: 0x40, Scope: 2, JoinState: JoinFullMember, ProxyJoin: true,
	}
	copy(r.MGID[:], []byte{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	r.PortGID[0], r.PortGID[15] = 0xfe, 0x01
	b := make([]byte, MCMemberRecordLen)
	if err := r.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	want := "ff12401bffff000000000000ffffffff" + "fe000000000000000000000000000001" +
		"00000b1b" + "c001" + "84" + "12" + "ffff" + "83" + "92" + "5abcde40" + "21" + "800000"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("wire bytes\n got %s\nwant %s", got, want)
	}
	var back MCMemberRecord
	if err := back.Unmarshal(b); err != nil || back != r {
		t.Fatalf("round trip %v\n%+v\n%+v", err, back, r)
	}
	for _, bad := range []MCMemberRecord{{SL: 16}, {FlowLabel: 1 << 20}, {MTU: 64}, {JoinState: 16}, {Scope: 16}} {
		if err := bad.MarshalTo(b); err == nil {
			t.Errorf("%+v marshalled", bad)
		}
	}
}

func FuzzMFTBlock(f *testing.F) {
	attrSeed(f, &MFTBlock{1, 2, 0xFFFF}, MFTBlockBytes)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, new(MFTBlock), new(MFTBlock), MFTBlockBytes, true) })
}

func FuzzMCMemberRecord(f *testing.F) {
	attrSeed(f, &MCMemberRecord{QKey: 0x0B1B, MLID: 0xC000, MTU: 4, PKey: 0xFFFF, JoinState: 1}, MCMemberRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(MCMemberRecord), new(MCMemberRecord), MCMemberRecordLen, false)
	})
}

func TestMFTRecordBytes(t *testing.T) {
	r := MFTRecord{LID: 0x0102, Position: 2, BlockNum: 0x1FF}
	r.Block[0], r.Block[31] = 0x8001, 0x0004
	b := make([]byte, MFTRecordLen)
	if err := r.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:8], []byte{0x01, 0x02, 0x21, 0xFF, 0, 0, 0, 0}) || b[8] != 0x80 || b[9] != 0x01 || b[71] != 0x04 {
		t.Fatalf("wire bytes %x", b)
	}
	var back MFTRecord
	if err := back.Unmarshal(b); err != nil || back != r {
		t.Fatalf("round trip %v %+v", err, back)
	}
	if err := (&MFTRecord{Position: 16}).MarshalTo(b); err == nil {
		t.Fatal("position 16 marshalled")
	}
}

func FuzzMFTRecord(f *testing.F) {
	attrSeed(f, &MFTRecord{LID: 1, Position: 1, BlockNum: 3}, MFTRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, new(MFTRecord), new(MFTRecord), MFTRecordLen, false) })
}
