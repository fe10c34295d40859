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
	defer func() {
		if vt >= 0 {
			f.leanNext = make([]int32, f.nSwPorts)
			for i, h := range f.hopTmpl {
				f.leanNext[i] = (int32(h&0xffff) - 1) * chunkLIDs
				if h&0xffff == 0 {
					f.leanNext[i] = -1
				}
			}
		}
	}()
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
	}
	blk := w.block
	lo, hi := int(lids[0]), int(lids[m-1])+1
	dense := hi-lo == m
	// Rows are read rowGroup at a time, so the core waits for several row
	// misses at once (each row is on its own page), then checked.
	for s0 := 0; s0 < n; s0 += rowGroup {
		g := min(rowGroup, n-s0)
		for s := s0; s < s0+g; s++ {
			row, b := f.r.LFT[s], blk[s*chunkLIDs:s*chunkLIDs+m]
			if dense {
				copy(b, row[lo:hi])
				continue
			}
			for j, d := range lids {
				b[j] = row[d]
			}
		}
		for s := s0; s < s0+g; s++ {
			pb, np := int(f.portBase[s]), f.np[s]
			tmpl := f.hopTmpl[pb : pb+int(np)+1]
			deliver := f.deliver[pb : pb+int(np)+1]
			for j, out := range blk[s*chunkLIDs : s*chunkLIDs+m] {
				if out > np {
					return false
				}
				if h := tmpl[out]; h&0xffff == 0 && (h&tmplOwner == 0 || deliver[out] != dsts[j]) {
					return false // neither forwards to a switch nor delivers to the owner
				}
			}
		}
	}
	// Every entry is valid: the chunk's dependencies, and the out-ports
	// used (the switch's own traffic takes them), switch by switch.
	if w.leanSucc == nil {
		w.leanSucc, w.leanUsed = make([]uint64, f.nSwPorts), make([]uint64, n)
	}
	// Two accumulators, even and odd LIDs: a run of LIDs leaving by one
	// port would otherwise wait on the previous OR at every entry.
	acc0, acc1 := &w.leanAcc[0], &w.leanAcc[1]
	for s := range n {
		pb, np := int(f.portBase[s]), f.np[s]
		next := f.leanNext[pb : pb+int(np)+1]
		row := blk[s*chunkLIDs : s*chunkLIDs+m]
		var used uint64
		j := 0
		for ; j+1 < len(row); j += 2 {
			o0, o1 := row[j]&63, row[j+1]&63
			used |= 1<<o0 | 1<<o1
			if t := next[o0]; t >= 0 {
				acc0[o0] |= 1 << (blk[int(t)+j] & 63)
			}
			if t := next[o1]; t >= 0 {
				acc1[o1] |= 1 << (blk[int(t)+j+1] & 63)
			}
		}
		if j < len(row) {
			o := row[j] & 63
			used |= 1 << o
			if t := next[o]; t >= 0 {
				acc0[o] |= 1 << (blk[int(t)+j] & 63)
			}
		}
		w.leanUsed[s] |= used
		succ := w.leanSucc[pb : pb+int(np)+1]
		for u := used; u != 0; u &= u - 1 {
			p := bits.TrailingZeros64(u)
			succ[p] |= acc0[p] | acc1[p]
			acc0[p], acc1[p] = 0, 0
		}
	}
	for j, d := range lids {
		w.arriveAll(d, dsts[j])
	}
	return true
}

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
