package sdktest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
)

// RunMulticastRouter checks the multicast router binary at path.
func RunMulticastRouter(t *testing.T, path string, opts Options) {
	checkMulticast(t, launch(t, path, sdk.KindMulticast), opts)
}

// MulticastRouter checks a multicast router implementation in-process.
func MulticastRouter(t *testing.T, impl sdk.MulticastRouter, opts Options) {
	checkMulticast(t, InProcess(t, impl, sdk.KindMulticast), opts)
}

// MulticastGroups are the groups the kit asks for on topo: every CA port
// as a full member (the IPoIB broadcast group), one member alone, a pair,
// and random groups mixing full, non- and send-only members, with
// consecutive MLIDs from 0xC000.
func MulticastGroups(topo *topology.Topology, seed uint64) []sdk.MulticastGroup {
	var eps []topology.PortRef
	for _, ep := range topo.Endpoints() {
		if _, err := sdk.MemberSwitch(topo, ep); err == nil {
			eps = append(eps, ep)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d63))
	mlid := uint16(sdk.MinMLID)
	var out []sdk.MulticastGroup
	add := func(pick func(i int) sdk.JoinState) {
		g := sdk.MulticastGroup{MLID: mlid}
		mlid++
		for i, ep := range eps {
			if s := pick(i); s != 0 {
				g.Members = append(g.Members, sdk.MulticastMember{Port: ep, State: s})
			}
		}
		out = append(out, g)
	}
	add(func(i int) sdk.JoinState {
		return map[bool]sdk.JoinState{true: sdk.JoinFull}[topo.Nodes[eps[i].Node].Type != topology.Switch]
	})
	if len(eps) == 0 {
		return out
	}
	add(func(i int) sdk.JoinState { return map[bool]sdk.JoinState{true: sdk.JoinFull}[i == 0] })
	add(func(i int) sdk.JoinState {
		return map[bool]sdk.JoinState{true: sdk.JoinFull}[i == 0 || i == len(eps)-1]
	})
	states := []sdk.JoinState{0, 0, sdk.JoinFull, sdk.JoinNon, sdk.JoinSendOnly, sdk.JoinFull | sdk.JoinNon}
	for range 5 {
		add(func(int) sdk.JoinState { return states[rng.IntN(len(states))] })
	}
	return out
}

func checkMulticast(t *testing.T, c *sdk.RemoteClient, opts Options) {
	ctx, fabrics := setup(t, c, sdk.KindMulticast, &opts)
	for name, topo := range fabrics {
		t.Run(name, func(t *testing.T) {
			req := sdk.MulticastRequest{Topo: topo, Groups: MulticastGroups(topo, 1)}
			trees, err := c.RouteMulticast(ctx, req)
			if err != nil {
				t.Fatalf("RouteMulticast: %v", err)
			}
			if err := CheckTrees(&req, trees); err != nil {
				t.Fatal(err)
			}
			// One group alone gets a tree that passes too (a join or a
			// leave recomputes only its group).
			one := sdk.MulticastRequest{Topo: topo, Groups: req.Groups[len(req.Groups)-1:]}
			trees, err = c.RouteMulticast(ctx, one)
			if err != nil {
				t.Fatalf("RouteMulticast of one group: %v", err)
			}
			if err := CheckTrees(&one, trees); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// CheckTrees applies the host's checks to a router's answer: the shape
// (sdk.CheckTrees) and, per group, delivery (sdk.VerifyTree).
func CheckTrees(req *sdk.MulticastRequest, trees []sdk.MulticastTree) error {
	if err := sdk.CheckTrees(req, trees); err != nil {
		return err
	}
	for i := range trees {
		if err := sdk.VerifyTree(req.Topo, &req.Groups[i], &trees[i]); err != nil {
			return err
		}
	}
	return nil
}

// BFSMulticast is a reference multicast router: each group's tree is the
// union of breadth-first shortest paths from its lowest member switch to
// the others. It balances nothing; it is what a router's trees are
// compared with, and what host tests route with.
func BFSMulticast(req sdk.MulticastRequest) ([]sdk.MulticastTree, error) {
	topo := req.Topo
	trees := make([]sdk.MulticastTree, len(req.Groups))
	for gi, g := range req.Groups {
		out := map[int32]map[uint8]bool{}
		add := func(n int32, p uint8) {
			if out[n] == nil {
				out[n] = map[uint8]bool{}
			}
			out[n][p] = true
		}
		var terms []int32
		for _, m := range g.Members {
			sw, err := sdk.MemberSwitch(topo, m.Port)
			if err != nil {
				return nil, err
			}
			terms = append(terms, sw.Node)
			if out[sw.Node] == nil {
				out[sw.Node] = map[uint8]bool{}
			}
			if m.State.Receives() {
				add(sw.Node, sw.Port)
			}
		}
		if len(terms) > 0 {
			root := slices.Min(terms)
			// parent[n] is the link toward root: (port of n, peer).
			type up struct {
				port uint8
				peer topology.PortRef
			}
			parent := map[int32]up{root: {}}
			q := []int32{root}
			for len(q) > 0 {
				n := q[0]
				q = q[1:]
				for p := 1; p < len(topo.Nodes[n].Ports); p++ {
					pr := topo.Nodes[n].Ports[p].Peer
					if !topo.IsLinkUp(topology.PortRef{Node: n, Port: uint8(p)}) || topo.Nodes[pr.Node].Type != topology.Switch {
						continue
					}
					if _, seen := parent[pr.Node]; !seen {
						parent[pr.Node] = up{pr.Port, topology.PortRef{Node: n, Port: uint8(p)}}
						q = append(q, pr.Node)
					}
				}
			}
			for _, t := range terms {
				for n := t; n != root; {
					u, ok := parent[n]
					if !ok {
						return nil, fmt.Errorf("group %#04x: switch %d cannot reach switch %d", g.MLID, t, root)
					}
					if out[n][u.port] {
						break // this branch is in the tree already
					}
					add(n, u.port)
					add(u.peer.Node, u.peer.Port)
					n = u.peer.Node
				}
			}
		}
		tr := sdk.MulticastTree{MLID: g.MLID}
		for _, n := range slices.Sorted(maps.Keys(out)) {
			tr.Switches = append(tr.Switches, sdk.TreeSwitch{Node: n, Out: slices.Sorted(maps.Keys(out[n]))})
		}
		trees[gi] = tr
	}
	return trees, nil
}
