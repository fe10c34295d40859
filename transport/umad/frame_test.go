package umad

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// mad returns a MAD of n bytes with the given class and method, TID and
// attribute, and a recognisable body.
func mad(n int, class, method uint8, tid uint64) []byte {
	b := make([]byte, n)
	b[0], b[1], b[3] = 1, class, method
	b[2] = 1
	if class == smp.ClassSA {
		b[2] = 2
	}
	binary.BigEndian.PutUint64(b[8:], tid)
	binary.BigEndian.PutUint16(b[16:], 0x0011)
	for i := 64; i < n; i++ {
		b[i] = byte(i)
	}
	return b
}

func TestEncodeSend(t *testing.T) {
	needLittleEndian(t)
	gid := [16]byte{0xfe, 0x80, 15: 0x01}
	tableResp := func(payload uint32, flags byte) []byte {
		m := mad(256, smp.ClassSA, smp.MethodGetTableResp, 0x1234)
		m[26] = 3<<3 | flags // RRespTime 3 must survive
		binary.BigEndian.PutUint32(m[32:], payload)
		return m
	}
	for _, c := range []struct {
		name string
		p    transport.Packet
		f    sendFields
		hdr  string // expected 64 header bytes
		n    int    // MAD bytes expected after the header
		rmpp string // expected MAD bytes 24..36 when set
	}{
		{
			name: "LID-routed SMP request: QP0, Q_Key 0, kernel timeout",
			p:    transport.Packet{DLID: 7, SL: 0, MAD: mad(256, smp.ClassSMPLID, smp.MethodGet, 0x42)},
			f:    sendFields{agent: 5, timeoutMS: 200},
			hdr: `05000000 00000000 c8000000 00000000 40010000 | 00000000 00000000 0007 00 00
				00 00 00 00 | 00000000000000000000000000000000 | 00000000 0000 000000000000`,
			n: 256,
		},
		{
			name: "directed-route SMP with DLID 0 goes to the permissive LID",
			p:    transport.Packet{MAD: mad(256, smp.ClassSMPDR, smp.MethodSet, 0x43)},
			f:    sendFields{agent: 6, timeoutMS: 1000, pkeyIndex: 1},
			hdr: `06000000 00000000 e8030000 00000000 40010000 | 00000000 00000000 ffff 00 00
				00 00 00 00 | 00000000000000000000000000000000 | 00000000 0100 000000000000`,
			n: 256,
		},
		{
			name: "SA response: QP1 with its Q_Key, no timeout, request's P_Key index and GRH",
			p:    transport.Packet{DLID: 0x1a, SL: 2, MAD: mad(256, smp.ClassSA, smp.MethodGetResp, 0x0001000000000099)},
			f: sendFields{agent: 9, reply: &reply{pkeyIndex: 3, grh: true, gid: gid, flowLabel: 0x12345,
				trafficClass: 0x40, hopLimit: 8}},
			hdr: `09000000 00000000 00000000 00000000 40010000 | 00000001 80010000 001a 02 00
				01 00 08 40 | fe800000000000000000000000000001 | 00012345 0300 000000000000`,
			n: 256,
		},
		{
			name: "single-segment GetTableResp: padding trimmed to PayloadLength, RMPP header for the kernel",
			p:    transport.Packet{DLID: 3, MAD: tableResp(0x54, 0)},
			f:    sendFields{agent: 9},
			hdr: `09000000 00000000 00000000 00000000 b8000000 | 00000001 80010000 0003 00 00
				00 00 00 00 | 00000000000000000000000000000000 | 00000000 0000 000000000000`,
			n:    36 + 0x54,
			rmpp: "01 01 1f 00 | 00000001 | 00000054",
		},
		{
			name: "empty GetTableResp: SA header only",
			p:    transport.Packet{DLID: 3, MAD: tableResp(20, 0)},
			f:    sendFields{agent: 9},
			hdr: `09000000 00000000 00000000 00000000 78000000 | 00000001 80010000 0003 00 00
				00 00 00 00 | 00000000000000000000000000000000 | 00000000 0000 000000000000`,
			n:    56,
			rmpp: "01 01 1f 00 | 00000001 | 00000014",
		},
		{
			name: "two-segment message written whole: 220 per segment minus padding",
			p: transport.Packet{DLID: 3, MAD: func() []byte {
				m := mad(56+320, smp.ClassSA, smp.MethodGetTableResp, 0x77)
				m[24], m[25], m[26] = 1, 1, 1 // caller left segment and length 0
				return m
			}()},
			f: sendFields{agent: 9},
			hdr: `09000000 00000000 00000000 00000000 b8010000 | 00000001 80010000 0003 00 00
				00 00 00 00 | 00000000000000000000000000000000 | 00000000 0000 000000000000`,
			n:    376,
			rmpp: "01 01 07 00 | 00000001 | 00000168", // 2*220 - (400-320)
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			orig := append([]byte(nil), c.p.MAD...)
			rec, err := encodeSend(nil, c.p, c.f)
			if err != nil {
				t.Fatal(err)
			}
			diff(t, "header", rec[:HeaderLen], hexb(t, c.hdr))
			if got := len(rec) - HeaderLen; got != c.n {
				t.Fatalf("MAD part is %d bytes, want %d", got, c.n)
			}
			body := rec[HeaderLen:]
			if c.rmpp != "" {
				diff(t, "RMPP header", body[24:36], hexb(t, c.rmpp))
				diff(t, "MAD header", body[:24], orig[:24])
				diff(t, "SA header and data", body[36:], orig[36:c.n])
			} else {
				diff(t, "MAD", body, orig)
			}
			diff(t, "caller's MAD (must not be modified)", c.p.MAD, orig)
		})
	}
}

func TestEncodeSendRejects(t *testing.T) {
	badPayload := mad(256, smp.ClassSA, smp.MethodGetTableResp, 1)
	binary.BigEndian.PutUint32(badPayload[32:], 221)
	tiny := mad(256, smp.ClassSA, smp.MethodGetTableResp, 1)
	binary.BigEndian.PutUint32(tiny[32:], 19)
	for _, c := range []struct {
		name, want string
		p          transport.Packet
	}{
		{"short MAD", "common header", transport.Packet{MAD: make([]byte, 23)}},
		{"perf class has no agent", "no agent", transport.Packet{MAD: mad(256, smp.ClassPerf, 1, 1)}},
		{"SMP not 256 bytes", "want 256", transport.Packet{MAD: mad(300, smp.ClassSMPLID, 1, 1)}},
		{"SA without RMPP not 256 bytes", "without RMPP", transport.Packet{MAD: mad(200, smp.ClassSA, smp.MethodGetResp, 1)}},
		{"SA shorter than its header", "header", transport.Packet{MAD: mad(50, smp.ClassSA, smp.MethodGetResp, 1)}},
		{"PayloadLength beyond the MAD", "PayloadLength 221", transport.Packet{MAD: badPayload}},
		{"PayloadLength without SA header", "PayloadLength 19", transport.Packet{MAD: tiny}},
		{"SL out of range", "SL 16", transport.Packet{SL: 16, MAD: mad(256, smp.ClassSMPLID, 1, 1)}},
		{"QP wider than 24 bits", "24 bits", transport.Packet{QP: 1 << 24, MAD: mad(256, smp.ClassSA, smp.MethodGetResp, 1)}},
	} {
		_, err := encodeSend(nil, c.p, sendFields{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

func TestIsResponse(t *testing.T) {
	for m, want := range map[uint8]bool{0x01: false, 0x02: false, 0x05: false, 0x06: false, 0x12: false,
		0x07: true, 0x81: true, 0x86: true, 0x92: true} {
		if isResponse(m) != want {
			t.Errorf("isResponse(%#02x) = %v", m, !want)
		}
	}
}
