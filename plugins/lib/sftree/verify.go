package sftree

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
)

// maxCyclePrint bounds the channels of a credit loop an error names.
const maxCyclePrint = 8

// maxRepairs bounds the withdraw-and-recheck rounds before every subtree
// route is withdrawn at once.
const maxRepairs = 16

// legalTurn reports whether entering x from a and leaving toward b is an
// up*/down* turn (up-up, up-down or down-down by rank).
func (u *upDown) legalTurn(a, x, b int32) bool {
	ra, rx, rb := u.rank[a], u.rank[x], u.rank[b]
	switch {
	case rx < ra: // arrived going up
		return rb != rx
	case rx > ra: // arrived going down
		return rb > rx
	}
	return false
}

// verify checks the CDG of all planes of out (CA planes and the switch rows
// c holds) and, while it has a cycle, withdraws the subtree routes of the
// switch destinations whose U-turns lie on it. After maxRepairs rounds it
// withdraws every subtree route; if a cycle remains then, it is in the
// fat-tree engine's own planes and Route fails.
func (c *combiner) verify(ctx context.Context, out *plan.Routes, rep *Report) error {
	var planes []plan.Plane
	for _, dp := range out.Planes {
		planes = append(planes, dp.Planes...)
	}
	sc := c.ud.newScratch()
	for round := 0; ; round++ {
		dg, err := cdg.BuildPlanes(ctx, c.g, planes)
		if err != nil {
			return fmt.Errorf("sftree: %w", err)
		}
		cyc := dg.FindCycle()
		if cyc == nil {
			c.dg = dg
			return nil
		}
		if round > maxRepairs {
			return fmt.Errorf("sftree: the fat-tree engine's own routes close a credit loop on one VL (%s); sftree cannot repair that: check the tree for miscabling", cdg.Format(dg, cyc, maxCyclePrint))
		}
		var victims []int32
		for d := int32(0); d < int32(c.g.N); d++ {
			if !c.pure[d] {
				victims = append(victims, d)
			}
		}
		if round < maxRepairs {
			victims = c.culprits(cyc, victims)
		}
		if len(victims) == 0 {
			return fmt.Errorf("sftree: credit loop on one VL without an sFtree U-turn on it (%s): the fat-tree engine's own routes are not deadlock-free", cdg.Format(dg, cyc, maxCyclePrint))
		}
		for _, d := range victims {
			if err := c.withdraw(d, sc); err != nil {
				return err
			}
		}
	}
}

// culprits lists, in cycle order and without repeats, the rows among
// rows that make one of cyc's illegal turns: the switch destinations whose
// subtree routes close the cycle.
func (c *combiner) culprits(cyc []cdg.Channel, rows []int32) []int32 {
	var out []int32
	seen := map[int32]bool{}
	for i, h := range cyc {
		next := cyc[(i+1)%len(cyc)]
		x := c.g.PeerSwitch(h.Switch, h.Port)
		if c.ud.legalTurn(h.Switch, x, c.g.PeerSwitch(next.Switch, next.Port)) {
			continue
		}
		for _, d := range rows {
			if !seen[d] && c.rows[d][h.Switch] == h.Port && c.rows[d][x] == next.Port {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}
