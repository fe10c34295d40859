package sim

import (
	"fmt"
	"time"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// M_Key checking as IBA vol 1 §14.2.4 defines it for an SMA:
//
//   - The check passes when the port's M_Key is 0 or the SMP carries it.
//     A CA port checks SMPs that arrive on it against its own M_Key; a
//     switch has one M_Key, on port 0, for all of its SMA. Only the SMA
//     that answers checks: a switch forwarding a directed-route SMP does
//     not, and SMInfo and the other attributes an attached agent answers
//     are not the SMA's.
//   - M_KeyProtectBits: 0 — every SubnGet succeeds and PortInfo shows the
//     M_Key; 1 — every SubnGet succeeds, PortInfo shows M_Key 0 unless the
//     Get carried the key; 2 and 3 — a SubnGet without the key fails too.
//     At every level a SubnSet without the key fails.
//   - A failed check gets no response (the requester times out), counts in
//     M_KeyViolations (saturating at 0xFFFF), sends trap 256 (Bad M_Key)
//     to the port's MasterSMLID and, if M_KeyLeasePeriod is not 0 and the
//     lease timer is not running, starts it. A SubnGet that fails at level
//     0 or 1 is not a failure: it is answered.
//   - A check that passes stops a running lease timer. When the timer runs
//     out the port's M_KeyProtectBits become 0 (its M_Key stays): an SM
//     that lost the key can then read it from PortInfo and take over.
//   - PortInfo Set (with the key) writes M_Key, M_KeyProtectBits and
//     M_KeyLeasePeriod of the addressed port (CA port, switch port 0;
//     ignored on a switch's external ports); a Set with M_KeyViolations 0
//     clears the counter, any other value leaves it.

// mkeyHolder returns the port whose M_Key state guards SMPs for port q of n.
func mkeyHolder(n *node, q uint8) *port {
	if n.isSwitch() {
		return &n.ports[0]
	}
	return &n.ports[q]
}

// expireLocked ends a lease that ran out: protection drops to 0. n.mu held.
// The clock is read only for a running lease: most SMPs meet none, and a
// clock read is a tenth of what the simulated switch spends on a Set.
func expireLocked(pt *port, now func() time.Time) {
	if !pt.leaseEnd.IsZero() && !now().Before(pt.leaseEnd) {
		pt.leaseEnd = time.Time{}
		pt.mkeyProt = 0
	}
}

// badMKey is what a refused SMP reports in trap 256.
type badMKey struct {
	n      *node
	from   uint8 // port the trap leaves from (0 on a switch)
	lid    uint16
	smLID  uint16
	method uint8
	attr   uint16
	mod    uint32
	key    uint64
	drSLID uint16
	dr     bool
	hops   uint8
	ret    [64]uint8
}

// checkMKey runs the M_Key check for SMP s arriving at port in of n and
// reports whether the SMA must drop it. It sends trap 256 for a refusal.
func (f *Fabric) checkMKey(n *node, in uint8, s *smp.SMP) bool {
	if s.Method != smp.MethodGet && s.Method != smp.MethodSet {
		return false // the SMA answers other methods with a status anyway
	}
	gp := mkeyHolder(n, in)
	n.mu.Lock()
	expireLocked(gp, f.opts.Now)
	if gp.mkey == 0 || gp.mkey == s.MKey {
		gp.leaseEnd = time.Time{} // a good Get or Set stops the lease timer
		n.mu.Unlock()
		return false
	}
	if s.Method == smp.MethodGet && gp.mkeyProt < 2 {
		n.mu.Unlock()
		return false
	}
	if gp.mkeyViol != 0xFFFF {
		gp.mkeyViol++
	}
	if gp.leaseEnd.IsZero() && gp.mkeyLease != 0 {
		gp.leaseEnd = f.opts.Now().Add(time.Duration(gp.mkeyLease) * time.Second)
	}
	lid, _ := gp.lid()
	t := badMKey{n: n, lid: lid, smLID: gp.smLID, method: s.Method, attr: s.AttrID, mod: s.AttrMod, key: s.MKey,
		drSLID: s.DrSLID, dr: s.IsDR(), hops: s.HopCount, ret: s.ReturnPath}
	if !n.isSwitch() {
		t.from = in
	}
	n.mu.Unlock()
	f.st.mkeyRefused.Add(1)
	f.trap256(t)
	return true
}

// trap256 sends the Bad M_Key trap (IBA 14.2.5.1, smp.Trap256)
// LID-routed to the port's MasterSMLID.
func (f *Fabric) trap256(t badMKey) {
	if t.smLID == 0 || t.lid == 0 {
		f.st.trapsLost.Add(1)
		return
	}
	producer := uint32(smp.ProducerCA)
	if t.n.isSwitch() {
		producer = smp.ProducerSwitch
	}
	tr := smp.Trap256{LID: t.lid, DRSLID: t.drSLID, Method: t.method, AttrID: t.attr, AttrMod: t.mod, MKey: t.key}
	if t.dr {
		tr.DRNotice, tr.DRHops = true, t.hops&0x3F
		tr.DRTruncated = t.hops > uint8(len(tr.DRReturnPath))
		copy(tr.DRReturnPath[:], t.ret[:])
	}
	no := *smp.NewTrap256(producer, tr)
	s := smpPool.Get().(*smp.SMP)
	defer smpPool.Put(s)
	s.InitLID(smp.MethodTrap, smp.AttrNotice, 0)
	s.TID = f.trapTID.Add(1)
	if err := s.SetAttr(&no); err != nil {
		f.st.trapsLost.Add(1)
		return
	}
	dst, in, ok := f.routeLID(t.n, t.from, t.smLID)
	var a *conn
	if ok {
		a = agentAt(dst, in)
	}
	if a == nil {
		f.st.trapsLost.Add(1)
		return
	}
	buf := make([]byte, smp.MADLen)
	_ = s.EncodeTo(buf)
	if a.deliver(transport.Packet{DLID: t.smLID, SLID: t.lid, MAD: buf}) {
		f.st.traps.Add(1)
	} else {
		f.st.trapsLost.Add(1)
	}
}

// fillMKey writes the M_Key fields of port q's PortInfo as the SMA shows
// them to s: the key hidden (0) at protection level 1 and above unless s
// carries it (a Set that passed the check changed or carried the key).
// n.mu held.
func (f *Fabric) fillMKey(n *node, q uint8, s *smp.SMP, pi *smp.PortInfo) {
	kp := mkeyHolder(n, q)
	expireLocked(kp, f.opts.Now)
	pi.MKey = kp.mkey
	if s.Method == smp.MethodGet && kp.mkeyProt >= 1 && kp.mkey != s.MKey {
		pi.MKey = 0
	}
	pi.MKeyProtectBits, pi.MKeyLeasePeriod, pi.MKeyViolations = kp.mkeyProt, kp.mkeyLease, kp.mkeyViol
}

// applyMKey takes the M_Key fields of a valid PortInfo Set on an
// addressed port (CA port or switch port 0). n.mu held.
func applyMKey(pt *port, pi *smp.PortInfo) {
	pt.mkey, pt.mkeyProt, pt.mkeyLease = pi.MKey, pi.MKeyProtectBits&3, pi.MKeyLeasePeriod
	if pi.MKeyViolations == 0 {
		pt.mkeyViol = 0
	}
	if pt.mkeyLease == 0 {
		pt.leaseEnd = time.Time{}
	}
}

// SetMKey gives port p of node guid (a switch: port 0, for the whole
// switch) an M_Key, protection level and lease period behind the SM's
// back, as another SM or a previous run would have left it.
func (f *Fabric) SetMKey(guid uint64, p uint8, key uint64, protect uint8, lease uint16) error {
	n, _, err := f.port(guid, p)
	if err != nil {
		return err
	}
	if protect > 3 {
		return fmt.Errorf("sim: M_KeyProtectBits %d: want 0..3", protect)
	}
	if n.typ == topology.Switch && p != 0 {
		return fmt.Errorf("sim: switch 0x%016x keeps its M_Key on port 0, not %d", guid, p)
	}
	n.mu.Lock()
	pt := &n.ports[p]
	pt.mkey, pt.mkeyProt, pt.mkeyLease, pt.leaseEnd = key, protect, lease, time.Time{}
	n.mu.Unlock()
	return nil
}

// PortGUID returns the GUID of port p of node guid (0 on a switch: the
// GUID of its management port, which NodeInfo reports for every port).
func (f *Fabric) PortGUID(guid uint64, p uint8) (uint64, error) {
	n, pt, err := f.port(guid, p)
	if err != nil {
		return 0, err
	}
	if n.typ == topology.Switch {
		return n.ports[0].guid, nil
	}
	return pt.guid, nil
}
