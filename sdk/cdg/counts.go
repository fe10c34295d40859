package cdg

import (
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
)

// Counts is a one-VL channel dependency graph kept as a count per
// dependency (channel, next out-port): how many destination trees hold
// it. Unlike Graph it can lose a tree's dependencies as well as gain
// them, so the graph of the next routing — the same destinations, a few
// trees changed, switch cables gone or back — follows from this one by
// its changes, and only where new dependencies lead can a cycle appear.
type Counts struct {
	g     *route.Graph
	base  Channels
	width int // ports of the widest switch + 1: dependencies per channel
	n     []uint16
}

// NewCounts returns an empty graph for g's switches.
func NewCounts(g *route.Graph) *Counts {
	c := &Counts{g: g, base: NewChannels(g), width: 1}
	for s := range g.N {
		c.width = max(c.width, int(c.base[s+1]-c.base[s]))
	}
	c.n = make([]uint16, c.base.Len()*c.width)
	return c
}

// Over returns c over the links of g, a fabric with the same switches and
// ports (cables may differ), for the next routing's changes. The counts
// are shared, not copied (25 MB at ft3-56 for a few thousand counts a
// cable changes): what either adds the other sees, and a caller that does
// not keep the changes made through one must undo them.
func (c *Counts) Over(g *route.Graph) *Counts {
	return &Counts{g: g, base: c.base, width: c.width, n: c.n}
}

// DepTables returns the index of the dependency switch s's entry for lid
// in forwarding tables lft starts over c's links, if it starts one (it
// leaves s toward switch t, and t's entry toward a switch), and the
// channel it leads to.
func (c *Counts) DepTables(s int32, lft [][]uint8, lid int) (int, int32, bool) {
	t, ok := c.hop(s, lft[s][lid])
	if !ok {
		return 0, 0, false
	}
	return c.dep(s, lft[s][lid], t, lft[t][lid])
}

// hop returns the switch s's entry out leads to, if a switch.
func (c *Counts) hop(s int32, out uint8) (int32, bool) {
	if out == 0 || out == plan.NoPort {
		return 0, false
	}
	t := c.g.PeerSwitch(s, out)
	return t, t >= 0
}

func (c *Counts) dep(s int32, out uint8, t int32, out2 uint8) (int, int32, bool) {
	if out2 == 0 || out2 == plan.NoPort || c.g.PeerSwitch(t, out2) < 0 {
		return 0, 0, false
	}
	return int(c.base[s]+int32(out))*c.width + int(out2), c.base[t] + int32(out2), true
}

// Add adds d (+1 or -1) to dependency i's count and reports whether the
// dependency is new to the graph (its count went from 0 to 1).
func (c *Counts) Add(i, d int) bool {
	c.n[i] = uint16(int(c.n[i]) + d)
	return d > 0 && c.n[i] == 1
}

// CycleFrom reports whether a cycle is reachable from the channels heads
// (all channels: whether the graph has one). Given a graph without one,
// after removals and the additions whose heads are given, that is whether
// the graph has one now: a new cycle runs through a new dependency.
// Depth first, iterative; a channel on the current path reached again
// closes a cycle.
func (c *Counts) CycleFrom(heads []int32) bool {
	const white, gray, black = 0, 1, 2
	color := make([]uint8, c.base.Len())
	type frame struct {
		ch, t int32 // the channel and the switch it leads to
		next  int   // the next out-port of t to try
	}
	var stack []frame
	push := func(ch int32) {
		s, out := c.base.Of(ch)
		color[ch] = gray
		stack = append(stack, frame{ch: ch, t: c.g.PeerSwitch(s, out)})
	}
	for _, h := range heads {
		if color[h] != white {
			continue
		}
		push(h)
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			row := c.n[int(f.ch)*c.width : int(f.ch+1)*c.width]
			for f.t >= 0 && f.next < len(row) && row[f.next] == 0 {
				f.next++
			}
			if f.t < 0 || f.next == len(row) {
				color[f.ch] = black
				stack = stack[:len(stack)-1]
				continue
			}
			nc := c.base[f.t] + int32(f.next)
			f.next++
			switch color[nc] {
			case gray:
				return true
			case white:
				push(nc)
			}
		}
	}
	return false
}
