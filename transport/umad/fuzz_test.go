package umad

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// FuzzDecodeHeader: any 64 bytes decode, and re-encoding reproduces them
// except for the reserved bytes and a grh_present other than 0/1.
func FuzzDecodeHeader(f *testing.F) {
	h := fullHeader()
	b := make([]byte, HeaderLen)
	_ = h.EncodeTo(b)
	f.Add(b)
	f.Add(make([]byte, HeaderLen))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		var h Header
		if err := h.Decode(in); err != nil {
			if len(in) >= HeaderLen {
				t.Fatalf("%d bytes rejected: %v", len(in), err)
			}
			return
		}
		out := make([]byte, HeaderLen)
		if err := h.EncodeTo(out); err != nil {
			t.Fatal(err)
		}
		want := bytes.Clone(in[:HeaderLen])
		if want[32] != 0 {
			want[32] = 1
		}
		clear(want[58:])
		if !bytes.Equal(out, want) {
			t.Fatalf("round trip\n in % x\nout % x", want, out)
		}
		var back Header
		if err := back.Decode(out); err != nil || back != h {
			t.Fatalf("re-decode %+v != %+v", back, h)
		}
	})
}

// FuzzHandleRecord feeds arbitrary records to the Conn's receive path: it
// must never panic, and a delivered packet carries exactly the MAD bytes.
func FuzzHandleRecord(f *testing.F) {
	rec := make([]byte, HeaderLen+256)
	(&Header{AgentID: 7, LID: 3, Length: HeaderLen + 256}).EncodeTo(rec)
	copy(rec[HeaderLen:], mad(256, smp.ClassSMPLID, smp.MethodTrap, 1))
	f.Add(rec)
	to := make([]byte, HeaderLen+24)
	(&Header{Status: 110}).EncodeTo(to)
	copy(to[HeaderLen:], mad(24, smp.ClassSMPDR, smp.MethodGet, 2))
	f.Add(to)
	f.Add([]byte{0})
	c := &Conn{replies: map[replyKey]reply{}, log: Options{}.withDefaults().Logger}
	f.Fuzz(func(t *testing.T, in []byte) {
		p, ok := c.handle(in)
		if !ok {
			return
		}
		if len(in) < HeaderLen || !bytes.Equal(p.MAD, in[HeaderLen:]) {
			t.Fatalf("delivered %d MAD bytes from a %d-byte record", len(p.MAD), len(in))
		}
		if len(c.replies) > maxReplies {
			t.Fatal("reply memory unbounded")
		}
	})
}

// FuzzEncodeSend: any packet is either refused or framed as a header the
// kernel accepts (agent, length, QP/Q_Key by class) followed by a prefix
// of the MAD (RMPP bytes 24..36 aside).
func FuzzEncodeSend(f *testing.F) {
	f.Add(mad(256, smp.ClassSMPDR, smp.MethodGet, 1), uint16(0xffff), uint32(0))
	f.Add(mad(56+500, smp.ClassSA, smp.MethodGetTableResp, 2), uint16(4), uint32(1))
	f.Add(mad(256, smp.ClassSA, smp.MethodGetTableResp, 2), uint16(4), uint32(0))
	f.Fuzz(func(t *testing.T, m []byte, dlid uint16, qp uint32) {
		rec, err := encodeSend(nil, transport.Packet{DLID: dlid, QP: qp, MAD: m}, sendFields{agent: 3})
		if err != nil {
			return
		}
		var h Header
		if err := h.Decode(rec); err != nil {
			t.Fatal(err)
		}
		body := rec[HeaderLen:]
		if int(h.Length) != len(rec) || h.AgentID != 3 || len(body) > len(m) {
			t.Fatalf("header %+v for a %d-byte record of a %d-byte MAD", h, len(rec), len(m))
		}
		switch m[1] {
		case smp.ClassSMPLID, smp.ClassSMPDR:
			if h.QPN != 0 || h.QKey != 0 || !bytes.Equal(body, m) {
				t.Fatalf("SMP framed as %+v", h)
			}
		case smp.ClassSA:
			if h.QPN == 0 || h.QKey != QP1QKey || len(body) < saHeaderEnd {
				t.Fatalf("SA MAD framed as %+v, %d bytes", h, len(body))
			}
			if !bytes.Equal(body[:24], m[:24]) || !bytes.Equal(body[36:], m[36:len(body)]) {
				t.Fatal("SA MAD bytes changed outside the RMPP header")
			}
			if body[26]&smp.RMPPFlagActive != 0 {
				segs := max(1, (len(body)-56+199)/200)
				if pl := binary.BigEndian.Uint32(body[32:]); int(pl) != 20*segs+len(body)-56 {
					t.Fatalf("PayloadLength %d for %d data bytes", pl, len(body)-56)
				}
			}
		default:
			t.Fatalf("class %#x framed", m[1])
		}
	})
}
