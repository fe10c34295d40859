package program

import (
	"fmt"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport/smp"
)

// M_Keys. When the Client carries Keys (mad.WithKeys), every PortInfo Set
// to an addressed port (a CA port, a switch's port 0) carries the M_Key,
// M_KeyProtectBits and M_KeyLeasePeriod the policy wants: a PortInfo Set
// writes all three, so a Set that only meant to change a LID or a port
// state re-keys the port too, and never writes back a key a Get showed
// hidden (0). A port whose M_Key fields, as it last answered, are not
// what the policy wants gets a PortInfo Set in the next Apply (counted in
// Stats.Keyed) and is repaired by the audit.

// guardGUID is the GUID of the port whose M_Key guards port q of n: the
// CA port itself, or for a switch its port 0 (one key for the switch).
func guardGUID(n *discovery.Node, q uint8) uint64 {
	if n.Info.NodeType == smp.NodeTypeSwitch {
		return n.Info.PortGUID
	}
	if int(q) < len(n.Ports) && n.Ports[q].GUID != 0 {
		return n.Ports[q].GUID
	}
	return n.Info.PortGUID
}

// withKey puts the M_Key settings the policy wants for port q of n into
// a PortInfo Set payload (external switch ports carry no M_Key: left as
// they are).
func withKey(k mad.Keys, n *discovery.Node, q uint8, pi *smp.PortInfo) {
	if k == nil || (n.Info.NodeType == smp.NodeTypeSwitch && q != 0) {
		return
	}
	if w, ok := k.Want(guardGUID(n, q)); ok {
		pi.MKey, pi.MKeyProtectBits, pi.MKeyLeasePeriod = w.Key, w.Protect, w.Lease
	}
}

// hider is implemented by Keys that know which ports hide their M_Key from
// every key the SM has (host/mkey.Ring).
type hider interface{ Hidden(portGUID uint64) bool }

// foreign sends the PortInfo Sets of CA ports that hold an M_Key ibsm
// does not know on a group of their own: they are refused (no answer),
// which must not fail the Apply for the rest of the fabric, but each try
// counts as an M_Key violation on the port and so starts its lease; when
// the lease runs out the port can be re-keyed.
type foreign struct {
	p *Programmer
	h hider
	g *fanout.Group
	n int
}

func newForeign(p *Programmer, k mad.Keys) *foreign {
	f := &foreign{p: p}
	f.h, _ = k.(hider)
	return f
}

// hides reports whether a PortInfo Set to port k is refused for an M_Key
// ibsm does not hold: the port's own, or for a switch port its CA peer's.
func (f *foreign) hides(fab *discovery.Fabric, k portKey) bool {
	if f.h == nil {
		return false
	}
	n := fab.Nodes[k.guid]
	if n == nil || int(k.port) >= len(n.Ports) {
		return false
	}
	if n.Info.NodeType == smp.NodeTypeSwitch {
		// The switch end of a link to such a CA cannot go Active either
		// (its peer is never Armed).
		pt := &n.Ports[k.port]
		peer := fab.Nodes[pt.PeerGUID]
		return k.port != 0 && peer != nil && peer.Info.NodeType != smp.NodeTypeSwitch && f.h.Hidden(guardGUID(peer, pt.PeerPort))
	}
	return f.h.Hidden(guardGUID(n, k.port))
}

// pick returns the group a PortInfo Set to port k goes on.
func (f *foreign) pick(r *fanout.Group, fab *discovery.Fabric, k portKey) *fanout.Group {
	if !f.hides(fab, k) {
		return r
	}
	if f.g == nil {
		f.g = fanout.New(f.p.Parallel)
	}
	f.n++
	return f.g
}

// wait waits for the foreign Sets and logs what they did.
func (f *foreign) wait(what string) {
	if f.g == nil {
		return
	}
	err := f.g.Wait(what)
	if err != nil {
		f.p.logger().Warn("ports that hold an M_Key ibsm does not know refused their PortInfo Sets; they stay as they are until their M_Key lease expires (then ibsm re-keys them) or their key is added to guid2mkey",
			"ports", f.n, "refused", f.g.Failed(), "error", fmt.Sprint(err))
	}
	f.g, f.n = nil, 0
}

// keyDiff compares the M_Key fields a PortInfo answer shows for port q of
// n with what the policy wants ("" if they match or keys are not managed).
// A key the port hid (0 at protection level 1 and up) differs: ibsm's key
// is not the port's.
func keyDiff(k mad.Keys, n *discovery.Node, q uint8, got *smp.PortInfo) string {
	if k == nil || (n.Info.NodeType == smp.NodeTypeSwitch && q != 0) {
		return ""
	}
	g := guardGUID(n, q)
	w, ok := k.Want(g)
	if !ok || (got.MKey == w.Key && got.MKeyProtectBits == w.Protect && got.MKeyLeasePeriod == w.Lease) || k.Holds(g) {
		return "" // Holds: as the port answered this read (or it ignores M_Keys)
	}
	key := "the key ibsm uses"
	if got.MKey != w.Key {
		key = "another key (or hidden from ibsm's)"
	}
	return fmt.Sprintf("M_Key: %s, protect bits %d, lease %d s; wanted protect bits %d, lease %d s", key, got.MKeyProtectBits, got.MKeyLeasePeriod, w.Protect, w.Lease)
}
