package analysis

import (
	"fmt"
	"math/bits"
)

// forEachBit calls fn for every set bit i in [lo, hi).
func forEachBit(bs []uint64, lo, hi int, fn func(i int)) {
	for wi := lo >> 6; wi<<6 < hi; wi++ {
		x := bs[wi]
		if x == 0 {
			continue
		}
		for x != 0 {
			b := bits.TrailingZeros64(x)
			x &= x - 1
			i := wi<<6 + b
			if i >= lo && i < hi {
				fn(i)
			}
		}
	}
}

// finishVLs turns the merged dependency bitsets into per-VL channel
// dependency graphs, checks them for cycles and checks every channel's VLs
// against the VLCap of both ends of its link.
func (f *fabric) finishVLs(rep *Report, dep [16][]uint64, caOriginSL []uint16, caSL []uint16, slsUsed uint16, opt Options) {
	chanVL := make([]uint16, f.nChan)
	type edge struct{ from, to int32 }
	var edges [16][]edge
	for vl, bs := range dep {
		if bs == nil {
			continue
		}
		for s := int32(0); s < int32(f.nsw); s++ {
			w := int(f.np[s]) + 1
			base := f.edgeBase[s]
			pb := int(f.portBase[s])
			forEachBit(bs, base, f.edgeBase[s+1], func(i int) {
				in, out := (i-base)/w, (i-base)%w
				to := pb + out
				chanVL[to] |= 1 << vl
				if in == 0 {
					return // originated by the switch itself
				}
				if ps := f.peerSw[pb+in]; ps >= 0 {
					from := int(f.portBase[ps]) + int(f.peerPort[pb+in])
					edges[vl] = append(edges[vl], edge{int32(from), int32(to)})
				}
			})
		}
	}
	// First hops of CA traffic: at the CA's own port, and at the switch
	// from the CA's in-port (every CA port of the switch is assumed to send
	// every SL seen there; exact when tables do not depend on the in-port).
	for s := int32(0); s < int32(f.nsw); s++ {
		pb := int(f.portBase[s])
		for out := 1; out <= int(f.np[s]); out++ {
			m := caOriginSL[pb+out]
			for m != 0 {
				sl := uint8(bits.TrailingZeros16(m))
				m &^= 1 << sl
				if f.tabIdx == nil {
					chanVL[pb+out] |= 1 << (f.tables[0][sl] & 15)
					continue
				}
				for _, e := range f.caList[f.caStart[s]:f.caStart[s+1]] {
					chanVL[pb+out] |= 1 << (f.vl(s, f.epIn[e], uint8(out), sl) & 15)
				}
			}
		}
	}
	for e, m := range caSL {
		for m != 0 {
			sl := uint8(bits.TrailingZeros16(m))
			m &^= 1 << sl
			chanVL[f.caChan[e]] |= 1 << (f.caVL(int32(e), sl) & 15)
		}
	}

	var used uint32
	for c, m := range chanVL {
		if m == 0 {
			continue
		}
		used |= uint32(m)
		p := f.chanPort(c)
		capv := f.topo.LinkVLs(p)
		for _, vl := range maskList(uint32(m)) {
			var msg string
			switch {
			case vl == 15:
				msg = fmt.Sprintf("channel %s: traffic is mapped to VL15, which drops data packets; fix the SL2VL tables", f.chanName(c))
			case vl >= capv:
				msg = fmt.Sprintf("channel %s: traffic on VL%d but the link carries %d data VLs (VLCap of both ends); use fewer VLs or a VL assigner that honours VLCap", f.chanName(c), vl, capv)
			default:
				continue
			}
			rep.VLProblemCount++
			if len(rep.VLProblems) < opt.Samples {
				rep.VLProblems = append(rep.VLProblems, VLProblem{Channel: f.chanName(c), VL: vl, VLCap: capv, Message: msg})
			}
		}
	}
	rep.VLsUsed = maskList(used &^ (1 << 15))
	rep.SLsUsed = maskList(uint32(slsUsed))

	rep.DeadlockFree = true
	for vl := range 16 {
		if dep[vl] == nil && used&(1<<vl) == 0 {
			continue
		}
		es := edges[vl]
		st := VLStats{VL: vl, Edges: len(es), Acyclic: true}
		// CSR forward and backward adjacency over switch channels.
		n := f.nSwPorts
		outDeg := make([]int32, n+1)
		inDeg := make([]int32, n+1)
		for _, e := range es {
			outDeg[e.from+1]++
			inDeg[e.to+1]++
		}
		touched := 0
		for c := 0; c < n; c++ {
			if outDeg[c+1] > 0 || inDeg[c+1] > 0 || chanVL[c]&(1<<vl) != 0 {
				touched++
			}
			outDeg[c+1] += outDeg[c]
			inDeg[c+1] += inDeg[c]
		}
		st.Channels = touched
		succ := make([]int32, len(es))
		pred := make([]int32, len(es))
		fo := append([]int32(nil), outDeg[:n]...)
		fi := append([]int32(nil), inDeg[:n]...)
		for _, e := range es {
			succ[fo[e.from]] = e.to
			fo[e.from]++
			pred[fi[e.to]] = e.from
			fi[e.to]++
		}
		// Kahn's algorithm: whatever keeps an in-degree lies on or behind
		// a cycle.
		deg := make([]int32, n)
		for c := 0; c < n; c++ {
			deg[c] = inDeg[c+1] - inDeg[c]
		}
		queue := make([]int32, 0, n)
		for c := 0; c < n; c++ {
			if deg[c] == 0 {
				queue = append(queue, int32(c))
			}
		}
		for qi := 0; qi < len(queue); qi++ {
			c := queue[qi]
			for _, t := range succ[outDeg[c]:outDeg[c+1]] {
				deg[t]--
				if deg[t] == 0 {
					queue = append(queue, t)
				}
			}
		}
		if len(queue) < n {
			st.Acyclic = false
			rep.DeadlockFree = false
			st.Cycle = f.findCycle(deg, pred, inDeg)
		}
		rep.VLs = append(rep.VLs, st)
	}
}

// findCycle walks predecessors among the channels Kahn's algorithm could not
// remove (each has a remaining predecessor) until one repeats, and returns
// that cycle in dependency order.
func (f *fabric) findCycle(deg, pred, inDeg []int32) []string {
	start := int32(-1)
	for c, d := range deg {
		if d > 0 {
			start = int32(c)
			break
		}
	}
	if start < 0 {
		return nil
	}
	pos := map[int32]int{}
	var seq []int32
	cur := start
	for {
		if j, ok := pos[cur]; ok {
			cyc := []string{f.chanName(int(seq[j]))}
			for i := len(seq) - 1; i > j; i-- {
				cyc = append(cyc, f.chanName(int(seq[i])))
			}
			return cyc
		}
		pos[cur] = len(seq)
		seq = append(seq, cur)
		nxt := int32(-1)
		for _, p := range pred[inDeg[cur]:inDeg[cur+1]] {
			if deg[p] > 0 {
				nxt = p
				break
			}
		}
		if nxt < 0 {
			return nil // cannot happen: a remaining channel has a remaining predecessor
		}
		cur = nxt
	}
}
