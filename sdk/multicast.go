package sdk

import (
	"context"
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk/topology"
)

// JoinState is an MCMemberRecord JoinState (IBA 15.2.5.17): a set of bits.
type JoinState uint8

const (
	JoinFull         JoinState = 1 << 0
	JoinNon          JoinState = 1 << 1
	JoinSendOnly     JoinState = 1 << 2 // send-only non-member
	JoinSendOnlyFull JoinState = 1 << 3 // IBA 1.3
)

// Receives reports whether a member in state j gets the group's packets:
// full and non-members do, send-only members only send.
func (j JoinState) Receives() bool { return j&(JoinFull|JoinNon) != 0 }

// MLID range a multicast router works on (IBA 4.1.1: 0xC000..0xFFFE).
const (
	MinMLID = 0xC000
	MaxMLID = 0xFFFE
)

// MulticastMember is one port in a group: an endpoint of the topology (a
// CA or router port, or a switch's port 0) and how it joined.
type MulticastMember struct {
	Port  topology.PortRef
	State JoinState
}

// MulticastGroup is one group to route: its MLID and its members, sorted
// by port (node, then port number), each port once.
type MulticastGroup struct {
	MLID    uint16
	Members []MulticastMember
}

// MulticastRequest is a multicast router's input: the fabric and the
// groups whose trees the host wants (one group after a join or leave, all
// of them after the topology changed).
type MulticastRequest struct {
	Topo   *topology.Topology
	Groups []MulticastGroup
}

// TreeSwitch is one switch of a multicast tree and the ports it forwards
// the group's packets out of (its MFT PortMask for the MLID). A switch
// never sends a packet back out of the port it came in on (IBA 18.2.4.3.2),
// so a tree link appears in the Out of both its switches.
type TreeSwitch struct {
	Node int32 // node index of the switch
	Out  []uint8
}

// MulticastTree is a group's forwarding: the switches that carry it,
// sorted by node index. The host verifies it before programming: the
// switch links it uses form a tree, every member's switch is in it, every
// receiving member's port is in its switch's Out and no other endpoint is.
type MulticastTree struct {
	MLID     uint16
	Switches []TreeSwitch
}

// MulticastRouter computes multicast trees; the SA owns groups and
// membership, the host verifies and programs what the router proposes.
// It answers one tree per request group, in the request's order.
type MulticastRouter interface {
	Plugin
	RouteMulticast(ctx context.Context, req MulticastRequest) ([]MulticastTree, error)
}

// Check vets a request as both sides of the wire do: MLIDs in range and
// distinct, members that exist, are endpoints and appear once, join states
// in 1..15.
func (r *MulticastRequest) Check() error {
	if r.Topo == nil {
		return fmt.Errorf("multicast request has no topology")
	}
	seen := map[uint16]bool{}
	for gi := range r.Groups {
		g := &r.Groups[gi]
		if g.MLID < MinMLID || g.MLID > MaxMLID {
			return fmt.Errorf("group %d: MLID %#04x outside %#04x..%#04x", gi, g.MLID, MinMLID, MaxMLID)
		}
		if seen[g.MLID] {
			return fmt.Errorf("group %d: MLID %#04x appears twice", gi, g.MLID)
		}
		seen[g.MLID] = true
		for mi, m := range g.Members {
			if m.Port.Node < 0 || int(m.Port.Node) >= len(r.Topo.Nodes) || int(m.Port.Port) >= len(r.Topo.Nodes[m.Port.Node].Ports) {
				return fmt.Errorf("group %#04x member %d: no port %d:%d in the topology", g.MLID, mi, m.Port.Node, m.Port.Port)
			}
			if r.Topo.EndpointIndex(m.Port) < 0 {
				return fmt.Errorf("group %#04x member %d: port %d:%d is not an endpoint", g.MLID, mi, m.Port.Node, m.Port.Port)
			}
			if m.State == 0 || m.State > 0xF {
				return fmt.Errorf("group %#04x member %d: join state %#x not in 1..15", g.MLID, mi, m.State)
			}
			if mi > 0 && !portLess(g.Members[mi-1].Port, m.Port) {
				return fmt.Errorf("group %#04x: members not sorted by port or port %d:%d twice", g.MLID, m.Port.Node, m.Port.Port)
			}
		}
	}
	return nil
}

func portLess(a, b topology.PortRef) bool {
	return a.Node < b.Node || (a.Node == b.Node && a.Port < b.Port)
}

// CheckTrees vets a router's answer for req's shape: one tree per group in
// order, switches that exist, sorted and once each, ports that exist. It
// does not judge whether the trees deliver; the host's verifier and
// sdktest do.
func CheckTrees(req *MulticastRequest, trees []MulticastTree) error {
	if len(trees) != len(req.Groups) {
		return fmt.Errorf("%d trees for %d groups", len(trees), len(req.Groups))
	}
	for i := range trees {
		t := &trees[i]
		if t.MLID != req.Groups[i].MLID {
			return fmt.Errorf("tree %d has MLID %#04x, group %d has %#04x", i, t.MLID, i, req.Groups[i].MLID)
		}
		for j, s := range t.Switches {
			if s.Node < 0 || int(s.Node) >= len(req.Topo.Nodes) || req.Topo.Nodes[s.Node].Type != topology.Switch {
				return fmt.Errorf("tree %#04x: node %d is not a switch", t.MLID, s.Node)
			}
			if j > 0 && t.Switches[j-1].Node >= s.Node {
				return fmt.Errorf("tree %#04x: switches not sorted by node or node %d twice", t.MLID, s.Node)
			}
			np := len(req.Topo.Nodes[s.Node].Ports)
			if !slices.IsSorted(s.Out) {
				return fmt.Errorf("tree %#04x switch %d: out-ports not sorted", t.MLID, s.Node)
			}
			for k, p := range s.Out {
				if int(p) >= np {
					return fmt.Errorf("tree %#04x switch %d: no port %d", t.MLID, s.Node, p)
				}
				if k > 0 && s.Out[k-1] == p {
					return fmt.Errorf("tree %#04x switch %d: port %d twice", t.MLID, s.Node, p)
				}
			}
		}
	}
	return nil
}
