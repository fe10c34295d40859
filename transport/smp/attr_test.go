package smp

import (
	"bytes"
	"testing"
)

func TestNodeInfoVector(t *testing.T) {
	// IBA 14.2.5.3: versions, type, ports, 3 GUIDs, PartitionCap, DeviceID,
	// Revision, then LocalPortNum (byte 36) and the 24-bit VendorID (37..39).
	want := hexb(t, `01 01 02 24 | 00 02 c9 03 00 00 12 34 | 00 02 c9 03 00 00 12 34 | 00 02 c9 03 00 00 12 35
		00 08 | c7 38 | 00 00 00 a1 | 05 | 00 02 c9`, 0)
	ni := NodeInfo{1, 1, NodeTypeSwitch, 36, 0x0002c90300001234, 0x0002c90300001234, 0x0002c90300001235, 8, 0xC738, 0xA1, 5, 0x0002C9}
	got := make([]byte, NodeInfoLen)
	if err := ni.MarshalTo(got); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "NodeInfo", got, want)
	var back NodeInfo
	if err := back.Unmarshal(want); err != nil || back != ni {
		t.Fatalf("Unmarshal = %+v, %v", back, err)
	}
	ni.VendorID = 1 << 24
	if err := ni.MarshalTo(got); err == nil {
		t.Fatal("25-bit VendorID accepted")
	}
}

// testPortInfo has a distinct value in nearly every field so a misplaced bit
// shows up in the vector below.
var testPortInfo = PortInfo{
	MKey: 0x0102030405060708, GIDPrefix: 0xFE80000000000000, LID: 0x12, MasterSMLID: 1,
	CapabilityMask: 0x0251084A, DiagCode: 4, MKeyLeasePeriod: 15, LocalPortNum: 3,
	LinkWidthEnabled: 3, LinkWidthSupported: 3, LinkWidthActive: 2,
	LinkSpeedSupported: 7, PortState: PortStateActive, PortPhysicalState: PhysStateLinkUp, LinkDownDefaultState: 2,
	MKeyProtectBits: 2, LMC: 3, LinkSpeedActive: 4, LinkSpeedEnabled: 7,
	NeighborMTU: 5, MasterSMSL: 1, VLCap: 4, InitType: 0,
	VLHighLimit: 8, VLArbitrationHighCap: 8, VLArbitrationLowCap: 8, InitTypeReply: 0, MTUCap: 5,
	VLStallCount: 7, HOQLife: 0x13, OperationalVLs: 4,
	PartitionEnforcementInbound: true, PartitionEnforcementOutbound: true, FilterRawOutbound: true,
	MKeyViolations: 1, PKeyViolations: 2, QKeyViolations: 3, GUIDCap: 32,
	ClientReregister: true, SubnetTimeOut: 0x12, RespTimeValue: 0x10, LocalPhyErrors: 8, OverrunErrors: 8,
	MaxCreditHint: 0x100, LinkRoundTripLatency: 0xABCDEF, CapabilityMask2: 4,
	LinkSpeedExtActive: 1, LinkSpeedExtSupported: 3, LinkSpeedExtEnabled: 0x1E,
}

func TestPortInfoVector(t *testing.T) {
	// Hand-packed from IBA table 145 byte by byte:
	//	32: LinkSpeedSupported 7 | PortState 4           = 74
	//	33: PhysState 5 | LinkDownDefault 2               = 52
	//	34: MKeyProtect 2 (bits 7-6) | rsvd | LMC 3       = 83
	//	35: LinkSpeedActive 4 | LinkSpeedEnabled 7        = 47
	//	36: NeighborMTU 5 | MasterSMSL 1                  = 51
	//	37: VLCap 4 | InitType 0                          = 40
	//	41: InitTypeReply 0 | MTUCap 5                    = 05
	//	42: VLStallCount 7 (7-5) | HOQLife 0x13           = f3
	//	43: OpVLs 4 | PEIn 1 | PEOut 1 | FRIn 0 | FROut 1 = 4d
	//	51: ClientRereg 1 | McastSupp 0 | SubnetTO 0x12   = 92
	//	53: LocalPhyErrors 8 | OverrunErrors 8            = 88
	//	56: reserved, 57..59 LinkRoundTripLatency
	//	62: ExtActive 1 | ExtSupported 3 = 13; 63: rsvd | ExtEnabled 0x1e
	want := hexb(t, `
		01 02 03 04 05 06 07 08 | fe 80 00 00 00 00 00 00
		00 12 | 00 01 | 02 51 08 4a | 00 04 | 00 0f | 03 03 03 02
		74 52 83 47 51 40 08 08 | 08 05 f3 4d | 00 01 00 02
		00 03 | 20 | 92 | 10 | 88 | 01 00 | 00 ab cd ef | 00 04 | 13 | 1e`, 0)
	got := make([]byte, PortInfoLen)
	for i := range got {
		got[i] = 0xFF // reserved bits must be cleared
	}
	if err := testPortInfo.MarshalTo(got); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "PortInfo", got, want)
	var back PortInfo
	if err := back.Unmarshal(want); err != nil || back != testPortInfo {
		t.Fatalf("Unmarshal:\n got %+v\nwant %+v (%v)", back, testPortInfo, err)
	}
}

func TestPortInfoRangeErrors(t *testing.T) {
	tests := []struct {
		name string
		set  func(p *PortInfo)
	}{
		{"LMC", func(p *PortInfo) { p.LMC = 8 }},
		{"PortState", func(p *PortInfo) { p.PortState = 16 }},
		{"MKeyProtectBits", func(p *PortInfo) { p.MKeyProtectBits = 4 }},
		{"HOQLife", func(p *PortInfo) { p.HOQLife = 32 }},
		{"VLStallCount", func(p *PortInfo) { p.VLStallCount = 8 }},
		{"LinkRoundTripLatency", func(p *PortInfo) { p.LinkRoundTripLatency = 1 << 24 }},
		{"LinkSpeedExtEnabled", func(p *PortInfo) { p.LinkSpeedExtEnabled = 32 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testPortInfo
			tc.set(&p)
			if err := p.MarshalTo(make([]byte, 64)); err == nil {
				t.Fatal("out-of-range value accepted")
			}
		})
	}
	if err := testPortInfo.MarshalTo(make([]byte, 63)); err == nil {
		t.Fatal("short buffer accepted")
	}
	var p PortInfo
	if err := p.Unmarshal(make([]byte, 63)); err == nil {
		t.Fatal("short input accepted")
	}
}

func TestSMPAttrRoundTrip(t *testing.T) {
	s, _ := NewDRSet(0, 3, []uint8{1}, nil)
	if err := s.SetAttr(&testPortInfo); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Encode()
	d, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var pi PortInfo
	if err := d.Attr(&pi); err != nil || pi != testPortInfo {
		t.Fatalf("Attr: %+v %v", pi, err)
	}
	var ni NodeInfo
	if err := d.Attr(&ni); err == nil {
		t.Fatal("Attr accepted a NodeInfo out of a PortInfo SMP")
	}
}

func TestNodeDescription(t *testing.T) {
	b := make([]byte, 64)
	for i := range b {
		b[i] = 'x'
	}
	d := NodeDescription{"hostA mlx5_0"}
	if err := d.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	want := append([]byte("hostA mlx5_0"), make([]byte, 52)...)
	diffBytes(t, "NodeDescription", b, want)
	var back NodeDescription
	if err := back.Unmarshal(b); err != nil || back != d {
		t.Fatalf("Unmarshal %q %v", back.Text, err)
	}
	// 64 bytes with no NUL at all is a valid full-length description.
	full := make([]byte, 64)
	for i := range full {
		full[i] = 'a'
	}
	if err := back.Unmarshal(full); err != nil || len(back.Text) != 64 {
		t.Fatalf("full-length: %d %v", len(back.Text), err)
	}
	for _, bad := range []string{string(make([]byte, 65)), "a\x00b", "\xff"} {
		if err := (&NodeDescription{bad}).MarshalTo(b); err == nil {
			t.Errorf("MarshalTo(%q) accepted", bad)
		}
	}
}

func TestDataVLs(t *testing.T) {
	for code, want := range map[uint8]uint8{0: 0, 1: 1, 2: 2, 3: 4, 4: 8, 5: 15, 6: 0, 15: 0} {
		if got := DataVLs(code); got != want {
			t.Errorf("DataVLs(%d) = %d, want %d", code, got, want)
		}
	}
}

// TestPortInfoPack: MarshalTo's byte-at-a-time path writes what the
// field-by-field writer does, for values at both ends of every field.
func TestPortInfoPack(t *testing.T) {
	ones := bytes.Repeat([]byte{0xFF}, PortInfoLen)
	var max PortInfo // every field at its widest value
	if err := max.Unmarshal(ones); err != nil {
		t.Fatal(err)
	}
	alt := make([]byte, PortInfoLen) // 0xAA 0x55 ...: neighbouring bits differ
	for i := range alt {
		alt[i] = 0xAA >> (i % 2)
	}
	var mixed PortInfo
	if err := mixed.Unmarshal(alt); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pi   PortInfo
	}{
		{"zero", PortInfo{}},
		{"test vector", testPortInfo},
		{"every field at its widest", max},
		{"alternating bits", mixed},
		{"a state Set", PortInfo{LID: 7, PortState: PortStateArmed, LinkWidthEnabled: 2, OperationalVLs: 1, ClientReregister: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.pi.fits() {
				t.Fatalf("%+v does not fit", tc.pi)
			}
			checkPack(t, &tc.pi)
		})
	}
}

// checkPack fails t if pack and marshalFields write different bytes.
func checkPack(t *testing.T, pi *PortInfo) {
	t.Helper()
	var got [PortInfoLen]byte
	for i := range got {
		got[i] = 0x5A // pack must write every byte
	}
	pi.pack(&got)
	want := make([]byte, PortInfoLen)
	if err := pi.marshalFields(want); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "PortInfo pack", got[:], want)
}

// FuzzPortInfoPack: for any PortInfo read off the wire, MarshalTo's fast
// path and the field-by-field writer agree.
func FuzzPortInfoPack(f *testing.F) {
	attrSeed(f, &testPortInfo, PortInfoLen)
	f.Fuzz(func(t *testing.T, b []byte) {
		var pi PortInfo
		if pi.Unmarshal(b) != nil {
			return
		}
		checkPack(t, &pi)
	})
}

// unmarshalFields is the field-by-field reader the spec's table reads
// as: Unmarshal must agree with it.
func (p *PortInfo) unmarshalFields(b []byte) error {
	if err := need("PortInfo", b, PortInfoLen); err != nil {
		return err
	}
	g := func(off, width int) uint64 { return getBits(b, off, width) }
	*p = PortInfo{
		MKey:                                g(0, 64),
		GIDPrefix:                           g(64, 64),
		LID:                                 uint16(g(128, 16)),
		MasterSMLID:                         uint16(g(144, 16)),
		CapabilityMask:                      uint32(g(160, 32)),
		DiagCode:                            uint16(g(192, 16)),
		MKeyLeasePeriod:                     uint16(g(208, 16)),
		LocalPortNum:                        uint8(g(224, 8)),
		LinkWidthEnabled:                    uint8(g(232, 8)),
		LinkWidthSupported:                  uint8(g(240, 8)),
		LinkWidthActive:                     uint8(g(248, 8)),
		LinkSpeedSupported:                  uint8(g(256, 4)),
		PortState:                           uint8(g(260, 4)),
		PortPhysicalState:                   uint8(g(264, 4)),
		LinkDownDefaultState:                uint8(g(268, 4)),
		MKeyProtectBits:                     uint8(g(272, 2)),
		LMC:                                 uint8(g(277, 3)),
		LinkSpeedActive:                     uint8(g(280, 4)),
		LinkSpeedEnabled:                    uint8(g(284, 4)),
		NeighborMTU:                         uint8(g(288, 4)),
		MasterSMSL:                          uint8(g(292, 4)),
		VLCap:                               uint8(g(296, 4)),
		InitType:                            uint8(g(300, 4)),
		VLHighLimit:                         uint8(g(304, 8)),
		VLArbitrationHighCap:                uint8(g(312, 8)),
		VLArbitrationLowCap:                 uint8(g(320, 8)),
		InitTypeReply:                       uint8(g(328, 4)),
		MTUCap:                              uint8(g(332, 4)),
		VLStallCount:                        uint8(g(336, 3)),
		HOQLife:                             uint8(g(339, 5)),
		OperationalVLs:                      uint8(g(344, 4)),
		PartitionEnforcementInbound:         g(348, 1) == 1,
		PartitionEnforcementOutbound:        g(349, 1) == 1,
		FilterRawInbound:                    g(350, 1) == 1,
		FilterRawOutbound:                   g(351, 1) == 1,
		MKeyViolations:                      uint16(g(352, 16)),
		PKeyViolations:                      uint16(g(368, 16)),
		QKeyViolations:                      uint16(g(384, 16)),
		GUIDCap:                             uint8(g(400, 8)),
		ClientReregister:                    g(408, 1) == 1,
		MulticastPKeyTrapSuppressionEnabled: uint8(g(409, 2)),
		SubnetTimeOut:                       uint8(g(411, 5)),
		RespTimeValue:                       uint8(g(419, 5)),
		LocalPhyErrors:                      uint8(g(424, 4)),
		OverrunErrors:                       uint8(g(428, 4)),
		MaxCreditHint:                       uint16(g(432, 16)),
		LinkRoundTripLatency:                uint32(g(456, 24)),
		CapabilityMask2:                     uint16(g(480, 16)),
		LinkSpeedExtActive:                  uint8(g(496, 4)),
		LinkSpeedExtSupported:               uint8(g(500, 4)),
		LinkSpeedExtEnabled:                 uint8(g(507, 5)),
	}
	return nil
}

// FuzzPortInfoUnmarshal: Unmarshal reads what the field-by-field reader
// does, from any 64 bytes.
func FuzzPortInfoUnmarshal(f *testing.F) {
	attrSeed(f, &testPortInfo, PortInfoLen)
	f.Add(bytes.Repeat([]byte{0xFF}, PortInfoLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want PortInfo
		errGot, errWant := got.Unmarshal(b), want.unmarshalFields(b)
		if (errGot != nil) != (errWant != nil) || got != want {
			t.Fatalf("Unmarshal(% x):\n got %+v (%v)\nwant %+v (%v)", b, got, errGot, want, errWant)
		}
	})
}

func BenchmarkPortInfoMarshal(b *testing.B) {
	buf := make([]byte, PortInfoLen)
	for range b.N {
		if err := testPortInfo.MarshalTo(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPortInfoUnmarshal(b *testing.B) {
	buf := make([]byte, PortInfoLen)
	if err := testPortInfo.MarshalTo(buf); err != nil {
		b.Fatal(err)
	}
	var pi PortInfo
	for range b.N {
		if err := pi.Unmarshal(buf); err != nil {
			b.Fatal(err)
		}
	}
}
