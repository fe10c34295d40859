package program

import (
	"context"
	"sync/atomic"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport/smp"
)

// prearmed is what Prearm moved to Armed in a fabric: Apply, given the
// same fabric, takes those ports as Armed.
type prearmed struct {
	fab   *discovery.Fabric
	ports map[portKey]*smp.PortInfo // as written, PortState Armed
	sent  int64                     // Sets sent, answered or not
}

// Prearm moves to Armed, before there is a plan, the switch ports (1 and
// up) of links whose two ends are both in Init: the Armed Sets of a cold
// bring-up (58,320 of ft3-36's 128,304 state Sets) depend on nothing the
// plan decides. Armed passes no data (a link forwards once both ends are
// Active), Init → Armed is the spec's order, and Active still waits for
// Apply, which only a verified plan reaches. CA ports are left alone:
// their LID Set arms them for free. OperationalVLs is left as it is, so a
// caller arms early only when the plan will use one data VL (a plan that
// needs more gives these ports an OperationalVLs Set of their own, as it
// does a port already Armed). Ports behind an M_Key ibsm does not hold
// are left to Apply.
//
// Prearm sends no more Sets once stop is closed (the plan is ready: what
// is left is Apply's, which then need not wait for ports armed early) and
// returns the number it sent, once all are answered. An Apply with the
// same fab counts them as its own state Sets and sends neither their
// Armed Set nor a second one for a port whose Set failed and whose state
// is therefore unknown (it is sent again: a refusal fails that Apply and
// the next sweep reads the state afresh).
func (p *Programmer) Prearm(ctx context.Context, fab *discovery.Fabric, stop <-chan struct{}) int64 {
	f := newForeign(p, p.C.Keys())
	var ks []portKey
	var pis []smp.PortInfo
	for guid, n := range fab.Nodes {
		if n.Info.NodeType != smp.NodeTypeSwitch {
			continue
		}
		for q := 1; q < len(n.Ports); q++ {
			pt := &n.Ports[q]
			if !pt.Valid || pt.PeerGUID == 0 || pt.Info.PortState != smp.PortStateInit {
				continue
			}
			peer := fab.Nodes[pt.PeerGUID]
			if peer == nil || int(pt.PeerPort) >= len(peer.Ports) {
				continue
			}
			if pp := &peer.Ports[pt.PeerPort]; !pp.Valid || pp.Info.PortState != smp.PortStateInit {
				continue
			}
			k := portKey{guid, uint8(q)}
			if f.hides(fab, k) {
				continue
			}
			pi := pt.Info
			noChange(&pi)
			pi.PortState = smp.PortStateArmed
			ks, pis = append(ks, k), append(pis, pi)
		}
	}
	ok := make([]bool, len(ks))
	var sent atomic.Int64
	p.C.SetEach(ctx, func() int {
		select {
		case <-stop:
			return int(sent.Load())
		default:
			return len(ks)
		}
	}, func(i int) mad.Req {
		sent.Add(1)
		n := fab.Nodes[ks[i].guid]
		return mad.Req{Path: n.Path, Attr: smp.AttrPortInfo, Mod: uint32(ks[i].port), Val: &pis[i]}
	}, func(i int, err error) {
		ok[i] = err == nil
		if err != nil {
			p.logger().Debug("port not armed ahead of the plan; Apply arms it", "node", ks[i].guid, "port", ks[i].port, "error", err)
		}
	})
	pa := &prearmed{fab: fab, ports: make(map[portKey]*smp.PortInfo, sent.Load()), sent: sent.Load()}
	for i, k := range ks[:sent.Load()] {
		if ok[i] {
			pa.ports[k] = &pis[i]
		}
	}
	p.mu.Lock()
	p.armed = pa
	p.mu.Unlock()
	return pa.sent
}

// takePrearmed hands Apply what Prearm did in fab (nil if nothing) and
// forgets it: an Apply's own Sets follow.
func (p *Programmer) takePrearmed(fab *discovery.Fabric) *prearmed {
	p.mu.Lock()
	defer p.mu.Unlock()
	pa := p.armed
	p.armed = nil
	if pa == nil || pa.fab != fab {
		return nil
	}
	return pa
}
