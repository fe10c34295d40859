package sdktest

import (
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// BFSRoutes is a deliberately simple reference router for tests and
// examples: one min-hop tree per destination (breadth-first from the
// destination's switch over active inter-switch links, lowest port first).
// It is O(endpoints x links); use it on test-sized fabrics only.
func BFSRoutes(t *topology.Topology) *plan.Routes {
	sw := t.Switches()
	eps := t.Endpoints()
	out := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	queue := make([]int32, 0, len(sw))
	for e, ep := range eps {
		pl := make(plan.Plane, len(sw))
		for i := range pl {
			pl[i] = plan.NoPort
		}
		out.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{pl}}
		root, rootPort := ep.Node, uint8(0)
		if t.Nodes[ep.Node].Type != topology.Switch {
			peer := t.Port(ep).Peer
			if !t.IsLinkUp(ep) || t.Nodes[peer.Node].Type != topology.Switch {
				continue
			}
			root, rootPort = peer.Node, peer.Port
		}
		pl[t.SwitchIndex(root)] = rootPort
		queue = append(queue[:0], root)
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			n := &t.Nodes[u]
			for p := 1; p < len(n.Ports); p++ {
				r := topology.PortRef{Node: u, Port: uint8(p)}
				if !t.IsLinkUp(r) {
					continue
				}
				peer := n.Ports[p].Peer
				si := t.SwitchIndex(peer.Node)
				if si < 0 || pl[si] != plan.NoPort {
					continue
				}
				pl[si] = peer.Port
				queue = append(queue, peer.Node)
			}
		}
	}
	return out
}
