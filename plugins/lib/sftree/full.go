package sftree

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Result is one full sFtree routing of a fabric.
type Result struct {
	Routes *plan.Routes
	// Tree is the recognised fat tree, CAs what ftree left unrouted toward
	// CA destinations, Switches sFtree's report on switch destinations.
	Tree     *ftree.Tree
	CAs      *ftree.Report
	Switches *Report
	// State is what Reroute needs to repair these routes after a change.
	State *State
}

// RouteFatTree is the whole engine: the fat tree recognised and its CA
// destinations routed as the ftree engine does (2^lmc planes each), the
// switch destinations by Route, and the State kept for Reroute.
func RouteFatTree(ctx context.Context, topo *topology.Topology, lmc uint8, cfg ftree.Config, opt Options) (*Result, error) {
	if lmc > 7 {
		return nil, fmt.Errorf("sftree: LMC %d out of range 0..7", lmc)
	}
	t, err := ftree.Build(topo, cfg)
	if err != nil {
		return nil, fmt.Errorf("sftree: %w", err)
	}
	r, err := ftree.NewRouter(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("sftree: %w", err)
	}
	base := ftree.NewRoutes(t, 1<<lmc)
	cas, err := r.RouteCAs(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("sftree: %w", err)
	}
	g := t.Graph
	tree := FromFtree(t)
	out, rep, err := Route(ctx, g, tree, base, opt)
	if err != nil {
		return nil, err
	}
	c := rep.kept
	rep.kept = nil
	st := &State{g: g, ud: c.ud, tree: tree, routes: out, root: c.roots[0], rootTree: c.trees[0], full: true, lmc: lmc, cfg: cfg, opt: opt}
	switch {
	case len(c.roots) > 1:
		st.why = fmt.Sprintf("%d subtree roots in use (the tree was already degraded); an in-place repair covers one root only", len(c.roots))
	case rep.Unreachable > 0:
		st.why = fmt.Sprintf("%d switch pairs were already unrouted", rep.Unreachable)
	case rep.Withdrawn > 0:
		st.why = fmt.Sprintf("%d switch routes were withdrawn for credit loops", rep.Withdrawn)
	}
	return &Result{Routes: out, Tree: t, CAs: cas, Switches: rep, State: st}, nil
}

// swEndpoint is switch d's port-0 endpoint index.
func swEndpoint(g *route.Graph, d int32) int32 {
	return g.Topo.EndpointIndex(topology.PortRef{Node: g.Topo.Switches()[d], Port: 0})
}
