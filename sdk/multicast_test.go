package sdk_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// fixedRouter answers whatever trees it holds.
type fixedRouter struct{ trees []sdk.MulticastTree }

func (fixedRouter) Info() sdk.Info {
	return sdk.Info{Name: "fixed", Version: "1", Kind: sdk.KindMulticast}
}
func (fixedRouter) Schema() schema.Block      { return schema.Block{} }
func (fixedRouter) Configure(cty.Value) error { return nil }
func (f fixedRouter) RouteMulticast(context.Context, sdk.MulticastRequest) ([]sdk.MulticastTree, error) {
	return f.trees, nil
}

// star: leaf switches 3..5 under spine... built by sdktest.FatTree2(2,1,2):
// one spine, two leaves with two CAs each.
func star(t *testing.T) (*topology.Topology, sdk.MulticastGroup, sdk.MulticastTree) {
	t.Helper()
	topo, err := sdktest.FatTree2(2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	g := sdktest.MulticastGroups(topo, 1)[0]
	// A valid tree: spine 0 and both leaves; leaf ports to CAs.
	tr := sdk.MulticastTree{MLID: g.MLID}
	sp := topo.Switches()[0]
	tr.Switches = append(tr.Switches, sdk.TreeSwitch{Node: sp, Out: []uint8{1, 2}})
	for _, leaf := range topo.Switches()[2:] {
		ts := sdk.TreeSwitch{Node: leaf}
		for p := 1; p < len(topo.Nodes[leaf].Ports); p++ {
			pr := topo.Nodes[leaf].Ports[p].Peer
			if topo.Nodes[pr.Node].Type != topology.Switch || pr.Node == sp {
				ts.Out = append(ts.Out, uint8(p))
			}
		}
		tr.Switches = append(tr.Switches, ts)
	}
	return topo, g, tr
}

func TestVerifyTree(t *testing.T) {
	topo, g, good := star(t)
	if err := sdk.VerifyTree(topo, &g, &good); err != nil {
		t.Fatalf("valid tree refused: %v", err)
	}
	clone := func() sdk.MulticastTree {
		c := good
		c.Switches = slices.Clone(good.Switches)
		for i := range c.Switches {
			c.Switches[i].Out = slices.Clone(c.Switches[i].Out)
		}
		return c
	}
	spine2 := topo.Switches()[1]
	for _, tc := range []struct {
		name, want string
		edit       func(tr *sdk.MulticastTree, g *sdk.MulticastGroup)
	}{
		{"one-way link", "one way only", func(tr *sdk.MulticastTree, _ *sdk.MulticastGroup) { tr.Switches[0].Out = tr.Switches[0].Out[:1] }},
		{"loop over both spines", "not a tree", func(tr *sdk.MulticastTree, _ *sdk.MulticastGroup) {
			tr.Switches = append(tr.Switches, sdk.TreeSwitch{Node: spine2, Out: []uint8{1, 2}})
			for i := 1; i < len(tr.Switches)-1; i++ {
				tr.Switches[i].Out = append(tr.Switches[i].Out, uint8(len(topo.Nodes[tr.Switches[i].Node].Ports)-1))
			}
			slices.SortFunc(tr.Switches, func(a, b sdk.TreeSwitch) int { return int(a.Node - b.Node) })
		}},
		{"delivers to a non-member", "not a receiving member", func(_ *sdk.MulticastTree, g *sdk.MulticastGroup) { g.Members = g.Members[1:] }},
		{"send-only member gets packets", "not a receiving member", func(_ *sdk.MulticastTree, g *sdk.MulticastGroup) { g.Members[0].State = sdk.JoinSendOnly }},
		{"member port missing", "not in the tree", func(tr *sdk.MulticastTree, _ *sdk.MulticastGroup) { tr.Switches[1].Out = tr.Switches[1].Out[1:] }},
		{"no such port", "has no port", func(tr *sdk.MulticastTree, _ *sdk.MulticastGroup) {
			tr.Switches[0].Out = append(tr.Switches[0].Out, 200)
		}},
		{"port 0 of a non-member", "own port 0", func(tr *sdk.MulticastTree, _ *sdk.MulticastGroup) {
			tr.Switches[0].Out = append([]uint8{0}, tr.Switches[0].Out...)
		}},
		{"leaf cut off", "not in the tree", func(tr *sdk.MulticastTree, _ *sdk.MulticastGroup) {
			tr.Switches = tr.Switches[:2]
			tr.Switches[0].Out = tr.Switches[0].Out[:1]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, grp := clone(), g
			grp.Members = slices.Clone(g.Members)
			tc.edit(&tr, &grp)
			err := sdk.VerifyTree(topo, &grp, &tr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			// The same tree through a plugin fails the kit's check too.
			req := sdk.MulticastRequest{Topo: topo, Groups: []sdk.MulticastGroup{grp}}
			if err := sdktest.CheckTrees(&req, []sdk.MulticastTree{tr}); err == nil {
				t.Fatal("sdktest.CheckTrees passed a tree VerifyTree refuses")
			}
		})
	}
}

// Trees cross the wire intact (several batches) and a router answering
// the wrong number of trees is an error on the host side.
func TestRouteMulticastOverGRPC(t *testing.T) {
	topo, g, good := star(t)
	c := sdktest.InProcess(t, fixedRouter{trees: []sdk.MulticastTree{good}}, sdk.KindMulticast)
	got, err := c.RouteMulticast(context.Background(), sdk.MulticastRequest{Topo: topo, Groups: []sdk.MulticastGroup{g}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].MLID != good.MLID || len(got[0].Switches) != len(good.Switches) {
		t.Fatalf("got %+v, want %+v", got, good)
	}
	for i := range good.Switches {
		if !slices.Equal(got[0].Switches[i].Out, good.Switches[i].Out) || got[0].Switches[i].Node != good.Switches[i].Node {
			t.Fatalf("switch %d: got %+v want %+v", i, got[0].Switches[i], good.Switches[i])
		}
	}
	g2 := g
	g2.MLID++
	if _, err := c.RouteMulticast(context.Background(), sdk.MulticastRequest{Topo: topo, Groups: []sdk.MulticastGroup{g, g2}}); err == nil {
		t.Fatal("one tree for two groups accepted")
	}
	bad := g
	bad.MLID = 0x10
	if _, err := c.RouteMulticast(context.Background(), sdk.MulticastRequest{Topo: topo, Groups: []sdk.MulticastGroup{bad}}); err == nil {
		t.Fatal("unicast MLID sent")
	}
}
