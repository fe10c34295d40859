package ibsim

import (
	"bytes"
	"testing"
)

// Every decoder must reject or accept any input without panicking, and
// what it accepts must survive re-encoding.

func FuzzCtl(f *testing.F) {
	var b [CtlLen]byte
	c := newCtl(3, CtlConnect, []byte("payload"))
	c.MarshalTo(b[:])
	f.Add(b[:])
	f.Add(b[:40])
	f.Fuzz(func(t *testing.T, in []byte) {
		var c Ctl
		if c.Unmarshal(in) != nil {
			return
		}
		var out [CtlLen]byte
		if err := c.MarshalTo(out[:]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out[:], in) {
			t.Fatalf("round trip\n in %x\nout %x", in, out)
		}
	})
}

func FuzzClientInfo(f *testing.F) {
	var b [ClientInfoLen]byte
	(&ClientInfo{ID: 1 << 22, IsSM: true, NodeID: "Hca1"}).MarshalTo(b[:])
	f.Add(b[:])
	f.Add(bytes.Repeat([]byte{'x'}, ClientInfoLen))
	f.Fuzz(func(t *testing.T, in []byte) {
		var ci ClientInfo
		if ci.Unmarshal(in) != nil {
			return
		}
		if len(ci.NodeID) > NodeIDLen || bytes.IndexByte([]byte(ci.NodeID), 0) >= 0 {
			t.Fatalf("node id %q", ci.NodeID)
		}
		if len(ci.NodeID) == NodeIDLen {
			return // unterminated name: not encodable, by design
		}
		var out [ClientInfoLen]byte
		if err := ci.MarshalTo(out[:]); err != nil {
			t.Fatal(err)
		}
		var back ClientInfo
		if err := back.Unmarshal(out[:]); err != nil || back != ci {
			t.Fatalf("round trip %+v -> %+v, %v", ci, back, err)
		}
	})
}

func FuzzRequest(f *testing.F) {
	b := make([]byte, RequestLen)
	MarshalRequest(b, &Header{DLID: 0xFFFF, SLID: 0xFFFF, Status: StatusBounced, Length: MADLen}, []byte{1, 0x81, 1, 0x81})
	f.Add(b)
	f.Add(b[:100])
	f.Fuzz(func(t *testing.T, in []byte) {
		h, mad, err := UnmarshalRequest(in)
		if err != nil {
			return
		}
		if len(mad) != MADLen {
			t.Fatalf("MAD of %d bytes", len(mad))
		}
		out := make([]byte, RequestLen)
		if err := MarshalRequest(out, &h, mad); err != nil {
			t.Fatal(err)
		}
		h2, mad2, err := UnmarshalRequest(out)
		if err != nil || h2 != h || !bytes.Equal(mad2, mad) {
			t.Fatalf("round trip %+v -> %+v, %v", h, h2, err)
		}
	})
}

func FuzzReplies(f *testing.F) {
	f.Add(make([]byte, CtlDataLen))
	f.Add([]byte{5, 0, 4})
	f.Fuzz(func(t *testing.T, in []byte) {
		var ps PortState
		var v Vendor
		var g GID
		_ = ps.Unmarshal(in)
		_ = v.Unmarshal(in)
		_ = g.Unmarshal(in)
		if k, err := PKeys(in); err == nil {
			for _, x := range k {
				if x == 0 {
					t.Fatal("zero P_Key kept")
				}
			}
			if len(k) > CtlDataLen/2 {
				t.Fatalf("%d P_Keys from %d bytes", len(k), CtlDataLen)
			}
		}
	})
}
