package sim

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// MulticastFDBCap is how many MLIDs each switch's MulticastForwardingTable
// holds (SwitchInfo.MulticastFDBCap): the whole range 0xC000..0xFFFE.
const MulticastFDBCap = smp.MaxMulticastLID - smp.MulticastLIDBase + 1

// mftKey names one stored MFT block: position<<16 | block.
func mftKey(pos uint8, block uint16) uint32 { return uint32(pos)<<16 | uint32(block) }

// mftBlock answers MulticastForwardingTable Get and Set (IBA 14.2.5.12) on
// a switch. Blocks never written read as zero masks (no port), as after a
// reset; positions past the switch's ports and blocks past
// MulticastFDBCap are an invalid field.
func (f *Fabric) mftBlock(n *node, s *smp.SMP, set bool) uint16 {
	if !n.isSwitch() {
		return smp.StatusUnsupportedMethodAttr
	}
	pos, block, err := smp.ParseMFTMod(s.AttrMod)
	if err != nil || int(pos)*smp.MFTPortsPerPosition > n.nfp || int(block)*smp.MFTBlockLen >= MulticastFDBCap {
		s.Data = [smp.DataLen]byte{}
		return smp.StatusInvalidField
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	k := mftKey(pos, block)
	if set {
		var b smp.MFTBlock
		_ = b.Unmarshal(s.Data[:]) // 64 bytes: cannot fail
		if n.mft == nil {
			n.mft = map[uint32]*smp.MFTBlock{}
		}
		n.mft[k] = &b
	}
	s.Data = [smp.DataLen]byte{}
	if b := n.mft[k]; b != nil {
		_ = b.MarshalTo(s.Data[:])
	}
	return 0
}

// mftPorts returns the ports switch n forwards mlid to.
func (n *node) mftPorts(mlid uint16) []uint8 {
	block, i := smp.MFTBlockOf(mlid)
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []uint8
	for pos := 0; pos*smp.MFTPortsPerPosition <= n.nfp; pos++ {
		b := n.mft[mftKey(uint8(pos), block)]
		if b == nil {
			continue
		}
		for bit := 0; bit < smp.MFTPortsPerPosition; bit++ {
			if p := pos*smp.MFTPortsPerPosition + bit; b[i]&(1<<bit) != 0 && p <= n.nfp {
				out = append(out, uint8(p))
			}
		}
	}
	return out
}

// MFT returns, for tests, the ports switch switchGUID forwards each MLID
// to (MLIDs with no port left out).
func (f *Fabric) MFT(switchGUID uint64) (map[uint16][]uint8, error) {
	n, err := f.node(switchGUID)
	if err != nil {
		return nil, err
	}
	if n.typ != topology.Switch {
		return nil, fmt.Errorf("sim: node 0x%016x is a %v, not a switch", switchGUID, n.typ)
	}
	n.mu.Lock()
	blocks := map[uint16]bool{}
	for k := range n.mft {
		blocks[uint16(k)] = true
	}
	n.mu.Unlock()
	out := map[uint16][]uint8{}
	for b := range blocks {
		for i := 0; i < smp.MFTBlockLen; i++ {
			mlid := uint16(smp.MulticastLIDBase + int(b)*smp.MFTBlockLen + i)
			if ports := n.mftPorts(mlid); len(ports) > 0 {
				out[mlid] = ports
			}
		}
	}
	return out, nil
}

// Delivery names the end port a multicast probe reached: a CA port, or a
// switch's port 0.
type Delivery struct {
	GUID uint64 // node GUID
	Port uint8
}

// maxProbeSteps bounds a probe's switch visits: a loop in the MFTs would
// otherwise flood forever (multicast packets have no hop limit).
const maxProbeSteps = 1 << 16

// ProbeMulticast sends one packet to mlid from port srcPort of node srcGUID
// (a CA port, or port 0 of a switch) and forwards it along the MFTs the
// switches hold, as hardware does: out of every port in the switch's mask
// for mlid except the one it came in on, over links that are up. It
// returns how many copies each end port received (the sender's own port
// included if a copy came back to it) and how many switch visits the
// packet took. A loop makes copies multiply; past maxProbeSteps visits the
// probe stops with an error.
func (f *Fabric) ProbeMulticast(srcGUID uint64, srcPort uint8, mlid uint16) (map[Delivery]int, int, error) {
	if !smp.IsMulticastLID(mlid) {
		return nil, 0, fmt.Errorf("sim: %#04x is not a multicast LID", mlid)
	}
	n, err := f.node(srcGUID)
	if err != nil {
		return nil, 0, err
	}
	type at struct {
		n  *node
		in uint8
	}
	var queue []at
	got := map[Delivery]int{}
	if n.isSwitch() {
		if srcPort != 0 {
			return nil, 0, fmt.Errorf("sim: a switch sends multicast from its port 0, not %d", srcPort)
		}
		queue = append(queue, at{n, 0})
	} else {
		next, in, ok := f.hop(n, srcPort)
		if !ok {
			return nil, 0, fmt.Errorf("sim: port %d of 0x%016x is not on a live link", srcPort, srcGUID)
		}
		if !next.isSwitch() {
			got[Delivery{next.guid, in}]++
			return got, 0, nil
		}
		queue = append(queue, at{next, in})
	}
	steps := 0
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if steps++; steps > maxProbeSteps {
			return got, steps, fmt.Errorf("sim: multicast %#04x from 0x%016x/%d still travelling after %d switch visits: the MFTs loop", mlid, srcGUID, srcPort, maxProbeSteps)
		}
		if cur.n.gone.Load() {
			continue
		}
		for _, p := range cur.n.mftPorts(mlid) {
			if p == cur.in {
				continue // never back out of the ingress port (IBA 18.2.4.3.2)
			}
			if p == 0 {
				got[Delivery{cur.n.guid, 0}]++
				continue
			}
			next, in, ok := f.hop(cur.n, p)
			if !ok {
				continue
			}
			if next.isSwitch() {
				queue = append(queue, at{next, in})
			} else {
				got[Delivery{next.guid, in}]++
			}
		}
	}
	return got, steps, nil
}

// CheckMulticastGroup probes mlid from every sender and checks that each
// copy reaches every receiver but the sender itself exactly once and no
// other end port. It returns the first violation.
func (f *Fabric) CheckMulticastGroup(mlid uint16, senders, receivers []Delivery) error {
	want := make(map[Delivery]bool, len(receivers))
	for _, r := range receivers {
		want[r] = true
	}
	for _, s := range senders {
		got, _, err := f.ProbeMulticast(s.GUID, s.Port, mlid)
		if err != nil {
			return err
		}
		for d, n := range got {
			switch {
			case !want[d] || d == s:
				return fmt.Errorf("sim: multicast %#04x from 0x%016x/%d reached 0x%016x/%d (not a receiver) %d times", mlid, s.GUID, s.Port, d.GUID, d.Port, n)
			case n != 1:
				return fmt.Errorf("sim: multicast %#04x from 0x%016x/%d reached 0x%016x/%d %d times", mlid, s.GUID, s.Port, d.GUID, d.Port, n)
			}
		}
		for r := range want {
			if r != s && got[r] == 0 {
				return fmt.Errorf("sim: multicast %#04x from 0x%016x/%d never reached receiver 0x%016x/%d", mlid, s.GUID, s.Port, r.GUID, r.Port)
			}
		}
	}
	return nil
}
