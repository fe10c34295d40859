package sm

import (
	"context"
	"fmt"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// trapBatch is what a burst of traps asks for.
type trapBatch struct {
	changes discovery.Changes
	// poll is why the batch needs every switch polled (a trap whose source
	// the plan does not know); "" if it does not.
	poll  string
	traps int
}

// logBudget lets n traps per second be logged one by one.
type logBudget struct {
	n, used    int
	window     time.Time
	suppressed int
}

func newLogBudget(n int) *logBudget { return &logBudget{n: n} }

func (b *logBudget) allow() bool {
	now := time.Now()
	if now.Sub(b.window) >= time.Second {
		b.window, b.used = now, 0
	}
	if b.used < b.n {
		b.used++
		return true
	}
	b.suppressed++
	return false
}

// take returns and resets the count of traps not logged.
func (b *logBudget) take() int {
	n := b.suppressed
	b.suppressed = 0
	return n
}

// isTrap reports whether p is a whole MAD whose method is Trap.
func isTrap(p transport.Packet) bool {
	return len(p.MAD) >= smp.MADLen && smp.PeekMethod(p.MAD) == smp.MethodTrap
}

// handleTrap answers a trap with TrapRepress, logs it and adds what it
// reports to b. It reports whether the trap calls for a sweep. Traps are
// untrusted input: every line it logs, malformed traps included, comes out
// of lb's budget.
func (s *SM) handleTrap(p transport.Packet, b *trapBatch, lb *logBudget) bool {
	if !isTrap(p) {
		return false
	}
	warn := func(msg string, kv ...any) {
		if lb.allow() {
			s.Log.Warn(msg, append([]any{"from_lid", p.SLID}, kv...)...)
		}
	}
	var req smp.SMP
	if err := req.Decode(p.MAD); err != nil {
		warn("malformed trap ignored", "error", err)
		return false
	}
	// Repress first, whatever the trap says: the sender stops repeating it.
	rep := req
	rep.Method = smp.MethodTrapRepress
	buf := make([]byte, smp.MADLen)
	if err := rep.EncodeTo(buf); err != nil {
		warn("TrapRepress not encoded", "error", err)
	} else if err := s.T.Send(transport.Packet{DLID: p.SLID, SL: p.SL, MAD: buf}); err != nil {
		warn("TrapRepress not sent", "error", err)
	}
	if req.AttrID != smp.AttrNotice {
		warn("trap with an attribute other than Notice ignored", "attr", fmt.Sprintf("%#04x", req.AttrID))
		return false
	}
	var n smp.Notice
	if err := req.Attr(&n); err != nil {
		warn("malformed trap ignored", "error", err)
		return false
	}
	s.forwardTrap(n, p.SLID) // to InformInfo subscribers
	s.observeTrap(n, p.SLID)
	if !n.IsGeneric {
		if lb.allow() {
			s.Log.Info("vendor trap ignored", "from_lid", p.SLID, "issuer_lid", n.IssuerLID, "device_id", n.TrapNumber)
		}
		return false
	}
	log := func(msg string, kv ...any) {
		if lb.allow() {
			s.Log.Info(msg, append([]any{"trap", n.TrapNumber, "from_lid", p.SLID, "issuer_lid", n.IssuerLID}, kv...)...)
		}
	}
	switch n.TrapNumber {
	case smp.TrapPortStateChange:
		lid, err := n.Trap128()
		if err != nil {
			warn("malformed trap ignored", "trap", n.TrapNumber, "error", err)
			return false
		}
		ref, ok := s.portOfLID(lid)
		if !ok || ref.Port != 0 {
			log("port state change from a LID the plan does not hold as a switch", "lid", lid)
			b.poll = fmt.Sprintf("trap 128 from LID %d, which the plan does not hold as a switch", lid)
		} else {
			log("port state change", "lid", lid, "guid", fmt.Sprintf("0x%016x", ref.GUID))
			b.changes.Switches = append(b.changes.Switches, ref.GUID)
		}
	case smp.TrapLinkIntegrity, smp.TrapBufferOverrun, smp.TrapFlowControlWatchdog:
		lid, port, err := n.LinkTrap()
		if err != nil {
			warn("malformed trap ignored", "trap", n.TrapNumber, "error", err)
			return false
		}
		ref, ok := s.portOfLID(lid)
		if !ok {
			log("link trap from a LID the plan does not hold; polling switches", "lid", lid, "port", port)
			b.poll = fmt.Sprintf("trap %d from LID %d, which the plan does not hold", n.TrapNumber, lid)
			break
		}
		if ref.Port == 0 { // a switch: the trap names one of its ports
			// A port the switch does not have would make the update
			// give up and re-discover everything, at every trap: such a
			// trap is malformed, whoever sent it.
			if fab := s.Fabric(); fab == nil || fab.Nodes[ref.GUID] == nil || int(port) >= len(fab.Nodes[ref.GUID].Ports) {
				warn("link trap names a port the switch does not have; ignored", "trap", n.TrapNumber, "lid", lid, "port", port)
				return false
			}
			ref.Port = port
		}
		log("link trap; re-reading the port", "lid", lid, "guid", fmt.Sprintf("0x%016x", ref.GUID), "port", ref.Port)
		b.changes.Ports = append(b.changes.Ports, discovery.PortRef{GUID: ref.GUID, Port: ref.Port})
	case smp.TrapCapabilityMaskChange:
		d, err := n.Trap144()
		if err != nil {
			warn("malformed trap ignored", "trap", n.TrapNumber, "error", err)
			return false
		}
		ref, _ := s.portOfLID(d.LID)
		log("capability mask change (informational, no sweep)", "lid", d.LID, "guid", fmt.Sprintf("0x%016x", ref.GUID),
			"port", ref.Port, "capability_mask", fmt.Sprintf("%#08x", d.CapabilityMask), "is_sm", d.CapabilityMask&smp.CapIsSM != 0)
		return false
	case smp.TrapBadMKey:
		s.badMKey(n, warn)
		return false
	default:
		log("trap ignored (no action defined)")
		return false
	}
	b.traps++
	return true
}

// trapSweep re-routes after a coalesced burst of traps.
func (s *SM) trapSweep(ctx context.Context, b trapBatch, suppressed int) (*Report, error) {
	ch := b.changes
	if b.poll != "" {
		s.Log.Info("polling every switch instead of trusting the trap source", "reason", b.poll)
		if s.Fabric() == nil {
			rep, err := s.fullInstead(ctx, b.poll)
			return withTraps(rep, b, suppressed), err
		}
		more, full, err := s.pollAndCheck(ctx)
		if err != nil {
			s.Log.Warn("light sweep failed", "error", err)
		}
		if full != "" {
			rep, err := s.fullInstead(ctx, full)
			return withTraps(rep, b, suppressed), err
		}
		ch.Merge(more)
	}
	rep, err := s.IncrementalSweep(ctx, ch)
	return withTraps(rep, b, suppressed), err
}

func withTraps(rep *Report, b trapBatch, suppressed int) *Report {
	if rep != nil {
		rep.Traps = b.traps
	}
	if suppressed > 0 && rep != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d traps were not logged one by one (more than %d per second)", suppressed, trapLogBurst))
	}
	return rep
}
