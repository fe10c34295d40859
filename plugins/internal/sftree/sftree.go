// Package sftree adds deadlock-free switch-to-switch routes to a fat-tree
// routing (Bogdanski et al., "sFtree", ACM TACO 8(4), 2012). CA
// destinations keep the planes of the underlying fat-tree engine untouched;
// every switch port-0 destination gets one plane in which
//
//   - a switch with an up*/down* path to the destination (climb toward rank
//     0, then descend) uses it, like the fat-tree routing would;
//   - every other switch forwards toward one chosen leaf, the subtree root
//     (the paper's Algorithm 1), and the packet descends toward it until it
//     meets the first switch that has an up*/down* path to the destination,
//     where it turns up again (Algorithm 2). Where the root itself has no
//     such path, a horizontally cabled sibling of the root that has one is
//     used (the multi-core case of Algorithm 2).
//
// Every down-to-up turn thus happens on the root's own forwarding tree. The
// paper argues that this keeps the channel dependency graph acyclic; this
// package does not rely on the argument alone: it builds the CDG of all
// planes, switch traffic included, and withdraws subtree routes that close a
// cycle (reporting the pairs), so the result never depends on an unchecked
// proof on degraded trees.
package sftree

import (
	"context"
	"fmt"
	"time"

	"github.com/ibsm/ibsm/plugins/internal/route"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Tree is what sftree needs from a recognised fat tree. Switch indices are
// topology switch indices (positions in Topology.Switches()).
type Tree interface {
	// Rank is the switch's level: 0 for the top (root) switches, growing
	// toward the leaves; negative for a switch outside the tree, which
	// then takes part in no route.
	Rank(s int32) int
	// Leaves lists the leaf switches in the order Algorithm 1 scans them.
	Leaves() []int32
}

// Options tune Route.
type Options struct {
	// Root forces the subtree root (a switch node GUID); 0 selects it by
	// Algorithm 1.
	Root uint64
	// SkipVerify skips the CDG check of the combined planes. Only for
	// measurements: without it nothing backs the deadlock-freedom claim on
	// irregular trees.
	SkipVerify bool
}

// Report says what Route did and what it could not do.
type Report struct {
	// Root is the subtree root's GUID, RootHow why it was chosen.
	Root    uint64
	RootHow string
	// Pairs counts ordered (source switch, destination switch) pairs,
	// s != d, among ranked switches.
	Pairs int64
	// UpDown pairs route on a plain up*/down* path, ViaSubtree through the
	// subtree (a U-turn), ViaSibling through the root's sibling.
	UpDown, ViaSubtree, ViaSibling int64
	// Unreachable pairs have no route; Withdrawn of them had a subtree route
	// that was taken back because it closed a credit loop.
	Unreachable, Withdrawn int64
	// Examples names a few unreachable pairs.
	Examples []string
	// CDGChecked is whether the combined CDG was checked; CDGEdges its size.
	CDGChecked bool
	CDGEdges   int
	// Timings of the phases.
	UpDownTime, CombineTime, VerifyTime time.Duration
}

// Reachability is the share of switch pairs with a route, in percent.
func (r *Report) Reachability() float64 {
	if r.Pairs == 0 {
		return 100
	}
	return 100 * float64(r.Pairs-r.Unreachable) / float64(r.Pairs)
}

const maxExamples = 5

// Route returns base with every switch destination's planes replaced by one
// sFtree plane. base must be planes-form routes for g's topology (the
// fat-tree engine's answer); its CA planes are shared, not copied.
func Route(ctx context.Context, g *route.Graph, tree Tree, base *plan.Routes, opt Options) (*plan.Routes, *Report, error) {
	t := g.Topo
	eps := t.Endpoints()
	if base == nil || !base.IsPlanes() || len(base.Planes) != len(eps) {
		return nil, nil, fmt.Errorf("sftree: the fat-tree routes must be planes for all %d endpoints", len(eps))
	}
	rep := &Report{}
	ud, err := newUpDown(g, tree)
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	rows, err := ud.planes(ctx)
	if err != nil {
		return nil, nil, err
	}
	rep.UpDownTime = time.Since(start)

	root, how, err := chooseRoot(g, tree, rows, opt.Root)
	if err != nil {
		return nil, nil, err
	}
	rep.Root, rep.RootHow = g.SwitchGUID(root), how

	start = time.Now()
	c := &combiner{g: g, ud: ud, root: root, rows: rows, pure: make([]bool, g.N)}
	c.siblings()
	if err := c.combineAll(ctx); err != nil {
		return nil, nil, err
	}
	rep.CombineTime = time.Since(start)

	out := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	copy(out.Planes, base.Planes)
	sws := t.Switches()
	for d := range rows {
		e := t.EndpointIndex(topology.PortRef{Node: sws[d], Port: 0})
		out.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{rows[d]}}
	}

	if !opt.SkipVerify {
		start = time.Now()
		if err := c.verify(ctx, out, rep); err != nil {
			return nil, nil, err
		}
		rep.VerifyTime = time.Since(start)
		rep.CDGChecked = true
	}
	c.count(rep)
	return out, rep, nil
}
