package sa

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// askFrom sends mad from slid and returns the status and the first record.
func askFrom(t *testing.T, a *Agent, ft *fakeTransport, slid uint16, mad []byte) (uint16, []byte) {
	t.Helper()
	if !a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: slid, QP: 1, MAD: mad}) {
		t.Fatal("Handle did not take an SA MAD")
	}
	p := ft.take(t)
	return binary.BigEndian.Uint16(p.MAD[4:]), p.MAD[smp.SADataOffset:]
}

func svcBytes(t *testing.T, r smp.ServiceRecord) []byte {
	b := make([]byte, smp.ServiceRecordLen)
	if err := r.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServiceRecords registers, finds, replaces and deletes services from
// the two CAs of the tiny subnet (A at LID 2, B at LID 4), with a fake
// clock for leases.
func TestServiceRecords(t *testing.T) {
	const smKey = 0x5EC2E7
	a, ft := newAgent(t, tinySubnet(t), Options{RMPP: true, SMKey: smKey})
	now := time.Unix(1000, 0)
	a.services.now = func() time.Time { return now }
	gidOf := func(guid uint64) (g [16]byte) {
		putU64(g[:8], DefaultGIDPrefix)
		putU64(g[8:], guid)
		return g
	}
	named := func(id uint64, port uint64, lease uint32, name string) smp.ServiceRecord {
		r := smp.ServiceRecord{ID: id, GID: gidOf(port), PKey: 0xFFFF, Lease: lease}
		copy(r.Name[:], name)
		r.Data8[0] = byte(id)
		return r
	}
	const (
		setMask  = 1<<0 | 1<<1 | 1<<2 | 1<<4 | 1<<6 | 1<<7 // ID GID PKey Lease Name Data8[0]
		byName   = 1 << 6
		fromA    = 2
		fromB    = 4
		fromNone = 9
	)
	set := func(slid uint16, cm uint64, r smp.ServiceRecord) (uint16, []byte) {
		return askFrom(t, a, ft, slid, saReq(smp.MethodSet, smp.SAAttrServiceRecord, 0, 0, cm, svcBytes(t, r)))
	}
	get := func(cm uint64, r smp.ServiceRecord) (uint16, []byte) {
		return askFrom(t, a, ft, fromB, saReq(smp.MethodGet, smp.SAAttrServiceRecord, 0, 0, cm, svcBytes(t, r)))
	}
	del := func(slid uint16, key uint64, cm uint64, r smp.ServiceRecord) uint16 {
		st, _ := askFrom(t, a, ft, slid, saReq(smp.MethodDelete, smp.SAAttrServiceRecord, 0, key, cm, svcBytes(t, r)))
		return st
	}
	count := func() int {
		a.services.mu.Lock()
		defer a.services.mu.Unlock()
		return len(a.services.byKey)
	}

	forever := named(1, 0x201, smp.ServiceLeaseInfinite, "forever")
	if st, rec := set(fromA, setMask, forever); st != 0 || rec[112] != 1 {
		t.Fatalf("register: status %#04x, Data8[0] %d", st, rec[112])
	}
	short := named(2, 0x201, 4, "short")
	if st, _ := set(fromA, setMask, short); st != 0 {
		t.Fatalf("register a 4 s lease: status %#04x", st)
	}
	// Get by name: the record, and the lease that remains.
	now = now.Add(1500 * time.Millisecond)
	st, rec := get(byName, short)
	if st != 0 || binary.BigEndian.Uint64(rec) != 2 || binary.BigEndian.Uint32(rec[28:]) != 3 {
		t.Fatalf("get by name: status %#04x, id %d, lease %d; want 0, 2, 3 s left", st, binary.BigEndian.Uint64(rec), binary.BigEndian.Uint32(rec[28:]))
	}
	if st, _ := get(byName, named(0, 0x201, 0, "nobody")); st != smp.SAStatusNoRecords {
		t.Fatalf("get of an unknown name: status %#04x, want NO_RECORDS", st)
	}
	// The lease runs out.
	now = now.Add(3 * time.Second)
	if st, _ := get(byName, short); st != smp.SAStatusNoRecords {
		t.Fatalf("get after the lease: status %#04x, want NO_RECORDS", st)
	}

	// Replacing another port's record: refused unless trusted.
	stolen := forever
	stolen.Data8[0] = 0xEE
	if st, _ := set(fromB, setMask, stolen); st != saStatusReqDenied {
		t.Fatalf("B replaces A's record: status %#04x, want ERR_REQ_DENIED (0x0700)", st)
	}
	if _, rec := get(byName, forever); rec[112] != 1 {
		t.Fatalf("a refused Set changed the record: Data8[0] %#x", rec[112])
	}
	// Same key, same port: replaced in place (no second record).
	again := forever
	copy(again.Name[:], "renamed\x00")
	if st, _ := set(fromA, setMask, again); st != 0 || count() != 1 {
		t.Fatalf("A re-registers its key: status %#04x, %d records; want 0, 1", st, count())
	}

	// Deleting: another port is refused, the owner and a trusted requester are not.
	if st := del(fromB, 0, byName, again); st != saStatusReqDenied || count() != 1 {
		t.Fatalf("B deletes A's record: status %#04x, %d left; want ERR_REQ_DENIED, 1", st, count())
	}
	if st := del(fromA, 0, byName, forever); st != smp.SAStatusNoRecords {
		t.Fatalf("delete by the old name: status %#04x, want NO_RECORDS", st)
	}
	if st := del(fromB, smKey, byName, again); st != 0 || count() != 0 {
		t.Fatalf("trusted delete: status %#04x, %d left", st, count())
	}

	for _, c := range []struct {
		name string
		slid uint16
		cm   uint64
		r    smp.ServiceRecord
		want uint16
	}{
		{"no ServiceID in the mask", fromA, setMask &^ 1, forever, smp.SAStatusInsufficientComponents},
		{"no ServiceGID in the mask", fromA, setMask &^ 2, forever, smp.SAStatusInsufficientComponents},
		{"GID of no port", fromA, setMask, named(3, 0x999, 0, "x"), smp.SAStatusInvalidGID},
		{"mask beyond the 37 fields", fromA, 1 << 37, forever, smp.SAStatusReqInvalid},
		{"source LID of no port", fromNone, setMask, forever, smp.SAStatusReqInvalid},
	} {
		if st, _ := set(c.slid, c.cm, c.r); st != c.want {
			t.Errorf("%s: status %#04x, want %#04x", c.name, st, c.want)
		}
	}
	if count() != 0 {
		t.Fatalf("refused Sets registered %d records", count())
	}

	// The bound per port.
	for i := 0; i < maxServicesPerPort; i++ {
		if st, _ := set(fromA, setMask, named(uint64(100+i), 0x201, smp.ServiceLeaseInfinite, "many")); st != 0 {
			t.Fatalf("registration %d: status %#04x", i, st)
		}
	}
	if st, _ := set(fromA, setMask, named(99, 0x201, smp.ServiceLeaseInfinite, "one too many")); st != smp.SAStatusNoResources {
		t.Fatalf("registration past the bound: status %#04x, want ERR_NO_RESOURCES", st)
	}
	if st, _ := set(fromB, setMask, named(99, 0x301, smp.ServiceLeaseInfinite, "B's own")); st != 0 {
		t.Fatalf("another port is not bound by A's count: status %#04x", st)
	}
}
