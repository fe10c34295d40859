package sim

import (
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// capExtSpeeds is PortInfo CapabilityMask bit 14, IsExtendedSpeedsSupported:
// LinkSpeedExt* fields are valid (FDR and faster).
const capExtSpeeds = 1 << 14

// smaResult is what the SMA did with a request.
type smaResult uint8

const (
	smaNotMine  smaResult = iota // an attribute the SMA does not implement
	smaAnswered                  // s now holds the response
	smaRefused                   // the M_Key check failed: no response
)

// sma runs node n's subnet management agent on a request that arrived on
// port in, turning s into the response in place. Attributes the SMA does
// not implement (smaNotMine) the caller forwards to an attached agent or
// answers as unsupported; an SMP that fails the M_Key check is dropped.
func (f *Fabric) sma(n *node, in uint8, s *smp.SMP) smaResult {
	switch s.AttrID {
	case smp.AttrNodeDescription, smp.AttrNodeInfo, smp.AttrSwitchInfo, smp.AttrGUIDInfo, smp.AttrPortInfo,
		smp.AttrPKeyTable, smp.AttrSLtoVLMappingTable, smp.AttrLinearForwardingTable, smp.AttrVLArbitrationTable,
		smp.AttrMulticastForwardingTable:
	default:
		return smaNotMine
	}
	if s.Method != smp.MethodGet && s.Method != smp.MethodSet {
		s.TurnAround(smp.StatusUnsupportedMethod)
		return smaAnswered
	}
	if f.checkMKey(n, in, s) {
		return smaRefused
	}
	set := s.Method == smp.MethodSet
	var st uint16
	switch s.AttrID {
	case smp.AttrNodeDescription:
		st = readOnly(set)
		d := smp.NodeDescription{Text: n.desc}
		s.Data = [smp.DataLen]byte{}
		_ = d.MarshalTo(s.Data[:]) // desc was validated/truncated by New
	case smp.AttrNodeInfo:
		st = readOnly(set)
		f.nodeInfo(n, in, s)
	case smp.AttrSwitchInfo:
		st = f.switchInfo(n, s, set)
	case smp.AttrGUIDInfo:
		st = readOnly(set)
		if s.AttrMod != 0 {
			st = smp.StatusInvalidField
		}
		g := n.ports[in].guid
		s.Data = [smp.DataLen]byte{}
		for i := 0; i < 8; i++ {
			s.Data[i] = byte(g >> (56 - 8*i))
		}
	case smp.AttrPortInfo:
		if set {
			st = f.setPortInfo(n, in, s)
		} else {
			st = f.getPortInfo(n, in, s)
		}
	case smp.AttrPKeyTable:
		st = f.pkeyTable(n, in, s, set)
	case smp.AttrSLtoVLMappingTable:
		st = f.sl2vlTable(n, in, s, set)
	case smp.AttrLinearForwardingTable:
		st = f.lftBlock(n, s, set)
	case smp.AttrVLArbitrationTable:
		st = f.vlArbTable(n, in, s, set)
	case smp.AttrMulticastForwardingTable:
		st = f.mftBlock(n, s, set) // mcast.go
	}
	s.TurnAround(st)
	return smaAnswered
}

func readOnly(set bool) uint16 {
	if set {
		return smp.StatusUnsupportedMethodAttr
	}
	return 0
}

func (f *Fabric) nodeInfo(n *node, in uint8, s *smp.SMP) {
	pc := uint16(pkeyCap(n, 0))
	ni := smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: uint8(n.typ), NumPorts: uint8(n.nfp),
		SystemImageGUID: n.sys, NodeGUID: n.guid, PortGUID: n.ports[in].guid, PartitionCap: pc,
		DeviceID: uint16(n.dev), Revision: 1, LocalPortNum: in, VendorID: n.vend}
	s.Data = [smp.DataLen]byte{}
	_ = ni.MarshalTo(s.Data[:])
}

func (f *Fabric) switchInfo(n *node, s *smp.SMP, set bool) uint16 {
	if !n.isSwitch() {
		return smp.StatusUnsupportedMethodAttr
	}
	var st uint16
	n.mu.Lock()
	defer n.mu.Unlock()
	if set {
		var in smp.SwitchInfo
		_ = in.Unmarshal(s.Data[:])
		if int(in.LinearFDBTop) >= f.opts.LinearFDBCap {
			st = smp.StatusInvalidField
		} else {
			n.fdbTop.Store(uint32(in.LinearFDBTop))
			n.lifeTime = in.LifeTimeValue
			if in.PortStateChange {
				n.psc.Store(false)
			}
		}
	}
	si := smp.SwitchInfo{LinearFDBCap: uint16(f.opts.LinearFDBCap), LinearFDBTop: uint16(n.fdbTop.Load()),
		DefaultPort: 0xFF, DefaultMulticastPrimaryPort: 0xFF, DefaultMulticastNotPrimaryPort: 0xFF,
		LifeTimeValue: n.lifeTime, PortStateChange: n.psc.Load(), PartitionEnforcementCap: 64,
		EnhancedPort0: n.enhanced, MulticastFDBCap: MulticastFDBCap}
	s.Data = [smp.DataLen]byte{}
	_ = si.MarshalTo(s.Data[:])
	return st
}

// portFor resolves a PortInfo-style modifier: a switch port number, or for
// a CA 0 = the port the SMP arrived on.
func portFor(n *node, in uint8, mod uint32) (uint8, bool) {
	if n.isSwitch() {
		return uint8(mod), mod <= uint32(n.nfp)
	}
	if mod == 0 {
		return in, in >= 1
	}
	return uint8(mod), mod <= uint32(n.nfp)
}

func (f *Fabric) getPortInfo(n *node, in uint8, s *smp.SMP) uint16 {
	q, ok := portFor(n, in, s.AttrMod)
	if !ok {
		s.Data = [smp.DataLen]byte{}
		return smp.StatusInvalidField
	}
	n.mu.Lock()
	f.fillPortInfo(n, in, q, s)
	n.mu.Unlock()
	return 0
}

// fillPortInfo writes port q's PortInfo into s.Data. Caller holds n.mu.
func (f *Fabric) fillPortInfo(n *node, in, q uint8, s *smp.SMP) {
	pt := &n.ports[q]
	base := pt
	if n.isSwitch() {
		base = &n.ports[0] // LID, LMC, SM and capabilities live on port 0
	}
	lid, lmc := base.lid()
	pi := smp.PortInfo{
		GIDPrefix: base.gidPfx, LID: lid, MasterSMLID: base.smLID, CapabilityMask: base.capMask | capExtSpeeds,
		LocalPortNum: in, PortState: uint8(pt.state.Load()), PortPhysicalState: physState(n, q),
		LinkDownDefaultState: smp.PhysStatePolling, LMC: lmc, MasterSMSL: base.smSL, VLCap: VLCap,
		MTUCap: 5, VLHighLimit: 0, VLArbitrationHighCap: 8, VLArbitrationLowCap: 8,
		HOQLife: pt.hoqLife, OperationalVLs: pt.opVLs, SubnetTimeOut: base.subnetTO, GUIDCap: 1,
	}
	f.fillMKey(n, q, s, &pi)
	pi.PartitionEnforcementInbound, pi.PartitionEnforcementOutbound = n.partEnforce(q)
	if pt.up() || q == 0 {
		pi.NeighborMTU = 5
	}
	w := pt.width
	pi.LinkWidthActive = w
	pi.LinkWidthSupported = uint8(netfile.Width1x|netfile.Width4x) | w
	pi.LinkWidthEnabled = pi.LinkWidthSupported
	base4, ext := pt.speed.Base(), pt.speed.Ext()
	if ext != 0 {
		pi.LinkSpeedActive, pi.LinkSpeedSupported = 4, 7 // QDR, as FDR+ hardware reports
		pi.LinkSpeedExtActive = ext
		pi.LinkSpeedExtSupported = ext<<1 - 1
		pi.LinkSpeedExtEnabled = pi.LinkSpeedExtSupported
	} else {
		pi.LinkSpeedActive = base4
		pi.LinkSpeedSupported = base4<<1 - 1
	}
	pi.LinkSpeedEnabled = pi.LinkSpeedSupported
	s.Data = [smp.DataLen]byte{}
	_ = pi.MarshalTo(s.Data[:]) // every field is within its width by construction
}

func (f *Fabric) setPortInfo(n *node, in uint8, s *smp.SMP) uint16 {
	q, ok := portFor(n, in, s.AttrMod)
	if !ok {
		s.Data = [smp.DataLen]byte{}
		return smp.StatusInvalidField
	}
	var pi smp.PortInfo
	_ = pi.Unmarshal(s.Data[:])
	pt := &n.ports[q]
	unlock := lock2(n, pt.peer)
	var ev events
	st := f.applyPortInfo(n, q, pt, &pi, &ev)
	f.fillPortInfo(n, in, q, s)
	unlock()
	f.trap(ev)
	return st
}

// applyPortInfo validates the whole Set first and applies nothing if any
// field is invalid (IBA 14.2.5.6). Caller holds n's and the peer's locks.
func (f *Fabric) applyPortInfo(n *node, q uint8, pt *port, pi *smp.PortInfo, ev *events) uint16 {
	cur := uint8(pt.state.Load())
	var peerState uint8
	if pt.peer != nil {
		peerState = uint8(pt.peer.ports[pt.peerPort].state.Load())
	}
	switch pi.PortState {
	case smp.PortStateNoChange:
	case smp.PortStateDown:
		if q == 0 && n.isSwitch() {
			return smp.StatusInvalidField // switch port 0 is always Active
		}
	case smp.PortStateInit:
		if cur != smp.PortStateInit {
			return smp.StatusInvalidField // the SM cannot force Init
		}
	case smp.PortStateArmed:
		if cur != smp.PortStateInit && cur != smp.PortStateArmed || peerState < smp.PortStateInit {
			return smp.StatusInvalidField
		}
	case smp.PortStateActive:
		if q == 0 && n.isSwitch() {
			break // already Active
		}
		if cur != smp.PortStateArmed && cur != smp.PortStateActive || peerState < smp.PortStateArmed {
			return smp.StatusInvalidField
		}
	default:
		return smp.StatusInvalidField
	}
	switch pi.PortPhysicalState {
	case smp.PhysStateNoChange, smp.PhysStatePolling, smp.PhysStateDisabled:
	default:
		return smp.StatusInvalidField
	}
	if (q == 0 && n.isSwitch()) && pi.PortPhysicalState == smp.PhysStateDisabled {
		return smp.StatusInvalidField
	}
	if pi.OperationalVLs > VLCap {
		return smp.StatusInvalidField
	}
	addressed := !n.isSwitch() || q == 0
	if addressed && pi.LID >= 0xC000 {
		return smp.StatusInvalidField
	}
	// Valid: apply.
	if addressed {
		pt.addr.Store(uint32(pi.LID) | uint32(pi.LMC)<<16)
		pt.smLID, pt.smSL, pt.subnetTO, pt.gidPfx = pi.MasterSMLID, pi.MasterSMSL, pi.SubnetTimeOut, pi.GIDPrefix
		applyMKey(pt, pi)
	}
	pt.hoqLife = pi.HOQLife
	n.setPartEnforce(q, pi.PartitionEnforcementInbound, pi.PartitionEnforcementOutbound)
	if pi.OperationalVLs != 0 {
		pt.opVLs = pi.OperationalVLs
	}
	if q == 0 {
		return 0
	}
	switch pi.PortPhysicalState {
	case smp.PhysStateDisabled:
		pt.disabled = true
		setLinkLocked(n, q, false, ev)
	case smp.PhysStatePolling:
		pt.disabled = false
		setLinkLocked(n, q, true, ev)
	}
	switch pi.PortState {
	case smp.PortStateDown:
		// The link goes down and retrains: both ends come back in Init.
		setLinkLocked(n, q, false, ev)
		setLinkLocked(n, q, true, ev)
	case smp.PortStateArmed, smp.PortStateActive:
		pt.state.Store(uint32(pi.PortState))
	}
	return 0
}

func (f *Fabric) sl2vlTable(n *node, in uint8, s *smp.SMP, set bool) uint16 {
	var i int
	ok := true
	if n.isSwitch() {
		a, b, err := smp.SL2VLPorts(s.AttrMod)
		if err != nil {
			ok = false
		} else {
			i, ok = n.sl2vlIndex(a, b)
		}
	} else {
		i, ok = n.sl2vlIndex(0, in)
	}
	if !ok {
		s.Data = [smp.DataLen]byte{}
		return smp.StatusInvalidField
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if set {
		if n.sl2vl == nil {
			size := n.nfp + 1
			if n.isSwitch() {
				size *= n.nfp + 1
			}
			n.sl2vl = make([][8]byte, size)
		}
		copy(n.sl2vl[i][:], s.Data[:8])
	}
	var raw [8]byte
	if n.sl2vl != nil {
		raw = n.sl2vl[i]
	}
	s.Data = [smp.DataLen]byte{}
	copy(s.Data[:8], raw[:])
	return 0
}

func (f *Fabric) lftBlock(n *node, s *smp.SMP, set bool) uint16 {
	if !n.isSwitch() {
		return smp.StatusUnsupportedMethodAttr
	}
	if s.AttrMod >= uint32(len(n.lft)) {
		s.Data = [smp.DataLen]byte{}
		return smp.StatusInvalidField
	}
	slot := &n.lft[s.AttrMod]
	if set {
		var b smp.LFTBlock
		copy(b[:], s.Data[:smp.LFTBlockLen])
		slot.Store(f.blocks.get(&b)) // copy-on-write: forwarding reads without locks
	}
	if b := slot.Load(); b != nil {
		copy(s.Data[:], b[:])
	} else {
		for i := range s.Data {
			s.Data[i] = smp.LFTUnreachable
		}
	}
	return 0
}

// vlArbTable stores and returns VLArbitrationTable blocks (it does not
// arbitrate). Switches take the port from the modifier; CAs use the port
// the SMP arrived on, as they ignore the modifier's port.
func (f *Fabric) vlArbTable(n *node, in uint8, s *smp.SMP, set bool) uint16 {
	q, block, err := smp.VLArbPorts(s.AttrMod)
	if !n.isSwitch() {
		q = in
	}
	if err != nil || int(q) > n.nfp || (!n.isSwitch() && q == 0) {
		s.Data = [smp.DataLen]byte{}
		return smp.StatusInvalidField
	}
	key := uint16(q)<<8 | uint16(block)
	n.mu.Lock()
	defer n.mu.Unlock()
	if set {
		var b smp.VLArbBlock
		_ = b.Unmarshal(s.Data[:])
		if n.vlarb == nil {
			n.vlarb = map[uint16]*smp.VLArbBlock{}
		}
		n.vlarb[key] = &b
	}
	var b smp.VLArbBlock
	if p := n.vlarb[key]; p != nil {
		b = *p
	}
	s.Data = [smp.DataLen]byte{}
	_ = b.MarshalTo(s.Data[:]) // VLs were masked to 4 bits by Unmarshal
	return 0
}
