package sm

import (
	"fmt"

	"github.com/ibsm/ibsm/transport/smp"
)

// badMKey reports trap 256: a port refused an SMP whose M_Key was wrong.
// Someone without the key tried to read or change a protected port (or
// our key store lost a port's key: then our own next SMP to it fails and
// the M_Key recovery of host/mkey takes over). Nothing is re-swept: a
// flood of such traps must not make the SM work; the log (budgeted by the
// caller) and InformInfo subscribers, who got the notice before this, are
// told who it was.
func (s *SM) badMKey(n smp.Notice, warn func(string, ...any)) {
	d, err := n.Trap256()
	if err != nil {
		warn("malformed trap ignored", "trap", n.TrapNumber, "error", err)
		return
	}
	ref, _ := s.portOfLID(d.LID)
	kv := []any{"trap", n.TrapNumber, "port_lid", d.LID, "port_guid", fmt.Sprintf("0x%016x", ref.GUID),
		"method", fmt.Sprintf("%#02x", d.Method), "attr", fmt.Sprintf("%#04x", d.AttrID),
		"attr_mod", fmt.Sprintf("%#x", d.AttrMod), "m_key", fmt.Sprintf("0x%016x", d.MKey)}
	if d.DRNotice {
		kv = append(kv, "directed_route_hops", d.DRHops, "dr_slid", d.DRSLID,
			"return_path", fmt.Sprint(d.DRReturnPath[:min(int(d.DRHops), len(d.DRReturnPath))]))
	}
	warn("a port refused an SMP with a wrong M_Key (trap 256): someone without the key tried to manage it", kv...)
}
