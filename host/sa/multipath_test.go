package sa

import (
	"encoding/binary"
	"testing"

	"github.com/ibsm/ibsm/transport/smp"
)

func TestMultiPath(t *testing.T) {
	src := tinySubnet(t)
	g := func(guid uint64) (b [16]byte) {
		putU64(b[:8], DefaultGIDPrefix)
		putU64(b[8:], guid)
		return b
	}
	mpr := func(m smp.MultiPathRecord) []byte {
		b := make([]byte, smp.SADataLen)
		if err := m.MarshalTo(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	counts := uint64(smp.MPRCompSGIDCount | smp.MPRCompDGIDCount)
	for _, c := range []struct {
		name   string
		cm     uint64
		m      smp.MultiPathRecord
		status uint16
		n      int
	}{
		// A (LIDs 2-3) to B (LIDs 4-5): 2 SLIDs × 2 DLIDs.
		{"A to B", counts, smp.MultiPathRecord{SGIDCount: 1, DGIDCount: 1, GIDs: [][16]byte{g(0x201), g(0x301)}}, 0, 4},
		{"A,B to B,A with NumbPath 3", counts | smp.MPRCompNumbPath,
			smp.MultiPathRecord{NumbPath: 3, SGIDCount: 2, DGIDCount: 2, GIDs: [][16]byte{g(0x201), g(0x301), g(0x301), g(0x201)}}, 0, 3},
		{"SL selector no path has", counts | smp.MPRCompSL, smp.MultiPathRecord{SL: 9, SGIDCount: 1, DGIDCount: 1, GIDs: [][16]byte{g(0x201), g(0x301)}}, 0, 0},
		{"no counts in the mask", 0, smp.MultiPathRecord{}, smp.SAStatusInsufficientComponents, 0},
		{"SGIDCount only", smp.MPRCompSGIDCount, smp.MultiPathRecord{SGIDCount: 1, GIDs: [][16]byte{g(0x201)}}, smp.SAStatusInsufficientComponents, 0},
		{"multicast DGID", counts, smp.MultiPathRecord{SGIDCount: 1, DGIDCount: 1, GIDs: [][16]byte{g(0x201), {0: 0xFF, 1: 0x12}}}, smp.SAStatusInvalidGID, 0},
		{"unknown GID", counts, smp.MultiPathRecord{SGIDCount: 1, DGIDCount: 1, GIDs: [][16]byte{g(0x201), g(0x999)}}, smp.SAStatusInvalidGID, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, ft := newAgent(t, src, Options{RMPP: true})
			got := ask(t, a, ft, saReq(smp.MethodGetMulti, smp.SAAttrMultiPathRecord, 0, 0, c.cm, mpr(c.m)))
			if got[3] != smp.MethodGetMultiResp {
				t.Fatalf("answer method %#02x, want GetMultiResp", got[3])
			}
			st := binary.BigEndian.Uint16(got[4:])
			n := 0
			if st == 0 {
				n = (smp.RMPPMessageLen(got) - smp.SADataOffset) / smp.PathRecordLen
			}
			if st != c.status || n != c.n {
				t.Fatalf("status %#04x, %d PathRecords; want %#04x, %d", st, n, c.status, c.n)
			}
		})
	}
}
