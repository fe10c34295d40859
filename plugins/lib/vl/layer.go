package vl

import (
	"cmp"
	"slices"
)

// Layer is the channel dependency graph of one virtual layer: a count of
// the routes using each dependency (a dependency exists while its count is
// positive). Successors and predecessors are read off the counts, so the
// graph needs no adjacency lists: a channel's successors are the out-ports
// of its far switch whose dependency from its in-port is counted.
type Layer struct {
	f   *Fabric
	Cnt []int32
	// ord is a topological order kept by Insert (Pearce & Kelly): every
	// counted dependency goes from a lower to a higher ord.
	ord []int32
	// scratch for Insert
	mark  []uint32
	epoch uint32
	stack []int32
	fwd   []int32
	bwd   []int32
	// scratch for FindCycle, all false between calls
	onStack []bool
}

// NewLayer returns an empty layer.
func (f *Fabric) NewLayer() *Layer {
	l := &Layer{f: f, Cnt: make([]int32, f.Edges())}
	return l
}

// succ calls fn for every successor channel of c in l.
func (l *Layer) succ(c int32, fn func(next int32) bool) bool {
	f := l.f
	t := f.peerSw[c]
	if t < 0 {
		return true
	}
	in := f.peerPort[c]
	base := f.Edge(t, in, 0)
	for q := 1; q <= f.np[t]; q++ {
		if l.Cnt[base+int32(q)] > 0 {
			if !fn(f.chanBase[t] + int32(q)) {
				return false
			}
		}
	}
	return true
}

// pred calls fn for every predecessor channel of c in l.
func (l *Layer) pred(c int32, fn func(prev int32) bool) bool {
	f := l.f
	s, out := f.ChanOf(c)
	for i := 1; i <= f.np[s]; i++ {
		ic := f.chanBase[s] + int32(i)
		ps := f.peerSw[ic]
		if ps < 0 || l.Cnt[f.Edge(s, uint8(i), out)] == 0 {
			continue
		}
		if !fn(f.chanBase[ps] + int32(f.peerPort[ic])) {
			return false
		}
	}
	return true
}

func (l *Layer) initOrder() {
	if l.ord != nil {
		return
	}
	n := l.f.Chans()
	l.ord = make([]int32, n)
	for i := range l.ord {
		l.ord[i] = int32(i)
	}
	l.mark = make([]uint32, n)
}

// Insert adds one route's use of dependency e. It returns false, leaving l
// unchanged, when e is new and would close a cycle. The incremental order
// makes most insertions O(1): only an edge against the order searches, and
// only among channels between its ends in the order.
func (l *Layer) Insert(e int32) bool {
	if l.Cnt[e] > 0 {
		l.Cnt[e]++
		return true
	}
	l.initOrder()
	x, y := l.f.EdgeChans(e)
	if l.ord[x] < l.ord[y] {
		l.Cnt[e] = 1
		return true
	}
	lb, ub := l.ord[y], l.ord[x]
	l.epoch++
	// Forward from y among channels ordered at most ub.
	l.fwd = l.fwd[:0]
	l.stack = append(l.stack[:0], y)
	l.mark[y] = l.epoch
	for len(l.stack) > 0 {
		c := l.stack[len(l.stack)-1]
		l.stack = l.stack[:len(l.stack)-1]
		l.fwd = append(l.fwd, c)
		cyc := !l.succ(c, func(n int32) bool {
			if n == x {
				return false
			}
			if l.mark[n] != l.epoch && l.ord[n] < ub {
				l.mark[n] = l.epoch
				l.stack = append(l.stack, n)
			}
			return true
		})
		if cyc {
			return false
		}
	}
	// Backward from x among channels ordered at least lb.
	l.bwd = l.bwd[:0]
	l.stack = append(l.stack[:0], x)
	l.mark[x] = l.epoch
	for len(l.stack) > 0 {
		c := l.stack[len(l.stack)-1]
		l.stack = l.stack[:len(l.stack)-1]
		l.bwd = append(l.bwd, c)
		l.pred(c, func(p int32) bool {
			if l.mark[p] != l.epoch && l.ord[p] > lb {
				l.mark[p] = l.epoch
				l.stack = append(l.stack, p)
			}
			return true
		})
	}
	// Reorder: the backward set takes the lowest of the freed positions,
	// then the forward set, each keeping its relative order.
	sortByOrd(l.bwd, l.ord)
	sortByOrd(l.fwd, l.ord)
	pos := make([]int32, 0, len(l.bwd)+len(l.fwd))
	for _, c := range l.bwd {
		pos = append(pos, l.ord[c])
	}
	for _, c := range l.fwd {
		pos = append(pos, l.ord[c])
	}
	slices.Sort(pos)
	i := 0
	for _, c := range l.bwd {
		l.ord[c] = pos[i]
		i++
	}
	for _, c := range l.fwd {
		l.ord[c] = pos[i]
		i++
	}
	l.Cnt[e] = 1
	return true
}

// Remove drops one route's use of dependency e. Removing never breaks the
// order Insert keeps.
func (l *Layer) Remove(e int32) { l.Cnt[e]-- }

// FindCycle returns the dependencies of one cycle of l, or nil. black
// carries channels proven to lie on no cycle across calls: removing
// dependencies cannot put them on one, so a caller that only removes
// between calls may pass the same slice (zeroed, of length Chans()) again.
func (l *Layer) FindCycle(black []bool) []int32 {
	f := l.f
	n := f.Chans()
	if l.onStack == nil {
		l.onStack = make([]bool, n)
	}
	onStack := l.onStack
	type frame struct {
		c    int32
		next int // next out-port of the far switch to try
	}
	var stack []frame
	for root := int32(0); root < int32(n); root++ {
		if black[root] || f.peerSw[root] < 0 {
			continue
		}
		stack = append(stack[:0], frame{c: root, next: 1})
		onStack[root] = true
		for len(stack) > 0 {
			fr := &stack[len(stack)-1]
			t := f.peerSw[fr.c]
			in := f.peerPort[fr.c]
			base := f.Edge(t, in, 0)
			pushed := false
			for ; fr.next <= f.np[t]; fr.next++ {
				q := fr.next
				if l.Cnt[base+int32(q)] <= 0 {
					continue
				}
				nc := f.chanBase[t] + int32(q)
				if black[nc] {
					continue
				}
				if onStack[nc] {
					// The cycle: nc ... top, then back to nc.
					i := len(stack) - 1
					for stack[i].c != nc {
						i--
					}
					var cyc []int32
					for j := i; j < len(stack); j++ {
						a := stack[j].c
						b := nc
						if j+1 < len(stack) {
							b = stack[j+1].c
						}
						bs, bp := f.ChanOf(b)
						cyc = append(cyc, f.Edge(bs, f.peerPort[a], bp))
					}
					for _, fr := range stack {
						onStack[fr.c] = false
					}
					return cyc
				}
				fr.next++
				stack = append(stack, frame{c: nc, next: 1})
				onStack[nc] = true
				pushed = true
				break
			}
			if !pushed {
				black[fr.c] = true
				onStack[fr.c] = false
				stack = stack[:len(stack)-1]
			}
		}
	}
	return nil
}

func sortByOrd(cs []int32, ord []int32) {
	slices.SortFunc(cs, func(a, b int32) int { return cmp.Compare(ord[a], ord[b]) })
}
