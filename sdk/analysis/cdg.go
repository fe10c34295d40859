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

// checkVLCaps checks every channel's VLs against the VLCap of both ends
// of its link (a VL beyond it, or VL15, which drops), and lists the VLs
// and SLs used.
func (f *fabric) checkVLCaps(rep *Report, chanVL []uint16, slsUsed uint16, opt Options) {
	var used uint32
	for c, m := range chanVL {
		used |= uint32(m)
		if m <= 1 {
			continue // nothing, or VL0 alone, which every link carries
		}
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
}

// finishVLs builds the channel dependency graph over (switch channel,
// VL) nodes from the merged dependency bitsets and looks for cycles: a
// cycle among (channel, VL) pairs is a credit loop, whether it stays on
// one VL or crosses several through the SL2VL tables. CA out-channels are
// left out of the graph: nothing depends on them, so no cycle passes
// them.
func (f *fabric) finishVLs(rep *Report, dep [16][16][]uint64, chanVL []uint16) {
	var used uint32
	for _, m := range chanVL {
		used |= uint32(m)
	}

	// Node of (switch channel c, VL v): vIdx[v]*nSw + c, over the VLs
	// switch channels carry (every VL of a dependency is among them).
	nSw := f.nSwPorts
	var swVLs uint16
	for _, m := range chanVL[:nSw] {
		swVLs |= m
	}
	vls := maskList(uint32(swVLs &^ (1 << 15)))
	var vIdx [16]int32
	for i, v := range vls {
		vIdx[v] = int32(i)
	}
	g := &cdgGraph{f: f, nSw: nSw, vls: vls}
	n := len(vls) * nSw
	type edge struct{ from, to int32 }
	nBits := 0
	for a := range dep {
		for _, bs := range dep[a] {
			for _, x := range bs {
				nBits += bits.OnesCount64(x)
			}
		}
	}
	es := make([]edge, 0, nBits)
	var perVL, cross [16]int
	for a := range dep {
		for b, bs := range dep[a] {
			if bs == nil {
				continue
			}
			for t := int32(0); t < int32(f.nsw); t++ {
				w := int(f.np[t]) + 1
				base := f.edgeBase[t]
				pb := int(f.portBase[t])
				forEachBit(bs, base, f.edgeBase[t+1], func(i int) {
					in, out := (i-base)/w, (i-base)%w
					l := f.link[pb+in]
					if in == 0 || l.sw() < 0 {
						return // recorded only for arrivals from a switch
					}
					from := int32(f.portBase[l.sw()]) + int32(l.port)
					es = append(es, edge{vIdx[a]*int32(nSw) + from, vIdx[b]*int32(nSw) + int32(pb+out)})
					perVL[b]++
					if a != b {
						cross[b]++
					}
				})
			}
		}
	}

	// CSR forward and backward adjacency.
	outDeg := make([]int32, n+1)
	inDeg := make([]int32, n+1)
	for _, e := range es {
		outDeg[e.from+1]++
		inDeg[e.to+1]++
	}
	for c := 0; c < n; c++ {
		outDeg[c+1] += outDeg[c]
		inDeg[c+1] += inDeg[c]
	}
	succ := make([]int32, len(es))
	fo := append([]int32(nil), outDeg[:n]...)
	for _, e := range es {
		succ[fo[e.from]] = e.to
		fo[e.from]++
	}
	g.succ, g.start = succ, outDeg
	// Kahn's algorithm: whatever keeps an in-degree lies on or behind a
	// cycle.
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
	cyclic := len(queue) < n
	if cyclic {
		g.components(deg)
	}

	for v := range 15 {
		if used&(1<<v) == 0 {
			continue
		}
		st := VLStats{VL: v, Edges: perVL[v], FromOtherVLs: cross[v], Acyclic: true}
		for c := 0; c < nSw; c++ {
			if chanVL[c]&(1<<v) != 0 {
				st.Channels++
			}
		}
		if cyclic && swVLs&(1<<v) != 0 {
			if cyc := g.cycleOn(vIdx[v]); cyc != nil {
				st.Acyclic = false
				rep.DeadlockFree = false
				st.Cycle, st.CycleVLs = g.describe(cyc)
			}
		}
		rep.VLs = append(rep.VLs, st)
	}
}

// cdgGraph is the (channel, VL) dependency graph in CSR form, with its
// strongly connected components once a cycle is known to exist.
type cdgGraph struct {
	f     *fabric
	nSw   int
	vls   []int
	succ  []int32
	start []int32 // succ[start[u]:start[u+1]] are u's successors
	comp  []int32 // component of a node left by Kahn's algorithm, else -1
	size  []int32 // nodes per component
}

// components labels the nodes Kahn's algorithm left (deg > 0) with their
// strongly connected component (iterative Tarjan). Only nodes in a
// component of two or more lie on a cycle.
func (g *cdgGraph) components(deg []int32) {
	n := len(deg)
	g.comp = make([]int32, n)
	index := make([]int32, n) // discovery order + 1; 0 = not yet seen
	low := make([]int32, n)
	onStack := make([]bool, n)
	for i := range g.comp {
		g.comp[i] = -1
	}
	var stack []int32
	type frame struct{ v, next int32 }
	var call []frame
	counter := int32(0)
	push := func(v int32) {
		counter++
		index[v], low[v] = counter, counter
		stack = append(stack, v)
		onStack[v] = true
		call = append(call, frame{v, g.start[v]})
	}
	for r := int32(0); r < int32(n); r++ {
		if deg[r] == 0 || index[r] != 0 {
			continue
		}
		push(r)
		for len(call) > 0 {
			fr := &call[len(call)-1]
			v := fr.v
			if fr.next < g.start[v+1] {
				w := g.succ[fr.next]
				fr.next++
				switch {
				case deg[w] == 0:
				case index[w] == 0:
					push(w)
				case onStack[w]:
					low[v] = min(low[v], index[w])
				}
				continue
			}
			if low[v] == index[v] {
				id := int32(len(g.size))
				var sz int32
				for {
					x := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[x] = false
					g.comp[x] = id
					sz++
					if x == v {
						break
					}
				}
				g.size = append(g.size, sz)
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
		}
	}
}

// cycleOn returns a shortest cycle through the first node on VL index vi
// that lies on a cycle, in dependency order (each depends on the one
// before, the first on the last), or nil when no cycle touches that VL.
func (g *cdgGraph) cycleOn(vi int32) []int32 {
	u := int32(-1)
	for c := vi * int32(g.nSw); c < (vi+1)*int32(g.nSw); c++ {
		if id := g.comp[c]; id >= 0 && g.size[id] > 1 {
			u = c
			break
		}
	}
	if u < 0 {
		return nil
	}
	id := g.comp[u]
	parent := map[int32]int32{u: u}
	queue := []int32{u}
	for qi := 0; qi < len(queue); qi++ {
		x := queue[qi]
		for _, y := range g.succ[g.start[x]:g.start[x+1]] {
			if g.comp[y] != id {
				continue
			}
			if y == u {
				var cyc []int32
				for z := x; z != u; z = parent[z] {
					cyc = append(cyc, z)
				}
				cyc = append(cyc, u)
				for i, j := 0, len(cyc)-1; i < j; i, j = i+1, j-1 {
					cyc[i], cyc[j] = cyc[j], cyc[i]
				}
				return cyc
			}
			if _, seen := parent[y]; !seen {
				parent[y] = x
				queue = append(queue, y)
			}
		}
	}
	return nil // cannot happen: u's component has a cycle through u
}

// describe names a cycle's channels; when it crosses VLs every hop says
// its VL.
func (g *cdgGraph) describe(cyc []int32) ([]string, []int) {
	names := make([]string, len(cyc))
	vls := make([]int, len(cyc))
	mixed := false
	for i, u := range cyc {
		vls[i] = g.vls[int(u)/g.nSw]
		mixed = mixed || vls[i] != vls[0]
	}
	for i, u := range cyc {
		names[i] = g.f.chanName(int(u) % g.nSw)
		if mixed {
			names[i] += fmt.Sprintf(" (VL%d)", vls[i])
		}
	}
	return names, vls
}

// onePacked reports the VL whose packed dependencies are all there is
// (no bitsets of (switch, in, out) edges, no other VL's).
func onePacked(dep [16][16][]uint64, packed *[16][]uint64) (int, bool) {
	for a := range dep {
		for _, bs := range dep[a] {
			if bs != nil {
				return 0, false
			}
		}
	}
	vt := -1
	for v, ps := range packed {
		if ps == nil {
			continue
		}
		if vt >= 0 {
			return 0, false
		}
		vt = v
	}
	return vt, vt >= 0
}

// acyclicPacked fills rep.VLs as finishVLs would and reports true when
// the one-VL graph of succ (per switch channel: the out-ports of the far
// switch its traffic continues on, bit 0 aside) is acyclic; it reports
// false, changing nothing, when it has a cycle: finishVLs names one. It
// takes Kahn's algorithm straight over the channels' port sets, where
// finishVLs lists every edge first (tens of MB at ft3-56).
func (f *fabric) acyclicPacked(rep *Report, vt int, succ []uint64, chanVL []uint16) bool {
	n := f.nSwPorts
	deg := make([]int32, n)
	edges := 0
	for ch, m := range succ {
		m &^= 1
		succ[ch] = m
		if m == 0 {
			continue
		}
		edges += bits.OnesCount64(m)
		pb := f.portBase[f.link[ch].sw()]
		for ; m != 0; m &= m - 1 {
			deg[pb+int32(bits.TrailingZeros64(m))]++
		}
	}
	queue := make([]int32, 0, n)
	for c, d := range deg {
		if d == 0 {
			queue = append(queue, int32(c))
		}
	}
	for qi := 0; qi < len(queue); qi++ {
		c := queue[qi]
		m := succ[c]
		if m == 0 {
			continue
		}
		pb := f.portBase[f.link[c].sw()]
		for ; m != 0; m &= m - 1 {
			t := pb + int32(bits.TrailingZeros64(m))
			if deg[t]--; deg[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
	if len(queue) < n {
		return false
	}
	var used uint32
	for _, m := range chanVL {
		used |= uint32(m)
	}
	for v := range 15 {
		if used&(1<<v) == 0 {
			continue
		}
		st := VLStats{VL: v, Acyclic: true}
		if v == vt {
			st.Edges = edges
		}
		for _, m := range chanVL[:n] {
			if m&(1<<v) != 0 {
				st.Channels++
			}
		}
		rep.VLs = append(rep.VLs, st)
	}
	return true
}
