package mcast

import (
	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/transport/smp"
)

// IPoIBGroups are the broadcast groups the SM creates for the partitions
// marked IPoIB (RFC 4391 §4): the IPv4 broadcast group
// ff1<scope>:401b:<pkey>::ffff:ffff and the IPv6 all-nodes group
// ff1<scope>:601b:<pkey>::1, P_Key with the full-member bit, with the
// partition's ipoib {} parameters. They are permanent: they stay when
// their last member leaves, so a client can always join.
func IPoIBGroups(parts []conf.Partition) []Group {
	var out []Group
	for _, p := range parts {
		ip := p.IPoIB
		if ip == nil {
			continue
		}
		pkey := p.PKey | smp.PKeyFullMember
		scope := ip.Scope & 0xF
		v4 := [16]byte{0xff, 0x10 | scope, 0x40, 0x1b, byte(pkey >> 8), byte(pkey), 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}
		v6 := [16]byte{0xff, 0x10 | scope, 0x60, 0x1b, byte(pkey >> 8), byte(pkey), 15: 1}
		for _, mgid := range [][16]byte{v4, v6} {
			out = append(out, Group{MGID: mgid, QKey: ip.QKey, PKey: pkey, MTU: ip.MTU, Rate: ip.Rate, SL: ip.SL,
				Scope: scope, PacketLifeTime: ipoibPacketLifeTime, Permanent: true})
		}
	}
	return out
}

// ipoibPacketLifeTime is the broadcast groups' PacketLifeTime (about 1 s,
// the SA's default path lifetime).
const ipoibPacketLifeTime = 18

// Ensure creates each group that does not exist yet (by MGID) and marks
// existing ones permanent; groups no longer wanted stay until their
// members leave. It returns how many it created.
func (s *Store) Ensure(groups []Group) (int, error) {
	n := 0
	for _, g := range groups {
		s.mu.Lock()
		cur, ok := s.byMGID[g.MGID]
		if ok {
			cur.Permanent = cur.Permanent || g.Permanent
		}
		s.mu.Unlock()
		if ok {
			continue
		}
		if _, err := s.Create(g); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
