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
// paper argues that this keeps the channel dependency graph acyclic.
//
// On degraded trees no single leaf may be reachable on up*/down* paths from
// every switch (a top switch that lost its cable into the root's pod), and
// then nobody reaches that switch through the root either. Route then adds
// further subtree roots, tried in order only by the switches the earlier
// ones cannot serve (see combiner.addRoots). The paper's proof does not
// cover several subtrees, so before adding any this package does not rely
// on an argument: it builds the CDG of all planes, switch traffic included,
// and on a cycle backs off the extra roots' routes first and withdraws
// first-root routes only if a cycle remains (reporting the pairs). Routes
// through one root are left to the paper's argument unless Options.CDG asks
// for the check; the host verifies every plan's CDG either way.
package sftree

import (
	"context"
	"fmt"
	"time"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
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
	// Root forces the first subtree root (a switch node GUID); 0 selects
	// it by Algorithm 1. Where the forced root leaves switch pairs without
	// a route (its pod lost a cable to a top switch) and Algorithm 1's
	// root routes more of them, Algorithm 1's is used and the report says
	// so (ConfiguredRootReplaced).
	Root uint64
	// MaxRoots bounds the subtree roots: 1 is the paper's single root,
	// more lets degraded trees add roots for the pairs the first cannot
	// route; 0 means DefaultMaxRoots. Extra roots are only added with the
	// CDG built (CDG not CDGNever): their deadlock-freedom rests on it.
	MaxRoots int
	// CDG says when the channel dependency graph of the combined planes is
	// built and checked.
	CDG CDGCheck
}

// CDGCheck says when Route checks the channel dependency graph.
type CDGCheck int

const (
	// CDGWhenNeeded checks it when the first root leaves switch pairs
	// unrouted, before extra roots are tried (their deadlock-freedom rests
	// on the check). Routes through one root are the paper's case: all
	// down-to-up turns on one tree converging on one leaf; the host's
	// verifier checks every plan's dependency graph in any case.
	CDGWhenNeeded CDGCheck = iota
	// CDGAlways checks it also where the paper's argument covers the
	// routes, withdrawing switch routes that close a credit loop.
	CDGAlways
	// CDGNever skips it and with it the extra roots. Only for
	// measurements.
	CDGNever
)

// Report says what Route did and what it could not do.
type Report struct {
	// Root is the first subtree root's GUID, RootHow why it was chosen;
	// Roots all roots in the order they are tried (Root first).
	Root    uint64
	RootHow string
	Roots   []uint64
	// ConfiguredRootReplaced is set when Options.Root left pairs
	// unroutable and Algorithm 1's root routed more of them.
	ConfiguredRootReplaced bool
	// Pairs counts ordered (source switch, destination switch) pairs,
	// s != d, among ranked switches.
	Pairs int64
	// UpDown pairs route on a plain up*/down* path, ViaSubtree through the
	// first root's subtree (a U-turn), ViaSibling through its sibling,
	// ViaExtraRoots through the subtree of a root added for a degraded tree.
	UpDown, ViaSubtree, ViaSibling, ViaExtraRoots int64
	// Unreachable pairs have no route; Withdrawn of them had a route
	// through the first root, taken back because it closed a credit loop.
	// BackedOff counts routes through candidate extra roots taken back for
	// the same reason (a pair may then be routed by a later root).
	Unreachable, Withdrawn, BackedOff int64
	// Examples names a few unreachable pairs.
	Examples []string
	// CDGChecked is whether the combined CDG was checked; CDGEdges its size.
	CDGChecked bool
	CDGEdges   int
	// Timings of the phases.
	UpDownTime, CombineTime, VerifyTime, ExtendTime time.Duration
	// kept is the routing's combiner, for RouteFatTree's State (which
	// clears it).
	kept *combiner
}

// Reachability is the share of switch pairs with a route, in percent.
func (r *Report) Reachability() float64 {
	if r.Pairs == 0 {
		return 100
	}
	return 100 * float64(r.Pairs-r.Unreachable) / float64(r.Pairs)
}

const maxExamples = 5

// DefaultMaxRoots is MaxRoots when unset: on the degraded trees measured (up
// to 5% of cables removed) two or three roots route every pair.
const DefaultMaxRoots = 8

// maxRootsLimit bounds MaxRoots: each root costs a plane of memory and a
// round of candidate checks.
const maxRootsLimit = 64

// Route returns base with every switch destination's planes replaced by one
// sFtree plane. base must be planes-form routes for g's topology (the
// fat-tree engine's answer); its CA planes are shared, not copied.
func Route(ctx context.Context, g *route.Graph, tree Tree, base *plan.Routes, opt Options) (*plan.Routes, *Report, error) {
	out, rep, c, err := route1(ctx, g, tree, base, opt)
	if rep != nil {
		rep.kept = c
	}
	return out, rep, err
}

// route1 is Route returning the combiner of the routes it chose.
func route1(ctx context.Context, g *route.Graph, tree Tree, base *plan.Routes, opt Options) (*plan.Routes, *Report, *combiner, error) {
	t := g.Topo
	eps := t.Endpoints()
	if base == nil || !base.IsPlanes() || len(base.Planes) != len(eps) {
		return nil, nil, nil, fmt.Errorf("sftree: the fat-tree routes must be planes for all %d endpoints", len(eps))
	}
	ud, err := newUpDown(g, tree)
	if err != nil {
		return nil, nil, nil, err
	}
	maxRoots := opt.MaxRoots
	if maxRoots == 0 {
		maxRoots = DefaultMaxRoots
	}
	if maxRoots < 1 || maxRoots > maxRootsLimit {
		return nil, nil, nil, fmt.Errorf("sftree: %d subtree roots: give 1 (the paper's single root) to %d", maxRoots, maxRootsLimit)
	}
	out, rep, c, err := routeFrom(ctx, g, tree, base, ud, opt.Root, maxRoots, opt.CDG)
	if err != nil || opt.Root == 0 || rep.Unreachable == 0 || opt.CDG == CDGNever {
		return out, rep, c, err
	}
	// A configured root whose pod lost a cable to a top switch reaches that
	// switch on no up*/down* path, and the extra roots cannot always route
	// the rest without a credit loop. Leaving the pairs dark would make the
	// host refuse every plan and keep routes through the dead cable, so
	// Algorithm 1 gets to choose, and the report says why.
	alt, altRep, altC, err := routeFrom(ctx, g, tree, base, ud, 0, maxRoots, opt.CDG)
	if err != nil || altRep.Unreachable >= rep.Unreachable {
		return out, rep, c, nil
	}
	altRep.RootHow = fmt.Sprintf("configured subtree_root 0x%016x left %d switch pairs without a deadlock-free route; instead %s", opt.Root, rep.Unreachable, altRep.RootHow)
	altRep.ConfiguredRootReplaced = true
	return alt, altRep, altC, nil
}

// routeFrom is one sFtree routing with the first root forced (a GUID) or,
// for 0, chosen by Algorithm 1.
func routeFrom(ctx context.Context, g *route.Graph, tree Tree, base *plan.Routes, ud *upDown, forced uint64, maxRoots int, check CDGCheck) (*plan.Routes, *Report, *combiner, error) {
	t := g.Topo
	eps := t.Endpoints()
	rep := &Report{}
	start := time.Now()
	rows, err := ud.planes(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	rep.UpDownTime = time.Since(start)

	root, how, err := chooseRoot(g, tree, rows, forced)
	if err != nil {
		return nil, nil, nil, err
	}
	rep.RootHow = how

	start = time.Now()
	c := newCombiner(g, ud, rows, root)
	if err := c.combineAll(ctx); err != nil {
		return nil, nil, nil, err
	}
	rep.CombineTime = time.Since(start)

	out := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	copy(out.Planes, base.Planes)
	sws := t.Switches()
	for d := range rows {
		e := t.EndpointIndex(topology.PortRef{Node: sws[d], Port: 0})
		out.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{rows[d]}}
	}

	if check == CDGAlways || (check == CDGWhenNeeded && maxRoots > 1 && c.unrouted()) {
		start = time.Now()
		if err := c.verify(ctx, out, rep); err != nil {
			return nil, nil, nil, err
		}
		rep.VerifyTime = time.Since(start)
		rep.CDGChecked = true
		start = time.Now()
		if err := c.extend(ctx, tree, maxRoots, rep); err != nil {
			return nil, nil, nil, err
		}
		rep.ExtendTime = time.Since(start)
		rep.CDGEdges = c.dg.Edges()
	}
	c.count(rep)
	return out, rep, c, nil
}
