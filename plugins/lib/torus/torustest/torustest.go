// Package torustest builds the tori and meshes the torus plugins' tests
// route, with faults cut in (the grids of 'ibsm topo torus', drawn by
// sdk/testfab/gen). Only tests import it.
package torustest

import (
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/testfab/gen"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Grid is 'ibsm topo torus' (or mesh) with cas CAs per switch.
func Grid(t testing.TB, dims []int, mesh bool, cas int) *topology.Topology {
	t.Helper()
	topo, err := gen.Topology(gen.Torus{Dims: dims, Mesh: mesh, CAsPerSwitch: cas})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// Without rebuilds topo without the switch whose description contains
// desc and the CAs cabled to it, as the SM sees a fabric that lost it.
func Without(t testing.TB, topo *topology.Topology, desc string) *topology.Topology {
	t.Helper()
	gone := map[int32]bool{}
	for i, n := range topo.Nodes {
		if n.Type == topology.Switch && strings.Contains(n.Desc, desc) {
			gone[int32(i)] = true
		}
	}
	if len(gone) != 1 {
		t.Fatalf("Without(%q): %d switches match, want 1", desc, len(gone))
	}
	for i, n := range topo.Nodes {
		for _, p := range n.Ports {
			if n.Type != topology.Switch && p.Peer.Connected() && gone[p.Peer.Node] {
				gone[int32(i)] = true
			}
		}
	}
	b := topology.NewBuilder()
	for i, n := range topo.Nodes {
		if gone[int32(i)] {
			continue
		}
		c := n
		c.Ports = append([]topology.Port(nil), n.Ports...)
		if err := b.AddNode(c); err != nil {
			t.Fatal(err)
		}
		for p, port := range n.Ports {
			if q := port.Peer; q.Connected() && !gone[q.Node] && (q.Node > int32(i) || (q.Node == int32(i) && int(q.Port) > p)) {
				b.Link(n.GUID, uint8(p), topo.Nodes[q.Node].GUID, q.Port)
			}
		}
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CutLink takes down the link at port p of the switch whose description
// contains desc.
func CutLink(t testing.TB, topo *topology.Topology, desc string, p uint8) {
	t.Helper()
	for s, n := range topo.Switches() {
		if strings.Contains(topo.Nodes[n].Desc, desc) {
			testfab.SetLinkState(topo, int32(s), p, topology.StateDown)
			return
		}
	}
	t.Fatalf("CutLink(%q): no such switch", desc)
}

// Verify realises r with sequential LIDs and runs the host's checks on it
// with v; it fails the test on any problem and returns the analysis.
func Verify(t testing.TB, topo *topology.Topology, r *plan.Routes, v func(*plan.Realized) *plan.VLPlan) (*plan.Realized, *plan.VLPlan, *analysis.Report) {
	t.Helper()
	l := testfab.SequentialLIDs(topo, 0)
	real, err := plan.Realize(topo, r, l)
	if err != nil {
		t.Fatal(err)
	}
	var vls *plan.VLPlan
	if v != nil {
		vls = v(real)
	}
	rep, err := check.Verify(check.Plan{Topo: topo, Routes: r, LIDs: l, VLs: vls, Realized: real}, check.Options{SwitchToSwitch: check.SwitchRequired, Metrics: true})
	if err != nil {
		t.Fatalf("the host refuses the plan: %v", err)
	}
	return real, vls, rep
}
