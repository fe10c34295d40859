package smp

// Directed-route processing (IBA vol 1 14.2.2, compliance statements C14-9
// for outbound and C14-13 for returning SMPs).
//
// A DR SMP's hop pointer walks 0 → HopCount+1 on the way out and back down to
// 0 on the way home. Every node on the path performs two steps:
//
//   - DRReceive when the SMP arrives on a port: it records the arrival port
//     in ReturnPath (outbound only) and decides what happens next;
//   - DRSend when the node transmits it (originator, forwarding switch, or
//     the SMA turning a response around): it moves the hop pointer and
//     names the port to send on.
//
// A complete trip for a request along path [p1 p2 p3] from an SM on node A:
//
//	SM on A:     s.InitDR(...); act, out := s.DRSend(aIsSwitch)  // hop ptr 0→1, out = p1
//	node B (in): s.DRReceive(inB, true, nB) == DRForward          // ReturnPath[1] = inB
//	             act, out = s.DRSend(true)                        // 1→2, out = p2
//	node C (in): DRReceive == DRForward, DRSend                    // ReturnPath[2] = inC, out = p3
//	node D (in): s.DRReceive(inD, dIsSwitch, nD) == DRLocal       // ReturnPath[3] = inD, ptr 3→4
//	SMA on D:    builds the response: s.TurnAround(status)        // D bit set, R bit set
//	             act, out = s.DRSend(dIsSwitch)                   // ptr 4→3, out = ReturnPath[3] = inD
//	node C (in): DRReceive == DRForward, DRSend                    // ptr 3→2, out = ReturnPath[2]
//	node B (in): DRReceive == DRForward, DRSend                    // ptr 2→1, out = ReturnPath[1]
//	node A (in): DRReceive == DRLocal                             // ptr 1→0: deliver to the SM
//
// With HopCount 0 the SMP never leaves A: DRSend returns DRLocal at once,
// and so does DRSend on the response.
//
// DrSLID/DrDLID other than the permissive LID mean the route has a
// LID-routed segment before (DrSLID) or after (DrDLID) the directed part;
// DRReceive/DRSend then return DRLIDRoute and the caller routes the SMP by
// LID to DrDLID (outbound) or DrSLID (returning). Real ibsim rejects that
// combined form; it is implemented here for completeness.

// DRAction is what a node must do next with a directed-route SMP.
type DRAction uint8

const (
	// DRDiscard: the SMP violates the DR rules at this node; drop it silently.
	DRDiscard DRAction = iota
	// DRForward: call DRSend and transmit on the port it returns.
	DRForward
	// DRLocal: hand the SMP to the local agent: the SMA for an outbound
	// request, the SM (originator) for a returning SMP.
	DRLocal
	// DRLIDRoute: leave the directed part; route by LID to DrDLID
	// (outbound) or DrSLID (returning).
	DRLIDRoute
)

func (a DRAction) String() string {
	switch a {
	case DRDiscard:
		return "discard"
	case DRForward:
		return "forward"
	case DRLocal:
		return "local"
	case DRLIDRoute:
		return "lid-route"
	}
	return "invalid"
}

// DRSend applies the sender's rules to a DR SMP that node is about to
// transmit: the originator with HopPointer 0, a switch after DRReceive
// returned DRForward, or a responder sending a turned-around SMP. It updates
// HopPointer and returns DRForward with the egress port, DRLocal when the SMP
// is for this node itself (hop count 0), DRLIDRoute when the directed part
// ends here and the SMP continues by LID, or DRDiscard when the hop pointer
// is not valid for sending from this node.
func (s *SMP) DRSend(isSwitch bool) (DRAction, uint8) {
	if !s.IsDR() || s.HopCount > MaxHops {
		return DRDiscard, 0
	}
	hp, hc := s.HopPointer, s.HopCount
	if !s.Direction {
		switch {
		case hc != 0 && hp == 0: // C14-9:1 originator
			s.HopPointer++
			return DRForward, s.InitialPath[s.HopPointer]
		case hp != 0 && hp < hc: // C14-9:2 intermediate switch
			if !isSwitch {
				return DRDiscard, 0
			}
			s.HopPointer++
			return DRForward, s.InitialPath[s.HopPointer]
		case hp == hc: // C14-9:3 end of the directed part (hc == 0: to self)
			s.HopPointer++
			if s.DrDLID == PermissiveLID {
				return DRLocal, 0
			}
			if !isSwitch {
				return DRDiscard, 0
			}
			return DRLIDRoute, 0
		}
		return DRDiscard, 0 // C14-9:5
	}
	switch {
	case hc != 0 && hp == hc+1: // C14-13:1 responder turns around
		s.HopPointer--
		return DRForward, s.ReturnPath[s.HopPointer]
	case hp >= 2 && hp <= hc: // C14-13:2 intermediate switch
		if !isSwitch {
			return DRDiscard, 0
		}
		s.HopPointer--
		return DRForward, s.ReturnPath[s.HopPointer]
	case hp == 1: // C14-13:3 end of the directed part (hc == 0: to self)
		s.HopPointer--
		if s.DrSLID == PermissiveLID {
			return DRLocal, 0
		}
		if !isSwitch {
			return DRDiscard, 0
		}
		return DRLIDRoute, 0
	}
	return DRDiscard, 0 // C14-13:5
}

// DRReceive applies the receiver's rules to a DR SMP that arrived on inPort
// of a node with numPorts ports. Outbound, it records inPort in ReturnPath.
// It returns DRForward (call DRSend next), DRLocal (give it to the SMA when
// outbound, to the SM when returning; the hop pointer is then HopCount+1 or
// 0 respectively), DRLIDRoute, or DRDiscard.
func (s *SMP) DRReceive(inPort uint8, isSwitch bool, numPorts uint8) DRAction {
	if !s.IsDR() || s.HopCount > MaxHops {
		return DRDiscard
	}
	hp, hc := s.HopPointer, s.HopCount
	if !s.Direction {
		switch {
		case hc != 0 && hp == 0: // C14-9:1 the sender did not advance it
			return DRDiscard
		case hp != 0 && hp < hc: // C14-9:2 intermediate hop
			if !isSwitch {
				return DRDiscard
			}
			s.ReturnPath[hp] = inPort
			if next := s.InitialPath[hp+1]; next == 0 || next > numPorts {
				return DRDiscard
			}
			return DRForward
		case hp == hc: // C14-9:3 end of the directed part
			if hc != 0 {
				s.ReturnPath[hp] = inPort
			}
			if s.DrDLID != PermissiveLID && !isSwitch {
				return DRDiscard
			}
			// Either way the directed part is done: the SMA (or the LID
			// segment) sees hop pointer = hop count + 1 (C14-9:4).
			s.HopPointer++
			if s.DrDLID == PermissiveLID {
				return DRLocal
			}
			return DRLIDRoute
		case hp == hc+1: // C14-9:4 arrived by LID routing at the SMA
			return DRLocal
		}
		return DRDiscard
	}
	switch {
	case hc != 0 && hp == hc+1: // C14-13:1 the responder did not decrement it
		return DRDiscard
	case hp >= 2 && hp <= hc: // C14-13:2 intermediate hop
		if !isSwitch {
			return DRDiscard
		}
		if next := s.ReturnPath[hp-1]; next == 0 || next > numPorts {
			return DRDiscard
		}
		return DRForward
	case hp == 1: // C14-13:3 end of the directed part
		if s.DrSLID != PermissiveLID && !isSwitch {
			return DRDiscard
		}
		s.HopPointer--
		if s.DrSLID == PermissiveLID {
			return DRLocal
		}
		return DRLIDRoute
	case hp == 0: // C14-13:4 back at the SM
		return DRLocal
	}
	return DRDiscard
}

// TurnAround makes s the response to the request it holds, in place, as an
// SMA does (IBA 14.2.2, 13.4.5): Get and Set both answer with GetResp, Trap
// is not answered by this helper (the SM answers it with TrapRepress). The
// D bit is set for DR SMPs; the hop pointer, hop count and paths are kept so
// DRSend can walk ReturnPath back. status is the MAD status (15 bits for DR).
func (s *SMP) TurnAround(status uint16) {
	s.Method = MethodGetResp
	s.Status = status
	if s.IsDR() {
		s.Status &= 0x7FFF
		s.Direction = true
	}
}
