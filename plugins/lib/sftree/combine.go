package sftree

import (
	"context"
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// chooseRoot is Algorithm 1: the first leaf, in the tree's leaf order, that
// reaches every switch on an up*/down* path, skipping the leaf the SM hangs
// off so that switch traffic does not converge on the SM's link (the
// paper's Section 4.2 refinement). Up*/down* reachability is symmetric (a
// reversed up*/down* path is one), so "the leaf reaches every switch" is
// read off the leaf's own plane: every switch reaches it. Where no leaf
// reaches all, the one reaching most is the best effort; the switches it
// misses are left to extra roots (see addRoots).
func chooseRoot(g *route.Graph, tree Tree, rows []plan.Plane, forced uint64) (int32, string, error) {
	ranked := func(s int32) bool { return tree.Rank(s) >= 0 }
	if forced != 0 {
		n := g.Topo.NodeByGUID(forced)
		if n == topology.NoNode || g.Topo.SwitchIndex(n) < 0 {
			return 0, "", fmt.Errorf("sftree: subtree root 0x%016x is not a switch in the fabric; fix subtree_root or leave it unset", forced)
		}
		s := g.Topo.SwitchIndex(n)
		if !ranked(s) {
			return 0, "", fmt.Errorf("sftree: subtree root 0x%016x is not part of the recognised fat tree", forced)
		}
		return s, "configured", nil
	}
	leaves := tree.Leaves()
	if len(leaves) == 0 {
		return 0, "", fmt.Errorf("sftree: the fat tree has no leaf switches")
	}
	sm := smSwitch(g.Topo)
	total := 0
	for s := int32(0); s < int32(g.N); s++ {
		if ranked(s) {
			total++
		}
	}
	best, bestCov, smFull := int32(-1), -1, false
	for _, l := range leaves {
		cov := 0
		for s, p := range rows[l] {
			if p != plan.NoPort && ranked(int32(s)) {
				cov++
			}
		}
		if cov == total {
			if l != sm {
				return l, "first leaf reaching every switch (Algorithm 1), not the SM's leaf", nil
			}
			smFull = true
		}
		if cov > bestCov || (cov == bestCov && best == sm) {
			best, bestCov = l, cov
		}
	}
	if smFull {
		return sm, "the SM's own leaf: the only leaf reaching every switch", nil
	}
	return best, fmt.Sprintf("best effort: no leaf reaches every switch; this one reaches %d of %d", bestCov, total), nil
}

// smSwitch is the switch the SM's port is on or cabled to, -1 if unknown.
func smSwitch(t *topology.Topology) int32 {
	sm := t.SM
	if !sm.Connected() || int(sm.Node) >= len(t.Nodes) {
		return -1
	}
	if s := t.SwitchIndex(sm.Node); s >= 0 {
		return s
	}
	if int(sm.Port) >= len(t.Nodes[sm.Node].Ports) || !t.IsLinkUp(sm) {
		return -1
	}
	return t.SwitchIndex(t.Port(sm).Peer.Node)
}

// combiner turns up*/down* rows into sFtree rows in place (Algorithm 2,
// generalised to an ordered list of subtree roots).
type combiner struct {
	g    *route.Graph
	ud   *upDown
	rows []plan.Plane
	// roots[0] is Algorithm 1's root, the rest were added by extend in the
	// order they are tried.
	roots []int32
	// trees[i] is the up*/down* plane toward roots[i]: its subtree.
	trees []plan.Plane
	// sibs[i] are roots[i]'s horizontal links.
	sibs [][]route.Link
	// walks[i] is trees[i] as pass reads it.
	walks []treeWalk
	// pure marks rows withdrawn to up*/down* only.
	pure []bool
	// viaSib marks rows whose first root forwards to a sibling.
	viaSib []bool
	// withdrawn counts, per row, first-root pairs taken back.
	withdrawn []int64
	// stats counts, per row, the source switches by how they route.
	stats []rowStats
	// dg is the acyclic CDG of all planes once verify passed.
	dg *cdg.Graph
}

// rowStats classifies the ranked source switches s != d of one row.
type rowStats struct {
	upDown, subtree, extra, unreachable int64
}

func newCombiner(g *route.Graph, ud *upDown, rows []plan.Plane, root int32) *combiner {
	c := &combiner{g: g, ud: ud, rows: rows, pure: make([]bool, g.N), viaSib: make([]bool, g.N),
		withdrawn: make([]int64, g.N), stats: make([]rowStats, g.N)}
	c.addRoot(root, append(plan.Plane(nil), rows[root]...))
	return c
}

// treeWalk is a subtree root's plane as pass follows it: next[x] is the
// switch x forwards to (-1: x has no entry, or is the root), and order
// lists the switches with a next after the one they forward to.
type treeWalk struct {
	next  []int32
	order []int32
}

// addRoot appends root r, whose up*/down* plane is tree.
func (c *combiner) addRoot(r int32, tree plan.Plane) {
	n := len(tree)
	w := treeWalk{next: make([]int32, n), order: make([]int32, 0, n)}
	// children of x in the tree: kids[at[x]:at[x+1]], by counting.
	at := make([]int32, n+1)
	for x, p := range tree {
		w.next[x] = -1
		if p != plan.NoPort && p != 0 {
			w.next[x] = c.g.PeerSwitch(int32(x), p)
			at[w.next[x]+1]++
		}
	}
	for x := range n {
		at[x+1] += at[x]
	}
	kids := make([]int32, at[n])
	fill := slices.Clone(at[:n])
	for x, y := range w.next {
		if y >= 0 {
			kids[fill[y]] = int32(x)
			fill[y]++
		}
	}
	w.order = append(w.order, r)
	for h := 0; h < len(w.order); h++ {
		x := w.order[h]
		w.order = append(w.order, kids[at[x]:at[x+1]]...)
	}
	w.order = w.order[1:]
	c.roots = append(c.roots, r)
	c.trees = append(c.trees, tree)
	c.sibs = append(c.sibs, c.ud.sib[r])
	c.walks = append(c.walks, w)
}

// dropRoot takes the last root back out.
func (c *combiner) dropRoot() {
	i := len(c.roots) - 1
	c.roots, c.trees, c.sibs, c.walks = c.roots[:i], c.trees[:i], c.sibs[:i], c.walks[:i]
}

// passScratch is one worker's per-destination working space.
type passScratch struct {
	state []uint8
	added []int32
	// routed counts the switches the row routed before pass.
	routed int64
}

func (c *combiner) newPassScratch() *passScratch {
	return &passScratch{state: make([]uint8, c.g.N)}
}

// pass routes, in row d, every ranked switch that has no route yet along
// the subtree of roots[i]: followed hop by hop, the packet descends the
// subtree toward the root until it meets the first switch that already has
// a route (an up*/down* one or, for i > 0, one through an earlier root),
// where it turns up again (the U-turn), at the latest the root itself or a
// routed horizontal sibling of the root (the multi-core case of Algorithm
// 2). A switch whose subtree path meets neither stays at NoPort, so no walk
// dead-ends mid-way. The switches routed are left in sc.added.
//
// Forwarding stays loop-free: a switch routed in pass i forwards to the
// next switch of i's subtree, which is routed in pass i or earlier, and
// within one pass every hop comes closer to the root. It returns the
// sibling port the root uses, NoPort if none.
//
// A switch's fate is that of the next switch on the subtree unless it is
// routed already (good), the root (good only by a sibling) or off the
// subtree (dead), so the switches are decided in the walk's order, next
// switch first, each by one look at its next.
func (c *combiner) pass(d int32, i int, sc *passScratch) uint8 {
	const (
		unknown = iota
		good
		dead
	)
	row := c.rows[d]
	r, tree, walk := c.roots[i], c.trees[i], &c.walks[i]
	state := sc.state
	routed := int64(0)
	for x, p := range row {
		state[x] = unknown
		if p != plan.NoPort {
			state[x] = good
			routed++
		}
	}
	sc.routed = routed
	sc.added = sc.added[:0]
	sib := plan.NoPort
	if state[r] != good {
		state[r] = dead
		if sib = c.sibling(row, i); sib != plan.NoPort {
			state[r] = good
			row[r] = sib
			sc.added = append(sc.added, r)
		}
	}
	for _, s := range walk.order {
		if state[s] != unknown {
			continue
		}
		if state[walk.next[s]] != good {
			state[s] = dead
			continue
		}
		state[s] = good
		row[s] = tree[s]
		sc.added = append(sc.added, s)
	}
	return sib
}

// sibling is the port of root i's first horizontal link to a switch that
// row routes, NoPort if none.
func (c *combiner) sibling(row plan.Plane, i int) uint8 {
	for _, l := range c.sibs[i] {
		if row[l.Peer] != plan.NoPort {
			return l.Port
		}
	}
	return plan.NoPort
}

// combine runs the first root's pass on the pristine up*/down* row d.
func (c *combiner) combine(d int32, sc *passScratch) {
	var st rowStats
	if c.ud.rank[d] < 0 {
		c.stats[d] = st
		return
	}
	c.viaSib[d] = c.pass(d, 0, sc) != plan.NoPort
	st.upDown = sc.routed - 1 // d itself; only ranked switches have routes
	st.subtree = int64(len(sc.added))
	st.unreachable = c.ranked() - 1 - st.upDown - st.subtree
	c.stats[d] = st
}

// unrouted reports whether some ranked switch pair has no route.
func (c *combiner) unrouted() bool {
	for d := range c.stats {
		if c.stats[d].unreachable > 0 {
			return true
		}
	}
	return false
}

// ranked counts the ranked switches.
func (c *combiner) ranked() int64 { return int64(len(c.ud.order)) }

func (c *combiner) combineAll(ctx context.Context) error {
	return ftree.ForEach(ctx, c.g.N, func() func(int32) error {
		sc := c.newPassScratch()
		return func(d int32) error {
			c.combine(d, sc)
			return nil
		}
	})
}

// withdraw takes row d back to up*/down* routes only, remembering how many
// pairs lost their route.
func (c *combiner) withdraw(d int32, sc *scratch) error {
	before := rowPorts(c.rows[d])
	if err := c.ud.row(d, c.rows[d], sc); err != nil {
		return err
	}
	c.pure[d] = true
	c.viaSib[d] = false
	c.withdrawn[d] += before - rowPorts(c.rows[d])
	st := &c.stats[d]
	st.unreachable += st.subtree + st.extra
	st.subtree, st.extra = 0, 0
	return nil
}

// rowPorts counts the routed entries of a row.
func rowPorts(pl plan.Plane) int64 {
	n := int64(0)
	for _, p := range pl {
		if p != plan.NoPort {
			n++
		}
	}
	return n
}

// count sums the per-row pair statistics into rep.
func (c *combiner) count(rep *Report) {
	rep.Root = c.g.SwitchGUID(c.roots[0])
	rep.Roots = rep.Roots[:0]
	for _, r := range c.roots {
		rep.Roots = append(rep.Roots, c.g.SwitchGUID(r))
	}
	for d := int32(0); d < int32(c.g.N); d++ {
		if c.ud.rank[d] < 0 {
			continue
		}
		st := &c.stats[d]
		rep.Pairs += st.upDown + st.subtree + st.extra + st.unreachable
		rep.UpDown += st.upDown
		if c.viaSib[d] {
			rep.ViaSibling += st.subtree
		} else {
			rep.ViaSubtree += st.subtree
		}
		rep.ViaExtraRoots += st.extra
		rep.Unreachable += st.unreachable
		rep.Withdrawn += c.withdrawn[d]
		if st.unreachable > 0 && len(rep.Examples) < maxExamples {
			for _, s := range c.ud.order {
				if s != d && c.rows[d][s] == plan.NoPort {
					rep.Examples = append(rep.Examples, fmt.Sprintf("0x%016x -> 0x%016x", c.g.SwitchGUID(s), c.g.SwitchGUID(d)))
					break
				}
			}
		}
	}
}
