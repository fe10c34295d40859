// Package vl is the layer bookkeeping the multi-VL assigners (layered,
// dfsssp, acro) share: the realised forwarding tables seen as one tree per
// destination LID over switch-to-switch channels, per-layer channel
// dependency graphs with cycle search, and the translation of layers into a
// VLPlan (SLs, SL2VL tables) within the ports' VL capabilities. ACRO is
// Kawano et al., "ACRO: Assignment of Channels in Reverse Order to Make
// Arbitrary Routing Deadlock-free".
//
// Vocabulary. A channel is a switch-to-switch link leaving switch s by port
// p. A dependency (edge) is a switch t with an in-port and an out-port: the
// channel arriving at t through `in` feeds the channel leaving t by `out`.
// Every switch sources traffic toward every LID (its own port 0 and its
// CAs), so a route is a (source switch, DLID) pair: its walk through the
// DLID's tree. CA injection and delivery channels cannot lie on a cycle and
// are left out of the graphs.
package vl

import (
	"context"
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// MaxSLs is the number of service levels a packet header can name.
const MaxSLs = 16

// Fabric is the read-only view of realised tables the algorithms share.
type Fabric struct {
	R *plan.Realized
	G *route.Graph
	// N is the number of switches.
	N int
	// DLIDs lists the LIDs that have an owner, ascending; dest index i
	// below always means DLIDs[i].
	DLIDs []uint16
	// Home[i] is the switch that delivers DLIDs[i] (the owner's switch),
	// -1 when no switch does.
	Home []int32
	// np[s] is the number of ports (without port 0) of switch s.
	np []int
	// chanBase numbers the channels; edgeBase[s] + in*(np[s]+1) + out is
	// the id of dependency (s, in, out).
	chanBase cdg.Channels
	edgeBase []int32
	// peerPort[chan] is the in-port on the far switch (0 if not a switch
	// link); peerSw[chan] the far switch or -1.
	peerPort []uint8
	peerSw   []int32
	// capv[chan] is LinkVLs of the channel.
	capv []uint8
}

// NewFabric indexes r. It fails on tables that do not match the topology.
func NewFabric(r *plan.Realized) (*Fabric, error) {
	if r == nil || r.Topo == nil {
		return nil, fmt.Errorf("no realised forwarding tables")
	}
	t := r.Topo
	g := route.NewGraph(t)
	if len(r.LFT) != g.N {
		return nil, fmt.Errorf("realised tables cover %d switches, topology has %d", len(r.LFT), g.N)
	}
	f := &Fabric{R: r, G: g, N: g.N, np: make([]int, g.N), chanBase: cdg.NewChannels(g), edgeBase: make([]int32, g.N+1)}
	sws := t.Switches()
	for s, node := range sws {
		n := t.Nodes[node].NumPorts()
		f.np[s] = n
		f.edgeBase[s+1] = f.edgeBase[s] + int32((n+1)*(n+1))
		if len(r.LFT[s]) != int(r.TopLID)+1 {
			return nil, fmt.Errorf("forwarding table of switch 0x%016x has %d entries, want %d", g.SwitchGUID(int32(s)), len(r.LFT[s]), int(r.TopLID)+1)
		}
	}
	nc := f.chanBase.Len()
	f.peerPort = make([]uint8, nc)
	f.peerSw = make([]int32, nc)
	f.capv = make([]uint8, nc)
	for s, node := range sws {
		for p := 0; p <= f.np[s]; p++ {
			c := f.chanBase[s] + int32(p)
			f.peerSw[c] = -1
			if p == 0 {
				continue
			}
			ref := topology.PortRef{Node: node, Port: uint8(p)}
			f.capv[c] = uint8(t.LinkVLs(ref))
			if ps := g.PeerSwitch(int32(s), uint8(p)); ps >= 0 {
				f.peerSw[c] = ps
				f.peerPort[c] = t.Port(ref).Peer.Port
			}
		}
	}
	if len(r.LIDOwner) != int(r.TopLID)+1 {
		return nil, fmt.Errorf("LID owner table has %d entries, want %d", len(r.LIDOwner), int(r.TopLID)+1)
	}
	for lid := 1; lid < len(r.LIDOwner); lid++ {
		o := r.LIDOwner[lid]
		if o == 0 {
			continue
		}
		if int(o-1) >= len(t.Endpoints()) {
			return nil, fmt.Errorf("LID %d is owned by endpoint %d of %d", lid, o-1, len(t.Endpoints()))
		}
		f.DLIDs = append(f.DLIDs, uint16(lid))
		f.Home = append(f.Home, g.Attachment(o-1).Switch)
	}
	return f, nil
}

// Chan is the id of channel (s, p).
func (f *Fabric) Chan(s int32, p uint8) int32 { return f.chanBase.ID(s, p) }

// Chans is the number of channel ids.
func (f *Fabric) Chans() int { return f.chanBase.Len() }

// Edges is the number of dependency ids.
func (f *Fabric) Edges() int { return int(f.edgeBase[f.N]) }

// ChanOf maps a channel id back to (switch, port).
func (f *Fabric) ChanOf(c int32) (int32, uint8) { return f.chanBase.Of(c) }

// EdgeOf maps a dependency id back to (switch, in, out).
func (f *Fabric) EdgeOf(e int32) (s int32, in, out uint8) {
	lo, hi := 0, f.N
	for lo+1 < hi {
		m := (lo + hi) / 2
		if f.edgeBase[m] <= e {
			lo = m
		} else {
			hi = m
		}
	}
	w := int32(f.np[lo] + 1)
	off := e - f.edgeBase[lo]
	return int32(lo), uint8(off / w), uint8(off % w)
}

// Edge is the id of dependency (s, in, out).
func (f *Fabric) Edge(s int32, in, out uint8) int32 {
	return f.edgeBase[s] + int32(in)*int32(f.np[s]+1) + int32(out)
}

// EdgeChans returns the channels a dependency joins: the one arriving at s
// through in, and (s, out).
func (f *Fabric) EdgeChans(e int32) (from, to int32) {
	s, in, out := f.EdgeOf(e)
	ps := f.G.PeerSwitch(s, in)
	return f.Chan(ps, f.peerPort[f.Chan(s, in)]), f.Chan(s, out)
}

// Cap is the number of data VLs channel c carries.
func (f *Fabric) Cap(c int32) int { return int(f.capv[c]) }

// Next is the switch after s toward dest index d and the out-port used, or
// (-1, port) when s delivers locally (CA port or port 0) or has no route.
func (f *Fabric) Next(s int32, d int) (int32, uint8) {
	out := f.R.LFT[s][f.DLIDs[d]]
	if out == plan.NoPort || out == 0 {
		return -1, out
	}
	return f.G.PeerSwitch(s, out), out
}

// Walk calls fn for every switch-to-switch channel and dependency of the
// route from switch s toward dest index d, in order: fn(chan, edge) where
// edge is the dependency from the previous channel into chan (-1 for the
// first). It stops at the delivering switch and fails on a loop or a hole.
func (f *Fabric) Walk(s int32, d int, fn func(ch, edge int32)) error {
	prev := int32(-1)
	for hops := 0; ; hops++ {
		if hops > f.N {
			return fmt.Errorf("DLID %d: forwarding loop through switch 0x%016x", f.DLIDs[d], f.G.SwitchGUID(s))
		}
		out := f.R.LFT[s][f.DLIDs[d]]
		if out == plan.NoPort {
			return fmt.Errorf("DLID %d: switch 0x%016x has no route", f.DLIDs[d], f.G.SwitchGUID(s))
		}
		t := f.G.PeerSwitch(s, out)
		if out == 0 || t < 0 {
			return nil
		}
		c := f.Chan(s, out)
		e := int32(-1)
		if prev >= 0 {
			e = f.Edge(s, f.peerPort[prev], out)
		}
		fn(c, e)
		prev = c
		s = t
	}
}

// Routed reports whether switch s has a route toward dest index d that
// reaches further than itself or delivers (it is a traffic source for d).
func (f *Fabric) Routed(s int32, d int) bool {
	return f.R.LFT[s][f.DLIDs[d]] != plan.NoPort
}

// ChanName prints a channel as 0x<guid>/<port>.
func (f *Fabric) ChanName(c int32) string {
	s, p := f.ChanOf(c)
	return fmt.Sprintf("0x%016x/%d", f.G.SwitchGUID(s), p)
}

// Trees holds, per destination, the children of every switch in the
// destination's tree (CSR), in an order where children precede parents.
type Trees struct {
	// For dest d: kids of switch s are Kid[d][Off[d][s]:Off[d][s+1]].
	Off [][]int32
	Kid [][]int32
	// Order[d] lists the routed switches leaves-first (reverse BFS from
	// the home switch).
	Order [][]int32
	// n is the number of switches; port[d*n+s] is Fabric.Next(s, d)'s
	// port, kept flat because ACRO and its plan ask for it millions of
	// times and the forwarding table costs four dependent loads. The next
	// switch is read off the fabric's small channel tables (chans, peer)
	// rather than kept beside it: a fresh plugin process pays for every
	// page it touches, and those tables stay in cache.
	n     int
	port  []uint8
	chans cdg.Channels
	peer  []int32
}

// Next is Fabric.Next(s, d) from the trees.
func (tr *Trees) Next(d int, s int32) (int32, uint8) {
	p := tr.port[d*tr.n+int(s)]
	if p == 0 || int32(p) >= tr.chans[s+1]-tr.chans[s] { // local, or plan.NoPort
		return -1, p
	}
	return tr.peer[tr.chans[s]+int32(p)], p
}

// BuildTrees derives every destination's tree. Switches without a route
// toward a destination are left out of it.
//
// The next hops are read switch by switch (a forwarding table row is
// read in LID order, 16 switches per work item so the writes fill whole
// cache lines), then each destination's tree is built from its own
// contiguous next hops; both steps run in parallel.
func (f *Fabric) BuildTrees() (*Trees, error) {
	nd := len(f.DLIDs)
	tr := &Trees{Off: make([][]int32, nd), Kid: make([][]int32, nd), Order: make([][]int32, nd),
		n: f.N, port: make([]uint8, nd*f.N), chans: f.chanBase, peer: f.peerSw}
	const block = 16
	if _, err := route.Each(context.Background(), (f.N+block-1)/block, 0, func(_, b int) error {
		lo, hi := b*block, min(f.N, (b+1)*block)
		for d, lid := range f.DLIDs {
			for s := lo; s < hi; s++ {
				tr.port[d*f.N+s] = f.R.LFT[s][lid]
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Each destination's offsets, children and order are windows of three
	// tables allocated once; fill is a worker's scratch.
	n := f.N
	offs, kids, orders := make([]int32, nd*(n+1)), make([]int32, nd*n), make([]int32, nd*n)
	err := route.ForEach(context.Background(), nd, func() func(int32) error {
		fill := make([]int32, n)
		return func(d int32) error {
			return f.buildTree(tr, int(d), offs[int(d)*(n+1):(int(d)+1)*(n+1)], kids[int(d)*n:(int(d)+1)*n], orders[int(d)*n:(int(d)+1)*n], fill)
		}
	})
	if err != nil {
		return nil, err
	}
	return tr, nil
}

// buildTree fills destination d's part of tr from its next hops: off, kid
// and order are its windows (N+1, N and N long, zero), fill is scratch.
func (f *Fabric) buildTree(tr *Trees, d int, off, kid, order, fill []int32) error {
	port := tr.port[d*f.N : (d+1)*f.N]
	parent := func(s int32) int32 { t, _ := tr.Next(d, s); return t }
	routed := 0
	for s := range int32(f.N) {
		if t := parent(s); t >= 0 {
			off[t+1]++
		}
		if port[s] != plan.NoPort {
			routed++
		}
	}
	for s := 0; s < f.N; s++ {
		off[s+1] += off[s]
	}
	kid = kid[:off[f.N]:off[f.N]]
	copy(fill, off[:f.N])
	for s := int32(0); s < int32(f.N); s++ {
		if t := parent(s); t >= 0 {
			kid[fill[t]] = s
			fill[t]++
		}
	}
	// BFS from the roots (switches that deliver locally).
	order = order[:0:routed]
	for s := int32(0); s < int32(f.N); s++ {
		if parent(s) < 0 && port[s] != plan.NoPort {
			order = append(order, s)
		}
	}
	for i := 0; i < len(order); i++ {
		order = append(order, kid[off[order[i]]:off[order[i]+1]]...)
	}
	if len(order) != routed {
		return fmt.Errorf("DLID %d: %d switches route toward it but only %d reach its home switch: the tables loop", f.DLIDs[d], routed, len(order))
	}
	slices.Reverse(order)
	tr.Off[d], tr.Kid[d], tr.Order[d] = off, kid, order
	return nil
}

// Kids lists the children of s in dest d's tree.
func (tr *Trees) Kids(d int, s int32) []int32 { return tr.Kid[d][tr.Off[d][s]:tr.Off[d][s+1]] }
