package check_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestMetricsDoNotChangeVerdicts: the check without metrics (the host's,
// on the verdict-only path for one-VL plans) gives every plan the
// verdict, the error text and the warnings it gives with them, on
// randomly broken one-VL plans: holes, bad ports, port 0 of a switch
// that does not own the LID, a CA that does not own it, loops of valid
// entries, links down, credit loops, under both switch->switch policies.
func TestMetricsDoNotChangeVerdicts(t *testing.T) {
	fabs := []struct {
		name  string
		build func() (*topology.Topology, error)
		route func(*topology.Topology) *plan.Routes
	}{
		{"ft3-4 updown", func() (*topology.Topology, error) { return analysistest.FatTree3(4, 1) }, func(t *topology.Topology) *plan.Routes { return analysistest.UpDown(t, 0) }},
		{"ft3-8 updown", func() (*topology.Topology, error) { return analysistest.FatTree3(8, 1) }, func(t *topology.Topology) *plan.Routes { return analysistest.UpDown(t, 0) }},
		{"ring6 minhop", func() (*topology.Topology, error) { return analysistest.Ring(6, 1, 1) }, analysistest.MinHop},
		{"torus 3x3 updown", func() (*topology.Topology, error) { return analysistest.Torus2D(3, 3, 1, 1) }, func(t *topology.Topology) *plan.Routes { return analysistest.UpDown(t, 0) }},
	}
	rejected, accepted := 0, 0
	for _, fb := range fabs {
		for seed := range 40 {
			for _, pol := range []check.SwitchPolicy{check.SwitchRequired, check.SwitchBestEffort} {
				t.Run(fmt.Sprintf("%s/seed %d/%s", fb.name, seed, pol), func(t *testing.T) {
					topo, err := fb.build()
					if err != nil {
						t.Fatal(err)
					}
					r, err := analysistest.Realize(topo, fb.route(topo), 0, plan.DLIDBase)
					if err != nil {
						t.Fatal(err)
					}
					breakPlan(rand.New(rand.NewPCG(uint64(seed), 8)), r, seed%8)
					p := check.Plan{Topo: topo, LIDs: r.LIDs, VLs: plan.OneVL(), Realized: r}
					lean, leanErr := check.Check(p, check.Options{SwitchToSwitch: pol})
					full, fullErr := check.Check(p, check.Options{SwitchToSwitch: pol, Metrics: true})
					if fmt.Sprint(leanErr) != fmt.Sprint(fullErr) {
						t.Fatalf("without metrics: %v\nwith: %v", leanErr, fullErr)
					}
					if (lean == nil) != (full == nil) || lean != nil && fmt.Sprint(lean.Warnings, lean.SwitchUnreachable, lean.SwitchSamples) != fmt.Sprint(full.Warnings, full.SwitchUnreachable, full.SwitchSamples) {
						t.Fatalf("without metrics: %+v\nwith: %+v", lean, full)
					}
					if lean != nil && !lean.Report.VerdictOnly {
						t.Fatal("the report without metrics says it has them")
					}
					if leanErr != nil {
						rejected++
					} else {
						accepted++
					}
				})
			}
		}
	}
	if rejected == 0 || accepted == 0 {
		t.Fatalf("%d plans rejected, %d accepted: the cases do not cover both", rejected, accepted)
	}
}

// breakPlan damages r in one of eight ways (0: none).
func breakPlan(rng *rand.Rand, r *plan.Realized, how int) {
	t := r.Topo
	sws := t.Switches()
	eps := t.Endpoints()
	owned := func() (int, int) { // a switch and a LID it does not own
		for {
			s, lid := rng.IntN(len(sws)), 1+rng.IntN(int(r.TopLID))
			if o := r.LIDOwner[lid]; o != 0 && eps[o-1].Node != sws[s] {
				return s, lid
			}
		}
	}
	switchLink := func() (int, uint8, int, uint8) {
		for {
			s := rng.IntN(len(sws))
			n := &t.Nodes[sws[s]]
			p := 1 + rng.IntN(len(n.Ports)-1)
			peer := n.Ports[p].Peer
			if peer.Connected() && t.IsLinkUp(topology.PortRef{Node: sws[s], Port: uint8(p)}) && t.SwitchIndex(peer.Node) >= 0 {
				return s, uint8(p), int(t.SwitchIndex(peer.Node)), peer.Port
			}
		}
	}
	switch how {
	case 1: // a hole
		s, lid := owned()
		r.LFT[s][lid] = plan.NoPort
	case 2: // port 0 of a switch that does not own the LID
		s, lid := owned()
		r.LFT[s][lid] = 0
	case 3: // a port the switch lacks
		s, lid := owned()
		r.LFT[s][lid] = 250
	case 4: // a loop of valid entries
		s, p, u, q := switchLink()
		_, lid := owned()
		r.LFT[s][lid], r.LFT[u][lid] = p, q
	case 5: // a random port, maybe a CA that does not own the LID
		s, lid := owned()
		r.LFT[s][lid] = uint8(1 + rng.IntN(len(t.Nodes[sws[s]].Ports)-1))
	case 6: // a switch link down under the routes
		s, p, _, _ := switchLink()
		testfab.SetLinkState(t, int32(s), p, topology.StateDown)
	case 7: // entries of many LIDs sent over one switch link: maybe a credit loop
		s, p, _, _ := switchLink()
		for range 1 + int(r.TopLID)/4 {
			r.LFT[s][1+rng.IntN(int(r.TopLID))] = p
		}
	}
}
