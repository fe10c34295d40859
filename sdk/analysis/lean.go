package analysis

import "math/bits"

// The verdict-only path (Options.VerdictOnly): what a verifier needs of a
// one-VL plan without LMC, overrides or orphan CAs, where every switch is
// a source toward every LID. There, every LFT entry that forwards to a
// switch starts a dependency, and a forwarding loop of valid entries is a
// cycle of those dependencies. So a chunk of LIDs whose every entry either
// forwards to a switch over an up link or delivers to the LID's owner
// arrives from every switch, unless the one-VL graph has a cycle: then
// Analyse starts again without this path, and the general one names the
// loops. Each entry is looked at once, switch by switch over a block of
// the chunk's LIDs (their entries in one cache line per switch), where
// the walk per LID, the loads and the hops cost ~30 ns an entry.

// leanVL returns the VL every LID's traffic takes when Analyse may take
// the verdict-only path, or -1; it fills leanNext for that path.
func (f *fabric) leanVL(opt Options) int {
	if !opt.VerdictOnly || opt.general || opt.AllLIDs || opt.noLean || !f.narrow || f.nc != 1 ||
		f.tabIdx != nil || len(f.slOvs) > 0 || len(f.dlidOvs) > 0 || len(f.orphans) > 0 {
		return -1
	}
	vt := -1
	for _, d := range f.lidList {
		v := int(f.tables[0][f.sl(d)&15] & 15)
		switch {
		case v == 15:
			return -1 // dropped: the general path reports it
		case vt < 0:
			vt = v
		case v != vt:
			return -1
		}
	}
	if vt < 0 {
		return -1
	}
	f.leanNext = make([][256]int32, f.nsw)
	for s := range f.nsw {
		next := &f.leanNext[s]
		for p := range next {
			next[p] = leanBad
		}
		pb := int(f.portBase[s])
		for p := range int(f.np[s]) + 1 {
			switch i := pb + p; {
			case f.link[i].sw() >= 0 && p > 0:
				next[p] = f.link[i].sw() * chunkLIDs
			case f.deliver[i] >= 0:
				next[p] = -1 // arrives if it delivers to the LID's owner
			}
		}
	}
	return vt
}

// leanChunk does what runChunk does for lids, except the loads and hops,
// when every entry toward them forwards to a switch over an up link or
// delivers to the LID's owner (the dependencies of a loop among such
// entries make the graph cyclic, see Analyse). It reports false, having
// changed nothing, when an entry does neither: runChunk takes the chunk.
func (w *worker) leanChunk(lids []uint16) bool {
	f := w.f
	n, m := f.nsw, len(lids)
	dsts := w.dsts[:m]
	for j, d := range lids {
		dsts[j] = f.r.LIDOwner[d] - 1
	}
	if w.block == nil {
		w.block = make([]uint8, n*chunkLIDs)
		w.leanSucc, w.leanUsed = make([]uint64, f.nSwPorts), make([]uint64, n)
	}
	blk := w.block
	lo, hi := int(lids[0]), int(lids[m-1])+1
	dense := hi-lo == m
	// Rows are read rowGroup at a time, each on its own page; the next
	// group's are touched first, so that their misses are in flight while
	// this group is copied.
	var touch uint8
	for s0 := 0; s0 < n; s0 += rowGroup {
		for s := s0 + rowGroup; s < min(s0+2*rowGroup, n); s++ {
			touch |= f.r.LFT[s][lo]
		}
		for s := s0; s < min(s0+rowGroup, n); s++ {
			row, b := f.r.LFT[s], blk[s*chunkLIDs:s*chunkLIDs+chunkLIDs]
			if dense {
				copy(b, row[lo:hi])
			} else {
				for j, d := range lids {
					b[j] = row[d]
				}
			}
			// A short chunk's row is padded with port 0, which names no
			// switch, so leanRow adds nothing for it.
			clear(b[m:])
		}
	}
	w.touch = touch
	// Switch by switch: the dependencies of the entries that forward to a
	// switch (the next switch's entry for the same LID is its out-port
	// there), and the out-ports used (the switch's own traffic takes
	// them). An entry that does not forward must deliver to the LID's
	// owner; one that does neither sends the chunk back, with what was
	// added undone (the undo log holds each word's value before).
	acc := &w.leanAcc
	undo := w.leanUndo[:0]
	tail := uint64(1)<<m - 1 // the chunk's entries in a row
	if m == chunkLIDs {
		tail = ^uint64(0)
	}
	for s := range n {
		next := &f.leanNext[s]
		row := (*[chunkLIDs]uint8)(blk[s*chunkLIDs:])
		used, odd := leanRow(row, next, blk, acc)
		odd &= tail // the padding's port 0 is no entry
		for ; odd != 0; odd &= odd - 1 {
			j := bits.TrailingZeros64(odd)
			if o := row[j]; next[o] == leanBad || f.deliver[int(f.portBase[s])+int(o)] != dsts[j] {
				for i := len(undo) - 1; i >= 0; i-- {
					*undo[i].at = undo[i].was
				}
				w.leanUndo = undo[:0]
				clear(acc[0][:])
				clear(acc[1][:])
				return false
			}
		}
		if old := w.leanUsed[s]; old|used != old {
			undo = append(undo, leanWas{&w.leanUsed[s], old})
			w.leanUsed[s] = old | used
		}
		succ := w.leanSucc[f.portBase[s]:f.portBase[s+1]]
		for ; used != 0; used &= used - 1 {
			p := bits.TrailingZeros64(used)
			if old, a := succ[p], acc[0][p]|acc[1][p]; old|a != old {
				undo = append(undo, leanWas{&succ[p], old})
				succ[p] = old | a
			}
			acc[0][p], acc[1][p] = 0, 0
		}
	}
	w.leanUndo = undo[:0]
	for j, d := range lids {
		w.arriveAll(d, dsts[j])
	}
	return true
}

// leanRow ORs into acc the dependencies of a switch's entries row (its
// entries of a chunk, in the block blk), and returns the ports they name
// and, as bits by index, the entries that do not forward to a switch
// (next < 0), for the caller to check. Two accumulators, even and odd
// entries: a run of LIDs leaving by one port would otherwise wait on the
// previous OR at every entry. It is a function of its own, over a row
// whose length the compiler knows, so that its loop keeps its variables
// in registers and checks no index into the row.
func leanRow(row *[chunkLIDs]uint8, next *[256]int32, blk []uint8, acc *[2][64]uint64) (used, odd uint64) {
	for j := 0; j < chunkLIDs; j += 2 {
		o0, o1 := row[j], row[j+1]
		used |= 1<<(o0&63) | 1<<(o1&63)
		if t := next[o0]; t >= 0 {
			// The next switch's own entry; 0 (it owns the LID) sets bit
			// 0, which merge clears: no dependency.
			acc[0][o0&63] |= 1 << (blk[int(t)+j] & 63)
		} else {
			odd |= 1 << j
		}
		if t := next[o1]; t >= 0 {
			acc[1][o1&63] |= 1 << (blk[int(t)+j+1] & 63)
		} else {
			odd |= 2 << j
		}
	}
	return used, odd
}

// leanWas is a word leanChunk changed and its value before.
type leanWas struct {
	at  *uint64
	was uint64
}

// leanBad marks, in fabric.leanNext, an out-port no entry may name: one
// the switch lacks, or whose link is down or uncabled.
const leanBad = -2

// arriveAll counts LID d (owned by dst, LMC 0, no overrides) as arriving
// from every switch, as plainLID does then, and notes its SL where a
// source sends with it.
func (w *worker) arriveAll(d uint16, dst int32) {
	f := w.f
	n := f.nsw
	x := f.sl(d)
	cas := int64(f.caStart[n])
	if f.isCA[dst] {
		// Every switch sends (the destination's leaf to its CA port),
		// every CA but dst does.
		w.slsUsed |= 1 << x
		if cas > 1 {
			w.caSLByClass[0] |= 1 << x
		}
		w.countPairs(true, f.classTotal[0]-1, f.classTotal[0]-1, cas-1)
		return
	}
	// A switch's LID: every other switch sends, and the CAs not on it.
	others := cas - int64(f.caCount[f.epSw[dst]])
	if n > 1 || others > 0 {
		w.slsUsed |= 1 << x
	}
	if others > 0 {
		w.caSLByClass[0] |= 1 << x
	}
	w.countPairs(false, f.swClassTotal[0]-1, f.swClassTotal[0]-1, int64(n)-1)
}
