package sa

import (
	"bytes"
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/ibsm/ibsm/transport/smp"
)

// ServiceRecords (IBA 15.2.5.14): ports register services with
// SubnAdmSet, find them with Get/GetTable and remove them with
// SubnAdmDelete. A record is keyed by (ServiceID, ServiceGID,
// ServiceP_Key); a Set with the key of an existing record replaces it. A
// finite ServiceLease is seconds from the Set; the record disappears when
// it runs out (checked on every access: nothing else can see a record).
//
// Only the port that registered a record (by the port GUID behind the
// request's source LID) or a trusted requester (one presenting our SM_Key,
// the SA_Key of issue 10) may replace or delete it; others get
// ERR_REQ_DENIED. Registrations live in memory only, at most
// maxServicesPerPort per registering port and maxServices in all; past
// that a Set gets ERR_NO_RESOURCES.

const (
	maxServicesPerPort = 64
	maxServices        = 16384
)

var serviceKinds = map[uint16]queryKind{
	smp.SAAttrServiceRecord: {name: "ServiceRecord", stride: stride(smp.ServiceRecordLen), table: true,
		run: runServiceRecord, set: setServiceRecord, del: deleteServiceRecord},
}

// serviceRecordFields: ServiceID, ServiceGID, ServiceP_Key, reserved,
// ServiceLease, ServiceKey, ServiceName, then ServiceData8[16],
// ServiceData16[8], ServiceData32[4], ServiceData64[2], one mask bit each.
var serviceRecordFields = func() []field {
	f := []field{{0, 64}, {64, 128}, {192, 16}, {208, 16}, {224, 32}, {256, 128}, {384, 512}}
	for _, d := range []struct{ at, width, n int }{{896, 8, 16}, {1024, 16, 8}, {1152, 32, 4}, {1280, 64, 2}} {
		for i := 0; i < d.n; i++ {
			f = append(f, field{d.at + d.width*i, d.width})
		}
	}
	return f
}()

// Service record component bits the SA interprets.
const (
	srCompID    = 1 << 0
	srCompGID   = 1 << 1
	srCompPKey  = 1 << 2
	srCompLease = 1 << 4
)

// ERR_REQ_DENIED (IBA 15.2.1.1 table 192, code 7).
const saStatusReqDenied = 7 << 8

type serviceKey struct {
	id   uint64
	gid  [16]byte
	pkey uint16
}

type service struct {
	rec     smp.ServiceRecord
	owner   uint64    // port GUID of the registering port
	expires time.Time // zero: never
}

// services is the agent's registry; the zero value is ready.
type services struct {
	mu      sync.Mutex
	byKey   map[serviceKey]*service
	perPort map[uint64]int
	now     func() time.Time // tests replace it
	gen     uint64           // counts changes, for the saved SA state
}

func (s *services) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// expireLocked drops records whose lease ran out.
func (s *services) expireLocked(now time.Time) {
	for k, v := range s.byKey {
		if !v.expires.IsZero() && !now.Before(v.expires) {
			s.removeLocked(k, v)
		}
	}
}

func (s *services) removeLocked(k serviceKey, v *service) {
	s.gen++
	delete(s.byKey, k)
	if s.perPort[v.owner]--; s.perPort[v.owner] <= 0 {
		delete(s.perPort, v.owner)
	}
}

// view is the record as a requester sees it: the lease that remains.
func (v *service) view(now time.Time, b []byte) {
	r := v.rec
	if !v.expires.IsZero() {
		r.Lease = uint32((v.expires.Sub(now) + time.Second - 1) / time.Second)
	}
	_ = r.MarshalTo(b) // a decoded record always encodes
}

// matchesService compares the fields cm selects, ServiceID included
// (matches leaves bit 0 to the LID logic of other records).
func matchesService(cm uint64, req, cand []byte) bool {
	if cm&srCompID != 0 && !sameBits(req, cand, serviceRecordFields[0]) {
		return false
	}
	return matches(serviceRecordFields, cm, req, cand)
}

// requester is the port GUID behind the request's source LID, 0 if the LID
// is nobody's.
func (q *query) requester() uint64 {
	if e := q.x.owner(q.src.SLID); e >= 0 {
		return q.x.topo.Port(q.x.eps[e]).GUID
	}
	return 0
}

func runServiceRecord(q *query, t *table, limit int) (uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("ServiceRecord", serviceRecordFields, cm); st != 0 {
		return st, why
	}
	s := &q.a.services
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	s.expireLocked(now)
	var buf [smp.ServiceRecordLen]byte
	for _, v := range s.sortedLocked() {
		v.view(now, buf[:])
		if !matchesService(cm, q.req.Data[:], buf[:]) {
			continue
		}
		if !t.add(buf[:], limit) {
			break
		}
	}
	return 0, ""
}

// sortedLocked lists the records by key, so that a table cut to one MAD
// always holds the same ones.
func (s *services) sortedLocked() []*service {
	out := make([]*service, 0, len(s.byKey))
	for _, v := range s.byKey {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b *service) int {
		if c := cmp.Compare(a.rec.ID, b.rec.ID); c != 0 {
			return c
		}
		if c := bytes.Compare(a.rec.GID[:], b.rec.GID[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.rec.PKey, b.rec.PKey)
	})
	return out
}

// setServiceRecord registers or replaces a service.
func setServiceRecord(q *query) ([]byte, uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("ServiceRecord", serviceRecordFields, cm); st != 0 {
		return nil, st, why
	}
	if cm&srCompID == 0 || cm&srCompGID == 0 {
		return nil, smp.SAStatusInsufficientComponents, "a ServiceRecord Set needs ServiceID and ServiceGID"
	}
	var rec smp.ServiceRecord
	_ = rec.Unmarshal(q.req.Data[:]) // 200 bytes: cannot fail
	if _, ok := q.x.portOfGID(rec.GID); !ok {
		return nil, smp.SAStatusInvalidGID, "ServiceGID names no port of this subnet"
	}
	if cm&srCompPKey == 0 {
		rec.PKey = 0xFFFF // the default partition
	}
	if cm&srCompLease == 0 {
		rec.Lease = smp.ServiceLeaseInfinite
	}
	who := q.requester()
	if who == 0 && !q.trusted {
		return nil, smp.SAStatusReqInvalid, "the request's source LID is no port's"
	}
	s := &q.a.services
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	s.expireLocked(now)
	if s.byKey == nil {
		s.byKey, s.perPort = map[serviceKey]*service{}, map[uint64]int{}
	}
	k := serviceKey{rec.ID, rec.GID, rec.PKey}
	old := s.byKey[k]
	owner := who
	switch {
	case old != nil && old.owner != who && !q.trusted:
		return nil, saStatusReqDenied, "the ServiceRecord was registered by another port; only it or a requester with the SM_Key may replace it"
	case old != nil:
		owner = old.owner // a trusted replacement keeps the registrant
		s.removeLocked(k, old)
	case len(s.byKey) >= maxServices:
		return nil, smp.SAStatusNoResources, "the SA holds the most ServiceRecords it keeps; delete some first"
	case s.perPort[who] >= maxServicesPerPort:
		return nil, smp.SAStatusNoResources, "this port holds the most ServiceRecords one port may register; delete some first"
	}
	v := &service{rec: rec, owner: owner}
	if rec.Lease != smp.ServiceLeaseInfinite {
		v.expires = now.Add(time.Duration(rec.Lease) * time.Second)
	}
	s.byKey[k] = v
	s.perPort[owner]++
	s.gen++
	buf := make([]byte, smp.ServiceRecordLen)
	v.view(now, buf)
	q.a.log.Debug("service registered", "id", rec.ID, "lease", rec.Lease, "owner", owner, "replaced", old != nil)
	return buf, 0, ""
}

// deleteServiceRecord removes the records the component mask selects:
// all of them, or none if any belongs to another port and the requester is
// not trusted. The answer holds the first one removed.
func deleteServiceRecord(q *query) ([]byte, uint16, string) {
	cm := q.req.ComponentMask
	if st, why := checkMask("ServiceRecord", serviceRecordFields, cm); st != 0 {
		return nil, st, why
	}
	if cm == 0 {
		return nil, smp.SAStatusInsufficientComponents, "a ServiceRecord Delete must select the record"
	}
	who := q.requester()
	s := &q.a.services
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	s.expireLocked(now)
	var hit []serviceKey
	var buf [smp.ServiceRecordLen]byte
	for k, v := range s.byKey {
		v.view(now, buf[:])
		if !matchesService(cm, q.req.Data[:], buf[:]) {
			continue
		}
		if v.owner != who && !q.trusted {
			return nil, saStatusReqDenied, "the ServiceRecord was registered by another port; only it or a requester with the SM_Key may delete it"
		}
		hit = append(hit, k)
	}
	if len(hit) == 0 {
		return nil, smp.SAStatusNoRecords, "no ServiceRecord matches"
	}
	out := make([]byte, smp.ServiceRecordLen)
	s.byKey[hit[0]].view(now, out)
	for _, k := range hit {
		s.removeLocked(k, s.byKey[k])
	}
	q.a.log.Debug("services deleted", "count", len(hit), "by", who, "trusted", q.trusted)
	return out, 0, ""
}
