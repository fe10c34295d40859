package smp

import (
	"encoding/binary"
	"testing"
)

func TestClassPortInfoBytes(t *testing.T) {
	c := ClassPortInfo{
		BaseVersion: 1, ClassVersion: 2, CapabilityMask: 0x2602, CapabilityMask2: 0x7FFFFFF, RespTimeValue: 18,
		RedirectTC: 0xAB, RedirectSL: 0xC, RedirectFL: 0xDEF01, RedirectLID: 0x1234, RedirectPKey: 0xFFFF,
		RedirectQP: 0x123456, RedirectQKey: 0x80010000,
		TrapTC: 1, TrapSL: 2, TrapFL: 3, TrapLID: 4, TrapPKey: 0x7FFF, TrapHL: 0xFF, TrapQP: 1, TrapQKey: 0x80010000,
	}
	c.RedirectGID[15], c.TrapGID[0] = 0x11, 0xFE
	b := make([]byte, ClassPortInfoLen)
	if err := c.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	want := hexb(t, `01 02 2602 fffffff2 | 00000000000000000000000000000011 | abcdef01 1234 ffff | 00123456 80010000 |
		fe000000000000000000000000000000 | 01200003 0004 7fff | ff000001 80010000`, ClassPortInfoLen)
	diffBytes(t, "ClassPortInfo", b, want)
	var c2 ClassPortInfo
	if err := c2.Unmarshal(b); err != nil || c2 != c {
		t.Fatalf("round trip %+v %v", c2, err)
	}
	c.RedirectQP = 1 << 24
	if err := c.MarshalTo(b); err == nil {
		t.Fatal("a 25-bit QP was accepted")
	}
}

func TestRMPPMessageLen(t *testing.T) {
	m := NewSAMAD(MethodGetTableResp, SAAttrNodeRecord)
	m.RMPPVersion, m.RMPPType, m.RMPPFlags, m.PayloadLength = 1, RMPPTypeData, RMPPFlagActive|RMPPFlagFirst|RMPPFlagLast, 20+112
	b := make([]byte, MADLen)
	if err := m.EncodeTo(b); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func([]byte)
		want int
	}{
		{"one NodeRecord", func([]byte) {}, 56 + 112},
		{"not active", func(b []byte) { b[26] &^= RMPPFlagActive }, 256},
		{"not first", func(b []byte) { b[26] &^= RMPPFlagFirst }, 256},
		{"ACK", func(b []byte) { b[25] = RMPPTypeAck }, 256},
		{"payload beyond the buffer", func(b []byte) { binary.BigEndian.PutUint32(b[32:], 1000) }, 256},
		{"an SMP", func(b []byte) { b[1] = ClassSMPLID }, 256},
	} {
		c2 := append([]byte(nil), b...)
		c.edit(c2)
		if got := RMPPMessageLen(c2); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if RMPPMessageLen(b[:30]) != 30 {
		t.Fatal("short buffer")
	}
}

func FuzzClassPortInfo(f *testing.F) {
	attrSeed(f, &ClassPortInfo{BaseVersion: 1, ClassVersion: 2, RespTimeValue: 18, RedirectQP: 7, TrapFL: 0xFFFFF}, ClassPortInfoLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(ClassPortInfo), new(ClassPortInfo), ClassPortInfoLen, false)
	})
}
