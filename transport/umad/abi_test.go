package umad

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

// hexb parses space/|-separated hex bytes.
func hexb(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

func needLittleEndian(t *testing.T) {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("expected bytes are for a little-endian host (the header's first words are host order)")
	}
}

func diff(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || got[i] != want[i] {
			t.Fatalf("%s differs at byte %d (len got %d want %d)\n got % x\nwant % x", what, i, len(got), len(want), got, want)
		}
	}
}

func TestIoctlNumbers(t *testing.T) {
	// Values of the macros in rdma/rdma_user_ioctl.h as a C compiler
	// computes them on x86-64 (linux-libc-dev 6.1).
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"IB_USER_MAD_REGISTER_AGENT", ioctlRegisterAgent, 0xc01c1b01},
		{"IB_USER_MAD_UNREGISTER_AGENT", ioctlUnregisterAgent, 0x40041b02},
		{"IB_USER_MAD_ENABLE_PKEY", ioctlEnablePKey, 0x1b03},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

// wantHeader is struct ib_user_mad_hdr as gcc lays it out for the field
// values of fullHeader (dumped from a C program including
// rdma/ib_user_mad.h on x86-64).
const wantHeader = `44 33 22 11 6e 00 00 00 c8 00 00 00 03 00 00 00 40 01 00 00
	00 00 00 01 80 01 00 00 1a 2b 05 01 01 02 3f 20
	f0 f1 f2 f3 f4 f5 f6 f7 f8 f9 fa fb fc fd fe ff
	00 0a bc de 02 01 00 00 00 00 00 00`

func fullHeader() Header {
	h := Header{AgentID: 0x11223344, Status: 110, TimeoutMS: 200, Retries: 3, Length: 320,
		QPN: 1, QKey: 0x80010000, LID: 0x1a2b, SL: 5, PathBits: 1, GRHPresent: true, GIDIndex: 2,
		HopLimit: 63, TrafficClass: 0x20, FlowLabel: 0xabcde, PKeyIndex: 0x0102}
	for i := range h.GID {
		h.GID[i] = 0xf0 + byte(i)
	}
	return h
}

func TestHeaderBytes(t *testing.T) {
	needLittleEndian(t)
	h := fullHeader()
	got := make([]byte, HeaderLen)
	for i := range got {
		got[i] = 0xEE // reserved bytes must be cleared
	}
	if err := h.EncodeTo(got); err != nil {
		t.Fatal(err)
	}
	want := hexb(t, wantHeader)
	diff(t, "header", got, want)
	var back Header
	if err := back.Decode(want); err != nil || back != h {
		t.Fatalf("Decode = %+v, %v; want %+v", back, err, h)
	}
	if err := back.Decode(want[:HeaderLen-1]); err == nil {
		t.Fatal("63-byte header decoded")
	}
	if err := h.EncodeTo(got[:HeaderLen-1]); err == nil {
		t.Fatal("encoded into 63 bytes")
	}
}

func TestRegistrationBytes(t *testing.T) {
	needLittleEndian(t)
	// struct ib_user_mad_reg_req as gcc lays it out, with method_mask
	// longs set from the same method numbers.
	want := [numAgents]string{
		agentSMPLID: "00000000 a6000000 00000000 00000000 00000000 | 00 01 01 000000 00 | 00",
		agentSMPDR:  "00000000 a6000000 00000000 00000000 00000000 | 00 81 01 000000 00 | 00",
		agentSA:     "00000000 06003c00 00000000 00000000 00000000 | 01 03 02 000000 01 | 00",
	}
	reqs := agentRequests()
	for k, r := range reqs {
		diff(t, "registration", r.encode(), hexb(t, want[k]))
		back, err := decodeRegReq(r.encode())
		if err != nil || back != r {
			t.Fatalf("decodeRegReq = %+v, %v; want %+v", back, err, r)
		}
	}
	sa := reqs[agentSA].Methods
	for _, m := range []uint8{0x01, 0x02, 0x12, 0x13, 0x14, 0x15} {
		if !sa.Has(m) {
			t.Errorf("SA agent does not receive method %#02x", m)
		}
	}
	for _, m := range []uint8{0x81, 0x92, 0x05} {
		if sa.Has(m) {
			t.Errorf("SA agent registered for %#02x", m)
		}
	}
	var hi MethodMask
	hi.Set(0x7f, 0x40)
	if hi != (MethodMask{0, 1<<63 | 1}) || !hi.Has(0x7f) || hi.Has(0x3f) {
		t.Fatalf("method mask bits wrong: %x", hi)
	}
}
