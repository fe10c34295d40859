package main

import (
	"testing"

	"github.com/ibsm/ibsm/plugins/internal/lids"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// The bound must hold for every heuristic, and the seed-003 entry counts
// must be consistent with the renaming partition they describe.
func TestBoundAndEntries(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		topo, err := sdktest.Random(seed, 12, 10, 3)
		if err != nil {
			t.Fatal(err)
		}
		ps := lids.RandomShortest(topo, seed)
		lb := cliqueBound(topo, ps)
		cas := 0
		for _, ep := range topo.Endpoints() {
			if topo.SwitchIndex(ep.Node) < 0 {
				cas++
			}
		}
		if lb <= cas {
			t.Errorf("seed %d: bound %d for %d CAs: the fabric has no conflicts to bound", seed, lb, cas)
		}
		for _, h := range lids.Heuristics {
			res, total, err := caLIDs(topo, ps, h)
			if err != nil {
				t.Fatal(err)
			}
			if total < lb {
				t.Errorf("seed %d %s: %d LIDs below the clique bound %d", seed, h, total, lb)
			}
			if h != lids.Renaming {
				continue
			}
			orig, all, conflicted, extra, cxn := entries(topo, ps, res.PathGroup)
			renamed := 0
			for _, g := range res.PathGroup {
				if g > 0 {
					renamed++
				}
			}
			if !(orig <= all && conflicted <= orig && extra >= conflicted && cxn >= orig && conflicted > 0) || (renamed > 0) != (all > orig) {
				t.Errorf("seed %d: original %d total %d conflicted %d extra %d cxn %d renamed paths %d", seed, orig, all, conflicted, extra, cxn, renamed)
			}
		}
	}
}
