package ftree

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// ideal is the all-to-all load lower bound of a full tree's busiest leaf
// up-channel: c CAs sending to the N-c outside over u cables.
func ideal(n, c, u int) int32 { return int32((c*(n-c) + u - 1) / u) }

func TestFullTrees(t *testing.T) {
	tests := []struct {
		name      string
		build     func() (*topology.Topology, error)
		cas, c, u int
		levels    int
	}{
		{"ft2-8x4x4", func() (*topology.Topology, error) { return sdktest.FatTree2(8, 4, 4) }, 32, 4, 4, 2},
		{"ft3-8", func() (*topology.Topology, error) { return sdktest.FatTree3(8) }, 128, 4, 4, 3},
		{"ft2-648", func() (*topology.Topology, error) { return sdktest.FatTree2(36, 18, 18) }, 648, 18, 18, 2},
		{"ft3-12", func() (*topology.Topology, error) { return sdktest.FatTree3(12) }, 432, 6, 6, 3},
		{"ft3-3456", func() (*topology.Topology, error) { return sdktest.FatTree3(24) }, 3456, 12, 12, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.cas > 1000 {
				t.Skip("shift check of a large tree")
			}
			topo, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			r, res, err := Route(context.Background(), topo, 0, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Tree.Levels != tc.levels {
				t.Errorf("levels = %d, want %d", res.Tree.Levels, tc.levels)
			}
			if res.CAs.SwitchPairs != 0 {
				t.Errorf("CA destinations unrouted: %+v", res.CAs)
			}
			c := newChecker(topo, r)
			if len(c.cas) != tc.cas {
				t.Fatalf("%d CAs, want %d", len(c.cas), tc.cas)
			}
			a2a, err := c.allToAll()
			if err != nil {
				t.Fatal(err)
			}
			if want := ideal(tc.cas, tc.c, tc.u); a2a != want {
				t.Errorf("all-to-all max switch link load %d, want the optimum %d", a2a, want)
			}
			if float64(a2a)/float64(tc.cas-1) > 1 {
				t.Errorf("normalised all-to-all load %.3f > 1", float64(a2a)/float64(tc.cas-1))
			}
			ws, err := c.worstShift(res.Tree.CAOrder())
			if err != nil {
				t.Fatal(err)
			}
			if ws != 1 {
				t.Errorf("worst shift load %d, want 1", ws)
			}
			t.Logf("%s: a2a max %d (%.3f of N-1), worst shift %d, switch pairs unrouted %d", tc.name, a2a, float64(a2a)/float64(tc.cas-1), ws, res.Switches.SwitchPairs)
		})
	}
}

// parallelTree is a 2-level tree whose leaf-spine pairs are joined by two
// cables, leaves carrying cas[l] CAs on ports 1.. and the cables on ports
// 9..16 (cable c of spine x on port 9+2x+c).
func parallelTree(cas []int) (*topology.Topology, error) {
	f := testfab.New()
	spines := make([]uint64, 4)
	for i := range spines {
		spines[i] = f.Switch(2 * len(cas))
	}
	for l, n := range cas {
		leaf := f.Switch(16)
		for x, sp := range spines {
			for c := 0; c < 2; c++ {
				f.Link(leaf, 9+2*x+c, sp, 2*l+c+1)
			}
		}
		for i := 0; i < n; i++ {
			f.Link(leaf, i+1, f.CA(), 1)
		}
	}
	return f.Build()
}

func TestParallelCablesAndPartialLeaves(t *testing.T) {
	full := []int{8, 8, 8, 8, 8, 8}
	partial := []int{8, 3, 8, 0, 5, 8}
	for _, tc := range []struct {
		name string
		cas  []int
	}{{"full", full}, {"partial", partial}} {
		topo, err := parallelTree(tc.cas)
		if err != nil {
			t.Fatal(err)
		}
		r, res, err := Route(context.Background(), topo, 0, Config{})
		if err != nil {
			t.Fatal(err)
		}
		tr := res.Tree
		if tr.Levels != 2 || len(tr.Roots) != 4 {
			t.Fatalf("%s: %d levels, %d roots; want 2 levels under the 4 spines (a CA-less leaf is not a root)", tc.name, tr.Levels, len(tr.Roots))
		}
		if len(tr.Up[tr.Leaves[0]]) != 4 || len(tr.Up[tr.Leaves[0]][0].Ports) != 2 || tr.CAsPerLeaf != 8 {
			t.Fatalf("%s: leaf has %d up groups (%d cables in the first), %d CA slots; want 4 groups of 2, 8 slots",
				tc.name, len(tr.Up[tr.Leaves[0]]), len(tr.Up[tr.Leaves[0]][0].Ports), tr.CAsPerLeaf)
		}
		checkAll(t, topo, r, 0)
		ws, err := newChecker(topo, r).worstShift(tr.CAOrder())
		if err != nil {
			t.Fatal(err)
		}
		if tc.name == "full" && ws != 1 {
			t.Errorf("full tree with parallel cables: worst shift load %d, want 1", ws)
		}
		t.Logf("%s: worst shift load %d", tc.name, ws)
	}
}
