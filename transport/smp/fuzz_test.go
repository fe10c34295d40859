package smp

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Every decoder must, for arbitrary input, either fail or produce a value
// that encodes without error and decodes back to the same value. They must
// never panic.

func FuzzSMP(f *testing.F) {
	f.Add(drGetNodeInfoVector(&testing.T{}))
	lid, _ := NewLIDGet(AttrPortInfo, 3).Encode()
	f.Add(lid)
	f.Add(make([]byte, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		enc := make([]byte, MADLen)
		if err := s.EncodeTo(enc); err != nil {
			t.Fatalf("decoded SMP does not encode: %v", err)
		}
		// Every non-reserved byte survives the round trip.
		reserved := map[int]bool{18: true, 19: true}
		lo, hi := 36, 64
		if !s.IsDR() {
			reserved[6], reserved[7] = true, true
			lo = 32
			for i := 128; i < MADLen; i++ {
				reserved[i] = true
			}
		}
		for i := lo; i < hi; i++ {
			reserved[i] = true
		}
		for i := 0; i < MADLen; i++ {
			if !reserved[i] && enc[i] != b[i] {
				t.Fatalf("byte %d: %#02x re-encoded as %#02x", i, b[i], enc[i])
			}
		}
		s2, err := Decode(enc)
		if err != nil || *s2 != *s {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, s, s2)
		}
		// DR steps must not panic on whatever was decoded.
		c := *s
		c.DRReceive(b[0], b[1]&1 == 1, b[2])
		c.DRSend(b[3]&1 == 1)
	})
}

func FuzzHeader(f *testing.F) {
	f.Add(drGetNodeInfoVector(&testing.T{})[:HeaderLen])
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		if h.Decode(b) != nil {
			return
		}
		enc := make([]byte, HeaderLen)
		if err := h.EncodeTo(enc); err != nil {
			t.Fatal(err)
		}
		var h2 Header
		if err := h2.Decode(enc); err != nil || h2 != h {
			t.Fatalf("re-decode %v %+v %+v", err, h, h2)
		}
		PeekTID(b)
		PeekMethod(b)
		PeekClass(b)
		PeekAttrID(b)
	})
}

// roundTrip checks an attribute codec on arbitrary bytes.
func roundTrip(t *testing.T, b []byte, a, a2 Attribute, size int, exact bool) {
	if err := a.Unmarshal(b); err != nil {
		if len(b) >= size {
			t.Fatalf("%T rejected %d bytes: %v", a, len(b), err)
		}
		return
	}
	enc := make([]byte, size)
	if err := a.MarshalTo(enc); err != nil {
		if errors.Is(err, errNotUTF8) {
			return // documented: invalid UTF-8 is read but not written
		}
		t.Fatalf("%T decoded value does not marshal: %v", a, err)
	}
	if exact && !bytes.Equal(enc, b[:size]) {
		t.Fatalf("%T: re-encoded bytes differ\n%x\n%x", a, b[:size], enc)
	}
	if err := a2.Unmarshal(enc); err != nil || !reflect.DeepEqual(a, a2) {
		t.Fatalf("%T re-decode: %v\n%+v\n%+v", a, err, a, a2)
	}
}

func attrSeed(f *testing.F, a Attribute, size int) {
	b := make([]byte, size)
	if err := a.MarshalTo(b); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:size-1])
}

func FuzzNodeInfo(f *testing.F) {
	attrSeed(f, &NodeInfo{1, 1, 2, 36, 1, 2, 3, 8, 0xC738, 0xA1, 5, 0x2C9}, NodeInfoLen)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, new(NodeInfo), new(NodeInfo), NodeInfoLen, true) })
}

func FuzzNodeDescription(f *testing.F) {
	attrSeed(f, &NodeDescription{"hostA mlx5_0"}, DataLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(NodeDescription), new(NodeDescription), DataLen, false)
	})
}

func FuzzPortInfo(f *testing.F) {
	attrSeed(f, &testPortInfo, PortInfoLen)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, new(PortInfo), new(PortInfo), PortInfoLen, false) })
}

func FuzzSwitchInfo(f *testing.F) {
	attrSeed(f, &SwitchInfo{LinearFDBCap: 0xC000, LifeTimeValue: 18, PortStateChange: true, EnhancedPort0: true}, SwitchInfoLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(SwitchInfo), new(SwitchInfo), SwitchInfoLen, false)
	})
}

func FuzzLFTBlock(f *testing.F) {
	attrSeed(f, &LFTBlock{1, 2, 3, 63: 0xFF}, LFTBlockLen)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, new(LFTBlock), new(LFTBlock), LFTBlockLen, true) })
}

func FuzzSL2VL(f *testing.F) {
	attrSeed(f, &SL2VLTable{0, 1, 2, 3, 15: 15}, SL2VLLen)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, new(SL2VLTable), new(SL2VLTable), SL2VLLen, true) })
}

func FuzzPKeyBlock(f *testing.F) {
	attrSeed(f, &PKeyBlock{0xFFFF, 0x7FFF}, 2*PKeyBlockLen)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, new(PKeyBlock), new(PKeyBlock), 2*PKeyBlockLen, true) })
}

func FuzzSMInfo(f *testing.F) {
	attrSeed(f, &SMInfo{GUID: 1, SMKey: 2, ActCount: 3, Priority: 14, SMState: 3}, SMInfoLen)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, new(SMInfo), new(SMInfo), SMInfoLen, true) })
}

func FuzzNotice(f *testing.F) {
	attrSeed(f, NewTrap128(3), NoticeSMPLen)
	attrSeed(f, NewTrap144(ProducerCA, Trap144{LID: 1, CapabilityMask: 0x50C04A}), NoticeLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		size := NoticeSMPLen
		if len(b) >= NoticeLen {
			size = NoticeLen
		}
		n := new(Notice)
		roundTrip(t, b, n, new(Notice), size, true)
		n.Trap128()
		n.LinkTrap()
		n.Trap144()
	})
}

func FuzzPathRecord(f *testing.F) {
	attrSeed(f, &testPathRecord, PathRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(PathRecord), new(PathRecord), PathRecordLen, false)
	})
}

func FuzzSAMAD(f *testing.F) {
	m := NewSAMAD(MethodGetTable, SAAttrPathRecord)
	m.RMPPFlags = RMPPFlagActive
	b := make([]byte, MADLen)
	if err := m.EncodeTo(b); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m SAMAD
		if m.Decode(b) != nil {
			return
		}
		enc := make([]byte, MADLen)
		if err := m.EncodeTo(enc); err != nil {
			t.Fatalf("decoded SA MAD does not encode: %v", err)
		}
		for i := 0; i < MADLen; i++ {
			if i != 18 && i != 19 && i != 46 && i != 47 && enc[i] != b[i] {
				t.Fatalf("byte %d: %#02x re-encoded as %#02x", i, b[i], enc[i])
			}
		}
		var m2 SAMAD
		if err := m2.Decode(enc); err != nil || m2 != m {
			t.Fatalf("re-decode %v", err)
		}
	})
}

func FuzzNodeRecord(f *testing.F) {
	attrSeed(f, &NodeRecord{LID: 5, NodeDescription: NodeDescription{"x"}}, NodeRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(NodeRecord), new(NodeRecord), NodeRecordLen, false)
	})
}

func FuzzPortInfoRecord(f *testing.F) {
	attrSeed(f, &PortInfoRecord{EndportLID: 1, PortInfo: testPortInfo}, PortInfoRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(PortInfoRecord), new(PortInfoRecord), PortInfoRecordLen, false)
	})
}

func FuzzSMInfoRecord(f *testing.F) {
	attrSeed(f, &SMInfoRecord{LID: 1}, SMInfoRecordLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, new(SMInfoRecord), new(SMInfoRecord), SMInfoRecordLen, false)
	})
}
