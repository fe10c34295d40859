package cdg

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestCounts: counting every owned LID's dependencies gives Build's graph
// and its verdict on cycles; removing a routing's dependencies again
// leaves none, and adding them back finds the cycle from their heads.
func TestCounts(t *testing.T) {
	ring, err := analysistest.Ring(6, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := analysistest.FatTree3(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	upDown := func(t *topology.Topology) *plan.Routes { return analysistest.UpDown(t, 0) }
	for _, tc := range []struct {
		name   string
		topo   *topology.Topology
		routes func(*topology.Topology) *plan.Routes
		cyclic bool
	}{
		{"ring, Up*/Down*", ring, upDown, false},
		{"ring, min-hop", ring, analysistest.MinHop, true},
		{"fat tree, Up*/Down*", ft, upDown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rz, err := testfab.Realize(tc.topo, tc.routes(tc.topo), 0)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Build(context.Background(), rz)
			if err != nil {
				t.Fatal(err)
			}
			g := route.NewGraph(tc.topo)
			c := NewCounts(g)
			var heads []int32
			each := func(d int) {
				for s := range int32(g.N) {
					for lid := 1; lid <= int(rz.TopLID); lid++ {
						if rz.LIDOwner[lid] == 0 {
							continue
						}
						if i, head, ok := c.DepTables(s, rz.LFT, lid); ok && c.Add(i, d) {
							heads = append(heads, head)
						}
					}
				}
			}
			each(1)
			for ch := range c.base.Len() {
				for out2 := range c.width {
					held := c.n[ch*c.width+out2] > 0
					bit := out2 < want.words*64 && want.succ[ch*want.words+out2>>6]&(1<<(out2&63)) != 0
					if held != bit {
						t.Fatalf("channel %d next port %d: counted %v, Build %v", ch, out2, held, bit)
					}
				}
			}
			if got := c.CycleFrom(heads); got != tc.cyclic || (want.FindCycle() != nil) != tc.cyclic {
				t.Fatalf("cycle from the new dependencies %v, Build's graph %v; want %v", got, want.FindCycle() != nil, tc.cyclic)
			}
			each(-1)
			for i, k := range c.n {
				if k != 0 {
					t.Fatalf("dependency %d holds %d after every LID's were removed", i, k)
				}
			}
		})
	}
}
