package sim

import (
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

func (n *node) isSwitch() bool { return n.typ == topology.Switch }

// hop crosses the link at (n, out) and returns the far node and the port it
// arrives on, or ok=false if the port does not exist or the link is not up.
func (f *Fabric) hop(n *node, out uint8) (*node, uint8, bool) {
	if out == 0 || int(out) > n.nfp {
		return nil, 0, false
	}
	pt := &n.ports[out]
	peer := pt.peer
	if peer == nil || !pt.up() || peer.gone.Load() || !peer.ports[pt.peerPort].up() {
		return nil, 0, false
	}
	return peer, pt.peerPort, true
}

// agentAt returns the agent that receives MADs terminating at port in of n:
// the one on port 0 of a switch, else the one on that CA port (or, for a
// multi-port CA, on any of its ports).
func agentAt(n *node, in uint8) *conn {
	if n.isSwitch() {
		return n.ports[0].attached.Load()
	}
	if int(in) < len(n.ports) {
		if c := n.ports[in].attached.Load(); c != nil {
			return c
		}
	}
	for p := 1; p < len(n.ports); p++ {
		if c := n.ports[p].attached.Load(); c != nil {
			return c
		}
	}
	return nil
}

// walkDR moves a DR SMP from node cur (which has just called DRSend and
// got act/out) until it must be handled locally, returning that node and
// the port the SMP arrived on there.
func (f *Fabric) walkDR(cur *node, in uint8, s *smp.SMP, act smp.DRAction, out uint8) (*node, uint8, bool) {
	for {
		switch act {
		case smp.DRLocal:
			return cur, in, true
		case smp.DRForward:
			next, nin, ok := f.hop(cur, out)
			if !ok {
				return nil, 0, false
			}
			cur, in = next, nin
			act = s.DRReceive(in, cur.isSwitch(), uint8(cur.nfp))
			if act == smp.DRForward {
				act, out = s.DRSend(true)
			}
		default: // discard, or combined LID/DR routes (not simulated, as in ibsim)
			return nil, 0, false
		}
	}
}

// directed handles a DR SMP request from agent c.
func (f *Fabric) directed(c *conn, s *smp.SMP) {
	if s.HopPointer != 0 || s.Direction || s.DrSLID != smp.PermissiveLID || s.DrDLID != smp.PermissiveLID {
		f.st.lost.Add(1) // only pure directed routes, like ibsim
		return
	}
	act, out := s.DRSend(c.n.isSwitch())
	dst, in, ok := f.walkDR(c.n, c.port, s, act, out)
	if !ok || dst.gone.Load() {
		f.st.lost.Add(1)
		return
	}
	if f.answerAt(dst, in, s, transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID}) {
		f.returnDR(dst, s)
	}
}

// answerAt has the SMA of dst answer request s, or else hands s to the agent
// behind port in (addressed with hdr), or else turns it into the answer a
// real SMA gives to what nobody handles. It reports whether s now holds a
// response the caller must carry back.
func (f *Fabric) answerAt(dst *node, in uint8, s *smp.SMP, hdr transport.Packet) bool {
	switch f.sma(dst, in, s) {
	case smaRefused:
		return false // counted in Stats.MKeyRefused; the requester times out
	case smaNotMine:
		if a := agentAt(dst, in); a != nil && s.Method != smp.MethodTrapRepress {
			f.forward(a, hdr, s)
			return false
		}
		if !f.unsupported(s) {
			f.st.lost.Add(1)
			return false
		}
	}
	f.st.answered.Add(1)
	return true
}

// returnDR walks a turned-around DR SMP from the responder at n back to the
// originator and delivers it there.
func (f *Fabric) returnDR(n *node, s *smp.SMP) {
	act, out := s.DRSend(n.isSwitch())
	home, in, ok := f.walkDR(n, 0, s, act, out)
	if !ok {
		f.st.lost.Add(1)
		return
	}
	f.forwardTo(home, in, transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID}, s)
}

// forwardTo forwards s to the agent at port in of n, if there is one.
func (f *Fabric) forwardTo(n *node, in uint8, hdr transport.Packet, s *smp.SMP) {
	a := agentAt(n, in)
	if a == nil {
		f.st.lost.Add(1)
		return
	}
	f.forward(a, hdr, s)
}

// forward encodes s and queues it for agent a with addressing from hdr.
func (f *Fabric) forward(a *conn, hdr transport.Packet, s *smp.SMP) {
	var buf []byte
	if b, ok := f.mads.Get().(*[smp.MADLen]byte); ok {
		buf = b[:] // EncodeTo writes every byte
	} else {
		buf = make([]byte, smp.MADLen)
	}
	if err := s.EncodeTo(buf); err != nil {
		f.st.malformed.Add(1)
		return
	}
	hdr.MAD = buf
	if !a.deliver(hdr) {
		f.st.lost.Add(1)
	}
}

// unsupported turns a request no SMA or agent handles into the answer a
// real SMA gives; it reports false for methods that get no answer.
func (f *Fabric) unsupported(s *smp.SMP) bool {
	switch s.Method {
	case smp.MethodGet, smp.MethodSet:
		s.TurnAround(smp.StatusUnsupportedMethodAttr)
		return true
	case smp.MethodTrap, smp.MethodTrapRepress, smp.MethodReport:
		return false
	}
	s.TurnAround(smp.StatusUnsupportedMethod)
	return true
}

// sourceLID is the LID an agent's LID-routed MADs carry when the caller
// leaves SLID 0.
func (c *conn) sourceLID() uint16 {
	lid, _ := c.n.ports[c.port].lid()
	return lid
}

// routeLID follows the forwarding tables from port `from` of n (0 for a
// switch's own SMA) to dlid. It returns the node where the MAD terminates
// and the port it arrived on (for a switch, the ingress port; 0 if it never
// left the switch).
func (f *Fabric) routeLID(n *node, from uint8, dlid uint16) (*node, uint8, bool) {
	cur, in := n, from
	if dlid == smp.PermissiveLID {
		return cur, in, true
	}
	if !cur.isSwitch() {
		if cur.ports[from].has(dlid) {
			return cur, from, true
		}
		next, nin, ok := f.hop(cur, from)
		if !ok {
			return nil, 0, false
		}
		cur, in = next, nin
	}
	for hops := 0; ; hops++ {
		if cur.gone.Load() {
			return nil, 0, false
		}
		if !cur.isSwitch() {
			if cur.ports[in].has(dlid) {
				return cur, in, true
			}
			return nil, 0, false
		}
		if cur.ports[0].has(dlid) {
			return cur, in, true
		}
		if hops >= f.opts.HopLimit || uint32(dlid) > cur.fdbTop.Load() {
			return nil, 0, false
		}
		out := cur.lftEntry(dlid)
		next, nin, ok := f.hop(cur, out) // 0xFF and 0 fail here
		if !ok {
			return nil, 0, false
		}
		cur, in = next, nin
	}
}

// lidRouted handles a LID-routed SMP request from agent c.
func (f *Fabric) lidRouted(c *conn, p transport.Packet, s *smp.SMP) {
	slid := p.SLID
	if slid == 0 {
		slid = c.sourceLID()
	}
	if p.DLID == 0 || (p.DLID >= 0xC000 && p.DLID != smp.PermissiveLID) {
		f.st.lost.Add(1)
		return
	}
	dst, in, ok := f.routeLID(c.n, c.port, p.DLID)
	if !ok {
		f.st.lost.Add(1)
		return
	}
	if !f.answerAt(dst, in, s, transport.Packet{DLID: p.DLID, SLID: slid, SL: p.SL, QP: p.QP}) {
		return
	}
	// The response leaves from the port that was addressed (a switch's SMA
	// sits behind port 0) and is LID-routed back to the requester.
	from := in
	if dst.isSwitch() {
		from = 0
	}
	home, hin, ok := f.routeLID(dst, from, slid)
	if !ok {
		f.st.lost.Add(1)
		return
	}
	f.forwardTo(home, hin, transport.Packet{DLID: slid, SLID: p.DLID, SL: p.SL}, s)
}

// routeResponse carries a response an agent sends (to a request the fabric
// forwarded to it) back to the requester.
func (f *Fabric) routeResponse(c *conn, p transport.Packet, s *smp.SMP) {
	if s.IsDR() {
		if !s.Direction {
			f.st.lost.Add(1)
			return
		}
		if s.HopPointer == 0 && s.HopCount != 0 {
			// ibsim-style agents leave the hop pointer at 0; the walk back
			// starts where the SMA would stand (IBA: HopCount+1).
			s.HopPointer = s.HopCount + 1
		}
		f.returnDR(c.n, s)
		return
	}
	f.routeGMP(c, p)
}

// routeGMP LID-routes any MAD between agents (responses, SA traffic).
func (f *Fabric) routeGMP(c *conn, p transport.Packet) {
	if p.SLID == 0 {
		p.SLID = c.sourceLID()
	}
	if p.DLID == 0 || p.DLID >= 0xC000 {
		f.st.lost.Add(1)
		return
	}
	dst, in, ok := f.routeLID(c.n, c.port, p.DLID)
	if !ok {
		f.st.lost.Add(1)
		return
	}
	a := agentAt(dst, in)
	if a == nil {
		f.st.lost.Add(1)
		return
	}
	p.MAD = append([]byte(nil), p.MAD[:smp.MADLen]...)
	if !a.deliver(p) {
		f.st.lost.Add(1)
	}
}

// trap sends trap 128 from each switch in ev (once each) to the MasterSMLID
// its port 0 was given, LID-routed through the fabric's tables.
func (f *Fabric) trap(ev events) {
	seen := make(map[*node]bool, len(ev))
	for _, sw := range ev {
		if seen[sw] || sw.gone.Load() {
			continue
		}
		seen[sw] = true
		sw.mu.Lock()
		smLID := sw.ports[0].smLID
		sw.mu.Unlock()
		lid, _ := sw.ports[0].lid()
		if smLID == 0 || lid == 0 {
			f.st.trapsLost.Add(1) // no SM configured yet: nobody to tell
			continue
		}
		s := smpPool.Get().(*smp.SMP)
		s.InitLID(smp.MethodTrap, smp.AttrNotice, 0)
		s.TID = f.trapTID.Add(1)
		_ = s.SetAttr(smp.NewTrap128(lid))
		dst, in, ok := f.routeLID(sw, 0, smLID)
		var a *conn
		if ok {
			a = agentAt(dst, in)
		}
		if a == nil {
			f.st.trapsLost.Add(1)
			smpPool.Put(s)
			continue
		}
		buf := make([]byte, smp.MADLen)
		_ = s.EncodeTo(buf)
		smpPool.Put(s)
		if a.deliver(transport.Packet{DLID: smLID, SLID: lid, MAD: buf}) {
			f.st.traps.Add(1)
		} else {
			f.st.trapsLost.Add(1)
		}
	}
}
