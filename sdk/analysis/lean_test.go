package analysis_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestVerdictOnlyMatchesFull: the verdict-only report is the full
// report without its metrics, on intact tables (where one-VL plans
// without LMC take the lean path for every chunk), on damaged ones (bad
// ports, holes, links down), on tables with a forwarding loop made of
// valid entries (which the lean path sees only as a cycle in the graph,
// and hands back), on a ring whose routes have a credit loop, with VL
// plans that put every LID on one VL, on several, on VL15 or beyond the
// links' VLCap, and with LMC.
func TestVerdictOnlyMatchesFull(t *testing.T) {
	fabs := testFabrics()
	seeds := 24
	if testing.Short() {
		seeds = 8
	}
	leanSeen := 0
	for _, fb := range fabs {
		for seed := range seeds {
			rng := rand.New(rand.NewPCG(uint64(seed), 29))
			lmc := uint8(0)
			if seed%6 == 5 {
				lmc = 1
			}
			rule := plan.DLIDRule(rng.IntN(2))
			// 0 intact, 1 broken entries, 2 a loop of valid entries, 3
			// one entry to port 0 of a switch that does not own the LID,
			// 4 one entry delivering to a CA that does not own it.
			damage := seed % 5
			t.Run(fmt.Sprintf("%s/seed %d lmc %d rule %d damage %d", fb.name, seed, lmc, rule, damage), func(t *testing.T) {
				topo, err := fb.topo()
				if err != nil {
					t.Fatal(err)
				}
				r, err := analysistest.Realize(topo, fb.route(topo), lmc, rule)
				if err != nil {
					t.Fatal(err)
				}
				switch damage {
				case 1:
					damageTables(rng, r)
				case 2:
					if !loopTables(rng, r) {
						t.Fatal("no switch link to make a loop on")
					}
				case 3, 4:
					if !misdeliver(rng, r, damage == 3) {
						t.Fatal("no entry to misdeliver")
					}
				}
				var v *plan.VLPlan
				oneVL := true
				switch rng.IntN(5) {
				case 1:
					v = plan.OneVL()
				case 2:
					// Every SL on VL 2 (beyond VLCap 1 on some fabrics).
					v = &plan.VLPlan{SLByDLID: make([]uint8, int(r.TopLID)+1), VLs: 3}
					for i := range v.SLByDLID {
						v.SLByDLID[i] = uint8(rng.IntN(16))
					}
					for sl := range v.Default {
						v.Default[sl] = 2
					}
				case 3:
					v = &plan.VLPlan{SLByDLID: make([]uint8, int(r.TopLID)+1), VLs: 4}
					for i := range v.SLByDLID {
						v.SLByDLID[i] = uint8(rng.IntN(4))
					}
					for sl := range v.Default {
						v.Default[sl] = uint8(rng.IntN(4))
					}
					oneVL = false
				case 4:
					v = &plan.VLPlan{VLs: 1}
					v.Default[0] = 15 // every LID dropped
					oneVL = false
				}
				opt := analysis.Options{Samples: 1000, VerdictOnly: true}
				lean, err := analysis.Analyse(r, v, opt)
				if err != nil {
					t.Fatal(err)
				}
				full, err := analysis.Analyse(r, v, analysis.Options{Samples: 1000})
				if err != nil {
					t.Fatal(err)
				}
				if !full.VerdictOnly && len(full.Hops) == 0 && full.CAPairs.Reachable > 0 {
					t.Fatal("the full report has no hops")
				}
				full.Hops, full.MaxHops, full.AvgHops, full.Load, full.VerdictOnly = nil, 0, 0, analysis.LoadStats{}, true
				if !reflect.DeepEqual(lean, full) {
					t.Fatalf("verdict only:\n%+v\nfull:\n%+v", lean, full)
				}
				one, err := analysis.Analyse(r, v, analysis.Options{Samples: 1000, VerdictOnly: true, Workers: 1})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(lean, one) {
					t.Fatalf("verdict only depends on worker count:\n%+v\none worker:\n%+v", lean, one)
				}
				n, chunks, err := analysis.LeanChunks(r, v, opt)
				if err != nil {
					t.Fatal(err)
				}
				if damage == 0 && lmc == 0 && oneVL && n != chunks {
					t.Fatalf("intact one-VL tables: %d of %d chunks on the lean path", n, chunks)
				}
				if damage == 2 && !lean.OK() && lean.LoopLIDs == 0 && !fb.cyclic {
					t.Fatalf("a loop of valid entries not reported as a loop: %+v", lean)
				}
				if n > 0 {
					leanSeen++
				}
			})
		}
	}
	if leanSeen == 0 {
		t.Fatal("no case took the lean path")
	}
}

// loopTables makes one LID loop between two switches joined by an up
// link: each forwards it to the other, both entries valid ports.
func loopTables(rng *rand.Rand, r *plan.Realized) bool {
	t := r.Topo
	sws := t.Switches()
	for range 100 {
		s := rng.IntN(len(sws))
		n := &t.Nodes[sws[s]]
		p := 1 + rng.IntN(len(n.Ports)-1)
		ref := topology.PortRef{Node: sws[s], Port: uint8(p)}
		peer := n.Ports[p].Peer
		if !peer.Connected() || !t.IsLinkUp(ref) || t.SwitchIndex(peer.Node) < 0 {
			continue
		}
		for range 100 {
			lid := 1 + rng.IntN(int(r.TopLID))
			if r.LIDOwner[lid] == 0 {
				continue
			}
			r.LFT[s][lid] = uint8(p)
			r.LFT[t.SwitchIndex(peer.Node)][lid] = peer.Port
			return true
		}
	}
	return false
}

// misdeliver points one switch's entry for a LID it does not own at its
// port 0 (port0), or at a CA port of a CA that does not own the LID.
func misdeliver(rng *rand.Rand, r *plan.Realized, port0 bool) bool {
	t := r.Topo
	sws := t.Switches()
	eps := t.Endpoints()
	for range 1000 {
		s := rng.IntN(len(sws))
		lid := 1 + rng.IntN(int(r.TopLID))
		o := r.LIDOwner[lid]
		if o == 0 || eps[o-1].Node == sws[s] {
			continue
		}
		if port0 {
			r.LFT[s][lid] = 0
			return true
		}
		n := &t.Nodes[sws[s]]
		for p := 1; p < len(n.Ports); p++ {
			peer := n.Ports[p].Peer
			ref := topology.PortRef{Node: sws[s], Port: uint8(p)}
			if peer.Connected() && t.IsLinkUp(ref) && t.SwitchIndex(peer.Node) < 0 && t.EndpointIndex(peer) != o-1 {
				r.LFT[s][lid] = uint8(p)
				return true
			}
		}
	}
	return false
}

// testFabric is a fabric and its routes for the tests that compare two
// paths of Analyse; cyclic says the routes have a credit loop intact.
type testFabric struct {
	name   string
	topo   func() (*topology.Topology, error)
	route  router
	cyclic bool
}

func testFabrics() []testFabric {
	return []testFabric{
		{"one CA", func() (*topology.Topology, error) { return analysistest.FatTree2(1, 1, 1, 4) }, updown, false},
		{"ring5 minhop", func() (*topology.Topology, error) { return analysistest.Ring(5, 2, 4) }, analysistest.MinHop, true},
		{"fat tree updown", func() (*topology.Topology, error) { return analysistest.FatTree2(3, 2, 2, 4) }, updownSpine, false},
		{"ft3-4 minhop", func() (*topology.Topology, error) { return analysistest.FatTree3(4, 4) }, analysistest.MinHop, true},
		{"torus 3x3 updown", func() (*topology.Topology, error) { return analysistest.Torus2D(3, 3, 1, 4) }, updown, false},
		{"ft3-8 updown vlcap 1", func() (*topology.Topology, error) { return analysistest.FatTree3(8, 1) }, updown, false},
		{"ft3-8 minhop", func() (*topology.Topology, error) { return analysistest.FatTree3(8, 4) }, analysistest.MinHop, true},
	}
}
