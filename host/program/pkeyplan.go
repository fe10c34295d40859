package program

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/transport/smp"
)

// Membership is what the partitions give each end port (CA and router
// ports, switch port 0): base P_Key (15 bits) → full member.
type Membership map[discovery.PortRef]map[uint16]bool

// Keys returns a port's P_Keys with their membership bit, ascending by
// base key.
func (m Membership) Keys(r discovery.PortRef) []uint16 {
	var out []uint16
	for k, full := range m[r] {
		if full {
			k |= smp.PKeyFullMember
		}
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i]&0x7FFF < out[j]&0x7FFF })
	return out
}

// endPort is one port a partition member selector can name.
type endPort struct {
	ref  discovery.PortRef
	guid uint64
	n    *discovery.Node
}

// endPorts lists the fabric's end ports, sorted: every CA and router port
// discovery read, and every switch's port 0.
func endPorts(fab *discovery.Fabric) []endPort {
	var out []endPort
	for guid, n := range fab.Nodes {
		if n.Info.NodeType == smp.NodeTypeSwitch {
			if len(n.Ports) > 0 && n.Ports[0].Valid {
				out = append(out, endPort{discovery.PortRef{GUID: guid, Port: 0}, n.Info.PortGUID, n})
			}
			continue
		}
		for q := 1; q < len(n.Ports); q++ {
			if n.Ports[q].Valid {
				out = append(out, endPort{discovery.PortRef{GUID: guid, Port: uint8(q)}, n.Ports[q].GUID, n})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].ref, out[j].ref
		return a.GUID < b.GUID || a.GUID == b.GUID && a.Port < b.Port
	})
	return out
}

func selects(m *conf.PartitionMember, e *endPort, sm discovery.PortRef) bool {
	switch m.Kind {
	case conf.MemberGUID:
		return e.guid == m.GUID
	case conf.MemberDesc:
		return m.MatchDesc(e.n.Desc)
	case conf.MemberAllCAs:
		return e.n.Info.NodeType == smp.NodeTypeCA
	case conf.MemberAllSwitches:
		return e.n.Info.NodeType == smp.NodeTypeSwitch
	case conf.MemberAll:
		return true
	case conf.MemberSelf:
		return e.ref == sm
	}
	return false
}

// ResolvePartitions turns the configured partitions into each end port's
// membership on fab (see conf.Partition for the rules: the most specific
// selector decides, full wins ties, the SM's port is a full member of
// every partition). The warnings name selectors that match nothing on
// this fabric (a GUID no port has, a glob no description matches) and end
// ports that are members of no partition: those cannot reach the SA.
func ResolvePartitions(parts []conf.Partition, fab *discovery.Fabric) (Membership, []string) {
	ends := endPorts(fab)
	sm := discovery.PortRef{GUID: fab.SMGUID, Port: fab.SMPort}
	smKnown := false
	nodeGUIDs := map[uint64]*discovery.Node{}
	for i := range ends {
		smKnown = smKnown || ends[i].ref == sm
		nodeGUIDs[ends[i].ref.GUID] = ends[i].n
	}
	m := Membership{}
	var warns []string
	type pick struct {
		rank int
		full bool
	}
	for pi := range parts {
		p := &parts[pi]
		chosen := map[discovery.PortRef]pick{}
		for mi := range p.Members {
			mb := &p.Members[mi]
			hits := 0
			for i := range ends {
				e := &ends[i]
				if !selects(mb, e, sm) {
					continue
				}
				hits++
				r := mb.Rank()
				if b, ok := chosen[e.ref]; !ok || r > b.rank || r == b.rank && mb.Full {
					chosen[e.ref] = pick{r, mb.Full || ok && r == b.rank && b.full}
				}
			}
			if hits > 0 {
				continue
			}
			switch mb.Kind {
			case conf.MemberGUID:
				hint := ""
				if n := nodeGUIDs[mb.GUID]; n != nil && n.Info.NodeType != smp.NodeTypeSwitch {
					hint = fmt.Sprintf(": it is the node GUID of %q; name its port GUIDs", n.Desc)
				}
				warns = append(warns, fmt.Sprintf("partition %q (%s): port GUID %s is not on the fabric%s", p.Name, mb.Range, mb.String(), hint))
			case conf.MemberDesc, conf.MemberSelf:
				warns = append(warns, fmt.Sprintf("partition %q (%s): %q matches no port on the fabric", p.Name, mb.Range, mb.String()))
			}
		}
		if smKnown {
			chosen[sm] = pick{99, true}
		}
		for ref, b := range chosen {
			if m[ref] == nil {
				m[ref] = map[uint16]bool{}
			}
			m[ref][p.PKey] = b.full
		}
	}
	var orphans []string
	for i := range ends {
		if len(m[ends[i].ref]) == 0 {
			orphans = append(orphans, fmt.Sprintf("%#x/%d %q", ends[i].ref.GUID, ends[i].ref.Port, ends[i].n.Desc))
		}
	}
	if len(orphans) > 0 {
		ex := orphans[:min(3, len(orphans))]
		warns = append(warns, fmt.Sprintf("%d end ports are members of no partition and cannot reach the SA or any port (e.g. %s); add them to a partition, or ignore this if they are meant to be cut off",
			len(orphans), strings.Join(ex, ", ")))
	}
	return m, warns
}

// layout places the keys of want (base → full) into a table of size
// entries. A key the current table cur holds stays at its index (clients
// bind queue pairs to P_Key indices, so a change elsewhere must not move
// it), with its membership bit updated; keys no longer wanted are cleared;
// new keys fill the free entries in ascending order, the default P_Key
// taking index 0 if that is free. cur may be shorter than size (unknown
// entries are taken as empty). It fails if want does not fit.
func layout(cur []uint16, want map[uint16]bool, size int) ([]uint16, error) {
	if len(want) > size {
		return nil, fmt.Errorf("%d partitions do not fit a P_Key table of %d entries", len(want), size)
	}
	if holds(cur, want, size) {
		// What the rules below give for a table that holds the wanted keys
		// and nothing else: the table itself. Every sweep lays out every
		// port (135 k at ft3-56, 0.2 s a cable event); this skips the map
		// and the table each would allocate.
		return slices.Clone(cur), nil
	}
	t := make([]uint16, size)
	placed := map[uint16]bool{}
	entry := func(base uint16) uint16 {
		if want[base] {
			return base | smp.PKeyFullMember
		}
		return base
	}
	for i, k := range cur[:min(len(cur), size)] {
		base := k & 0x7FFF
		if _, ok := want[base]; !ok || base == 0 || placed[base] {
			continue
		}
		t[i], placed[base] = entry(base), true
	}
	var rest []uint16
	for base := range want {
		if !placed[base] {
			rest = append(rest, base)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
	if _, ok := want[conf.DefaultPKey]; ok && !placed[conf.DefaultPKey] && t[0] == 0 {
		t[0] = entry(conf.DefaultPKey)
		placed[conf.DefaultPKey] = true
	}
	free := 0
	for _, base := range rest {
		if placed[base] {
			continue
		}
		for t[free] != 0 {
			free++
		}
		t[free] = entry(base)
	}
	return t, nil
}

// holds reports whether cur (size entries) holds each key of want once,
// with its membership bit, and nothing else; tables of more than 16 keys
// are not looked at (the general layout takes them).
func holds(cur []uint16, want map[uint16]bool, size int) bool {
	if len(cur) != size || len(want) > 16 {
		return false
	}
	var seen [16]uint16
	n := 0
	for _, k := range cur {
		if k == 0 {
			continue
		}
		base := k & 0x7FFF
		full, ok := want[base]
		if !ok || base == 0 || n == len(want) || slices.Contains(seen[:n], base) || (k&smp.PKeyFullMember != 0) != full {
			return false
		}
		seen[n] = base
		n++
	}
	return n == len(want)
}
