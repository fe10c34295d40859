package sm

import (
	"slices"
	"sync"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// Notifier hears the events the SA reports to InformInfo subscribers
// (IBA 13.4.8.3). The SM calls it when an Agent that implements it is
// set; calls come from the sweep loop and must not block.
type Notifier interface {
	// PortsInService: endpoints (port GUIDs) that a new plan in force
	// gave a LID (in: trap 64) or dropped (out: trap 65).
	PortsInService(in, out []uint64)
	// FabricTrap: a generic trap from the fabric (128, 129-131, 144),
	// forwarded as it arrived from slid.
	FabricTrap(n smp.Notice, slid uint16)
}

func (s *SM) notifier() Notifier {
	n, _ := s.Agent.(Notifier)
	return n
}

// notifyEndpoints reports the endpoints that differ between the plan that
// was in force (nil before the first: nothing to report, as nobody could
// subscribe yet) and the new topology's.
func (s *SM) notifyEndpoints(old *Applied, topo *topology.Topology) {
	n := s.notifier()
	if n == nil || old == nil || old.Topo == nil {
		return
	}
	in, out := endpointChanges(old.Topo, topo)
	if len(in)+len(out) > 0 {
		s.notify(func() { n.PortsInService(in, out) })
	}
}

// noticeQueue hands the notifier its calls in order on a goroutine of its
// own while Run runs: the SA indexes a new plan on the first call after a
// re-route (ft3-56: ~12 ms of CPU), which the sweep loop need not wait for
// before it answers the trap that brought the call.
type noticeQueue struct {
	mu sync.Mutex
	ch chan func() // nil: call at once
}

// start runs the queue until the returned stop is called (Run).
func (q *noticeQueue) start() (stop func()) {
	ch, done := make(chan func(), 256), make(chan struct{})
	go func() {
		defer close(done)
		for f := range ch {
			f()
		}
	}()
	q.mu.Lock()
	q.ch = ch
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		q.ch = nil
		close(ch)
		q.mu.Unlock()
		<-done
	}
}

// notify calls f on the queue, or at once when no queue runs.
func (s *SM) notify(f func()) {
	q := &s.notices
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ch == nil {
		f()
		return
	}
	q.ch <- f
}

// endpointChanges lists the port GUIDs that are endpoints of b and not of
// a (in) and the reverse (out). O(endpoints); O(nodes) without a map when
// b was patched from a (Topology.Patch: a cable event), where only the
// nodes whose ports b does not share with a can differ.
func endpointChanges(a, b *topology.Topology) (in, out []uint64) {
	if changed, ok := b.Unshared(a); ok && a.SM == b.SM {
		sameRefs := slices.Equal(a.Endpoints(), b.Endpoints())
		for _, i := range changed {
			if sameRefs && samePortGUIDs(a, b, i) {
				// The first cable event after a bring-up compares every
				// node so (its snapshot shares none with the bring-up's).
				continue
			}
			ga, gb := nodeEndpoints(a, i), nodeEndpoints(b, i)
			for _, g := range gb {
				if !slices.Contains(ga, g) {
					in = append(in, g)
				}
			}
			for _, g := range ga {
				if !slices.Contains(gb, g) {
					out = append(out, g)
				}
			}
		}
		return in, out
	}
	guids := func(t *topology.Topology) map[uint64]bool {
		m := make(map[uint64]bool, len(t.Endpoints()))
		for _, ep := range t.Endpoints() {
			m[t.PortGUID(ep)] = true
		}
		return m
	}
	ga, gb := guids(a), guids(b)
	for _, ep := range b.Endpoints() {
		if g := b.PortGUID(ep); !ga[g] {
			in = append(in, g)
		}
	}
	for _, ep := range a.Endpoints() {
		if g := a.PortGUID(ep); !gb[g] {
			out = append(out, g)
		}
	}
	return in, out
}

// samePortGUIDs reports whether node i's endpoints, the same ports in a
// and b, have the same GUIDs in both.
func samePortGUIDs(a, b *topology.Topology, i int32) bool {
	for _, ep := range b.NodeEndpoints(i) {
		if a.PortGUID(ep) != b.PortGUID(ep) {
			return false
		}
	}
	return true
}

// nodeEndpoints lists the port GUIDs of node i's endpoints in t.
func nodeEndpoints(t *topology.Topology, i int32) []uint64 {
	var out []uint64
	for _, ep := range t.NodeEndpoints(i) {
		out = append(out, t.PortGUID(ep))
	}
	return out
}

// forwardTrap hands a generic trap to the notifier.
func (s *SM) forwardTrap(n smp.Notice, slid uint16) {
	if nt := s.notifier(); nt != nil && n.IsGeneric {
		s.notify(func() { nt.FabricTrap(n, slid) })
	}
}
