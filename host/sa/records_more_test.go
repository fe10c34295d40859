package sa

import (
	"encoding/binary"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// answer sends req and returns the status and the records of the answer.
func answer(t *testing.T, src Source, opts Options, req []byte) (uint16, [][]byte) {
	t.Helper()
	a, ft := newAgent(t, src, opts)
	got := ask(t, a, ft, req)
	st := binary.BigEndian.Uint16(got[4:])
	if st != 0 {
		return st, nil
	}
	stride := int(binary.BigEndian.Uint16(got[44:])) * 8
	end := smp.SADataOffset + stride
	if got[3] == smp.MethodGetTableResp {
		end = smp.RMPPMessageLen(got)
	}
	var recs [][]byte
	for o := smp.SADataOffset; o+stride <= end; o += stride {
		recs = append(recs, got[o:o+stride])
	}
	return st, recs
}

func TestMoreRecords(t *testing.T) {
	src := tinySubnet(t)
	src.fab.Nodes[0x100].Switch = &smp.SwitchInfo{LinearFDBCap: 0xC000, MulticastFDBCap: 0x200, LifeTimeValue: 18}
	// One plan entry (S: 1→2 maps SL 15 to VL 7); every other pair has the default.
	src.ap.Result.VLs.SL2VL = []plan.SL2VLEntry{{Node: src.ap.Topo.NodeByGUID(0x100), In: 1, Out: 2, VL: [16]uint8{15: 7}}}
	rmpp := Options{RMPP: true}
	lr := func(from uint16, fp, tp uint8, to uint16) []byte {
		b := make([]byte, 8)
		_ = (&smp.LinkRecord{FromLID: from, FromPort: fp, ToPort: tp, ToLID: to}).MarshalTo(b)
		return b
	}
	for _, c := range []struct {
		name   string
		method uint8
		attr   uint16
		cm     uint64
		data   []byte
		status uint16
		n      int
		check  func(t *testing.T, recs [][]byte)
	}{
		{name: "LinkRecord all: both directions of both links", method: smp.MethodGetTable, attr: smp.SAAttrLinkRecord, n: 4},
		{name: "LinkRecord FromLID of A's second LID (LMC)", method: smp.MethodGetTable, attr: smp.SAAttrLinkRecord, cm: 1, data: lr(3, 0, 0, 0), n: 1,
			check: func(t *testing.T, r [][]byte) { diff(t, r[0], lr(2, 1, 1, 1)) }},
		{name: "LinkRecord ToLID switch", method: smp.MethodGetTable, attr: smp.SAAttrLinkRecord, cm: 1 << 3, data: lr(0, 0, 0, 1), n: 2},
		{name: "LinkRecord FromLID switch FromPort 2", method: smp.MethodGet, attr: smp.SAAttrLinkRecord, cm: 3, data: lr(1, 2, 0, 0), n: 1,
			check: func(t *testing.T, r [][]byte) { diff(t, r[0], lr(1, 2, 1, 4)) }},
		{name: "LinkRecord Get of two is too many", method: smp.MethodGet, attr: smp.SAAttrLinkRecord, cm: 1, data: lr(1, 0, 0, 0), status: smp.SAStatusTooManyRecords},
		{name: "LinkRecord no such LID", method: smp.MethodGet, attr: smp.SAAttrLinkRecord, cm: 1, data: lr(9, 0, 0, 0), status: smp.SAStatusNoRecords},
		{name: "LinkRecord mask beyond fields", method: smp.MethodGetTable, attr: smp.SAAttrLinkRecord, cm: 1 << 4, status: smp.SAStatusReqInvalid},
		{name: "GUIDInfoRecord all", method: smp.MethodGetTable, attr: smp.SAAttrGUIDInfoRecord, n: 3},
		{name: "GUIDInfoRecord of B", method: smp.MethodGet, attr: smp.SAAttrGUIDInfoRecord, cm: 1, data: []byte{0, 5}, n: 1,
			check: func(t *testing.T, r [][]byte) {
				diff(t, r[0], hexb(t, "0004 00 00 00000000 0000000000000301", 72))
			}},
		{name: "SwitchInfoRecord: discovered, with the plan's LinearFDBTop", method: smp.MethodGetTable, attr: smp.SAAttrSwitchInfoRecord, n: 1,
			check: func(t *testing.T, r [][]byte) {
				diff(t, r[0], hexb(t, "0001 0000 C000 0000 0200 0005 00 00 00 90", 24))
			}},
		{name: "SwitchInfoRecord of a CA's LID: none", method: smp.MethodGet, attr: smp.SAAttrSwitchInfoRecord, cm: 1, data: []byte{0, 2}, status: smp.SAStatusNoRecords},
		{name: "LFTRecord block 0 of the switch", method: smp.MethodGet, attr: smp.SAAttrLFTRecord, cm: 3, data: []byte{0, 1, 0, 0}, n: 1,
			check: func(t *testing.T, r [][]byte) {
				// LID 1: port 0; 2-3: port 1 (A); 4-5: port 2 (B); the rest unrouted.
				want := hexb(t, "0001 0000 00000000 FF 00 01 01 02 02", 72)
				for i := 8 + 6; i < 72; i++ {
					want[i] = 0xFF
				}
				diff(t, r[0], want)
			}},
		{name: "LFTRecord block past the top", method: smp.MethodGet, attr: smp.SAAttrLFTRecord, cm: 2, data: []byte{0, 0, 0, 1}, status: smp.SAStatusNoRecords},
		{name: "SL2VLRecord all: 5×5 switch pairs (port 0 included) and 2 CA ports", method: smp.MethodGetTable, attr: smp.SAAttrSL2VLRecord, n: 5*5 + 2},
		{name: "SL2VLRecord switch in 0 out 0 (osmtest q)", method: smp.MethodGet, attr: smp.SAAttrSL2VLRecord, cm: 7, data: []byte{0, 1, 0, 0}, n: 1},
		{name: "SL2VLRecord switch in 1 out 2", method: smp.MethodGet, attr: smp.SAAttrSL2VLRecord, cm: 7, data: []byte{0, 1, 1, 2}, n: 1,
			check: func(t *testing.T, r [][]byte) {
				diff(t, r[0], hexb(t, "0001 01 02 00000000 0000 0000 0000 0007", 16))
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, recs := answer(t, src, rmpp, saReq(c.method, c.attr, 0, 0, c.cm, c.data))
			if st != c.status || len(recs) != c.n {
				t.Fatalf("status %#04x, %d records; want %#04x, %d", st, len(recs), c.status, c.n)
			}
			if c.check != nil {
				c.check(t, recs)
			}
		})
	}
}

// FuzzMoreHandle feeds requests for this file's attributes, ServiceRecord,
// InformInfo(Record) and MultiPathRecord through the agent: any bytes get
// a well-formed answer or none, never a panic.
func FuzzMoreHandle(f *testing.F) {
	mpr := make([]byte, smp.SADataLen)
	_ = (&smp.MultiPathRecord{SGIDCount: 1, DGIDCount: 1, GIDs: make([][16]byte, 2)}).MarshalTo(mpr)
	for _, s := range []struct {
		method uint8
		attr   uint16
		cm     uint64
	}{
		{smp.MethodGetTable, smp.SAAttrLinkRecord, 0xF}, {smp.MethodGet, smp.SAAttrGUIDInfoRecord, 1},
		{smp.MethodGetTable, smp.SAAttrSwitchInfoRecord, 0}, {smp.MethodGet, smp.SAAttrLFTRecord, 3},
		{smp.MethodGetTable, smp.SAAttrSL2VLRecord, 7}, {smp.MethodSet, smp.SAAttrServiceRecord, 0x57},
		{smp.MethodDelete, smp.SAAttrServiceRecord, 1 << 6}, {smp.MethodSet, smp.SAAttrInformInfo, 0},
		{smp.MethodGetTable, smp.SAAttrInformInfoRecord, 3}, {smp.MethodGetMulti, smp.SAAttrMultiPathRecord, 3 << 19},
	} {
		f.Add(saReq(s.method, s.attr, 0, 0, s.cm, mpr), false)
	}
	src := tinySubnet(f)
	f.Fuzz(func(t *testing.T, mad []byte, trusted bool) {
		ft := &fakeTransport{}
		a := New(src, ft, Options{RMPP: true, SMKey: 7}, hclog.NewNullLogger())
		if trusted && len(mad) >= 44 {
			binary.BigEndian.PutUint64(mad[36:], 7)
		}
		// Twice: the second request meets the state the first one left.
		for i := 0; i < 2; i++ {
			a.handle(transport.Packet{DLID: 2, SLID: 4, QP: 1, MAD: mad})
		}
		for _, p := range ft.sent {
			if len(p.MAD) < smp.SADataOffset || p.MAD[3]&smp.MethodResponse == 0 {
				t.Fatalf("malformed answer %x", p.MAD[:min(24, len(p.MAD))])
			}
		}
	})
}
