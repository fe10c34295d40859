package ftree

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk/sdktest"
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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
