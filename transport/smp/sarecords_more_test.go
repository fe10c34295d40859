package smp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// unhex reads a byte string written with spaces between groups.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSARecordsMoreBytes pins each record's layout to the byte offsets of
// IBA 15.2.5 (and 13.4.8.3 for InformInfo): every value is distinct so a
// field at the wrong offset shows.
func TestSARecordsMoreBytes(t *testing.T) {
	svc := ServiceRecord{ID: 0x1122334455667788, PKey: 0xFFFF, Lease: 0x0A0B0C0D,
		Data16: [8]uint16{0x0102, 0, 0, 0, 0, 0, 0, 0x0F10}, Data32: [4]uint32{0, 0, 0, 0xC0C1C2C3},
		Data64: [2]uint64{0, 0xD0D1D2D3D4D5D6D7}}
	svc.GID[0], svc.GID[15] = 0xFE, 0x01
	svc.Key[0], svc.Key[15] = 0xAA, 0xBB
	copy(svc.Name[:], "svc")
	svc.Data8[0], svc.Data8[15] = 0x81, 0x8F
	svcWant := make([]byte, ServiceRecordLen)
	copy(svcWant, unhex(t, `1122334455667788 FE000000000000000000000000000001 FFFF 0000 0A0B0C0D
		AA0000000000000000000000000000BB 737663`))
	svcWant[112], svcWant[127] = 0x81, 0x8F
	copy(svcWant[128:], unhex(t, "0102"))
	copy(svcWant[142:], unhex(t, "0F10"))
	copy(svcWant[156:], unhex(t, "C0C1C2C3"))
	copy(svcWant[168:], unhex(t, "D0D1D2D3D4D5D6D7"))

	ii := InformInfo{LIDRangeBegin: 0xFFFF, LIDRangeEnd: 0x0102, IsGeneric: true, Subscribe: true, Type: 0x0003,
		TrapNumber: 0x0040, QPN: 0x123456, RespTimeValue: 0x13, ProducerType: 0x040506}
	ii.GID[0] = 0xFE
	iiWant := unhex(t, `FE000000000000000000000000000000 FFFF 0102 0000 01 01 0003 0040 12345613 00040506`)
	iir := InformInfoRecord{Enum: 0x0203, Info: ii}
	iir.SubscriberGID[15] = 0x77
	iirWant := append(unhex(t, `00000000000000000000000000000077 0203 000000000000`), iiWant...)

	gir := GUIDInfoRecord{LID: 0x0102, BlockNum: 3, GUIDs: [8]uint64{0x1011121314151617, 7: 0x8081828384858687}}
	girWant := make([]byte, GUIDInfoRecordLen)
	copy(girWant, unhex(t, "0102 03 0000000000 1011121314151617"))
	copy(girWant[64:], unhex(t, "8081828384858687"))

	lft := LFTRecord{LID: 0x0A0B, BlockNum: 0x0102}
	lft.Block[0], lft.Block[63] = 5, 0xFF
	lftWant := make([]byte, LFTRecordLen)
	copy(lftWant, unhex(t, "0A0B 0102 00000000 05"))
	lftWant[71] = 0xFF

	va := VLArbRecord{LID: 0x0304, OutPort: 7, BlockNum: 2}
	va.Block[0], va.Block[31] = VLArbEntry{VL: 1, Weight: 0x40}, VLArbEntry{VL: 0xF, Weight: 0xFF}
	vaWant := make([]byte, VLArbRecordLen)
	copy(vaWant, unhex(t, "0304 07 02 00000000 0140"))
	copy(vaWant[70:], unhex(t, "0FFF"))

	mpr := MultiPathRecord{RawTraffic: true, FlowLabel: 0x12345, HopLimit: 0x40, TClass: 0x11, Reversible: true, NumbPath: 0x05,
		PKey: 0xFFFF, QoSClass: 0xABC, SL: 0xD, MTUSelector: 2, MTU: 4, RateSelector: 1, Rate: 3, PacketLifeTimeSelector: 3,
		PacketLifeTime: 0x12, ServiceID: 0xA1B2C3D4E5F60718, IndependenceSelector: 2, SGIDCount: 1, DGIDCount: 1,
		GIDs: [][16]byte{{0: 0xFE, 15: 1}, {0: 0xFE, 15: 2}}}
	mprWant := unhex(t, `81234540 11 85 FFFF ABCD 84 43 D2 A1 80 01 01 B2C3D4E5F60718
		FE000000000000000000000000000001 FE000000000000000000000000000002`)

	for _, c := range []struct {
		a, a2 Attribute
		want  []byte
	}{
		{&LinkRecord{FromLID: 0x0102, FromPort: 3, ToPort: 4, ToLID: 0x0506}, new(LinkRecord), unhex(t, "0102 03 04 0506 0000")},
		{&gir, new(GUIDInfoRecord), girWant},
		{&SwitchInfoRecord{LID: 0x0203, SwitchInfo: SwitchInfo{LinearFDBCap: 0xC000, LinearFDBTop: 0x0040, LifeTimeValue: 0x12, MulticastFDBTop: 0xC001}},
			new(SwitchInfoRecord), unhex(t, "0203 0000 C000 0000 0000 0040 00 00 00 90 0000 0000 00 00 C001")},
		{&lft, new(LFTRecord), lftWant},
		{&SL2VLRecord{LID: 0x0708, InPort: 1, OutPort: 2, Table: SL2VLTable{0, 1, 2, 3, 15: 0xE}}, new(SL2VLRecord),
			unhex(t, "0708 01 02 00000000 0123 0000 0000 000E")},
		{&va, new(VLArbRecord), vaWant},
		{&svc, new(ServiceRecord), svcWant},
		{&ii, new(InformInfo), iiWant},
		{&iir, new(InformInfoRecord), iirWant},
		{&mpr, new(MultiPathRecord), mprWant},
	} {
		b := make([]byte, len(c.want))
		if err := c.a.MarshalTo(b); err != nil {
			t.Fatalf("%T: %v", c.a, err)
		}
		if !bytes.Equal(b, c.want) {
			t.Errorf("%T bytes\n got %x\nwant %x", c.a, b, c.want)
		}
		if err := c.a2.Unmarshal(c.want); err != nil || !reflect.DeepEqual(c.a, c.a2) {
			t.Errorf("%T decode: %v\n got %+v\nwant %+v", c.a, err, c.a2, c.a)
		}
		if err := c.a2.Unmarshal(c.want[:len(c.want)-1]); err == nil && c.a.AttrID() != SAAttrMultiPathRecord {
			t.Errorf("%T accepted a record one byte short", c.a)
		}
	}
	if got := SARecordStride(InformInfoRecordLen); got != 8 {
		t.Errorf("InformInfoRecord stride %d words, want 8 (64 bytes)", got)
	}
}

func TestSARecordsMoreRefuse(t *testing.T) {
	b := make([]byte, 256)
	for _, c := range []struct {
		name string
		a    Attribute
	}{
		{"InformInfo QPN above 24 bits", &InformInfo{QPN: 1 << 24}},
		{"InformInfo RespTimeValue above 5 bits", &InformInfo{RespTimeValue: 32}},
		{"InformInfo ProducerType above 24 bits", &InformInfo{ProducerType: 1 << 24}},
		{"SL2VL VL above 4 bits", &SL2VLRecord{Table: SL2VLTable{16}}},
		{"VLArb VL above 4 bits", &VLArbRecord{Block: VLArbBlock{{VL: 16}}}},
		{"MultiPath counts disagree with the GIDs", &MultiPathRecord{SGIDCount: 2, GIDs: make([][16]byte, 1)}},
		{"MultiPath SL above 4 bits", &MultiPathRecord{SL: 16}},
	} {
		if err := c.a.MarshalTo(b); err == nil {
			t.Errorf("%s: encoded", c.name)
		}
	}
	// A MultiPathRecord naming more GIDs than the data holds is refused
	// with ErrShort, not read past the end.
	mad := make([]byte, SADataLen)
	mad[15], mad[16] = 8, 8
	var m MultiPathRecord
	if err := m.Unmarshal(mad); !errors.Is(err, ErrShort) {
		t.Errorf("16 GIDs in 200 bytes: err %v, want ErrShort", err)
	}
}
