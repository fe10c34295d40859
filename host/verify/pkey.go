// Package verify holds the host-only plan checks: the P_Key tables a
// partition plan programs. The routing, LID and VL checks every plan goes
// through before any Set live in sdk/check, so that the sdktest
// conformance kit runs the very code the host runs.
package verify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ibsm/ibsm/host/discovery"
)

// PKeyTables is a P_Key plan to check (IBA 10.9): what each programmed
// port's table holds, against the membership the partitions give.
type PKeyTables struct {
	// Members: end port → base P_Key (15 bits) → full member.
	Members map[discovery.PortRef]map[uint16]bool
	// Tables: every programmed port's whole table (0 = empty entry).
	Tables map[discovery.PortRef][]uint16
	// Enforce: switch external port → the end port behind it, whose keys
	// it must hold.
	Enforce map[discovery.PortRef]discovery.PortRef
}

// CheckPKeys checks that every programmed port holds exactly the keys of
// its partitions, each once with the right membership bit (bit 15 set for
// full members), and no other key: a member lacking its key cannot talk in
// its partition, a non-member holding one can. An enforcing switch port
// must hold what the end port behind it holds. It lists at most
// maxProblems problems (0: 20).
func CheckPKeys(t PKeyTables, maxProblems int) error {
	if maxProblems <= 0 {
		maxProblems = 20
	}
	refs := make([]discovery.PortRef, 0, len(t.Tables))
	for r := range t.Tables {
		refs = append(refs, r)
	}
	// A first pass counts problems without naming them (135 k ports at
	// ft3-56, every sweep): only a plan with problems is walked again, in
	// port order, for the messages.
	n := 0
	scanPKeys(t, refs, func(string, ...any) { n++ })
	if n == 0 {
		return nil
	}
	sort.Slice(refs, func(i, j int) bool {
		return refs[i].GUID < refs[j].GUID || refs[i].GUID == refs[j].GUID && refs[i].Port < refs[j].Port
	})
	var probs []string
	n = 0
	scanPKeys(t, refs, func(format string, args ...any) {
		if n++; len(probs) < maxProblems {
			probs = append(probs, fmt.Sprintf(format, args...))
		}
	})
	if n == 0 {
		return nil
	}
	sort.Strings(probs)
	more := ""
	if n > len(probs) {
		more = fmt.Sprintf("\n  … and %d more", n-len(probs))
	}
	return fmt.Errorf("P_Key plan rejected, %d problems:\n  %s%s", n, strings.Join(probs, "\n  "), more)
}

// scanPKeys hands add every problem of refs' tables, in refs' order.
func scanPKeys(t PKeyTables, refs []discovery.PortRef, add func(format string, args ...any)) {
	held := map[uint16]int{}
	for _, r := range refs {
		want := t.Members[r]
		end, enforcing := t.Enforce[r]
		if enforcing {
			want = t.Members[end]
		}
		who := func() string {
			w := fmt.Sprintf("port %#x/%d", r.GUID, r.Port)
			if enforcing {
				w += fmt.Sprintf(" (enforcing for %#x/%d)", end.GUID, end.Port)
			}
			return w
		}
		clear(held)
		for i, k := range t.Tables[r] {
			base, full := k&0x7FFF, k&0x8000 != 0
			switch {
			case k == 0:
				continue
			case base == 0:
				add("%s entry %d holds the invalid P_Key %#04x", who(), i, k)
				continue
			}
			if j, dup := held[base]; dup {
				add("%s holds P_Key %#04x twice (entries %d and %d)", who(), base, j, i)
				continue
			}
			held[base] = i
			wf, member := want[base]
			switch {
			case !member:
				add("%s holds P_Key %#04x of a partition it is not a member of (entry %d)", who(), k, i)
			case wf != full:
				add("%s holds P_Key %#04x with the wrong membership bit (entry %d): want %s member", who(), k, i, map[bool]string{true: "full", false: "limited"}[wf])
			}
		}
		for base := range want {
			if _, ok := held[base]; !ok {
				add("%s lacks P_Key %#04x of a partition it is a member of", who(), base)
			}
		}
	}
}
