package sa

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// vlarbSource is tinySubnet whose ports answer VLArbitrationTable Gets.
// The switch (LID 1, ports 0..4) has a low table of 8 entries and no high
// table, and port 4 refuses its block 1; CA A (LIDs 2-3, port 1) has 64
// entries in each table; CA B (LIDs 4-5) has 8 and 8 and never answers.
type vlarbSource struct {
	*fakeSource
	mu    sync.Mutex
	reads []vlarbKey
}

var errNoAnswer = errors.New("SMP timed out")

// vlarbSwitchPort2 is what switch port 2 holds in block 1.
var vlarbSwitchPort2 = smp.VLArbBlock{{VL: 0, Weight: 64}, {VL: 1, Weight: 64}}

func (s *vlarbSource) ReadVLArb(_ context.Context, fab *discovery.Fabric, guid uint64, port, block uint8) (smp.VLArbBlock, error) {
	s.mu.Lock()
	s.reads = append(s.reads, vlarbKey{guid, port, block})
	s.mu.Unlock()
	var b smp.VLArbBlock
	if fab != s.fab {
		return b, errors.New("read on another fabric than the index's")
	}
	switch guid {
	case 0x100:
		if block != smp.VLArbLowBlock0 {
			return b, fmt.Errorf("read of block %d, past the switch's caps", block)
		}
		if port == 4 {
			return b, &mad.Error{Method: smp.MethodGet, Attr: smp.AttrVLArbitrationTable, Status: smp.StatusInvalidField}
		}
		if port == 2 {
			return vlarbSwitchPort2, nil
		}
		b[0] = smp.VLArbEntry{VL: port & 0xF, Weight: block}
	case 0x200:
		b[31] = smp.VLArbEntry{VL: 15, Weight: 0xFF}
	default:
		return b, errNoAnswer
	}
	return b, nil
}

func newVLArbSource(t testing.TB) *vlarbSource {
	src := &vlarbSource{fakeSource: tinySubnet(t)}
	caps := map[uint64][2]uint8{0x100: {8, 0}, 0x200: {64, 64}, 0x300: {8, 8}}
	for g, c := range caps {
		for i := range src.fab.Nodes[g].Ports {
			pi := &src.fab.Nodes[g].Ports[i].Info
			pi.VLArbitrationLowCap, pi.VLArbitrationHighCap = c[0], c[1]
		}
	}
	return src
}

func (s *vlarbSource) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reads)
}

// vlarbReq is a VLArbitrationTableRecord request's data.
func vlarbReq(lid uint16, port, block uint8, tbl *smp.VLArbBlock) []byte {
	b := make([]byte, smp.VLArbRecordLen)
	r := smp.VLArbRecord{LID: lid, OutPort: port, BlockNum: block}
	if tbl != nil {
		r.Block = *tbl
	}
	_ = r.MarshalTo(b)
	return b
}

func vlarbRecord(lid uint16, port, block uint8, tbl smp.VLArbBlock) []byte {
	b := make([]byte, smp.VLArbRecordLen)
	_ = (&smp.VLArbRecord{LID: lid, OutPort: port, BlockNum: block, Block: tbl}).MarshalTo(b)
	return b
}

func TestVLArbRecord(t *testing.T) {
	const cmLID, cmPort, cmBlock, cmTable = 1, 1 << 1, 1 << 2, 1 << 4
	for _, c := range []struct {
		name   string
		method uint8
		cm     uint64
		data   []byte
		rmpp   bool
		status uint16
		n      int
		want   []byte // first record, byte for byte
	}{
		{name: "Get switch port 2 block 1", method: smp.MethodGet, cm: cmLID | cmPort | cmBlock, data: vlarbReq(1, 2, 1, nil), n: 1,
			want: hexb(t, "0001 02 01 00000000 0040 0140", 72)},
		{name: "switch: ports 0..4, blocks 1..4, but the one port 4 refuses", method: smp.MethodGetTable, cm: cmLID, data: vlarbReq(1, 0, 0, nil), rmpp: true, n: 5*4 - 1,
			want: hexb(t, "0001 00 01 00000000 0001", 72)},
		{name: "switch: a block it refuses has no record", method: smp.MethodGet, cm: cmLID | cmPort | cmBlock, data: vlarbReq(1, 4, 1, nil), status: smp.SAStatusNoRecords},
		{name: "switch: a block past its caps holds no entry", method: smp.MethodGet, cm: cmLID | cmPort | cmBlock, data: vlarbReq(1, 4, 3, nil), n: 1,
			want: hexb(t, "0001 04 03 00000000", 72)},
		{name: "switch: port beyond its ports", method: smp.MethodGet, cm: cmLID | cmPort, data: vlarbReq(1, 5, 0, nil), status: smp.SAStatusNoRecords},
		{name: "switch: Get of several is too many", method: smp.MethodGet, cm: cmLID | cmBlock, data: vlarbReq(1, 0, 1, nil), status: smp.SAStatusTooManyRecords},
		{name: "CA: port 0 asks for its port (osmtest), second LID of its LMC range", method: smp.MethodGet, cm: cmLID | cmPort | cmBlock, data: vlarbReq(3, 0, 4, nil), n: 1,
			want: vlarbRecord(2, 1, 4, smp.VLArbBlock{31: {VL: 15, Weight: 0xFF}})},
		{name: "CA that does not answer: Busy", method: smp.MethodGet, cm: cmLID | cmBlock, data: vlarbReq(4, 1, 1, nil), status: smp.StatusBusy},
		{name: "CA that does not answer: a block past its caps", method: smp.MethodGet, cm: cmLID | cmBlock, data: vlarbReq(4, 1, 4, nil), n: 1,
			want: hexb(t, "0004 01 04 00000000", 72)},
		{name: "all: the switch's 19, A's 4, B's 2 past its caps", method: smp.MethodGetTable, rmpp: true, n: 19 + 4 + 2},
		{name: "all over ibsim: what fits one MAD", method: smp.MethodGetTable, n: 2},
		{name: "by table contents", method: smp.MethodGetTable, cm: cmTable, data: vlarbReq(0, 0, 0, &vlarbSwitchPort2), rmpp: true, n: 1,
			want: hexb(t, "0001 02 01 00000000 0040 0140", 72)},
		{name: "mask beyond the fields", method: smp.MethodGetTable, cm: 1 << 5, status: smp.SAStatusReqInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newVLArbSource(t)
			st, recs := answer(t, src, Options{RMPP: c.rmpp}, saReq(c.method, smp.SAAttrVLArbRecord, 0, 0, c.cm, c.data))
			if st != c.status || len(recs) != c.n {
				t.Fatalf("status %#04x, %d records; want %#04x, %d", st, len(recs), c.status, c.n)
			}
			if c.want != nil {
				diff(t, recs[0][:smp.VLArbRecordLen], c.want)
			}
		})
	}
}

// TestVLArbRecordReads: a narrow Get reads one block, once per plan; a
// block past the caps costs no read; a block that got no answer is asked
// again; a query wider than maxVLArbReads unread blocks is refused before
// anything is read.
func TestVLArbRecordReads(t *testing.T) {
	src := newVLArbSource(t)
	a, ft := newAgent(t, src, Options{RMPP: true})
	get := saReq(smp.MethodGet, smp.SAAttrVLArbRecord, 0, 0, 7, vlarbReq(1, 3, 1, nil))
	for i := 0; i < 2; i++ {
		if got := ask(t, a, ft, get); got[4] != 0 || got[5] != 0 {
			t.Fatalf("Get %d: status %x", i, got[4:6])
		}
		if n := src.readCount(); n != 1 {
			t.Fatalf("after Get %d: %d blocks read, want 1", i, n)
		}
	}
	if got := ask(t, a, ft, saReq(smp.MethodGet, smp.SAAttrVLArbRecord, 0, 0, 7, vlarbReq(1, 3, 4, nil))); got[4] != 0 || got[5] != 0 || src.readCount() != 1 {
		t.Fatalf("Get past the caps: status %x, %d reads; want 0 and no new read", got[4:6], src.readCount())
	}
	lost := saReq(smp.MethodGet, smp.SAAttrVLArbRecord, 0, 0, 5, vlarbReq(4, 0, 1, nil))
	for i := 0; i < 2; i++ {
		ask(t, a, ft, lost)
	}
	if n := src.readCount(); n != 3 {
		t.Fatalf("%d blocks read after two Gets of a silent port, want 3 (asked again)", n)
	}

	defer func(n int) { maxVLArbReads = n }(maxVLArbReads)
	maxVLArbReads = 3
	all := saReq(smp.MethodGetTable, smp.SAAttrVLArbRecord, 0, 0, 0, nil)
	if got := ask(t, a, ft, all); uint16(got[4])<<8|uint16(got[5]) != smp.SAStatusNoResources {
		t.Fatalf("wide GetTable: status %x, want ERR_NO_RESOURCES", got[4:6])
	}
	if n := src.readCount(); n != 3 {
		t.Fatalf("refused query read %d blocks", n-3)
	}
}

// FuzzVLArbHandle: any VLArbitrationTableRecord request over a fabric
// that answers, refuses and stays silent gets a well-formed answer.
func FuzzVLArbHandle(f *testing.F) {
	for _, m := range []uint8{smp.MethodGet, smp.MethodGetTable} {
		f.Add(saReq(m, smp.SAAttrVLArbRecord, 0, 0, 7, vlarbReq(1, 2, 1, nil)), true)
		f.Add(saReq(m, smp.SAAttrVLArbRecord, 0, 0, 0x1F, vlarbReq(2, 9, 4, &vlarbSwitchPort2)), false)
	}
	src := newVLArbSource(f)
	f.Fuzz(func(t *testing.T, mad []byte, rmpp bool) {
		ft := &fakeTransport{}
		a := New(src, ft, Options{RMPP: rmpp}, nil)
		a.handle(transport.Packet{DLID: 2, SLID: 4, QP: 1, MAD: mad})
		for _, p := range ft.sent {
			if len(p.MAD) < smp.SADataOffset || p.MAD[3]&smp.MethodResponse == 0 {
				t.Fatalf("malformed answer %x", p.MAD[:min(24, len(p.MAD))])
			}
		}
	})
}
