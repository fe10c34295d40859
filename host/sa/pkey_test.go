package sa

import (
	"encoding/binary"
	"testing"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/transport/smp"
)

// partSource is tinySubnet with a P_Key plan: A (0x200/1, the SM) full in
// 0x7fff and 0x0002; B (0x300/1) limited in 0x7fff, full in 0x0003, limited
// in 0x0002; the switch (0x100/0) full in 0x7fff, and its port 2 enforces
// for B.
type partSource struct {
	*fakeSource
	pl *program.PKeyPlan
}

func (p *partSource) PKeyPlan() *program.PKeyPlan { return p.pl }

func tinyPartitions(t testing.TB) *partSource {
	src := tinySubnet(t)
	a, b, sw := discovery.PortRef{GUID: 0x200, Port: 1}, discovery.PortRef{GUID: 0x300, Port: 1}, discovery.PortRef{GUID: 0x100}
	swB := discovery.PortRef{GUID: 0x100, Port: 2}
	tables := map[discovery.PortRef][]uint16{
		a:   append([]uint16{0xFFFF, 0x8002}, make([]uint16, 62)...),
		b:   append([]uint16{0x7FFF, 0x8003, 0x0002}, make([]uint16, 61)...),
		sw:  {0xFFFF, 0, 0, 0, 0, 0, 0, 0},
		swB: append([]uint16{0x7FFF, 0x8003, 0x0002}, make([]uint16, 61)...),
	}
	return &partSource{fakeSource: src, pl: &program.PKeyPlan{Tables: tables}}
}

// pathReq asks for PathRecords from SGID guid s to DGID guid d, with a
// P_Key when pkey != 0.
func pathReq(s, d uint64, pkey uint16) []byte {
	var pr smp.PathRecord
	cm := uint64(smp.PRCompSGID | smp.PRCompDGID)
	putU64(pr.SGID[:8], DefaultGIDPrefix)
	putU64(pr.SGID[8:], s)
	putU64(pr.DGID[:8], DefaultGIDPrefix)
	putU64(pr.DGID[8:], d)
	if pkey != 0 {
		pr.PKey, cm = pkey, cm|smp.PRCompPKey
	}
	var b [smp.PathRecordLen]byte
	_ = pr.MarshalTo(b[:])
	return saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, cm, b[:])
}

// TestPathRecordPartitions: paths only between ports sharing a P_Key with
// a full member, the P_Key chosen from the source's table.
func TestPathRecordPartitions(t *testing.T) {
	src := tinyPartitions(t)
	tests := []struct {
		name string
		s, d uint64
		pkey uint16
		want uint16 // 0: no path
	}{
		{"A to B: default, A full", 0x201, 0x301, 0, 0xFFFF},
		{"B to A: B's limited default entry", 0x301, 0x201, 0, 0x7FFF},
		{"A to B in 0x0002 (B limited)", 0x201, 0x301, 0x0002, 0x8002},
		{"asked with the membership bit", 0x201, 0x301, 0x8002, 0x8002},
		{"B to A in 0x0003: A is no member", 0x301, 0x201, 0x0003, 0},
		{"unknown partition", 0x201, 0x301, 0x0009, 0},
		{"B to the switch: default", 0x301, 0x100, 0, 0x7FFF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, ft := newAgent(t, src, Options{RMPP: true})
			got := ask(t, a, ft, pathReq(tc.s, tc.d, tc.pkey))
			st := binary.BigEndian.Uint16(got[4:])
			n := (smp.RMPPMessageLen(got) - smp.SADataOffset) / (int(binary.BigEndian.Uint16(got[44:])) * 8)
			if tc.want == 0 {
				if st == 0 && n > 0 {
					t.Fatalf("%d paths, want none", n)
				}
				return
			}
			if st != 0 || n == 0 {
				t.Fatalf("status %#04x, %d paths", st, n)
			}
			var pr smp.PathRecord
			_ = pr.Unmarshal(got[smp.SADataOffset:])
			if pr.PKey != tc.want {
				t.Fatalf("P_Key %#04x, want %#04x", pr.PKey, tc.want)
			}
		})
	}
	// Two limited members of one partition share nothing.
	src.pl.Tables[discovery.PortRef{GUID: 0x200, Port: 1}][0] = 0x7FFF
	a, ft := newAgent(t, src, Options{RMPP: true})
	got := ask(t, a, ft, pathReq(0x201, 0x301, 0x7FFF))
	if n := (smp.RMPPMessageLen(got) - smp.SADataOffset) / (int(binary.BigEndian.Uint16(got[44:])) * 8); binary.BigEndian.Uint16(got[4:]) == 0 && n > 0 {
		t.Fatalf("limited to limited: %d paths", n)
	}
}

// TestPKeyTableRecord: one record per block of every programmed table,
// switches under their LID with the port number, filtered by BlockNum
// and PortNum.
func TestPKeyTableRecord(t *testing.T) {
	src := tinyPartitions(t)
	count := func(t *testing.T, cm uint64, data []byte) (int, []byte) {
		t.Helper()
		a, ft := newAgent(t, src, Options{RMPP: true, SMKey: 9})
		got := ask(t, a, ft, saReq(smp.MethodGetTable, smp.SAAttrPKeyTableRecord, 0, 9, cm, data))
		if st := binary.BigEndian.Uint16(got[4:]); st != 0 {
			t.Fatalf("status %#04x", st)
		}
		return (smp.RMPPMessageLen(got) - smp.SADataOffset) / (int(binary.BigEndian.Uint16(got[44:])) * 8), got[smp.SADataOffset:]
	}
	// A: 2 blocks, B: 2, switch port 0: 1, switch port 2: 2.
	if n, _ := count(t, 0, nil); n != 7 {
		t.Errorf("%d records, want 7", n)
	}
	// B by LID 4, block 0.
	n, rec := count(t, 1|2, []byte{0, 4, 0, 0})
	if n != 1 || binary.BigEndian.Uint16(rec[0:]) != 4 || rec[4] != 1 ||
		binary.BigEndian.Uint16(rec[8:]) != 0x7FFF || binary.BigEndian.Uint16(rec[10:]) != 0x8003 {
		t.Fatalf("%d records, first %x", n, rec[:16])
	}
	// The switch's port 2, by PortNum.
	n, rec = count(t, 1|4, []byte{0, 1, 0, 0, 2})
	if n != 2 || binary.BigEndian.Uint16(rec[0:]) != 1 || rec[4] != 2 || binary.BigEndian.Uint16(rec[12:]) != 0x0002 {
		t.Fatalf("%d records, first %x", n, rec[:16])
	}
	// A Get naming one block.
	a, ft := newAgent(t, src, Options{RMPP: true, SMKey: 9})
	got := ask(t, a, ft, saReq(smp.MethodGet, smp.SAAttrPKeyTableRecord, 0, 9, 1|2|4, []byte{0, 2, 0, 1, 1}))
	if st := binary.BigEndian.Uint16(got[4:]); st != 0 || binary.BigEndian.Uint16(got[smp.SADataOffset+2:]) != 1 {
		t.Fatalf("Get: status %#04x, record %x", st, got[smp.SADataOffset:smp.SADataOffset+16])
	}
	// Untrusted (no SM_Key): refused, as OpenSM does.
	got = ask(t, a, ft, saReq(smp.MethodGetTable, smp.SAAttrPKeyTableRecord, 0, 0, 0, nil))
	if st := binary.BigEndian.Uint16(got[4:]); st != smp.SAStatusReqInvalid {
		t.Fatalf("untrusted: status %#04x, want %#04x", st, smp.SAStatusReqInvalid)
	}
	// Without a plan: no records, not an error.
	plain := tinySubnet(t)
	a, ft = newAgent(t, plain, Options{RMPP: true, SMKey: 9})
	got = ask(t, a, ft, saReq(smp.MethodGetTable, smp.SAAttrPKeyTableRecord, 0, 9, 0, nil))
	if st := binary.BigEndian.Uint16(got[4:]); st != 0 {
		t.Fatalf("no plan: status %#04x", st)
	}
}

// FuzzPKeyTableRecord: any request data and component mask is answered
// without a panic, with records that match what was asked.
func FuzzPKeyTableRecord(f *testing.F) {
	f.Add(uint64(0), []byte{})
	f.Add(uint64(7), []byte{0, 4, 0, 1, 1})
	f.Add(uint64(1<<5), []byte{0xff})
	src := tinyPartitions(f)
	f.Fuzz(func(t *testing.T, cm uint64, data []byte) {
		a, ft := newAgent(t, src, Options{RMPP: true, SMKey: 9})
		got := ask(t, a, ft, saReq(smp.MethodGetTable, smp.SAAttrPKeyTableRecord, 0, 9, cm, data))
		if binary.BigEndian.Uint16(got[4:]) != 0 {
			return
		}
		stride := int(binary.BigEndian.Uint16(got[44:])) * 8
		if stride != pkeyTableRecordLen {
			t.Fatalf("stride %d", stride)
		}
		var req [pkeyTableRecordLen]byte
		copy(req[:], data)
		body := got[smp.SADataOffset:smp.RMPPMessageLen(got)]
		for off := 0; off+stride <= len(body); off += stride {
			if !matches(pkeyTableRecordFields, cm, req[:], body[off:off+stride]) {
				t.Fatalf("record %x does not match the request %x (mask %#x)", body[off:off+stride], req, cm)
			}
		}
	})
}
