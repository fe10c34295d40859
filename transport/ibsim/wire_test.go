package ibsim

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

// The expected bytes are those of a little-endian host (amd64, arm64),
// where the Debian ibsim runs; ibsim's control messages use host order.
func littleEndianOnly(t testing.TB) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("expected bytes are for little-endian hosts")
	}
}

// unhex parses hex with spaces and '|' as separators.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pad(b []byte, n int) []byte { return append(b, make([]byte, n-len(b))...) }

func TestCtlMarshal(t *testing.T) {
	littleEndianOnly(t)
	ci := ClientInfo{ID: 0x00400001, QP: 0, IsSM: true, NodeID: "h1"}
	var pl [ClientInfoLen]byte
	if err := ci.MarshalTo(pl[:]); err != nil {
		t.Fatal(err)
	}
	wantPL := pad(unhex(t, "01004000 | 00000000 | 01000000 | 6831"), ClientInfoLen)
	if !bytes.Equal(pl[:], wantPL) {
		t.Errorf("client_info\n got %x\nwant %x", pl, wantPL)
	}

	tests := []struct {
		name string
		c    Ctl
		want []byte
	}{
		{"CONNECT", newCtl(0, CtlConnect, pl[:]),
			append(unhex(t, "efbeadde 00000000 01000000 2c000000"), pad(wantPL, CtlDataLen)...)},
		{"DISCONNECT slot 3", newCtl(3, CtlDisconnect, nil),
			pad(unhex(t, "efbeadde 03000000 02000000 00000000"), CtlLen)},
		{"GET_PORTINFO own port", newCtl(9, CtlGetPortInfo, []byte{0}),
			pad(unhex(t, "efbeadde 09000000 08000000 01000000 00"), CtlLen)},
		{"SET_ISSM 1", newCtl(1, CtlSetIsSM, issmPayload(true)),
			pad(unhex(t, "efbeadde 01000000 09000000 04000000 01000000"), CtlLen)},
		{"SET_ISSM 0", newCtl(1, CtlSetIsSM, issmPayload(false)),
			pad(unhex(t, "efbeadde 01000000 09000000 04000000 00000000"), CtlLen)},
		{"GET_PKEYS", newCtl(2, CtlGetPKeys, nil),
			pad(unhex(t, "efbeadde 02000000 0a000000 00000000"), CtlLen)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b [CtlLen]byte
			if err := tc.c.MarshalTo(b[:]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b[:], tc.want) {
				t.Errorf("\n got %x\nwant %x", b, tc.want)
			}
			var back Ctl
			if err := back.Unmarshal(b[:]); err != nil || back != tc.c {
				t.Errorf("round trip: %+v, %v", back, err)
			}
		})
	}
	if err := (&Ctl{}).MarshalTo(make([]byte, CtlLen-1)); err == nil {
		t.Error("MarshalTo into 79 bytes succeeded")
	}
}

func TestCtlUnmarshal(t *testing.T) {
	littleEndianOnly(t)
	// A CONNECT reply as ibsim sends it: slot 2, canonical node id, the
	// rest of our request echoed.
	reply := append(unhex(t, "efbeadde 00000000 01000000 2c000000"),
		pad(append(unhex(t, "02000000 00000000 01000000"), "Hca1"...), CtlDataLen)...)
	var c Ctl
	if err := c.Unmarshal(reply); err != nil {
		t.Fatal(err)
	}
	if c.Type != CtlConnect || c.ClientID != 0 || c.Len != ClientInfoLen {
		t.Errorf("header %+v", c)
	}
	var ci ClientInfo
	if err := ci.Unmarshal(c.Data[:]); err != nil {
		t.Fatal(err)
	}
	if want := (ClientInfo{ID: 2, IsSM: true, NodeID: "Hca1"}); ci != want {
		t.Errorf("client_info %+v, want %+v", ci, want)
	}

	bad := []struct {
		name string
		b    []byte
		want string
	}{
		{"short", reply[:79], "79 bytes"},
		{"long", append(append([]byte{}, reply...), 0), "81 bytes"},
		{"bad magic", append(unhex(t, "efbeaddf"), reply[4:]...), "magic"},
	}
	for _, tc := range bad {
		if err := c.Unmarshal(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestClientInfoNodeID(t *testing.T) {
	littleEndianOnly(t)
	b := make([]byte, ClientInfoLen)
	for i := range b {
		b[i] = 0xAA // MarshalTo must clear what the name does not cover
	}
	ok := ClientInfo{ID: 7, NodeID: strings.Repeat("n", NodeIDLen-1)}
	if err := ok.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	if b[ClientInfoLen-1] != 0 || b[8] != 0 {
		t.Errorf("31-byte name not NUL-terminated / issm not 0: %x", b)
	}
	for _, id := range []string{strings.Repeat("n", NodeIDLen), "a\x00b"} {
		if err := (&ClientInfo{NodeID: id}).MarshalTo(b); err == nil {
			t.Errorf("node id %q accepted", id)
		}
	}
	// A reply whose name fills all 32 bytes has no NUL; take all of it.
	full := pad(unhex(t, "00000000 00000000 00000000"), 12)
	full = append(full, strings.Repeat("x", NodeIDLen)...)
	var ci ClientInfo
	if err := ci.Unmarshal(full); err != nil || len(ci.NodeID) != NodeIDLen {
		t.Errorf("unterminated name: %q, %v", ci.NodeID, err)
	}
	if err := ci.Unmarshal(full[:ClientInfoLen-1]); err == nil {
		t.Error("43-byte client_info accepted")
	}
}

func TestRequest(t *testing.T) {
	mad := make([]byte, MADLen)
	for i := range mad {
		mad[i] = byte(i)
	}
	tests := []struct {
		name string
		h    Header
		mad  []byte
		head string
	}{
		{"DR SMP", Header{DLID: 0xFFFF, SLID: 0xFFFF, Length: 256}, mad,
			"ffff0000 ffff0000 00000000 00000000 00000000 00000000 0000000000000100"},
		{"LID-routed, ibsim fills SLID", Header{DLID: 0x1234, SLID: 0, Length: 256}, mad,
			"12340000 00000000 00000000 00000000 00000000 00000000 0000000000000100"},
		{"SA response to QP1", Header{DLID: 4, SLID: 1, DQP: 1, SQP: 1, Length: 256}, mad,
			"00040000 00010000 00000001 00000001 00000000 00000000 0000000000000100"},
		{"bounce", Header{DLID: 0xFFFF, SLID: 0xFFFF, Status: StatusBounced, Length: 256}, mad,
			"ffff0000 ffff0000 00000000 00000000 0000006e 00000000 0000000000000100"},
		{"short MAD padded", Header{DLID: 1, DQP: 0x01020304, SQP: 0x0a0b0c0d, Length: 24}, mad[:24],
			"00010000 00000000 01020304 0a0b0c0d 00000000 00000000 0000000000000018"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			littleEndianOnly(t)
			b := bytes.Repeat([]byte{0xEE}, RequestLen)
			if err := MarshalRequest(b, &tc.h, tc.mad); err != nil {
				t.Fatal(err)
			}
			want := append(unhex(t, tc.head), pad(append([]byte{}, tc.mad...), MADLen)...)
			if !bytes.Equal(b, want) {
				t.Errorf("\n got %x\nwant %x", b, want)
			}
			h, m, err := UnmarshalRequest(b)
			if err != nil || h != tc.h || !bytes.Equal(m, want[32:]) {
				t.Errorf("round trip %+v, %v", h, err)
			}
		})
	}
	if err := MarshalRequest(make([]byte, RequestLen), &Header{}, make([]byte, MADLen+1)); err == nil || !strings.Contains(err.Error(), "no RMPP") {
		t.Errorf("257-byte MAD: err = %v", err)
	}
	if err := MarshalRequest(make([]byte, RequestLen-1), &Header{}, nil); err == nil {
		t.Error("287-byte buffer accepted")
	}
	for _, n := range []int{0, 100, RequestLen - 1, RequestLen + 1} {
		if _, _, err := UnmarshalRequest(make([]byte, n)); err == nil {
			t.Errorf("%d-byte datagram accepted", n)
		}
	}
}

func TestReplyPayloads(t *testing.T) {
	littleEndianOnly(t)
	var ps PortState
	if err := ps.Unmarshal(pad(unhex(t, "0500 04"), CtlDataLen)); err != nil || ps != (PortState{LID: 5, State: 4}) {
		t.Errorf("GET_PORT: %+v, %v", ps, err)
	}
	var v Vendor
	b := pad(unhex(t, "c9020000 0d100000 a1000000 00000000 0100000000000000"), CtlDataLen)
	if err := v.Unmarshal(b); err != nil || v != (Vendor{VendorID: 0x2c9, DeviceID: 0x100d, Revision: 0xa1, FirmwareVersion: 1}) {
		t.Errorf("GET_VENDOR: %+v, %v", v, err)
	}
	// Prefix in network order, node GUID 0x100000 in host order.
	var g GID
	if err := g.Unmarshal(pad(unhex(t, "fe80000000000000 0000100000000000"), CtlDataLen)); err != nil ||
		g != (GID{Prefix: 0xfe80000000000000, NodeGUID: 0x100000}) {
		t.Errorf("GET_GID: %+#v, %v", g, err)
	}
	k, err := PKeys(pad(unhex(t, "ffff 8001 0000 7fff"), CtlDataLen))
	if err != nil || len(k) != 3 || k[0] != 0xffff || k[1] != 0x8001 || k[2] != 0x7fff {
		t.Errorf("GET_PKEYS: %#x, %v", k, err)
	}
	for name, f := range map[string]func([]byte) error{
		"GET_PORT": ps.Unmarshal, "GET_VENDOR": v.Unmarshal, "GET_GID": g.Unmarshal,
		"GET_PKEYS": func(b []byte) error { _, err := PKeys(b); return err },
	} {
		if err := f(make([]byte, 2)); err == nil {
			t.Errorf("%s: 2-byte reply accepted", name)
		}
	}
}

func TestCtlTypeString(t *testing.T) {
	for ty, want := range map[CtlType]string{CtlConnect: "CONNECT", CtlGetPKeys: "GET_PKEYS", CtlError: "ERROR", 99: "CtlType(99)"} {
		if ty.String() != want {
			t.Errorf("%d: %q, want %q", uint32(ty), ty.String(), want)
		}
	}
}

func TestAbstractAddress(t *testing.T) {
	// Go maps '@' to the leading NUL; the explicit trailing NUL is part of
	// ibsim's names (sizeof = 2 + 1 + len + 1).
	if a := abs("sim:ctl"); a.Name != "@sim:ctl\x00" || a.Net != "unixgram" {
		t.Errorf("abs = %+q", a)
	}
}
