package sftree

import (
	"context"
	"fmt"
	"math/bits"
	"strings"

	"github.com/ibsm/ibsm/plugins/internal/route"
	"github.com/ibsm/ibsm/sdk/plan"
)

// maxRepairs bounds the withdraw-and-recheck rounds before every subtree
// route is withdrawn at once.
const maxRepairs = 16

// deps is the channel dependency graph of a set of planes on one VL. A
// channel is a switch-to-switch link direction named by (switch, out-port);
// succ[c] holds the out-ports of c's far switch that traffic on c continues
// on. Every switch counts as a source toward every destination, so every
// edge of every plane contributes, which is what switch traffic needs.
type deps struct {
	g    *route.Graph
	base []int32 // channel (s, p) = base[s] + p
	succ [][4]uint64
}

func newDeps(g *route.Graph) *deps {
	d := &deps{g: g, base: make([]int32, g.N+1)}
	sws := g.Topo.Switches()
	for s, node := range sws {
		d.base[s+1] = d.base[s] + int32(len(g.Topo.Nodes[node].Ports))
	}
	return d
}

// build (re)derives the graph from planes, one private edge set per worker,
// merged at the end.
func (d *deps) build(ctx context.Context, planes []plan.Plane) error {
	nch := d.base[d.g.N]
	w := route.Workers(len(planes))
	local := make([][][4]uint64, w)
	err := route.ForEach(ctx, w, func() func(int32) error {
		return func(k int32) error {
			set := make([][4]uint64, nch)
			for i := int(k); i < len(planes); i += w {
				if i%256 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if err := d.add(set, planes[i]); err != nil {
					return err
				}
			}
			local[k] = set
			return nil
		}
	})
	if err != nil {
		return err
	}
	d.succ = local[0]
	for _, set := range local[1:] {
		for c := range set {
			for j := range set[c] {
				d.succ[c][j] |= set[c][j]
			}
		}
	}
	return nil
}

// add ORs the dependencies of one plane into set.
func (d *deps) add(set [][4]uint64, pl plan.Plane) error {
	if len(pl) != d.g.N {
		return fmt.Errorf("sftree: a plane has %d entries, want %d", len(pl), d.g.N)
	}
	for s, out := range pl {
		if out == plan.NoPort || out == 0 {
			continue
		}
		t := d.g.PeerSwitch(int32(s), out)
		if t < 0 {
			continue
		}
		o2 := pl[t]
		if o2 == plan.NoPort || o2 == 0 || d.g.PeerSwitch(t, o2) < 0 {
			continue
		}
		set[d.base[s]+int32(out)][o2>>6] |= 1 << (o2 & 63)
	}
	return nil
}

func (d *deps) edges() int {
	n := 0
	for _, set := range d.succ {
		for _, w := range set {
			n += bits.OnesCount64(w)
		}
	}
	return n
}

// chanAt maps a channel id back to (switch index, port).
func (d *deps) chanAt(id int32) (int32, uint8) {
	lo, hi := 0, d.g.N
	for lo+1 < hi {
		m := (lo + hi) / 2
		if d.base[m] <= id {
			lo = m
		} else {
			hi = m
		}
	}
	return int32(lo), uint8(id - d.base[lo])
}

// hop is one channel of a cycle.
type hop struct {
	s int32
	p uint8
}

// cycle returns one dependency cycle in dependency order, nil if none, by
// an iterative depth-first search.
func (d *deps) cycle() []hop {
	n := int32(len(d.succ))
	color := make([]uint8, n) // 0 new, 1 on stack, 2 done
	type frame struct {
		id   int32
		next int
	}
	var stack []frame
	for root := int32(0); root < n; root++ {
		if color[root] != 0 || d.succ[root] == [4]uint64{} {
			continue
		}
		color[root] = 1
		stack = append(stack[:0], frame{id: root})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			s, p := d.chanAt(f.id)
			t := d.g.PeerSwitch(s, p)
			set := &d.succ[f.id]
			pushed := false
			for f.next < 256 && !pushed {
				q := f.next
				word := set[q>>6] >> (q & 63)
				if word == 0 {
					f.next = (q | 63) + 1
					continue
				}
				q += bits.TrailingZeros64(word)
				f.next = q + 1
				nid := d.base[t] + int32(q)
				switch color[nid] {
				case 0:
					color[nid] = 1
					stack = append(stack, frame{id: nid})
					pushed = true
				case 1:
					i := len(stack) - 1
					for stack[i].id != nid {
						i--
					}
					var cyc []hop
					for _, fr := range stack[i:] {
						cs, cp := d.chanAt(fr.id)
						cyc = append(cyc, hop{cs, cp})
					}
					return cyc
				}
			}
			if !pushed {
				color[f.id] = 2
				stack = stack[:len(stack)-1]
			}
		}
	}
	return nil
}

func (d *deps) format(cyc []hop) string {
	var b strings.Builder
	for i, h := range cyc {
		if i == 8 {
			fmt.Fprintf(&b, " -> ... (%d channels)", len(cyc))
			return b.String()
		}
		if i > 0 {
			b.WriteString(" -> ")
		}
		fmt.Fprintf(&b, "0x%016x/%d", d.g.SwitchGUID(h.s), h.p)
	}
	return b.String()
}

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
	dg := newDeps(c.g)
	sc := c.ud.newScratch()
	for round := 0; ; round++ {
		if err := dg.build(ctx, planes); err != nil {
			return err
		}
		cyc := dg.cycle()
		if cyc == nil {
			c.dg = dg
			return nil
		}
		if round > maxRepairs {
			return fmt.Errorf("sftree: the fat-tree engine's own routes close a credit loop on one VL (%s); sftree cannot repair that: check the tree for miscabling", dg.format(cyc))
		}
		var victims []int32
		if round == maxRepairs {
			for d := int32(0); d < int32(c.g.N); d++ {
				if !c.pure[d] {
					victims = append(victims, d)
				}
			}
		} else {
			victims = c.culprits(cyc)
		}
		if len(victims) == 0 {
			return fmt.Errorf("sftree: credit loop on one VL without an sFtree U-turn on it (%s): the fat-tree engine's own routes are not deadlock-free", dg.format(cyc))
		}
		for _, d := range victims {
			if err := c.withdraw(d, sc); err != nil {
				return err
			}
		}
	}
}

// culprits lists the switch destinations (not yet withdrawn) whose rows
// make one of cyc's illegal turns.
func (c *combiner) culprits(cyc []hop) []int32 {
	var out []int32
	seen := map[int32]bool{}
	for i, h := range cyc {
		next := cyc[(i+1)%len(cyc)]
		x := c.g.PeerSwitch(h.s, h.p)
		b := c.g.PeerSwitch(next.s, next.p)
		if c.ud.legalTurn(h.s, x, b) {
			continue
		}
		for d := int32(0); d < int32(c.g.N); d++ {
			if c.pure[d] || seen[d] {
				continue
			}
			if c.rows[d][h.s] == h.p && c.rows[d][x] == next.p {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}
