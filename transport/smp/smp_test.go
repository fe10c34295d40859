package smp

import (
	"errors"
	"testing"
)

// A DR SubnGet(NodeInfo) along 3 hops [1 3 2], laid out by hand from IBA
// 14.2.1.2 (figure 158):
//
//	0  01 81 01 01  BaseVersion 1, class 0x81 (DR), ClassVersion 1, Get
//	4  00 00        D=0, status 0
//	6  00 03        hop pointer 0, hop count 3
//	8  00..12345678 TID
//	16 00 11 00 00  AttrID NodeInfo, reserved
//	20 00 00 00 00  AttrMod 0
//	24 M_Key 0, 32 DrSLID FFFF, 34 DrDLID FFFF, 36..127 zero
//	128 InitialPath: [0] reserved, then 01 03 02
//	192 ReturnPath: zero
func drGetNodeInfoVector(t *testing.T) []byte {
	b := hexb(t, `
		01 81 01 01 | 00 00 | 00 03 | 00 00 00 00 12 34 56 78 | 00 11 00 00 | 00 00 00 00
		00 00 00 00 00 00 00 00 | ff ff | ff ff`, MADLen)
	copy(b[128:], []byte{0x00, 0x01, 0x03, 0x02})
	return b
}

func TestDRGetNodeInfoVector(t *testing.T) {
	want := drGetNodeInfoVector(t)
	s, err := NewDRGet(AttrNodeInfo, 0, []uint8{1, 3, 2})
	if err != nil {
		t.Fatal(err)
	}
	s.TID = 0x12345678
	got := make([]byte, MADLen)
	for i := range got {
		got[i] = 0xEE // EncodeTo must overwrite reserved bytes too
	}
	if err := s.EncodeTo(got); err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "DR Get NodeInfo", got, want)

	d, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if *d != *s {
		t.Fatalf("decode mismatch:\n got %+v\nwant %+v", d, s)
	}
	if !d.IsDR() || !d.Outbound() || d.IsResponse() {
		t.Fatalf("IsDR/Outbound/IsResponse = %v/%v/%v", d.IsDR(), d.Outbound(), d.IsResponse())
	}
	if p := d.Path(); len(p) != 3 || p[0] != 1 || p[1] != 3 || p[2] != 2 {
		t.Fatalf("Path() = %v", p)
	}
}

func TestLIDRoutedLayout(t *testing.T) {
	// LID-routed SubnSet(PortInfo) port 5: full 16-bit status, ClassSpecific
	// reserved, no DR fields; data at 64.
	s, err := NewLIDSet(AttrPortInfo, 5, []byte{0xAA, 0xBB})
	if err != nil {
		t.Fatal(err)
	}
	s.TID = 0x0102030405060708
	s.MKey = 0x1122334455667788
	s.Status = 0x801C
	// DR-only fields must not leak into a LID-routed encoding.
	s.HopCount, s.DrSLID, s.InitialPath[1] = 3, 7, 9
	want := hexb(t, `01 01 01 02 | 80 1c | 00 00 | 01 02 03 04 05 06 07 08 | 00 15 00 00 | 00 00 00 05
		11 22 33 44 55 66 77 88`, MADLen)
	want[64], want[65] = 0xAA, 0xBB
	got, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	diffBytes(t, "LID Set PortInfo", got, want)
}

func TestDecodeErrors(t *testing.T) {
	good := drGetNodeInfoVector(t)
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:255] }},
		{"base version", func(b []byte) []byte { b[0] = 2; return b }},
		{"class", func(b []byte) []byte { b[1] = 0x03; return b }},
		{"class version", func(b []byte) []byte { b[2] = 2; return b }},
		{"hop count 64", func(b []byte) []byte { b[7] = 64; return b }},
		{"hop pointer beyond", func(b []byte) []byte { b[6] = 5; return b }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(append([]byte(nil), good...))
			if _, err := Decode(b); err == nil {
				t.Fatal("Decode accepted invalid input")
			}
		})
	}
	if _, err := Decode(good[:10]); !errors.Is(err, ErrShort) {
		t.Fatalf("short input: err %v, want ErrShort", err)
	}
}

func TestEncodeErrors(t *testing.T) {
	s, _ := NewDRGet(AttrNodeInfo, 0, nil)
	if err := s.EncodeTo(make([]byte, 100)); err == nil {
		t.Error("short buffer accepted")
	}
	s.Status = 0x8000
	if err := s.EncodeTo(make([]byte, MADLen)); err == nil {
		t.Error("DR status with bit 15 accepted")
	}
	s.Status = 0
	s.HopCount = 64
	if err := s.EncodeTo(make([]byte, MADLen)); err == nil {
		t.Error("hop count 64 accepted")
	}
	if _, err := NewDRGet(AttrNodeInfo, 0, make([]uint8, 64)); err == nil {
		t.Error("64-hop path accepted")
	}
	s.MgmtClass = ClassSA
	s.HopCount = 0
	if err := s.EncodeTo(make([]byte, MADLen)); err == nil {
		t.Error("SA class accepted as SMP")
	}
}

// fabricNode is a toy node for walking DR SMPs through DRReceive/DRSend.
type fabricNode struct {
	name     string
	isSwitch bool
	nports   uint8
	links    map[uint8][2]int // local port -> (peer node index, peer port)
}

// TestDRWalk sends a DR Get along SM(CA A, port 1) -> S1 -> S2 -> CA D and
// back, checking every hop's action, hop pointer and the ReturnPath that the
// spec requires (the arrival ports).
func TestDRWalk(t *testing.T) {
	nodes := []fabricNode{
		{"A", false, 2, map[uint8][2]int{1: {1, 4}}},
		{"S1", true, 8, map[uint8][2]int{4: {0, 1}, 3: {2, 7}}},
		{"S2", true, 8, map[uint8][2]int{7: {1, 3}, 2: {3, 1}}},
		{"D", false, 1, map[uint8][2]int{1: {2, 2}}},
	}
	s, err := NewDRGet(AttrNodeInfo, 0, []uint8{1, 3, 2})
	if err != nil {
		t.Fatal(err)
	}
	act, out := s.DRSend(false)
	if act != DRForward || out != 1 || s.HopPointer != 1 {
		t.Fatalf("originator: %v out %d hp %d", act, out, s.HopPointer)
	}
	cur, trail := 0, []string{"A"}
	for steps := 0; ; steps++ {
		if steps > 20 {
			t.Fatal("DR walk does not terminate")
		}
		peer, ok := nodes[cur].links[out]
		if !ok {
			t.Fatalf("%s has no link on port %d", nodes[cur].name, out)
		}
		cur = peer[0]
		n := nodes[cur]
		trail = append(trail, n.name)
		switch act := s.DRReceive(uint8(peer[1]), n.isSwitch, n.nports); act {
		case DRForward:
			if _, out = s.DRSend(n.isSwitch); out == 0 {
				t.Fatalf("%s: forward without a port", n.name)
			}
		case DRLocal:
			if s.Outbound() {
				if n.name != "D" || s.HopPointer != 4 {
					t.Fatalf("request delivered at %s hp %d", n.name, s.HopPointer)
				}
				s.TurnAround(0)
				var a DRAction
				if a, out = s.DRSend(n.isSwitch); a != DRForward || out != 1 {
					t.Fatalf("responder send: %v %d", a, out)
				}
				continue
			}
			if n.name != "A" || s.HopPointer != 0 || !s.Direction || s.Method != MethodGetResp {
				t.Fatalf("response delivered at %s hp %d D %v method %#x", n.name, s.HopPointer, s.Direction, s.Method)
			}
			want := "A S1 S2 D S2 S1 A"
			if got := join(trail); got != want {
				t.Fatalf("trail %s, want %s", got, want)
			}
			// ReturnPath holds the arrival ports S1:4, S2:7, D:1.
			if rp := s.ReturnPath[1:4]; rp[0] != 4 || rp[1] != 7 || rp[2] != 1 {
				t.Fatalf("ReturnPath %v", rp)
			}
			return
		default:
			t.Fatalf("%s: unexpected %v (hp %d)", n.name, act, s.HopPointer)
		}
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

func TestDRSelfAndDiscards(t *testing.T) {
	// Hop count 0: the SMP addresses the originator itself.
	s, _ := NewDRGet(AttrNodeInfo, 0, nil)
	if act, _ := s.DRSend(false); act != DRLocal || s.HopPointer != 1 {
		t.Fatalf("self send: %v hp %d", act, s.HopPointer)
	}
	s.TurnAround(0)
	if act, _ := s.DRSend(false); act != DRLocal || s.HopPointer != 0 {
		t.Fatalf("self response: %v hp %d", act, s.HopPointer)
	}

	tests := []struct {
		name  string
		setup func(s *SMP)
		in    uint8
		sw    bool
		nport uint8
	}{
		{"CA as intermediate hop", func(s *SMP) { s.HopPointer = 1 }, 1, false, 2},
		{"sender did not advance", func(s *SMP) { s.HopPointer = 0 }, 1, true, 8},
		{"next port beyond switch", func(s *SMP) { s.HopPointer = 1; s.InitialPath[2] = 9 }, 1, true, 8},
		{"next port 0", func(s *SMP) { s.HopPointer = 1; s.InitialPath[2] = 0 }, 1, true, 8},
		{"responder did not decrement", func(s *SMP) { s.Direction = true; s.HopPointer = 4 }, 1, true, 8},
		{"LID segment at a CA", func(s *SMP) { s.HopPointer = 3; s.DrDLID = 5 }, 1, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewDRGet(AttrNodeInfo, 0, []uint8{1, 3, 2})
			tc.setup(s)
			if act := s.DRReceive(tc.in, tc.sw, tc.nport); act != DRDiscard {
				t.Fatalf("got %v, want discard", act)
			}
		})
	}
	// Combined route: the directed part ends at a switch and continues by LID.
	s, _ = NewDRGet(AttrNodeInfo, 0, []uint8{1, 3})
	s.DrDLID = 42
	s.HopPointer = 2
	if act := s.DRReceive(7, true, 8); act != DRLIDRoute || s.HopPointer != 3 {
		t.Fatalf("combined route: %v hp %d", act, s.HopPointer)
	}
}
