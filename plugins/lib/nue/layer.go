package nue

import (
	"cmp"
	"math/bits"
	"slices"
)

// layer is the channel dependency graph of one virtual layer over the
// switch-to-switch channels, kept acyclic: a turn (in → out at the switch
// between them) is counted once per tree using it, and a topological order
// of the channels is maintained incrementally (Pearce and Kelly), so a
// turn along the order is accepted at once and only a turn against it
// searches, among the channels between its ends in the order.
//
// The search is bounded: a turn whose forward or backward search visits
// more than limit channels is refused as if it closed a cycle. Refusing is always safe
// (the tree takes another channel, or the escape tree), and it keeps the
// cost of a turn bounded on large, dense layers, where an exact search
// would cross most of the graph.
type layer struct {
	n   *net
	cnt []int32 // per turn id
	// succ[c*words:] has bit j set when the turn from channel c onto the
	// j-th channel leaving its head switch is counted; pred[c*words:] bit
	// i when the turn onto c from the i-th channel entering its tail is.
	// The searches walk the set bits instead of every turn of a switch.
	succ, pred []uint64
	words      int32
	ord        []int32 // per channel
	mark       []uint32
	epoch      uint32
	stack      []int32
	fwd        []int32
	bwd        []int32
	pos        []int32
	limit      int
	// cyclic[t] == cleared+1 when turn t was found to close a cycle and
	// no turn has left the layer since: a cycle only grows more paths as
	// turns are added, so the turn is refused without a search (trees
	// try the same refused turns again and again). cleared counts the
	// turns that left the layer.
	cyclic  []uint32
	cleared uint32
	// refused counts turns refused because the search hit the limit;
	// calls, searches and visited what insert did, known the turns
	// refused as known cycles, for logs.
	refused, calls, searches, visited, known int64
}

// searchLimit bounds a turn's search (channels visited) in a layer of
// budget: 2048 channels with one layer, down to 256 at 8. A refused turn
// is a detour the layer may not have needed: the 512-switch random graph
// at 1 VL refuses 3,462 turns instead of 252,769 with 2048 rather than
// 256, for eBB 0.4258 -> 0.4272 and route CPU 11.4 -> 13.0 s. With several
// layers each holds fewer dependencies, and a wide bound costs more than
// it gains: 4096 at 8 VLs would route the 10,000-CA graph in 6.6 s of
// CPU instead of 2.7 s.
func searchLimit(budget int) int { return max(256, 2048/max(1, budget)) }

// newLayer returns an empty layer whose channels start in order ord
// (copied) and whose searches visit at most limit channels.
func newLayer(n *net, ord []int32, limit int) *layer {
	nc := n.Channels()
	words := (n.maxDeg + 63) / 64
	return &layer{n: n, cnt: make([]int32, n.turns), cyclic: make([]uint32, n.turns), ord: slices.Clone(ord), mark: make([]uint32, nc), limit: limit,
		succ: make([]uint64, nc*int(words)), pred: make([]uint64, nc*int(words)), words: words}
}

// set marks the turn from in onto out (at the switch between them) in
// succ and pred, or clears it.
func (l *layer) set(in, out int32, on bool) {
	n := l.n
	s := n.Peer[in]
	j, i := out-n.Off[s], n.Rev[in]-n.Off[s]
	a, b := in*l.words+j/64, out*l.words+i/64
	if on {
		l.succ[a] |= 1 << (j % 64)
		l.pred[b] |= 1 << (i % 64)
	} else {
		l.succ[a] &^= 1 << (j % 64)
		l.pred[b] &^= 1 << (i % 64)
	}
}

// insert adds one use of the turn from channel in onto channel out, or
// returns false (changing nothing) when the turn could close a cycle.
func (l *layer) insert(in, out int32) bool {
	n := l.n
	l.calls++
	t := n.turn(in, out)
	if l.cnt[t] > 0 {
		l.cnt[t]++
		return true
	}
	if l.ord[in] < l.ord[out] {
		l.cnt[t] = 1
		l.set(in, out, true)
		return true
	}
	if l.cyclic[t] == l.cleared+1 {
		l.known++
		return false
	}
	lb, ub := l.ord[out], l.ord[in]
	l.searches++
	defer func() { l.visited += int64(len(l.fwd) + len(l.bwd)) }()
	l.epoch++
	// Forward from out among channels ordered below in.
	l.fwd, l.bwd = l.fwd[:0], l.bwd[:0]
	l.stack = append(l.stack[:0], out)
	l.mark[out] = l.epoch
	for len(l.stack) > 0 {
		c := l.stack[len(l.stack)-1]
		l.stack = l.stack[:len(l.stack)-1]
		l.fwd = append(l.fwd, c)
		if len(l.fwd) > l.limit {
			l.refused++
			return false
		}
		base := n.Off[n.Peer[c]]
		for w := int32(0); w < l.words; w++ {
			for m := l.succ[c*l.words+w]; m != 0; m &= m - 1 {
				nx := base + 64*w + int32(bits.TrailingZeros64(m))
				if nx == in {
					l.cyclic[t] = l.cleared + 1
					return false
				}
				if l.mark[nx] != l.epoch && l.ord[nx] < ub {
					l.mark[nx] = l.epoch
					l.stack = append(l.stack, nx)
				}
			}
		}
	}
	// Backward from in among channels ordered above out.
	l.stack = append(l.stack[:0], in)
	l.mark[in] = l.epoch
	for len(l.stack) > 0 {
		c := l.stack[len(l.stack)-1]
		l.stack = l.stack[:len(l.stack)-1]
		l.bwd = append(l.bwd, c)
		if len(l.bwd) > l.limit {
			l.refused++
			return false
		}
		base := n.Off[n.From[c]]
		for w := int32(0); w < l.words; w++ {
			for m := l.pred[c*l.words+w]; m != 0; m &= m - 1 {
				p := n.Rev[base+64*w+int32(bits.TrailingZeros64(m))]
				if l.mark[p] != l.epoch && l.ord[p] > lb {
					l.mark[p] = l.epoch
					l.stack = append(l.stack, p)
				}
			}
		}
	}
	// The backward set takes the lowest of the freed positions, then the
	// forward set, each in its old relative order.
	byOrd := func(a, b int32) int { return cmp.Compare(l.ord[a], l.ord[b]) }
	slices.SortFunc(l.bwd, byOrd)
	slices.SortFunc(l.fwd, byOrd)
	l.pos = l.pos[:0]
	for _, c := range l.bwd {
		l.pos = append(l.pos, l.ord[c])
	}
	for _, c := range l.fwd {
		l.pos = append(l.pos, l.ord[c])
	}
	slices.Sort(l.pos)
	i := 0
	for _, c := range l.bwd {
		l.ord[c] = l.pos[i]
		i++
	}
	for _, c := range l.fwd {
		l.ord[c] = l.pos[i]
		i++
	}
	l.cnt[t] = 1
	l.set(in, out, true)
	return true
}

// remove drops one use of turn t; the order stays valid.
func (l *layer) remove(t int32) {
	if l.cnt[t]--; l.cnt[t] == 0 {
		in, out := l.n.turnChans(t)
		l.set(in, out, false)
		l.cleared++
	}
}
