package smp

import "testing"

func TestSwitchInfoVector(t *testing.T) {
	// byte 11: LifeTimeValue 0x12 (7-3) | PortStateChange (2) | OptSL2VL 1 = 0x95
	// byte 16: InEnf (7) | OutEnf (6) | FRIn 0 (5) | FROut (4) | EnhancedPort0 (3) = 0xd8
	want := hexb(t, `c0 00 | 00 00 | 04 00 | 2d 8f | 01 ff ff 95 | 00 00 | 00 40 | d8 00 | c0 10`, 0)
	si := SwitchInfo{
		LinearFDBCap: 0xC000, MulticastFDBCap: 0x400, LinearFDBTop: 0x2D8F, DefaultPort: 1,
		DefaultMulticastPrimaryPort: 0xFF, DefaultMulticastNotPrimaryPort: 0xFF,
		LifeTimeValue: 0x12, PortStateChange: true, OptimizedSLtoVLMappingProgramming: 1,
		PartitionEnforcementCap: 64, InboundEnforcementCap: true, OutboundEnforcementCap: true,
		FilterRawOutboundCap: true, EnhancedPort0: true, MulticastFDBTop: 0xC010,
	}
	got := make([]byte, SwitchInfoLen)
	for i := range got {
		got[i] = 0xFF
	}
	if err := si.MarshalTo(got); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "SwitchInfo", got, want)
	var back SwitchInfo
	if err := back.Unmarshal(want); err != nil || back != si {
		t.Fatalf("Unmarshal:\n got %+v\nwant %+v", back, si)
	}
	si.LifeTimeValue = 32
	if err := si.MarshalTo(got); err == nil {
		t.Fatal("6-bit LifeTimeValue accepted")
	}
}

func TestLFTBlock(t *testing.T) {
	var l LFTBlock
	for i := range l {
		l[i] = uint8(i % 37)
	}
	l[63] = LFTUnreachable
	s, _ := NewDRSet(0, LFTBlockMod(130), []uint8{1, 2}, nil)
	if err := s.SetAttr(&l); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Encode()
	// AttrID 0x0019 at 16, AttrMod = block 2 at 20, entry i at byte 64+i.
	if b[16] != 0 || b[17] != 0x19 || b[23] != 2 || b[64+36] != 36 || b[64+37] != 0 || b[127] != 0xFF {
		t.Fatalf("LFT SMP bytes wrong: %x", b[:128])
	}
	d, _ := Decode(b)
	var back LFTBlock
	if err := d.Attr(&back); err != nil || back != l {
		t.Fatalf("round trip %v %v", back, err)
	}
	for _, tc := range []struct {
		lid   uint16
		block uint32
	}{{0, 0}, {63, 0}, {64, 1}, {130, 2}, {0xBFFF, 767}} {
		if got := LFTBlockMod(tc.lid); got != tc.block {
			t.Errorf("LFTBlockMod(%d) = %d, want %d", tc.lid, got, tc.block)
		}
	}
	if MaxLFTBlock != 767 {
		t.Errorf("MaxLFTBlock = %d", MaxLFTBlock)
	}
}

func TestSL2VL(t *testing.T) {
	var tab SL2VLTable
	for sl := range tab {
		tab[sl] = uint8(15 - sl)
	}
	want := hexb(t, `fe dc ba 98 76 54 32 10`, 0) // SL0 in the high nibble of byte 0
	got := make([]byte, SL2VLLen)
	if err := tab.MarshalTo(got); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "SL2VL", got, want)
	var back SL2VLTable
	if err := back.Unmarshal(want); err != nil || back != tab {
		t.Fatalf("round trip %v", back)
	}
	if m := SL2VLMod(3, 7); m != 0x0307 {
		t.Fatalf("SL2VLMod = %#x", m)
	}
	if in, out, err := SL2VLPorts(0x0307); in != 3 || out != 7 || err != nil {
		t.Fatalf("SL2VLPorts = %d %d %v", in, out, err)
	}
	if _, _, err := SL2VLPorts(0x80000307); err == nil {
		t.Fatal("SL2VLPorts accepted optimized-programming bits")
	}
	tab[4] = 16
	if err := tab.MarshalTo(got); err == nil {
		t.Fatal("VL 16 accepted")
	}
}

func TestPKeyBlock(t *testing.T) {
	var p PKeyBlock
	p[0], p[1], p[31] = 0xFFFF, 0x7FFF, 0x8001
	got := make([]byte, 64)
	if err := p.MarshalTo(got); err != nil {
		t.Fatal(err)
	}
	want := hexb(t, `ff ff 7f ff`, 64)
	want[62], want[63] = 0x80, 0x01
	diffBytes(t, "P_KeyTable", got, want)
	var back PKeyBlock
	if err := back.Unmarshal(want); err != nil || back != p {
		t.Fatalf("round trip %v", back)
	}
	if m := PKeyBlockMod(5, 1); m != 0x00050001 {
		t.Fatalf("PKeyBlockMod = %#x", m)
	}
	if port, blk, err := PKeyBlockPort(0x00050001); port != 5 || blk != 1 || err != nil {
		t.Fatalf("PKeyBlockPort = %d %d %v", port, blk, err)
	}
}

func TestSMInfoVector(t *testing.T) {
	want := hexb(t, `00 02 c9 03 00 00 12 34 | 00 00 00 00 00 00 00 01 | 00 00 01 00 | e3`, 0)
	si := SMInfo{GUID: 0x0002c90300001234, SMKey: 1, ActCount: 0x100, Priority: 14, SMState: SMStateMaster}
	got := make([]byte, SMInfoLen)
	if err := si.MarshalTo(got); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "SMInfo", got, want)
	var back SMInfo
	if err := back.Unmarshal(want); err != nil || back != si {
		t.Fatalf("round trip %+v", back)
	}
	si.Priority = 16
	if err := si.MarshalTo(got); err == nil {
		t.Fatal("priority 16 accepted")
	}
}

func TestNoticeTrap128Vector(t *testing.T) {
	// The trap 128 ibsim sent for a switch with LID 3 (notes/ibsim-protocol
	// §2): 81 (generic, urgent) 000002 (switch) 0080 (trap 128) 0003
	// (issuer) 0000 (toggle/count) 0003 (LIDADDR).
	want := hexb(t, `81 00 00 02 | 00 80 | 00 03 | 00 00 | 00 03`, NoticeSMPLen)
	got := make([]byte, NoticeSMPLen)
	if err := NewTrap128(3).MarshalTo(got); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "trap 128", got, want)
	var n Notice
	if err := n.Unmarshal(want); err != nil {
		t.Fatal(err)
	}
	if lid, err := n.Trap128(); lid != 3 || err != nil {
		t.Fatalf("Trap128 = %d %v", lid, err)
	}
	if _, _, err := n.LinkTrap(); err == nil {
		t.Fatal("LinkTrap accepted trap 128")
	}
	// In an 80-byte buffer the IssuerGID follows.
	n.IssuerGID[0], n.IssuerGID[15] = 0xFE, 0x42
	n.NoticeToggle, n.NoticeCount = true, 5
	long := make([]byte, NoticeLen)
	if err := n.MarshalTo(long); err != nil {
		t.Fatal(err)
	}
	if long[8] != 0x80 || long[9] != 5 || long[64] != 0xFE || long[79] != 0x42 {
		t.Fatalf("toggle/count/GID bytes wrong: %x", long)
	}
	var back Notice
	if err := back.Unmarshal(long); err != nil || back != n {
		t.Fatalf("80-byte round trip %+v", back)
	}
}

func TestNoticeLinkTraps(t *testing.T) {
	for _, trap := range []uint16{129, 130, 131} {
		n, err := NewLinkTrap(trap, ProducerCA, 0x21, 2)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, NoticeSMPLen)
		if err := n.MarshalTo(b); err != nil {
			t.Fatal(err)
		}
		// DataDetails: 16 reserved bits, LIDADDR, PORTNO at notice bytes 12..14.
		want := hexb(t, `81 00 00 01 00 00 00 21 00 00 | 00 00 00 21 02`, NoticeSMPLen)
		want[5] = byte(trap)
		diffBytes(t, "link trap", b, want)
		var back Notice
		_ = back.Unmarshal(b)
		if lid, port, err := back.LinkTrap(); lid != 0x21 || port != 2 || err != nil {
			t.Fatalf("LinkTrap = %d %d %v", lid, port, err)
		}
	}
	if _, err := NewLinkTrap(128, ProducerCA, 1, 1); err == nil {
		t.Fatal("NewLinkTrap accepted 128")
	}
	// Trap 144 as ibsim sends it on SET_ISSM (84 000001 0090 0001 ...).
	n := NewTrap144(ProducerCA, Trap144{LID: 1, CapabilityMask: 0x0050C04A})
	b := make([]byte, NoticeSMPLen)
	_ = n.MarshalTo(b)
	want := hexb(t, `84 00 00 01 00 90 00 01 00 00 | 00 00 00 01 00 00 00 50 c0 4a`, NoticeSMPLen)
	diffBytes(t, "trap 144", b, want)
	if got, err := n.Trap144(); err != nil || got.CapabilityMask != 0x0050C04A || got.LID != 1 {
		t.Fatalf("Trap144 = %+v %v", got, err)
	}
}

var testPathRecord = PathRecord{
	DGID: [16]byte{0xfe, 0x80, 8: 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x12, 0x35},
	SGID: [16]byte{0xfe, 0x80, 8: 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x12, 0x34},
	DLID: 4, SLID: 1, FlowLabel: 0x12345, HopLimit: 0x40, Reversible: true, NumbPath: 1,
	PKey: 0xFFFF, SL: 3, MTUSelector: 2, MTU: 4, RateSelector: 2, Rate: 7,
	PacketLifeTimeSelector: 2, PacketLifeTime: 18,
}

func TestPathRecordVector(t *testing.T) {
	// 44: RawTraffic 0 | rsvd | FlowLabel 0x12345 | HopLimit 0x40 = 01 23 45 40
	// 49: Reversible | NumbPath 1 = 81; 52: QoSClass 0 | SL 3 = 00 03
	// 54: sel 2 | MTU 4 = 84; 55: sel 2 | rate 7 = 87; 56: sel 2 | 18 = 92
	want := hexb(t, `00 00 00 00 00 00 00 00
		fe 80 00 00 00 00 00 00 00 02 c9 03 00 00 12 35
		fe 80 00 00 00 00 00 00 00 02 c9 03 00 00 12 34
		00 04 | 00 01 | 01 23 45 40 | 00 | 81 | ff ff | 00 03 | 84 87 92 00 | 00 00 00 00 00 00`, 0)
	got := make([]byte, PathRecordLen)
	for i := range got {
		got[i] = 0xAA
	}
	if err := testPathRecord.MarshalTo(got); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "PathRecord", got, want)
	var back PathRecord
	if err := back.Unmarshal(want); err != nil || back != testPathRecord {
		t.Fatalf("round trip\n got %+v\nwant %+v", back, testPathRecord)
	}
	p := testPathRecord
	p.FlowLabel = 1 << 20
	if err := p.MarshalTo(got); err == nil {
		t.Fatal("21-bit flow label accepted")
	}
}

func TestSAMADVector(t *testing.T) {
	// GetTableResp(PathRecord) with one record: RMPP v1 DATA, flags
	// active|first|last, segment 1, payload 20 (SA header) + 64 = 0x54;
	// AttributeOffset 8 words; ComponentMask DLID|SLID.
	m := NewSAMAD(MethodGetTableResp, SAAttrPathRecord)
	m.TID = 0x0001000000000042
	m.RMPPVersion, m.RMPPType, m.RMPPFlags = 1, RMPPTypeData, RMPPFlagActive|RMPPFlagFirst|RMPPFlagLast
	m.SegmentNumber, m.PayloadLength = 1, 0x54
	m.AttributeOffset = SARecordStride(PathRecordLen)
	m.ComponentMask = PRCompDLID | PRCompSLID
	if err := testPathRecord.MarshalTo(m.Data[:]); err != nil {
		t.Fatal(err)
	}
	want := hexb(t, `01 03 02 92 | 00 00 00 00 | 00 01 00 00 00 00 00 42 | 00 35 00 00 | 00 00 00 00
		01 01 07 00 | 00 00 00 01 | 00 00 00 54 | 00 00 00 00 00 00 00 00 | 00 08 00 00 | 00 00 00 00 00 00 00 30`, MADLen)
	_ = testPathRecord.MarshalTo(want[SADataOffset:])
	got := make([]byte, MADLen)
	if err := m.EncodeTo(got); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "SA MAD", got, want)
	var back SAMAD
	if err := back.Decode(want); err != nil || back != *m {
		t.Fatalf("Decode: %v\n got %+v\nwant %+v", err, back, m)
	}
	bad := append([]byte(nil), want...)
	bad[2] = 1
	if err := back.Decode(bad); err == nil {
		t.Fatal("SA class version 1 accepted")
	}
	if err := back.Decode(want[:200]); err == nil {
		t.Fatal("short SA MAD accepted")
	}
}
