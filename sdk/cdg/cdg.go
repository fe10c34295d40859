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
	// succ[c*words : (c+1)*words] is the set of out-ports of channel c's
	// far switch that c's traffic continues on. words covers the largest
	// switch's ports: one word for up to 64 (8 bytes per channel, 1.8 MB
	// at ft3-56, where 256-bit sets took 7 MB and each dependency added
	// missed the cache).
	succ  []uint64
	words int
}

// New returns the CDG of g's fabric with no dependencies yet; AddPlane
// fills it.
func New(g *route.Graph) *Graph {
	c := &Graph{g: g, base: NewChannels(g), words: 1}
	for s := range g.N {
		c.words = max(c.words, (int(c.base[s+1]-c.base[s])+63)/64)
	}
	c.succ = make([]uint64, c.base.Len()*c.words)
	return c
}

// set is channel id's successor set.
func (c *Graph) set(id int32) []uint64 {
	i := int(id) * c.words
	return c.succ[i : i+c.words]
}

// depend records that traffic on channel (s, out) continues on out2 of the
// switch at its far end.
func (c *Graph) depend(s int32, out, out2 uint8) {
	c.succ[int(c.base[s]+int32(out))*c.words+int(out2>>6)] |= 1 << (out2 & 63)
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
//
// Planes are taken planeBatch at a time and walked switch by switch: a
// switch's channels and peers and the batch's entries stay in cache,
// where a plane at a time set a bit in a random channel of the whole
// graph for every entry (0.8 -> 0.3 s at ft3-56, 187 M entries).
func BuildPlanes(ctx context.Context, g *route.Graph, planes []plan.Plane) (*Graph, error) {
	for _, pl := range planes {
		if len(pl) != g.N {
			return nil, fmt.Errorf("a plane has %d entries, want %d (one per switch)", len(pl), g.N)
		}
	}
	toSwitch := switchPorts(g)
	batches := (len(planes) + planeBatch - 1) / planeBatch
	w := route.Workers(batches)
	local := make([]*Graph, w)
	err := route.ForEach(ctx, w, func() func(int32) error {
		return func(k int32) error {
			part := New(g)
			for b := int(k); b < batches; b += w {
				if err := ctx.Err(); err != nil {
					return err
				}
				part.addBatch(planes[b*planeBatch : min((b+1)*planeBatch, len(planes))])
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
		for i, w := range part.succ {
			c.succ[i] |= w
		}
	}
	c.keepSwitchPorts(toSwitch)
	return c, nil
}

// planeBatch planes are walked together by BuildPlanes (64 x 3,920
// entries at ft3-56: 250 KB, within a core's cache).
const planeBatch = 64

// switchPorts gives per switch the set of ports that lead to a switch.
func switchPorts(g *route.Graph) [][4]uint64 {
	m := make([][4]uint64, g.N)
	for s := range int32(g.N) {
		for p := range 256 {
			if g.PeerSwitch(s, uint8(p)) >= 0 {
				m[s][p>>6] |= 1 << (p & 63)
			}
		}
	}
	return m
}

// addBatch adds the dependencies of planes of the right length, switch
// by switch. It sets a bit for every next out-port that fits the row,
// switch or not (0 and NoPort too, when they fit): keepSwitchPorts clears
// the others once every batch is in, a mask per channel where a test per
// entry cost a third of the loop.
func (c *Graph) addBatch(planes []plan.Plane) {
	lim := c.words * 64
	for s := range int32(c.g.N) {
		row := c.succ[int(c.base[s])*c.words : int(c.base[s+1])*c.words]
		for _, pl := range planes {
			out := pl[s]
			if out == plan.NoPort || out == 0 {
				continue
			}
			t := c.g.PeerSwitch(s, out)
			if t < 0 {
				continue
			}
			out2 := pl[t]
			if int(out2) >= lim {
				continue
			}
			row[int(out)*c.words+int(out2>>6)] |= 1 << (out2 & 63)
		}
	}
}

// keepSwitchPorts clears, in every channel's dependencies, the next
// out-ports that do not lead to a switch (see addBatch).
func (c *Graph) keepSwitchPorts(toSwitch [][4]uint64) {
	for s := range int32(c.g.N) {
		for out := range c.base[s+1] - c.base[s] {
			t := c.g.PeerSwitch(s, uint8(out))
			if t < 0 {
				continue
			}
			set := c.set(c.base[s] + out)
			for w := range set {
				set[w] &= toSwitch[t][w]
			}
		}
	}
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
	return &Graph{g: c.g, base: c.base, succ: slices.Clone(c.succ), words: c.words}
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
	for _, w := range c.succ {
		n += bits.OnesCount64(w)
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
	n := c.base.Len()
	color := make([]uint8, n)
	type frame struct {
		id   int32
		next int // next out-port to try, 0..64*words
	}
	var stack []frame
	for root := int32(0); root < int32(n); root++ {
		if color[root] != white || empty(c.set(root)) {
			continue
		}
		color[root] = grey
		stack = append(stack[:0], frame{id: root})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			s, p := c.channel(f.id)
			t := c.g.PeerSwitch(s, p)
			set := c.set(f.id)
			pushed := false
			for f.next < 64*c.words {
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

func empty(set []uint64) bool {
	for _, w := range set {
		if w != 0 {
			return false
		}
	}
	return true
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
