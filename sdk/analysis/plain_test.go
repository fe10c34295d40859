package analysis_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestPlainMatchesGeneral: LIDs whose sources share one SL and one VL take
// a single pass over their tree; on intact and on damaged tables (holes,
// bad ports, loops, links down), with LMC and spread DLIDs and with VL
// plans of one table (VL15 included), its report is the general path's
// and its dependency graph the exact one. Plans with per-source SL
// overrides on some DLIDs mix both paths in one chunk of LIDs; ft3-8
// (208 LIDs) spreads over several chunks and workers. Pairs, hops and
// loads also match a brute-force walk of every pair, and the report does
// not depend on the number of workers.
func TestPlainMatchesGeneral(t *testing.T) {
	fabs := testFabrics()
	seeds := 16
	if testing.Short() {
		seeds = 6
	}
	for _, fb := range fabs {
		for seed := range seeds {
			rng := rand.New(rand.NewPCG(uint64(seed), 11))
			lmc := uint8(rng.IntN(2))
			rule := plan.DLIDRule(rng.IntN(2))
			damage := seed%2 == 1
			t.Run(fmt.Sprintf("%s/seed %d lmc %d rule %d damaged %v", fb.name, seed, lmc, rule, damage), func(t *testing.T) {
				topo, err := fb.topo()
				if err != nil {
					t.Fatal(err)
				}
				r, err := analysistest.Realize(topo, fb.route(topo), lmc, rule)
				if err != nil {
					t.Fatal(err)
				}
				if damage {
					damageTables(rng, r)
				}
				var v *plan.VLPlan
				switch rng.IntN(4) {
				case 1:
					v = &plan.VLPlan{SLByDLID: make([]uint8, int(r.TopLID)+1), VLs: 4}
					for i := range v.SLByDLID {
						v.SLByDLID[i] = uint8(rng.IntN(4))
					}
					for sl := range v.Default {
						v.Default[sl] = uint8(rng.IntN(4))
					}
					if rng.IntN(2) == 0 {
						v.Default[rng.IntN(4)] = 15 // an SL that drops
					}
				case 2:
					v = &plan.VLPlan{VLs: 1}
				case 3:
					// One SL override toward every seventh DLID: those
					// LIDs take the general path, their neighbours not.
					v = &plan.VLPlan{VLs: 2}
					v.Default[1] = 1
					for lid := 1; lid <= int(r.TopLID); lid += 7 {
						src := int32(rng.IntN(len(topo.Endpoints())))
						v.Overrides = append(v.Overrides, plan.SLOverride{Src: src, DLID: uint16(lid), SL: 1})
					}
				}
				opt := analysis.Options{Samples: 1000}
				plain, err := analysis.Analyse(r, v, opt)
				if err != nil {
					t.Fatal(err)
				}
				general, err := analysis.Analyse(r, v, analysis.General(opt))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(plain, general) {
					t.Fatalf("plain path:\n%+v\ngeneral path:\n%+v", plain, general)
				}
				checkExact(t, r, plain, exactDeps(r, v, false))
				one, err := analysis.Analyse(r, v, analysis.Options{Samples: 1000, Workers: 1})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(plain, one) {
					t.Fatalf("report depends on worker count:\n%+v\none worker:\n%+v", plain, one)
				}
				want := bruteForce(r)
				if plain.CAPairs != want.ca || plain.SwitchPairs != want.sw || !reflect.DeepEqual(trim(plain.Hops), trim(want.hops)) ||
					plain.Load.Max != want.maxLoad || plain.Load.MaxSwitchLink != want.maxSwLoad {
					t.Fatalf("pairs CA %+v SW %+v hops %v load %d/%d, brute force CA %+v SW %+v hops %v load %d/%d",
						plain.CAPairs, plain.SwitchPairs, plain.Hops, plain.Load.Max, plain.Load.MaxSwitchLink,
						want.ca, want.sw, want.hops, want.maxLoad, want.maxSwLoad)
				}
			})
		}
	}
}

// damageTables breaks a few LFT entries (no route, port 0, a port beyond
// the switch, a random port) and takes one switch link down.
func damageTables(rng *rand.Rand, r *plan.Realized) {
	for range 1 + len(r.LFT)*int(r.TopLID)/20 {
		row := r.LFT[rng.IntN(len(r.LFT))]
		lid := 1 + rng.IntN(int(r.TopLID))
		switch rng.IntN(4) {
		case 0:
			row[lid] = plan.NoPort
		case 1:
			row[lid] = 0
		case 2:
			row[lid] = 200
		default:
			row[lid] = uint8(1 + rng.IntN(4))
		}
	}
	t := r.Topo
	s := rng.IntN(len(t.Switches()))
	n := &t.Nodes[t.Switches()[s]]
	for p := 1; p < len(n.Ports); p++ {
		if peer := n.Ports[p].Peer; peer.Connected() && t.SwitchIndex(peer.Node) >= 0 {
			testfab.SetLinkState(t, int32(s), uint8(p), topology.StateDown)
			return
		}
	}
}

// TestHopFailureCodes: every kind of bad LFT entry is named by its own
// code, in the bad-entry samples and in the unreachable pair it breaks,
// and the pairs match a brute-force walk.
func TestHopFailureCodes(t *testing.T) {
	cases := []struct {
		name string
		code string
		// broken breaks the entry of leaf 0 (CAs on ports 1, 2; spines
		// on 3, 4) toward CA 2's LID (CA 2 hangs off leaf 1).
		broken func(t *testing.T, r *plan.Realized, lid uint16)
	}{
		{"no route", analysis.FailNoRoute, func(t *testing.T, r *plan.Realized, lid uint16) { r.LFT[0][lid] = plan.NoPort }},
		{"port 0", analysis.FailPort0, func(t *testing.T, r *plan.Realized, lid uint16) { r.LFT[0][lid] = 0 }},
		{"no such port", analysis.FailNoSuchPort, func(t *testing.T, r *plan.Realized, lid uint16) { r.LFT[0][lid] = 9 }},
		{"wrong CA", analysis.FailWrongPort, func(t *testing.T, r *plan.Realized, lid uint16) { r.LFT[0][lid] = 1 }},
		{"link down", analysis.FailDown, func(t *testing.T, r *plan.Realized, lid uint16) {
			testfab.SetLinkState(r.Topo, 0, 3, topology.StateDown)
			r.LFT[0][lid] = 3
		}},
		{"uncabled port", analysis.FailUnconnected, func(t *testing.T, r *plan.Realized, lid uint16) {
			n := &r.Topo.Nodes[r.Topo.Switches()[0]]
			peer := n.Ports[3].Peer
			n.Ports[3].Peer = topology.PortRef{Node: -1}
			r.Topo.Nodes[peer.Node].Ports[peer.Port].Peer = topology.PortRef{Node: -1}
			r.LFT[0][lid] = 3
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topo, err := analysistest.FatTree2(2, 2, 2, 1)
			r := mustRealize(t, topo, err, analysistest.MinHop, 0, plan.DLIDBase)
			_, lid := lidOf(r, topology.CA, 2)
			c.broken(t, r, lid)
			rep, err := analysis.Analyse(r, nil, analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// A cut cable breaks every entry that uses it, on both ends.
			leaf0 := fmt.Sprintf("0x%016x", r.Topo.Nodes[r.Topo.Switches()[0]].GUID)
			broken := false
			for _, b := range rep.BadSamples {
				broken = broken || b.Switch == leaf0 && b.LID == lid
				if b.Code != c.code {
					t.Errorf("bad entry %+v, want code %s", b, c.code)
				}
			}
			if c.code != analysis.FailNoRoute && !broken {
				t.Errorf("bad entries %+v, want %s for LID %d", rep.BadSamples, c.code, lid)
			}
			if len(rep.Unreachable) == 0 || rep.Unreachable[0].Code != c.code {
				t.Errorf("unreachable %+v, want code %s", rep.Unreachable, c.code)
			}
			if want := bruteForce(r); rep.CAPairs != want.ca || rep.SwitchPairs != want.sw {
				t.Errorf("pairs CA %+v SW %+v, brute force CA %+v SW %+v", rep.CAPairs, rep.SwitchPairs, want.ca, want.sw)
			}
		})
	}
}
