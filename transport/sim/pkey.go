package sim

import "github.com/ibsm/ibsm/transport/smp"

// P_Key tables (IBA 14.2.5.7) and partition enforcement. Sizes are what
// ibsim reports: 64 entries on CA ports (NodeInfo.PartitionCap) and on
// switch external ports (SwitchInfo.PartitionEnforcementCap), 8 on switch
// port 0. A Set stores the entries within the table's size (those past it
// read back as 0); until a block is set, block 0 holds the default P_Key
// 0xFFFF in entry 0, as after a reset. Tables and the enforcement bits are
// stored, not enforced: packets are forwarded whatever their P_Key.

// pkeyCap is the size of port q's P_Key table.
func pkeyCap(n *node, q uint8) int {
	if n.isSwitch() && q == 0 {
		return 8
	}
	return 64
}

// enforceKey is the n.pkeys key under which a switch external port's
// PortInfo PartitionEnforcementInbound/Outbound bits are kept, in entry 0
// of the value (bit 0 inbound, bit 1 outbound). P_KeyTable keys use bits
// 0..23 only, so the two never meet.
func enforceKey(q uint8) uint32 { return 1<<31 | uint32(q) }

// partEnforce returns port q's enforcement bits; false for CA ports and
// switch port 0, which have none. Caller holds n.mu.
func (n *node) partEnforce(q uint8) (in, out bool) {
	if !n.isSwitch() || q == 0 {
		return false, false
	}
	b := n.pkeys[enforceKey(q)]
	if b == nil {
		return false, false
	}
	return b[0]&1 != 0, b[0]&2 != 0
}

// setPartEnforce stores a PortInfo Set's enforcement bits for a switch
// external port (ignored elsewhere). Caller holds n.mu.
func (n *node) setPartEnforce(q uint8, in, out bool) {
	if !n.isSwitch() || q == 0 {
		return
	}
	var v uint16
	if in {
		v |= 1
	}
	if out {
		v |= 2
	}
	if n.pkeys == nil {
		n.pkeys = map[uint32]*smp.PKeyBlock{}
	}
	n.pkeys[enforceKey(q)] = &smp.PKeyBlock{v}
}

// pkeyTable answers P_KeyTable Get and Set. The modifier is the block in
// bits 15..0 and, for switches, the port in bits 23..16; CAs use the port
// the SMP arrived on and ignore bits 31..16 (tools put the port there).
func (f *Fabric) pkeyTable(n *node, in uint8, s *smp.SMP, set bool) uint16 {
	q, block := in, uint16(s.AttrMod)
	if n.isSwitch() {
		var err error
		if q, block, err = smp.PKeyBlockPort(s.AttrMod); err != nil || int(q) > n.nfp {
			s.Data = [smp.DataLen]byte{}
			return smp.StatusInvalidField
		}
	}
	size := pkeyCap(n, q)
	if int(block)*smp.PKeyBlockLen >= size {
		s.Data = [smp.DataLen]byte{}
		return smp.StatusInvalidField
	}
	key := uint32(q)<<16 | uint32(block)
	n.mu.Lock()
	defer n.mu.Unlock()
	if set {
		var b smp.PKeyBlock
		_ = b.Unmarshal(s.Data[:])
		for i := size - int(block)*smp.PKeyBlockLen; i >= 0 && i < smp.PKeyBlockLen; i++ {
			b[i] = 0 // past the table's end
		}
		if n.pkeys == nil {
			n.pkeys = map[uint32]*smp.PKeyBlock{}
		}
		n.pkeys[key] = &b
	}
	var b smp.PKeyBlock
	if p := n.pkeys[key]; p != nil {
		b = *p
	} else if block == 0 {
		b[0] = 0xFFFF // default partition, full member
	}
	s.Data = [smp.DataLen]byte{}
	_ = b.MarshalTo(s.Data[:])
	return 0
}

// PKeys returns the P_Key table port of node guid holds (all its
// entries, 0 = empty), for tests.
func (f *Fabric) PKeys(guid uint64, port uint8) ([]uint16, bool) {
	n := f.byGUID[guid]
	if n == nil || int(port) > n.nfp || (!n.isSwitch() && port == 0) {
		return nil, false
	}
	size := pkeyCap(n, port)
	out := make([]uint16, size)
	n.mu.Lock()
	defer n.mu.Unlock()
	for b := 0; b*smp.PKeyBlockLen < size; b++ {
		blk := n.pkeys[uint32(port)<<16|uint32(b)]
		switch {
		case blk != nil:
			copy(out[b*smp.PKeyBlockLen:], blk[:min(smp.PKeyBlockLen, size-b*smp.PKeyBlockLen)])
		case b == 0:
			out[0] = 0xFFFF
		}
	}
	return out, true
}

// PartitionEnforcement reports a switch external port's enforcement bits,
// for tests.
func (f *Fabric) PartitionEnforcement(guid uint64, port uint8) (in, out bool) {
	n := f.byGUID[guid]
	if n == nil {
		return false, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.partEnforce(port)
}
