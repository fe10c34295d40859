package sa

import (
	"errors"
	"fmt"
	"time"

	"github.com/ibsm/ibsm/transport/smp"
)

// Registrations are what clients registered with the SA that a restarted
// SM must keep for them not to have to register again (IBA 14.4.11: an SM
// that lost them asks every port to re-register with ClientReregister).
// Records are kept in their wire form, the spec's own stable encoding.
type Registrations struct {
	Services      []SavedService      `json:"services"`
	Subscriptions []SavedSubscription `json:"subscriptions"`
}

// SavedService is one ServiceRecord registration.
type SavedService struct {
	Record  []byte    `json:"record"` // ServiceRecord, 176 bytes
	Owner   uint64    `json:"owner"`  // registering port GUID
	Expires time.Time `json:"expires,omitzero"`
}

// SavedSubscription is one InformInfo subscription.
type SavedSubscription struct {
	Subscriber uint64 `json:"subscriber"` // port GUID
	Enum       uint16 `json:"enum"`
	Info       []byte `json:"info"` // InformInfo, 36 bytes
}

// RegistrationsGeneration changes whenever a registration does.
func (a *Agent) RegistrationsGeneration() uint64 {
	a.services.mu.Lock()
	g := a.services.gen
	a.services.mu.Unlock()
	a.inform.mu.Lock()
	defer a.inform.mu.Unlock()
	return g + a.inform.gen
}

// Registrations returns the agent's registrations, leases that ran out
// left out.
func (a *Agent) Registrations() Registrations {
	var out Registrations
	s := &a.services
	s.mu.Lock()
	s.expireLocked(s.clock())
	for _, v := range s.sortedLocked() {
		b := make([]byte, smp.ServiceRecordLen)
		_ = v.rec.MarshalTo(b) // a decoded record always encodes
		out.Services = append(out.Services, SavedService{Record: b, Owner: v.owner, Expires: v.expires})
	}
	s.mu.Unlock()
	in := &a.inform
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, sub := range in.subs {
		b := make([]byte, smp.InformInfoLen)
		_ = sub.info.MarshalTo(b)
		out.Subscriptions = append(out.Subscriptions, SavedSubscription{Subscriber: sub.subscriber, Enum: sub.enum, Info: b})
	}
	return out
}

// Restore adds saved registrations to an agent that has none yet. A
// record that does not decode, or a service whose lease ran out, is left
// out; the error names what was left out for a reason other than its lease.
func (a *Agent) Restore(r Registrations) error {
	var errs []error
	s := &a.services
	s.mu.Lock()
	now := s.clock()
	if s.byKey == nil {
		s.byKey, s.perPort = map[serviceKey]*service{}, map[uint64]int{}
	}
	for i, v := range r.Services {
		var rec smp.ServiceRecord
		if len(v.Record) != smp.ServiceRecordLen {
			errs = append(errs, fmt.Errorf("service %d: %d bytes, want %d", i, len(v.Record), smp.ServiceRecordLen))
			continue
		}
		if err := rec.Unmarshal(v.Record); err != nil {
			errs = append(errs, fmt.Errorf("service %d: %w", i, err))
			continue
		}
		if !v.Expires.IsZero() && !now.Before(v.Expires) {
			continue // its lease ran out while the SM was down
		}
		k := serviceKey{rec.ID, rec.GID, rec.PKey}
		if s.byKey[k] != nil {
			errs = append(errs, fmt.Errorf("service %d: registered twice", i))
			continue
		}
		s.byKey[k] = &service{rec: rec, owner: v.Owner, expires: v.Expires}
		s.perPort[v.Owner]++
		s.gen++
	}
	s.mu.Unlock()
	in := &a.inform
	in.mu.Lock()
	defer in.mu.Unlock()
	for i, v := range r.Subscriptions {
		var ii smp.InformInfo
		if len(v.Info) != smp.InformInfoLen {
			errs = append(errs, fmt.Errorf("subscription %d: %d bytes, want %d", i, len(v.Info), smp.InformInfoLen))
			continue
		}
		if err := ii.Unmarshal(v.Info); err != nil {
			errs = append(errs, fmt.Errorf("subscription %d: %w", i, err))
			continue
		}
		in.subs = append(in.subs, &subscription{subscriber: v.Subscriber, enum: v.Enum, info: ii})
		in.gen++
	}
	return errors.Join(errs...)
}
