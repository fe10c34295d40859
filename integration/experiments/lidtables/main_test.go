package main

import (
	"strings"
	"testing"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/plugins/lib/lids"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// The bound must hold for every heuristic, and the destination renaming entry
// counts must be consistent with the renaming partition they describe.
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

// TestTopoReproducesInstances: the fabric an experiment instance routes is
// the one 'ibsm topo' writes for the command line Paper.Args gives, read
// back from the file (same topology hash), and the seed picks the instance.
func TestTopoReproducesInstances(t *testing.T) {
	for _, p := range []topogen.Paper{
		paper000(conf000{machines: 256, switches: 32}, 7),
		paper003(16, 4, 3),
		paper003(64, 3, 10), // Table 6's lowest link count
	} {
		name := strings.Join(p.Args(), " ")
		exp, err := topogen.Topology(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cli, err := topogen.Written(p.Args())
		if err != nil {
			t.Fatalf("ibsm topo %s: %v", name, err)
		}
		if exp.Hash() != cli.Hash() {
			t.Errorf("ibsm topo %s: hash %x, the experiment's instance %x", name, cli.Hash(), exp.Hash())
		}
		p.Seed++
		other, err := topogen.Topology(p)
		if err != nil {
			t.Fatal(err)
		}
		if other.Hash() == exp.Hash() {
			t.Errorf("%s: the next seed gave the same fabric; the seed does not pick the instance", name)
		}
	}
}
