package sa

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport/smp"
)

// TestRegistrationsRoundTrip: what an agent holds survives JSON and comes
// back into a fresh agent whole; a lease that ran out meanwhile and a
// record that does not decode are left out, the latter named.
func TestRegistrationsRoundTrip(t *testing.T) {
	now := time.Unix(5000, 0).UTC()
	src, _ := newAgent(t, tinySubnet(t), Options{})
	src.services.now = func() time.Time { return now }
	g0 := src.RegistrationsGeneration()
	s := &src.services
	s.byKey, s.perPort = map[serviceKey]*service{}, map[uint64]int{}
	for i, lease := range []time.Duration{0, time.Hour, 10 * time.Second} {
		rec := smp.ServiceRecord{ID: uint64(100 + i), PKey: 0xFFFF, Lease: smp.ServiceLeaseInfinite}
		v := &service{rec: rec, owner: 0xA}
		if lease > 0 {
			v.rec.Lease, v.expires = uint32(lease/time.Second), now.Add(lease)
		}
		s.byKey[serviceKey{rec.ID, rec.GID, rec.PKey}] = v
		s.perPort[0xA]++
		s.gen++
	}
	src.inform.subs = []*subscription{{subscriber: 0xB, enum: 3, info: smp.InformInfo{IsGeneric: true, TrapNumber: 64, Subscribe: true, QPN: 1}}}
	src.inform.gen++
	if src.RegistrationsGeneration() == g0 {
		t.Fatal("generation did not change with the registrations")
	}
	saved := src.Registrations()
	if len(saved.Services) != 3 || len(saved.Subscriptions) != 1 {
		t.Fatalf("saved %d services, %d subscriptions; want 3, 1", len(saved.Services), len(saved.Subscriptions))
	}
	b, err := json.Marshal(saved)
	if err != nil {
		t.Fatal(err)
	}
	var back Registrations
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}

	// Restored a minute later: the 10 s lease ran out; the rest is whole.
	dst, _ := newAgent(t, tinySubnet(t), Options{})
	dst.services.now = func() time.Time { return now.Add(time.Minute) }
	if err := dst.Restore(back); err != nil {
		t.Fatal(err)
	}
	got := dst.Registrations()
	want := saved
	want.Services = want.Services[:0:0]
	for _, v := range saved.Services {
		if v.Expires.IsZero() || v.Expires.After(now.Add(time.Minute)) {
			want.Services = append(want.Services, v)
		}
	}
	if len(want.Services) != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("restored:\n%+v\nwant:\n%+v", got, want)
	}

	// A record cut short is named and left out; the others come back.
	back.Services[0].Record = back.Services[0].Record[:10]
	bad, _ := newAgent(t, tinySubnet(t), Options{})
	err = bad.Restore(back)
	if err == nil || !strings.Contains(err.Error(), "service 0: 10 bytes") {
		t.Fatalf("cut record: %v", err)
	}
	if n := len(bad.Registrations().Subscriptions); n != 1 {
		t.Fatalf("%d subscriptions restored beside the bad record, want 1", n)
	}
}
