package sftree

import (
	"context"
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
)

// Extra subtree roots for degraded trees.
//
// On a full tree Algorithm 1's root is in every switch's up*/down* reach
// and serves every pair. Once cables fail, some switches (typically top
// switches that lost their cable into the root's pod) reach it on no
// up*/down* path, and nobody reaches them through it. extend then adds
// leaves as further roots: each is tried only by the switches still
// without a route, after the earlier roots (see pass), so the routes that
// exist are never changed, only NoPort entries filled.
//
// The paper's deadlock-freedom proof covers one subtree: all down-to-up
// turns are on one tree converging on one leaf. With roots in several pods,
// U-turns in one pod can feed, through legal up-down segments, the U-turns
// of another and close a credit loop (seen on 5%-degraded 3-level trees:
// three pods chained). So extend does not rely on an argument: because a
// root only adds routes, the channel dependency graph only gains edges, and
// each candidate is checked incrementally against the graph of everything
// accepted so far (CA planes and switch traffic included). Rows whose new
// routes make an illegal turn on a cycle are backed off (their new routes
// only) and the check repeats; a candidate whose routes cannot all be made
// acyclic that way is dropped and the next best leaf is tried. The graph
// thus stays acyclic by construction, and the first root's routes are never
// touched.

// candidatesPerRound is how many leaves, best gain first, are tried before
// extend gives up on the remaining pairs.
const candidatesPerRound = 4

// maxBackOffRounds bounds the back-off-and-recheck rounds per candidate.
const maxBackOffRounds = 8

// extension is one candidate root's routes: per changed row, the switches
// it routed.
type extension struct {
	rows  []int32
	added [][]int32
}

// extend adds roots while pairs stay unrouted, fewer than max roots are in
// use and a leaf routes some of them without closing a credit loop. c.dg
// must hold the acyclic CDG of out's planes.
func (c *combiner) extend(ctx context.Context, tree Tree, max int, rep *Report) error {
	leaves := tree.Leaves()
	sm := smSwitch(c.g.Topo)
	tried := make(map[int32]bool)
	for _, r := range c.roots {
		tried[r] = true
	}
	for len(c.roots) < max {
		dead := c.deadRows()
		if len(dead) == 0 {
			return nil
		}
		gain := make([]int64, len(leaves))
		err := route.ForEach(ctx, len(leaves), func() func(int32) error {
			sc := c.ud.newScratch()
			pl := make(plan.Plane, c.g.N)
			return func(k int32) error {
				if tried[leaves[k]] {
					return nil
				}
				if err := c.ud.row(leaves[k], pl, sc); err != nil {
					return err
				}
				gain[k] = c.gain(leaves[k], pl, dead)
				return nil
			}
		})
		if err != nil {
			return err
		}
		order := make([]int, 0, len(leaves))
		for k := range leaves {
			if gain[k] > 0 {
				order = append(order, k)
			}
		}
		// Most pairs first; leaf order on ties, the SM's leaf last.
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case gain[a] != gain[b]:
				if gain[a] > gain[b] {
					return -1
				}
				return 1
			case (leaves[a] == sm) != (leaves[b] == sm):
				if leaves[a] == sm {
					return 1
				}
				return -1
			}
			return 0
		})
		accepted := false
		for _, k := range order[:min(len(order), candidatesPerRound)] {
			l := leaves[k]
			tried[l] = true
			ok, err := c.try(ctx, l, dead, rep)
			if err != nil {
				return err
			}
			if ok {
				accepted = true
				break
			}
		}
		if !accepted {
			return nil
		}
	}
	return nil
}

// deadRows lists the switch destinations (not withdrawn) that some ranked
// switch has no route to.
func (c *combiner) deadRows() []int32 {
	var out []int32
	for d := int32(0); d < int32(c.g.N); d++ {
		if c.ud.rank[d] >= 0 && !c.pure[d] && c.stats[d].unreachable > 0 {
			out = append(out, d)
		}
	}
	return out
}

// gain counts the unrouted pairs toward dead whose path through leaf l's
// subtree (tree, its up*/down* plane) meets a routed switch, as pass would
// route them.
func (c *combiner) gain(l int32, tree plan.Plane, dead []int32) int64 {
	var n int64
	for _, d := range dead {
		row := c.rows[d]
		rootOK := row[l] != plan.NoPort
		for _, lk := range c.ud.sib[l] {
			rootOK = rootOK || row[lk.Peer] != plan.NoPort
		}
		for _, s := range c.ud.order {
			if s == d || row[s] != plan.NoPort {
				continue
			}
			x := s
			for row[x] == plan.NoPort && x != l && tree[x] != plan.NoPort {
				x = c.g.PeerSwitch(x, tree[x])
			}
			if row[x] != plan.NoPort || (x == l && rootOK) {
				n++
			}
		}
	}
	return n
}

// try adds l as the next root for the dead rows, checks the CDG with the
// new routes and backs off rows on cycles. It keeps l if some of its routes
// survive on an acyclic graph, and reverts everything otherwise.
func (c *combiner) try(ctx context.Context, l int32, dead []int32, rep *Report) (bool, error) {
	sc := c.ud.newScratch()
	tree := make(plan.Plane, c.g.N)
	if err := c.ud.row(l, tree, sc); err != nil {
		return false, err
	}
	c.addRoot(l, tree)
	i := len(c.roots) - 1
	var ext extension
	ps := c.newPassScratch()
	for _, d := range dead {
		c.pass(d, i, ps)
		if len(ps.added) > 0 {
			ext.rows = append(ext.rows, d)
			ext.added = append(ext.added, slices.Clone(ps.added))
		}
	}
	drop := func() {
		for k, d := range ext.rows {
			c.revert(d, ext.added[k])
		}
		c.dropRoot()
	}
	trial := c.dg.Clone()
	for round := 0; len(ext.rows) > 0; round++ {
		if err := ctx.Err(); err != nil {
			drop()
			return false, err
		}
		if round > 0 {
			trial.CopyFrom(c.dg)
		}
		for _, d := range ext.rows {
			if err := trial.AddPlane(c.rows[d]); err != nil {
				drop()
				return false, fmt.Errorf("sftree: %w", err)
			}
		}
		cyc := trial.FindCycle()
		if cyc == nil {
			c.dg = trial
			for k, d := range ext.rows {
				c.stats[d].extra += int64(len(ext.added[k]))
				c.stats[d].unreachable -= int64(len(ext.added[k]))
			}
			return true, nil
		}
		if round == maxBackOffRounds {
			break
		}
		culprits := make(map[int32]bool)
		for _, d := range c.culprits(cyc, ext.rows) {
			culprits[d] = true
		}
		if len(culprits) == 0 {
			break
		}
		keep := ext.rows[:0]
		keepAdded := ext.added[:0]
		for k, d := range ext.rows {
			if culprits[d] {
				rep.BackedOff += int64(len(ext.added[k]))
				c.revert(d, ext.added[k])
				continue
			}
			keep = append(keep, d)
			keepAdded = append(keepAdded, ext.added[k])
		}
		ext.rows, ext.added = keep, keepAdded
	}
	for _, a := range ext.added {
		rep.BackedOff += int64(len(a))
	}
	drop()
	return false, nil
}

// revert takes the routes of the switches added back out of row d.
func (c *combiner) revert(d int32, added []int32) {
	for _, s := range added {
		c.rows[d][s] = plan.NoPort
	}
}
