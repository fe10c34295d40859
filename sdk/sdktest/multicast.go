package sdktest

import (
	"math/rand/v2"
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
