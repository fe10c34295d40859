package ftree

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// changedBlocks is the share of 64-entry LFT blocks (over all switches)
// that differ between two realisations with the same LIDs: what a
// re-route after the change costs in LFT Sets.
func changedBlocks(a, b *plan.Realized) float64 {
	total, changed := 0, 0
	for s := range a.LFT {
		ra, rb := a.LFT[s], b.LFT[s]
		for lo := 0; lo < len(ra); lo += 64 {
			hi := min(lo+64, len(ra))
			total++
			for i := lo; i < hi; i++ {
				if ra[i] != rb[i] {
					changed++
					break
				}
			}
		}
	}
	return 100 * float64(changed) / float64(total)
}

// stability routes the full tree and the tree with one cable down, for
// each cable that pick names, and returns the changed-block percentages.
func stability(t *testing.T, k int, picks map[string]func(*Tree) (int32, uint8)) map[string]float64 {
	t.Helper()
	build := func() *topology.Topology {
		topo, err := sdktest.FatTree3(k)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	realize := func(topo *topology.Topology) (*plan.Realized, *Tree) {
		r, res, err := Route(context.Background(), topo, 0, Config{})
		if err != nil {
			t.Fatal(err)
		}
		real, err := testfab.Realize(topo, r, 0)
		if err != nil {
			t.Fatal(err)
		}
		return real, res.Tree
	}
	full, tree := realize(build())
	out := map[string]float64{}
	for name, pick := range picks {
		topo := build()
		s, p := pick(tree)
		if tree.Level[s] < 0 {
			t.Fatalf("%s: bad pick", name)
		}
		ref := topology.PortRef{Node: topo.Switches()[s], Port: p}
		topo.Port(ref).State = topology.StateDown
		topo.Port(topo.Port(ref).Peer).State = topology.StateDown
		after, _ := realize(topo)
		out[name] = changedBlocks(full, after)
	}
	return out
}

// failurePicks are one cable of each kind: leaf-aggregation, aggregation-
// core, and a CA's cable.
func failurePicks() map[string]func(*Tree) (int32, uint8) {
	return map[string]func(*Tree) (int32, uint8){
		"leaf-agg cable": func(t *Tree) (int32, uint8) {
			l := t.Leaves[len(t.Leaves)/2]
			return l, t.Up[l][3%len(t.Up[l])].Ports[0]
		},
		"agg-core cable": func(t *Tree) (int32, uint8) {
			a := t.ByLevel[1][len(t.ByLevel[1])/3]
			return a, t.Up[a][1].Ports[0]
		},
		"CA cable": func(t *Tree) (int32, uint8) {
			l := t.Leaves[7]
			return l, t.Graph.Attachment(t.LeafCAs[7][2]).Port
		},
	}
}

// TestStability: one failed cable changes few LFT blocks, because only
// the destinations whose chosen cable is gone re-choose.
func TestStability(t *testing.T) {
	// Smaller trees have too few blocks per switch for a percentage of
	// blocks to mean much: one CA is already 1/10 of ft3-12's.
	k := 36
	if testing.Short() {
		k = 24
	}
	for name, pct := range stability(t, k, failurePicks()) {
		t.Logf("ft3-%d, one %s down: %.3f%% of LFT blocks change", k, name, pct)
		if pct > 5 {
			t.Errorf("ft3-%d, one %s down: %.2f%% of LFT blocks change, want at most 5%%", k, name, pct)
		}
		if pct == 0 && name != "CA cable" {
			t.Errorf("%s down changed nothing: the failure was not routed around", name)
		}
	}
}
