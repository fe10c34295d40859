// Package cdg builds the channel dependency graph of realised forwarding
// tables on one VL and finds a cycle in it. A cycle means the routing can
// deadlock on that VL; no cycle means it cannot (Dally & Seitz).
package cdg

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
)

// Channel is a directed switch-to-switch link, named by its sending end.
type Channel struct {
	Node   int32 // node index of the switch
	Switch int32 // the same switch's index in Topology.Switches()
	Port   uint8 // its out-port
}

// Channels numbers every port of every switch of a fabric, port 0 and CA
// ports included, so a port's id is a plain offset: channel (s, p) is
// Channels[s]+p, and Channels[N] is the number of ids. Per-channel tables
// (dependency sets here, layers in plugins/lib/vl) index by it.
type Channels []int32

// NewChannels numbers the channels of g's switches.
func NewChannels(g *route.Graph) Channels {
	b := make(Channels, g.N+1)
	for s, node := range g.Topo.Switches() {
		b[s+1] = b[s] + int32(len(g.Topo.Nodes[node].Ports))
	}
	return b
}

// ID is the id of channel (s, p).
func (b Channels) ID(s int32, p uint8) int32 { return b[s] + int32(p) }

// Len is the number of channel ids.
func (b Channels) Len() int { return int(b[len(b)-1]) }

// Of maps a channel id back to (switch index, port).
func (b Channels) Of(id int32) (int32, uint8) {
	lo, hi := 0, len(b)-1
	for lo+1 < hi {
		m := (lo + hi) / 2
		if b[m] <= id {
			lo = m
		} else {
			hi = m
		}
	}
	return int32(lo), uint8(id - b[lo])
}

// Graph is a deduplicated CDG over the switch-to-switch channels of a fabric.
// Channels into or out of CAs are left out: a CA's injection channel has no
// predecessor and its delivery channel no successor, so neither can be on a
// cycle.
type Graph struct {
	g    *route.Graph
	base Channels
	// succ[c] is a 256-bit set of out-ports of c's far switch that c's
	// traffic continues on.
	succ [][4]uint64
}

// New returns the CDG of g's fabric with no dependencies yet; AddPlane
// fills it.
func New(g *route.Graph) *Graph {
	c := &Graph{g: g, base: NewChannels(g)}
	c.succ = make([][4]uint64, c.base.Len())
	return c
}

// depend records that traffic on channel (s, out) continues on out2 of the
// switch at its far end.
func (c *Graph) depend(s int32, out, out2 uint8) {
	set := &c.succ[c.base[s]+int32(out)]
	set[out2>>6] |= 1 << (out2 & 63)
}

// Build derives the CDG of r's tables. For every LID with an owner and every
// switch s whose entry leads over a switch link to t, the channel (s→t)
// depends on t's channel for that LID. Every switch is a source of
// management traffic toward every LID, so every edge of every destination
// tree counts. Work is linear in LIDs × switches.
func Build(ctx context.Context, r *plan.Realized) (*Graph, error) {
	if r == nil || r.Topo == nil {
		return nil, fmt.Errorf("no realised forwarding tables to check")
	}
	g := route.NewGraph(r.Topo)
	if len(r.LFT) != g.N {
		return nil, fmt.Errorf("realised tables cover %d switches, topology has %d", len(r.LFT), g.N)
	}
	c := New(g)
	// Channels (s, *) are written only by the goroutine handling s.
	err := route.ForEach(ctx, g.N, func() func(int32) error {
		return func(s int32) error {
			row := r.LFT[s]
			for lid, out := range row {
				if out == plan.NoPort || out == 0 || lid >= len(r.LIDOwner) || r.LIDOwner[lid] == 0 {
					continue
				}
				t := g.PeerSwitch(s, out)
				if t < 0 {
					continue
				}
				if len(r.LFT[t]) <= lid {
					return fmt.Errorf("forwarding table of switch 0x%016x is shorter than LID %d", g.SwitchGUID(t), lid)
				}
				out2 := r.LFT[t][lid]
				if out2 == plan.NoPort || out2 == 0 || g.PeerSwitch(t, out2) < 0 {
					continue
				}
				c.depend(s, out, out2)
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// BuildPlanes derives the CDG of planes (one destination tree each, as
// plan.Routes holds them) with the same rule as Build: every switch is a
// source toward every destination, so every edge of every plane counts,
// which is what switch-to-switch traffic needs. Workers fill private
// graphs that are merged at the end.
func BuildPlanes(ctx context.Context, g *route.Graph, planes []plan.Plane) (*Graph, error) {
	w := route.Workers(len(planes))
	local := make([]*Graph, w)
	err := route.ForEach(ctx, w, func() func(int32) error {
		return func(k int32) error {
			part := New(g)
			for i := int(k); i < len(planes); i += w {
				if i%256 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if err := part.AddPlane(planes[i]); err != nil {
					return err
				}
			}
			local[k] = part
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	c := local[0]
	for _, part := range local[1:] {
		for i := range part.succ {
			for j := range part.succ[i] {
				c.succ[i][j] |= part.succ[i][j]
			}
		}
	}
	return c, nil
}

// AddPlane adds the dependencies of one plane (pl[s] is switch s's
// out-port toward the plane's destination).
func (c *Graph) AddPlane(pl plan.Plane) error {
	if len(pl) != c.g.N {
		return fmt.Errorf("a plane has %d entries, want %d (one per switch)", len(pl), c.g.N)
	}
	for s, out := range pl {
		if out == plan.NoPort || out == 0 {
			continue
		}
		t := c.g.PeerSwitch(int32(s), out)
		if t < 0 {
			continue
		}
		out2 := pl[t]
		if out2 == plan.NoPort || out2 == 0 || c.g.PeerSwitch(t, out2) < 0 {
			continue
		}
		c.depend(int32(s), out, out2)
	}
	return nil
}

// Clone returns a copy whose dependencies can grow without touching c's,
// to try additions before keeping them.
func (c *Graph) Clone() *Graph {
	return &Graph{g: c.g, base: c.base, succ: slices.Clone(c.succ)}
}

// CopyFrom makes c's dependencies those of from, a graph of the same
// fabric (from New or Clone of the same route.Graph), reusing c's memory.
func (c *Graph) CopyFrom(from *Graph) {
	if len(c.succ) != len(from.succ) {
		panic(fmt.Sprintf("cdg: CopyFrom a graph of %d channels into one of %d: not the same fabric", len(from.succ), len(c.succ)))
	}
	copy(c.succ, from.succ)
}

// channel maps a channel id back to (switch index, port).
func (c *Graph) channel(id int32) (int32, uint8) { return c.base.Of(id) }

// Edges counts the distinct dependencies.
func (c *Graph) Edges() int {
	n := 0
	for i := range c.succ {
		for _, w := range c.succ[i] {
			n += bits.OnesCount64(w)
		}
	}
	return n
}

// FindCycle returns the channels of one dependency cycle, in dependency
// order, or nil if the graph is acyclic. It is an iterative DFS, so deep
// graphs cannot exhaust the stack.
func (c *Graph) FindCycle() []Channel {
	const (
		white = 0
		grey  = 1
		black = 2
	)
	n := len(c.succ)
	color := make([]uint8, n)
	type frame struct {
		id   int32
		next int // next out-port to try, 0..256
	}
	var stack []frame
	for root := int32(0); root < int32(n); root++ {
		if color[root] != white || c.succ[root] == [4]uint64{} {
			continue
		}
		color[root] = grey
		stack = append(stack[:0], frame{id: root})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			s, p := c.channel(f.id)
			t := c.g.PeerSwitch(s, p)
			set := &c.succ[f.id]
			pushed := false
			for f.next < 256 {
				q := f.next
				// Skip to the next set bit.
				word := set[q>>6] >> (q & 63)
				if word == 0 {
					f.next = (q | 63) + 1
					continue
				}
				q += bits.TrailingZeros64(word)
				f.next = q + 1
				nid := c.base[t] + int32(q)
				switch color[nid] {
				case white:
					color[nid] = grey
					stack = append(stack, frame{id: nid})
					pushed = true
				case grey:
					// Cycle: nid ... top of stack.
					var cyc []Channel
					start := len(stack) - 1
					for stack[start].id != nid {
						start--
					}
					for _, fr := range stack[start:] {
						cs, cp := c.channel(fr.id)
						cyc = append(cyc, Channel{Node: c.g.Topo.Switches()[cs], Switch: cs, Port: cp})
					}
					return cyc
				}
				if pushed {
					break
				}
			}
			if !pushed {
				color[f.id] = black
				stack = stack[:len(stack)-1]
			}
		}
	}
	return nil
}

// Cycle builds r's single-VL dependency graph and returns one credit loop
// formatted for a message, or "" when the graph is acyclic.
func Cycle(ctx context.Context, r *plan.Realized) (string, error) {
	g, err := Build(ctx, r)
	if err != nil {
		return "", err
	}
	if cyc := g.FindCycle(); cyc != nil {
		return Format(g, cyc, 10), nil
	}
	return "", nil
}

// Format renders a cycle as "0x<guid>/<port> -> ... -> <first again>",
// printing at most max channels.
func Format(c *Graph, cyc []Channel, max int) string {
	var b strings.Builder
	for i, ch := range cyc {
		if i == max {
			fmt.Fprintf(&b, " -> ... (%d channels in all)", len(cyc))
			return b.String()
		}
		if i > 0 {
			b.WriteString(" -> ")
		}
		fmt.Fprintf(&b, "0x%016x/%d", c.g.Topo.Nodes[ch.Node].GUID, ch.Port)
	}
	if len(cyc) > 0 {
		fmt.Fprintf(&b, " -> 0x%016x/%d", c.g.Topo.Nodes[cyc[0].Node].GUID, cyc[0].Port)
	}
	return b.String()
}
