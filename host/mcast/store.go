// Package mcast holds the subnet's multicast groups (the SA owns them:
// MCMemberRecord joins and leaves change them), turns the trees a
// multicast router plugin proposes into MulticastForwardingTable blocks,
// and verifies those trees with the SDK's own check before anything is
// programmed. A join or a leave marks only its group for recomputation.
package mcast

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/ibsm/ibsm/transport/smp"
)

// Group is one multicast group and its members. The parameters are the
// MCMemberRecord fields the group was created with (IBA 15.2.5.17); a
// join must agree with them.
type Group struct {
	MGID           [16]byte
	MLID           uint16
	QKey           uint32
	PKey           uint16
	MTU            uint8 // IBA MTU code
	Rate           uint8 // IBA rate code
	SL             uint8
	FlowLabel      uint32
	TClass         uint8
	HopLimit       uint8
	Scope          uint8
	PacketLifeTime uint8
	// Permanent groups (the IPoIB broadcast groups the SM creates for its
	// partitions) stay when their last member leaves.
	Permanent bool
	// Members by port GUID.
	Members map[uint64]Member
}

// Member is one port's membership.
type Member struct {
	PortGID   [16]byte
	State     uint8 // JoinState bits (smp.Join*)
	ProxyJoin bool
}

func (g *Group) clone() Group {
	c := *g
	c.Members = maps.Clone(g.Members)
	return c
}

// Errors the SA turns into MAD status codes.
var (
	ErrNoMLID    = errors.New("no free multicast LID")
	ErrExists    = errors.New("a group with this MGID exists")
	ErrNoGroup   = errors.New("no such multicast group")
	ErrNotMember = errors.New("the port is not a member of the group in that join state")
)

// Store is the set of groups. It is safe for concurrent use; onChange (if
// set) is called, without the lock held, after every change that needs
// trees recomputed.
type Store struct {
	mu     sync.Mutex
	byMGID map[[16]byte]*Group
	byMLID map[uint16]*Group
	// last is the highest MLID to allocate: the lower of ceiling and what
	// the switches' MFTs hold.
	last, ceiling uint16
	dirty         map[uint16]bool
	onChange      func()
	gen           uint64 // counts changes, for whoever persists the groups
}

// NewStore returns an empty store whose MLIDs run from 0xC000 to at most
// ceiling (0: the whole range, 0xFFFE).
func NewStore(ceiling uint16) *Store {
	if ceiling == 0 || ceiling > smp.MaxMulticastLID {
		ceiling = smp.MaxMulticastLID
	}
	s := &Store{byMGID: map[[16]byte]*Group{}, byMLID: map[uint16]*Group{}, dirty: map[uint16]bool{}, ceiling: ceiling}
	s.SetLastMLID(0)
	return s
}

// SetLastMLID bounds new MLIDs to what the switches hold (0: no bound but
// the ceiling); groups holding higher ones keep them.
func (s *Store) SetLastMLID(last uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if last == 0 || last > s.ceiling {
		last = s.ceiling
	}
	s.last = last
}

// OnChange sets the function called after each change.
func (s *Store) OnChange(f func()) {
	s.mu.Lock()
	s.onChange = f
	s.mu.Unlock()
}

func (s *Store) changed(mlid uint16) {
	s.dirty[mlid] = true
	s.gen++
	f := s.onChange
	s.mu.Unlock()
	if f != nil {
		f()
	}
	s.mu.Lock()
}

// Get returns a copy of the group with mgid.
func (s *Store) Get(mgid [16]byte) (Group, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.byMGID[mgid]
	if !ok {
		return Group{}, false
	}
	return g.clone(), true
}

// ByMLID returns a copy of the group with mlid.
func (s *Store) ByMLID(mlid uint16) (Group, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.byMLID[mlid]
	if !ok {
		return Group{}, false
	}
	return g.clone(), true
}

// Groups returns copies of every group, by MLID.
func (s *Store) Groups() []Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Group, 0, len(s.byMLID))
	for _, m := range slices.Sorted(maps.Keys(s.byMLID)) {
		out = append(out, s.byMLID[m].clone())
	}
	return out
}

// Generation changes whenever a group or membership does.
func (s *Store) Generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Restore puts back groups saved by an earlier run with the MLIDs their
// members were given (a member addresses the group by it), marking each for
// programming. A group whose MGID or MLID is taken, or whose MLID is not a
// multicast LID, is not restored and is named in the error; the others are.
func (s *Store) Restore(groups []Group) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	n := 0
	for _, g := range groups {
		switch {
		case g.MLID < smp.MulticastLIDBase || g.MLID > s.ceiling:
			errs = append(errs, fmt.Errorf("group %x: MLID %#04x is outside 0xC000..%#04x", g.MGID, g.MLID, s.ceiling))
			continue
		case s.byMGID[g.MGID] != nil:
			errs = append(errs, fmt.Errorf("group %x: MGID exists already", g.MGID))
			continue
		case s.byMLID[g.MLID] != nil:
			errs = append(errs, fmt.Errorf("group %x: MLID %#04x is taken", g.MGID, g.MLID))
			continue
		}
		if g.Members == nil {
			g.Members = map[uint64]Member{}
		}
		ng := g.clone()
		s.byMGID[g.MGID], s.byMLID[g.MLID] = &ng, &ng
		s.changed(g.MLID)
		n++
	}
	return n, errors.Join(errs...)
}

// Len is the number of groups.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byMLID)
}

// Create adds g (its Members may hold the creating member) with the lowest
// free MLID; a zero MGID gets one allocated from the MLID (IBA 15.2.5.17
// leaves the form to the SA: ff1<scope>:a01b:<pkey>::<mlid>, the
// signature OpenSM uses too, so no IPoIB or IPv6 MGID collides with it).
func (s *Store) Create(g Group) (Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mlid := uint16(0)
	for m := uint32(smp.MulticastLIDBase); m <= uint32(s.last); m++ {
		if s.byMLID[uint16(m)] == nil {
			mlid = uint16(m)
			break
		}
	}
	if mlid == 0 {
		return Group{}, fmt.Errorf("%w: all %d MLIDs the switches hold are in use", ErrNoMLID, int(s.last)-smp.MulticastLIDBase+1)
	}
	if g.MGID == ([16]byte{}) {
		g.MGID = [16]byte{0xff, 0x10 | g.Scope&0xF, 0xa0, 0x1b, byte(g.PKey >> 8), byte(g.PKey), 14: byte(mlid >> 8), 15: byte(mlid)}
	}
	if _, dup := s.byMGID[g.MGID]; dup {
		return Group{}, ErrExists
	}
	g.MLID = mlid
	if g.Members == nil {
		g.Members = map[uint64]Member{}
	}
	ng := g.clone()
	s.byMGID[g.MGID], s.byMLID[mlid] = &ng, &ng
	s.changed(mlid)
	return ng.clone(), nil
}

// Join adds the join state bits of m to port guid's membership of mgid and
// returns the group.
func (s *Store) Join(mgid [16]byte, guid uint64, m Member) (Group, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.byMGID[mgid]
	if !ok {
		return Group{}, ErrNoGroup
	}
	old, had := g.Members[guid]
	m.State |= old.State
	g.Members[guid] = m
	if !had || old.State != m.State {
		s.changed(g.MLID)
	}
	return g.clone(), nil
}

// Leave removes the join state bits state from port guid's membership of
// mgid; a membership left without bits ends, and a non-permanent group
// left without members is deleted (deleted reports it). Removing bits the
// port does not hold is ErrNotMember (IBA 15.2.5.17: the SA rejects a
// leave whose JoinState is not a subset of the member's).
func (s *Store) Leave(mgid [16]byte, guid uint64, state uint8) (g Group, deleted bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gp, ok := s.byMGID[mgid]
	if !ok {
		return Group{}, false, ErrNoGroup
	}
	m, had := gp.Members[guid]
	if !had || state == 0 || m.State&state != state {
		return Group{}, false, ErrNotMember
	}
	m.State &^= state
	if m.State == 0 {
		delete(gp.Members, guid)
	} else {
		gp.Members[guid] = m
	}
	if len(gp.Members) == 0 && !gp.Permanent {
		delete(s.byMGID, mgid)
		delete(s.byMLID, gp.MLID)
		deleted = true
	}
	s.changed(gp.MLID)
	return gp.clone(), deleted, nil
}

// TakeDirty returns the MLIDs changed since the last call (groups deleted
// since included: their MFT entries must go) and forgets them.
func (s *Store) TakeDirty() []uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Sorted(maps.Keys(s.dirty))
	clear(s.dirty)
	return out
}

// MarkDirty marks mlids for recomputation again (after a failed attempt).
func (s *Store) MarkDirty(mlids ...uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range mlids {
		s.dirty[m] = true
	}
}

// Dirty reports whether some group waits for recomputation.
func (s *Store) Dirty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.dirty) > 0
}
