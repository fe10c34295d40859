package sdk

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/topology"
)

// VerifyTree checks that tree delivers group g on topo as multicast must:
//
//   - every out-port exists and is a live link (both ends Init or
//     better: the SM activates them, as for unicast);
//   - the switch-to-switch links the tree uses are listed at both ends and
//     form one tree (connected, no cycle), so a packet entering anywhere
//     reaches every switch of it exactly once and cannot loop;
//   - every member's switch is in the tree (when anything must be
//     delivered at all), every receiving member's port (full and
//     non-members) is in its switch's out-ports, and no other endpoint is:
//     send-only members and non-members get nothing.
//
// Together these mean every member's packets reach every other receiving
// member exactly once and nobody else. The host runs this on every tree a
// router proposes; sdktest runs the same function.
func VerifyTree(topo *topology.Topology, g *MulticastGroup, tree *MulticastTree) error {
	if tree.MLID != g.MLID {
		return fmt.Errorf("tree MLID %#04x for group %#04x", tree.MLID, g.MLID)
	}
	out := make(map[int32][]uint8, len(tree.Switches))
	for _, s := range tree.Switches {
		if s.Node < 0 || int(s.Node) >= len(topo.Nodes) || topo.Nodes[s.Node].Type != topology.Switch {
			return fmt.Errorf("group %#04x: tree node %d is not a switch", g.MLID, s.Node)
		}
		if _, dup := out[s.Node]; dup {
			return fmt.Errorf("group %#04x: switch %s listed twice", g.MLID, nodeName(topo, s.Node))
		}
		out[s.Node] = s.Out
	}
	has := func(n int32, p uint8) bool {
		for _, q := range out[n] {
			if q == p {
				return true
			}
		}
		return false
	}
	// Where each member attaches, and which switch ports must deliver.
	want := map[topology.PortRef]bool{} // switch port → a receiver behind it
	needed := 0                         // members with something to send or receive from another
	receivers := 0
	for _, m := range g.Members {
		sw, err := memberSwitch(topo, m.Port)
		if err != nil {
			return fmt.Errorf("group %#04x: %w", g.MLID, err)
		}
		if m.State.Receives() {
			want[sw] = true
			receivers++
		}
		needed++
	}
	deliver := receivers > 0 && needed > 1
	edges := 0
	for n, ports := range out {
		node := &topo.Nodes[n]
		for _, p := range ports {
			if int(p) >= len(node.Ports) {
				return fmt.Errorf("group %#04x: switch %s has no port %d", g.MLID, nodeName(topo, n), p)
			}
			here := topology.PortRef{Node: n, Port: p}
			if p == 0 {
				if !want[here] {
					return fmt.Errorf("group %#04x: switch %s forwards to its own port 0, which is not a receiving member", g.MLID, nodeName(topo, n))
				}
				continue
			}
			pt := &node.Ports[p]
			if !topo.IsLinkUp(here) {
				return fmt.Errorf("group %#04x: switch %s port %d is not a live link", g.MLID, nodeName(topo, n), p)
			}
			peer := pt.Peer
			if topo.Nodes[peer.Node].Type == topology.Switch {
				if !has(peer.Node, peer.Port) {
					return fmt.Errorf("group %#04x: link %s/%d - %s/%d is in the tree one way only", g.MLID, nodeName(topo, n), p, nodeName(topo, peer.Node), peer.Port)
				}
				edges++
				continue
			}
			if !want[here] {
				return fmt.Errorf("group %#04x: switch %s port %d delivers to %s port %d, which is not a receiving member", g.MLID, nodeName(topo, n), p, nodeName(topo, peer.Node), peer.Port)
			}
		}
	}
	for sp := range want {
		if deliver && !has(sp.Node, sp.Port) {
			return fmt.Errorf("group %#04x: switch %s port %d leads to a receiving member but is not in the tree", g.MLID, nodeName(topo, sp.Node), sp.Port)
		}
	}
	if deliver {
		for _, m := range g.Members {
			sw, _ := memberSwitch(topo, m.Port)
			if _, ok := out[sw.Node]; !ok {
				return fmt.Errorf("group %#04x: member %s port %d attaches to switch %s, which is not in the tree", g.MLID, nodeName(topo, m.Port.Node), m.Port.Port, nodeName(topo, sw.Node))
			}
		}
	}
	// Each switch-switch link was counted at both ends.
	if len(out) > 0 && edges/2 != len(out)-1 {
		return fmt.Errorf("group %#04x: %d switches joined by %d links: not a tree (a tree has one link fewer than switches; more is a loop, fewer leaves parts cut off)", g.MLID, len(out), edges/2)
	}
	// Connected: with n-1 links and no cycle ⇔ connected; check connectivity.
	if len(out) > 1 {
		var start int32 = -1
		for n := range out {
			if start < 0 || n < start {
				start = n
			}
		}
		seen := map[int32]bool{start: true}
		stack := []int32{start}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, p := range out[n] {
				if p == 0 {
					continue
				}
				peer := topo.Nodes[n].Ports[p].Peer
				if topo.Nodes[peer.Node].Type == topology.Switch && !seen[peer.Node] {
					seen[peer.Node] = true
					stack = append(stack, peer.Node)
				}
			}
		}
		if len(seen) != len(out) {
			return fmt.Errorf("group %#04x: the tree's %d switches fall apart (%d reachable from %s): it has a loop and a cut", g.MLID, len(out), len(seen), nodeName(topo, start))
		}
	}
	return nil
}

// memberSwitch is the switch port a member's packets enter and leave by:
// the switch port cabled to a CA member, or port 0 of a switch member.
func memberSwitch(topo *topology.Topology, p topology.PortRef) (topology.PortRef, error) {
	if topo.Nodes[p.Node].Type == topology.Switch {
		return topology.PortRef{Node: p.Node, Port: 0}, nil
	}
	pt := topo.Port(p)
	if !topo.IsLinkUp(p) || topo.Nodes[pt.Peer.Node].Type != topology.Switch {
		return topology.PortRef{}, fmt.Errorf("member %s port %d is not on a live link to a switch", nodeName(topo, p.Node), p.Port)
	}
	return pt.Peer, nil
}

// MemberSwitch is the switch port a member attaches through (see
// VerifyTree): routers use it to find the switches a tree must span.
func MemberSwitch(topo *topology.Topology, p topology.PortRef) (topology.PortRef, error) {
	return memberSwitch(topo, p)
}

func nodeName(topo *topology.Topology, n int32) string {
	nd := &topo.Nodes[n]
	if nd.Desc != "" {
		return fmt.Sprintf("%q (0x%016x)", nd.Desc, nd.GUID)
	}
	return fmt.Sprintf("0x%016x", nd.GUID)
}
