package sftree

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/plugins/internal/route"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// chooseRoot is Algorithm 1: the first leaf, in the tree's leaf order, that
// reaches every switch on an up*/down* path, skipping the leaf the SM hangs
// off so that switch traffic does not converge on the SM's link (the
// paper's Section 4.2 refinement). Up*/down* reachability is symmetric (a
// reversed up*/down* path is one), so "the leaf reaches every switch" is
// read off the leaf's own plane: every switch reaches it. Where no leaf
// reaches all, the one reaching most is the best effort.
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

// combiner turns up*/down* rows into sFtree rows in place (Algorithm 2).
type combiner struct {
	g    *route.Graph
	ud   *upDown
	root int32
	rows []plan.Plane
	// toRoot is the up*/down* plane toward the root: the subtree.
	toRoot plan.Plane
	// sibs are the root's horizontal links.
	sibs []route.Link
	// pure marks rows withdrawn to up*/down* only.
	pure []bool
	// viaSib marks rows whose root forwards to a sibling.
	viaSib []bool
	// withdrawn counts, per row, subtree pairs taken back.
	withdrawn []int64
	// stats counts, per row, the source switches by how they route.
	stats []rowStats
}

// rowStats classifies the ranked source switches s != d of one row.
type rowStats struct {
	upDown, subtree, unreachable int64
}

func (c *combiner) siblings() {
	c.toRoot = append(plan.Plane(nil), c.rows[c.root]...)
	c.sibs = c.ud.sib[c.root]
	c.viaSib = make([]bool, c.g.N)
	c.withdrawn = make([]int64, c.g.N)
	c.stats = make([]rowStats, c.g.N)
}

// combine routes every switch without an up*/down* path to d along the
// subtree toward the root. Followed hop by hop, the packet keeps descending
// the subtree until a switch with an up*/down* path to d takes over (the
// U-turn), at the latest the root itself, or the root's sibling. A switch
// whose subtree path meets neither (possible only under a best-effort
// root) stays at NoPort, so no walk dead-ends mid-way. state is N bytes of
// scratch; path room for N entries.
func (c *combiner) combine(d int32, state []uint8, path []int32) {
	const (
		unknown = iota
		good
		dead
	)
	row := c.rows[d]
	if c.ud.rank[d] < 0 {
		return
	}
	sibPort := plan.NoPort
	if row[c.root] == plan.NoPort {
		for _, l := range c.sibs {
			if row[l.Peer] != plan.NoPort {
				sibPort = l.Port
				break
			}
		}
	}
	c.viaSib[d] = sibPort != plan.NoPort
	for i := range state {
		state[i] = unknown
		if row[i] != plan.NoPort {
			state[i] = good
		}
	}
	if row[c.root] == plan.NoPort {
		state[c.root] = dead
		if sibPort != plan.NoPort {
			state[c.root] = good
		}
	}
	var st rowStats
	for _, s := range c.ud.order {
		if row[s] != plan.NoPort {
			if s != d {
				st.upDown++
			}
			continue
		}
		// Walk the subtree until a switch whose fate is known.
		path = path[:0]
		x := s
		for state[x] == unknown {
			path = append(path, x)
			if c.toRoot[x] == plan.NoPort {
				state[x] = dead
				break
			}
			x = c.ud.g.PeerSwitch(x, c.toRoot[x])
		}
		fate := state[x]
		for _, y := range path {
			state[y] = fate
		}
		switch {
		case fate != good:
			st.unreachable++
		case s == c.root:
			row[s] = sibPort
			st.subtree++
		default:
			row[s] = c.toRoot[s]
			st.subtree++
		}
	}
	c.stats[d] = st
}

func (c *combiner) combineAll(ctx context.Context) error {
	return route.ForEach(ctx, c.g.N, func() func(int32) error {
		state := make([]uint8, c.g.N)
		path := make([]int32, 0, c.g.N)
		return func(d int32) error {
			c.combine(d, state, path)
			return nil
		}
	})
}

// withdraw takes row d back to up*/down* routes only, remembering how many
// pairs lost their route.
func (c *combiner) withdraw(d int32, sc *scratch) error {
	before := 0
	for _, p := range c.rows[d] {
		if p != plan.NoPort {
			before++
		}
	}
	if err := c.ud.row(d, c.rows[d], sc); err != nil {
		return err
	}
	after := 0
	for _, p := range c.rows[d] {
		if p != plan.NoPort {
			after++
		}
	}
	c.pure[d] = true
	c.viaSib[d] = false
	c.withdrawn[d] += int64(before - after)
	st := &c.stats[d]
	st.unreachable += st.subtree
	st.subtree = 0
	return nil
}

// count sums the per-row pair statistics into rep.
func (c *combiner) count(rep *Report) {
	for d := int32(0); d < int32(c.g.N); d++ {
		if c.ud.rank[d] < 0 {
			continue
		}
		st := &c.stats[d]
		rep.Pairs += st.upDown + st.subtree + st.unreachable
		rep.UpDown += st.upDown
		if c.viaSib[d] {
			rep.ViaSibling += st.subtree
		} else {
			rep.ViaSubtree += st.subtree
		}
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
