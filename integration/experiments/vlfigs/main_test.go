package main

import (
	"strings"
	"testing"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestTopoReproducesInstances: the fabric a point's instance routes is the
// one 'ibsm topo' writes for the command line Paper.Args gives, read back
// from the file (same topology hash), and the seed picks the instance (the
// neighbouring seed 8 gives another fabric).
func TestTopoReproducesInstances(t *testing.T) {
	seen := map[uint64]string{}
	for _, p := range []topogen.Paper{paper001(64, 6, 7), paper001(64, 6, 8), paper001(256, 4, 100)} {
		name := "ibsm topo " + strings.Join(p.Args(), " ")
		exp, err := topogen.Topology(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cli, err := topogen.Written(p.Args())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if exp.Hash() != cli.Hash() {
			t.Errorf("%s: hash %x, the experiment's instance %x", name, cli.Hash(), exp.Hash())
		}
		if prev, ok := seen[exp.Hash()]; ok {
			t.Errorf("%s writes the same fabric as %s; the seed does not pick the instance", name, prev)
		}
		seen[exp.Hash()] = name
	}
}

// TestSwitchTables: the layers are counted on switch destinations only
// (LIDs 1..n, each owned by a switch's port 0), every switch routes toward
// every other switch over a switch link, and the CAs' columns are gone.
func TestSwitchTables(t *testing.T) {
	topo, err := topogen.Topology(paper001(64, 6, 7))
	if err != nil {
		t.Fatal(err)
	}
	n := len(topo.Switches())
	if len(topo.Endpoints()) != 2*n {
		t.Fatalf("preset has %d endpoints on %d switches, want one CA per switch", len(topo.Endpoints()), n)
	}
	real, err := switchTables(topo, 7)
	if err != nil {
		t.Fatal(err)
	}
	if int(real.TopLID) != n || len(real.LIDOwner) != n+1 {
		t.Fatalf("TopLID %d, %d owners; want the %d switch LIDs only", real.TopLID, len(real.LIDOwner), n)
	}
	eps := topo.Endpoints()
	sws := topo.Switches()
	toSwitch := func(s int, out uint8) bool {
		return out != plan.NoPort && out != 0 && topo.SwitchIndex(topo.Port(topology.PortRef{Node: sws[s], Port: out}).Peer.Node) >= 0
	}
	for lid := 1; lid <= n; lid++ {
		ep := eps[real.LIDOwner[lid]-1]
		if ep.Port != 0 || topo.SwitchIndex(ep.Node) < 0 {
			t.Fatalf("LID %d is owned by node %d port %d, want a switch's port 0", lid, ep.Node, ep.Port)
		}
		home := topo.SwitchIndex(ep.Node)
		for s, lft := range real.LFT {
			if len(lft) != n+1 {
				t.Fatalf("switch %d has %d table entries, want %d", s, len(lft), n+1)
			}
			out := lft[lid]
			switch {
			case int32(s) == home && out != 0:
				t.Fatalf("switch %d delivers its own LID %d on port %d, want 0", s, lid, out)
			case int32(s) != home && !toSwitch(s, out):
				t.Fatalf("switch %d routes LID %d to port %d, want a switch link", s, lid, out)
			}
		}
	}
}
