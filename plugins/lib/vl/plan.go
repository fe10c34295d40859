package vl

import (
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Stats describes a plan for logs.
type Stats struct {
	Layers    int // VLs used
	SLs       int // SLs used
	Overrides int // per-(source, DLID) SL exceptions
	Tables    int // SL2VL entries besides the default
}

// PairPlan realises pair layers (Layered, DFSSSP): the SL of a route is its
// layer and switches map SL k to VL k on switch-to-switch channels. Each
// DLID's default SL is the layer most of its sources use; the other sources
// get overrides. Channels whose link carries fewer VLs than there are
// layers (CA links, or switch links the algorithms kept low layers off)
// get tables folding every SL below their VLCap.
func PairPlan(f *Fabric, ly *Layers) (*plan.VLPlan, Stats, error) {
	if ly.PerHop {
		return nil, Stats{}, fmt.Errorf("per-hop layers need HopPlan")
	}
	if ly.N > MaxSLs {
		return nil, Stats{}, &LimitError{Algo: "layers", Needed: ly.N, Available: MaxSLs, Why: "one SL per layer"}
	}
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(f.R.TopLID)+1), VLs: ly.N}
	for sl := range v.Default {
		v.Default[sl] = uint8(sl % ly.N)
	}
	used := uint16(0)
	var cnt [MaxSLs]int
	for d, lid := range f.DLIDs {
		cnt = [MaxSLs]int{}
		for s := int32(0); s < int32(f.N); s++ {
			if f.Routed(s, d) && s != f.Home[d] {
				cnt[ly.L[d][s]] += len(f.G.Group(s))
			}
		}
		best := 0
		for k := range cnt {
			if cnt[k] > cnt[best] {
				best = k
			}
		}
		v.SLByDLID[lid] = uint8(best)
		used |= 1 << best
		owner := f.R.LIDOwner[lid] - 1
		for s := int32(0); s < int32(f.N); s++ {
			if !f.Routed(s, d) || s == f.Home[d] || int(ly.L[d][s]) == best {
				continue
			}
			used |= 1 << ly.L[d][s]
			for _, e := range f.G.Group(s) {
				if e != owner {
					v.Overrides = append(v.Overrides, plan.SLOverride{Src: e, DLID: lid, SL: ly.L[d][s]})
				}
			}
		}
	}
	fold := func(capv int) [16]uint8 {
		var t [16]uint8
		for sl := range t {
			t[sl] = uint8(sl % ly.N % capv)
		}
		return t
	}
	addLowCap(f, ly.N, fold, v)
	st := Stats{Layers: ly.N, SLs: popcount(used), Overrides: len(v.Overrides), Tables: len(v.SL2VL)}
	return v, st, nil
}

// addLowCap adds SL2VL entries for every port whose link carries fewer than
// n VLs: switch out-ports (for every in-port) and CA ports.
func addLowCap(f *Fabric, n int, table func(capv int) [16]uint8, v *plan.VLPlan) {
	t := f.R.Topo
	for i := range t.Nodes {
		node := &t.Nodes[i]
		for p := 1; p < len(node.Ports); p++ {
			ref := topology.PortRef{Node: int32(i), Port: uint8(p)}
			if !t.IsLinkUp(ref) {
				continue
			}
			capv := t.LinkVLs(ref)
			if capv >= n {
				continue
			}
			tab := table(capv)
			if node.Type != topology.Switch {
				v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: int32(i), In: uint8(p), Out: uint8(p), VL: tab})
				continue
			}
			for in := 0; in < len(node.Ports); in++ {
				if in == p || (in > 0 && !t.IsLinkUp(topology.PortRef{Node: int32(i), Port: uint8(in)})) {
					continue
				}
				v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: int32(i), In: uint8(in), Out: uint8(p), VL: tab})
			}
		}
	}
}

func popcount(m uint16) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n++
	}
	return n
}

// HopPlan realises ACRO's per-hop layers with one SL per DLID and no
// per-source overrides — Kawano et al. §V's proposal ("embed the destination in
// the SL"; destinations share an SL unless their SL2VL entries conflict),
// which the paper leaves as future work.
//
// A switch's SL2VL table maps (in, out, SL) to the VL of the hop, so within
// one SL class every hop — a turn (arriving channel → leaving channel), or
// an injection (CA ports and port 0 → leaving channel) — has one VL for all
// the class's destinations. Exact ACRO layers cannot be kept: every switch
// injects toward every DLID, so a class would have to agree on the layer of
// each channel; even fixing each hop's VL at its first use held only 320
// of 2560 DLIDs in 16 classes on a 512-switch random 12-regular fabric
// with 4 CAs per switch. The plan keeps
// instead the invariant that makes ACRO deadlock-free:
//
//   - along every route the VL never rises, and
//   - two consecutive hops on the same VL v follow layer v's channel order:
//     for ACRO's layers, ACRO's settling order, fixed up front (every
//     dependency inside ACRO's layer v points to a channel settled
//     before); for VLs above them, which ACRO gives no order, a topological
//     order kept incrementally (Layer.Insert) that admits any dependency
//     keeping the VL acyclic.
//
// Every (channel, VL) dependency then either descends or stays within one
// acyclic VL, so the virtual-channel graph is acyclic; and every destination on
// its own satisfies the invariant with ACRO's layers, so an empty class
// always accepts it.
//
// Each class keeps a VL per hop and, per hop, the hops that feed it. A
// destination is tried in the classes one after the other (its home
// switch's last class, then by most recent placement, then the unused
// ones), its tree root outwards: a new
// hop takes the lowest VL the invariant allows after the next hop's; a hop
// the class already has is raised when too low, and raises propagate to the
// hops feeding it. VLs are bounded (link VLCap, maxVLs), so a class whose hop
// graph would close a cycle fails when a VL runs out; the destination's
// changes are then undone and the next class is tried. The budget starts at
// ACRO's layer count and grows by one whenever a destination fits no class
// (placed destinations stay valid), so the plan may use more VLs than ACRO's
// layers — the price of 16 SLs — but never more than maxVLs. Work per
// destination is the tree plus the raises (each hop rises at most maxVLs
// times), with no cycle search.
func HopPlan(f *Fabric, ly *Layers, tr *Trees, maxVLs int) (*plan.VLPlan, Stats, error) {
	return hopPlan(f, ly, tr, maxVLs, MaxSLs)
}

// hopPlan is HopPlan with fewer SLs (tests reach the per-route fallback).
// It picks the narrowest state word the switches' port counts allow.
func hopPlan(f *Fabric, ly *Layers, tr *Trees, maxVLs, maxSLs int) (*plan.VLPlan, Stats, error) {
	if !ly.PerHop {
		return nil, Stats{}, fmt.Errorf("pair layers need PairPlan")
	}
	hx := newHopIndex(f)
	switch {
	case hx.width <= predBits[uint32]():
		return hopPlanW[uint32](f, ly, tr, hx, maxVLs, maxSLs)
	case hx.width <= predBits[uint64]():
		return hopPlanW[uint64](f, ly, tr, hx, maxVLs, maxSLs)
	}
	return nil, Stats{}, fmt.Errorf("acro: switch 0x%016x has %d switch-to-switch ports; the per-hop bookkeeping handles at most %d — use dfsssp or layered",
		f.G.SwitchGUID(hx.widest), hx.width-1, predBits[uint64]()-1)
}

// hopIndex numbers the hops a route can take. A hop enters switch s on a
// source port (its CAs and port 0, which share in-index 0: they are all
// one in-port to the plan) or on a switch-to-switch port (in-index 1..k,
// in port order) and leaves on a switch-to-switch port (out-index 0..k-1):
// hop = base[s] + out-index*(k+1) + in-index. Numbering only these hops,
// out-port major, keeps a class's state about half the size of all port
// pairs, and a switch's hops for one destination (a tree enters a switch
// on several in-ports and leaves by one out-port) side by side.
type hopIndex struct {
	base   []int32 // per switch, and the hop count at base[N]
	stride []int32 // k+1 per switch
	// in[chan(s, p)] is port p's in-index at s, -1 for a port that is
	// neither a source nor a switch-to-switch port; a switch-to-switch
	// port's out-index is its in-index - 1.
	in     []int16
	width  int   // the largest k+1: pred bits a hop needs
	widest int32 // a switch with that many
	chans  cdg.Channels
	peer   []uint8 // Fabric.peerPort
}

// hop is the hop entering s on port in and leaving on port out (a
// switch-to-switch port).
func (hx *hopIndex) hop(s int32, in, out uint8) int32 {
	b := hx.chans[s]
	return hx.base[s] + int32(hx.in[b+int32(out)]-1)*hx.stride[s] + int32(hx.in[b+int32(in)])
}

// next is the hop at s's parent p toward d that carries d's traffic on
// from s's out-port (-1 when p delivers).
func (hx *hopIndex) next(tr *Trees, s, p int32, out uint8, d int) int32 {
	if pp, pout := tr.Next(d, p); pp >= 0 {
		return hx.hop(p, hx.peer[hx.chans[s]+int32(out)], pout)
	}
	return -1
}

// transit is the hop at s that takes d's traffic from child u on, and its
// in-index at s.
func (hx *hopIndex) transit(tr *Trees, s, u int32, out uint8, d int) (int32, int16) {
	_, uo := tr.Next(d, u)
	in := hx.peer[hx.chans[u]+int32(uo)]
	return hx.hop(s, in, out), hx.in[hx.chans[s]+int32(in)]
}

func newHopIndex(f *Fabric) *hopIndex {
	hx := &hopIndex{base: make([]int32, f.N+1), stride: make([]int32, f.N), in: make([]int16, f.Chans()), chans: f.chanBase, peer: f.peerPort}
	for i := range hx.in {
		hx.in[i] = -1
	}
	for s := int32(0); s < int32(f.N); s++ {
		for _, e := range f.G.Group(s) {
			hx.in[f.Chan(s, f.G.Attachment(e).Port)] = 0
		}
		k := 0
		for p := 1; p <= f.np[s]; p++ {
			if c := f.Chan(s, uint8(p)); f.peerSw[c] >= 0 {
				k++
				hx.in[c] = int16(k)
			}
		}
		hx.stride[s] = int32(k + 1)
		hx.base[s+1] = hx.base[s] + int32(k*(k+1))
		if k+1 > hx.width {
			hx.width, hx.widest = k+1, s
		}
	}
	return hx
}

// hopWord is a class's state of one hop: in the top 4 bits its VL+1 (0 =
// unused; VL15 is never a data VL), below them a bit per in-index at the
// upstream switch of the hops feeding it.
type hopWord interface{ ~uint32 | ~uint64 }

// predBits is how many in-indices a W holds.
func predBits[W hopWord]() int { return int(unsafe.Sizeof(W(0)))*8 - 4 }

// vlOf is a hop word's VL, -1 when the hop is unused.
func vlOf[W hopWord](w W) int { return int(w>>predBits[W]()) - 1 }

// withVL is w on VL x, its predecessors kept.
func withVL[W hopWord](w W, x int) W {
	return w&(W(1)<<predBits[W]()-1) | W(x+1)<<predBits[W]()
}

func hopPlanW[W hopWord](f *Fabric, ly *Layers, tr *Trees, hx *hopIndex, maxVLs, maxSLs int) (*plan.VLPlan, Stats, error) {
	maxVLs = max(1, min(maxVLs, 15)) // VL15 is management
	predMask := W(1)<<predBits[W]() - 1
	ne := hx.base[f.N]
	nc := f.Chans()
	t := f.R.Topo
	sws := t.Switches()
	// pos[v][c]: channel c's place in ACRO's layer v, settled first =
	// placed last; a same-VL dependency must go from a lower to a higher
	// place.
	pos := make([][]int32, min(len(ly.Pop), maxVLs))
	for v := range pos {
		pos[v] = make([]int32, nc)
		for c := range pos[v] {
			pos[v][c] = -1
		}
		next := int32(nc)
		for _, c := range ly.Pop[v] {
			pos[v][c] = next
			next--
		}
		next = 0
		for c := range pos[v] {
			if pos[v][c] < 0 {
				pos[v][c] = next
				next++
			}
		}
	}
	// For hop h: up the hop (upstream switch, in-index 0, out-port toward
	// h), so that up + i is the hop feeding h from in-index i there; capv
	// the VLs its out-channel carries; okm bit y set when ACRO's layer y
	// orders h's in-channel before its out-channel (a same-VL dependency
	// it admits). One 8-byte record per hop: these are read together,
	// millions of times. edge[h] is h's dependency id, for the VLs above
	// ACRO's layers only (-1 from a source port).
	type hopInfo struct {
		up   int32
		okm  uint16
		capv uint8
	}
	hops := make([]hopInfo, ne)
	edge := make([]int32, ne)
	for s := int32(0); s < int32(f.N); s++ {
		for in := 0; in <= f.np[s]; in++ {
			ic := f.Chan(s, uint8(in))
			ii := hx.in[ic]
			if ii < 0 {
				continue
			}
			us := f.peerSw[ic]
			for out := 1; out <= f.np[s]; out++ {
				oc := f.Chan(s, uint8(out))
				if f.peerSw[oc] < 0 {
					continue
				}
				e := hx.hop(s, uint8(in), uint8(out))
				h := &hops[e]
				h.capv = f.capv[oc]
				edge[e] = -1 // source ports share the hop
				if ii > 0 {
					edge[e] = f.Edge(s, uint8(in), uint8(out))
					from := f.Chan(us, f.peerPort[ic])
					h.up = hx.base[us] + int32(hx.in[from]-1)*hx.stride[us]
					for y := range pos {
						if pos[y][from] < pos[y][oc] {
							h.okm |= 1 << y
						}
					}
				}
			}
		}
	}
	// srcIn[s]: the in-ports traffic originates on at switch s (CAs, port
	// 0); they share in-index 0.
	srcIn := make([][]uint8, f.N)
	for s := int32(0); s < int32(f.N); s++ {
		for _, e := range f.G.Group(s) {
			srcIn[s] = append(srcIn[s], f.G.Attachment(e).Port)
		}
	}
	budget := maxVLs
	capOf := func(e int32) int { return min(int(hops[e].capv), budget) }
	// ok reports whether a hop on VL x may feed hop e (on VL y): the VL
	// drops, or stays and the dependency follows layer y's order — ACRO's
	// for its layers, for VLs above them a dynamic topological order
	// (Layer.Insert) that takes any dependency keeping the layer acyclic.
	// Dependencies it takes during a failed try are given back.
	type dep struct {
		v int
		e int32
	}
	var depLog []dep
	dyn := make([]*Layer, maxVLs)
	ok := func(x, y int, e int32) bool {
		if x != y {
			return x > y
		}
		if y < len(pos) {
			return hops[e].okm>>y&1 != 0
		}
		l := dyn[y]
		if l == nil {
			l = f.NewLayer()
			dyn[y] = l
		}
		de := edge[e]
		if l.Cnt[de] > 0 {
			return true
		}
		if !l.Insert(de) {
			return false
		}
		depLog = append(depLog, dep{y, de})
		return true
	}
	// lowest is the lowest VL a hop feeding e may take.
	lowest := func(y int, e int32) int {
		if ok(y, y, e) {
			return y
		}
		return y + 1
	}
	// A class's state is one hopWord per hop.
	type class struct{ st []W }
	var cls []*class
	type undo struct {
		e  int32
		st W
	}
	var log []undo
	var work []int32
	save := func(c *class, e int32) { log = append(log, undo{e, c.st[e]}) }
	// raise lifts hop e of class c to at least x, then every hop feeding it
	// as far as needed. False when a VL runs out.
	raise := func(c *class, e int32, x int) bool {
		if x >= capOf(e) {
			return false
		}
		save(c, e)
		c.st[e] = withVL[W](c.st[e], x)
		work = append(work[:0], e)
		for len(work) > 0 {
			e := work[len(work)-1]
			work = work[:len(work)-1]
			y := vlOf[W](c.st[e])
			m := uint64(c.st[e] & predMask)
			h := &hops[e]
			for ; m != 0; m &= m - 1 {
				pe := h.up + int32(bits.TrailingZeros64(m))
				if px := vlOf[W](c.st[pe]); !ok(px, y, e) {
					nx := lowest(y, e)
					if nx >= capOf(pe) {
						return false
					}
					save(c, pe)
					c.st[pe] = withVL[W](c.st[pe], nx)
					work = append(work, pe)
				}
			}
		}
		return true
	}
	// A step is a hop e, the hop next it feeds (next < 0: delivery) and
	// e's in-index bit.
	type step struct {
		e, next int32
		bit     W
	}
	// walk adds the steps to class c, each in turn: it records that e
	// feeds next and settles e's VL against next's current one.
	// Recording first means any later raise of next re-checks e. False
	// (the changes logged for undo) when a VL runs out.
	walk := func(c *class, sq []step) bool {
		log = log[:0]
		depLog = depLog[:0]
		for _, st := range sq {
			e, next := st.e, st.next
			y, want, same := -1, 0, false
			if next >= 0 {
				ns := &c.st[next]
				if *ns&st.bit == 0 {
					save(c, next)
					*ns |= st.bit
				}
				y = vlOf[W](*ns)
				// lowest(y, next), keeping ok(y, y, next) for the
				// check below (a second call would give the same
				// answer); ACRO's layers are read here, the closure
				// only for VLs above them.
				if y < len(pos) {
					same = hops[next].okm>>y&1 != 0
				} else {
					same = ok(y, y, next)
				}
				if same {
					want = y
				} else {
					want = y + 1
				}
			}
			cur := vlOf[W](c.st[e])
			if cur >= 0 && (next < 0 || cur > y || cur == y && same) {
				continue
			}
			if !raise(c, e, max(want, cur)) {
				return false
			}
		}
		return true
	}
	// steps lists destination d's hops into seq, each with the hop it
	// feeds, root outwards: built once per destination, walked by every
	// class tried. It reads the trees only, so it runs beside placement.
	steps := func(d int, seq []step) []step {
		order := tr.Order[d]
		for i := len(order) - 1; i >= 0; i-- {
			s := order[i]
			p, out := tr.Next(d, s)
			if p < 0 {
				continue // delivers: hops into it take the default VL 0
			}
			nx := hx.next(tr, s, p, out, d)
			if len(srcIn[s]) > 0 { // a source hop's in-index bit is 1: in-index 0
				seq = append(seq, step{hx.hop(s, srcIn[s][0], out), nx, 1})
			}
			for _, u := range tr.Kids(d, s) {
				e, in := hx.transit(tr, s, u, out, d)
				seq = append(seq, step{e, nx, W(1) << in})
			}
		}
		return seq
	}
	// A second goroutine lists the destinations' steps a few ahead of
	// placement, in reused buffers: on two cores placement does not wait
	// for them (about a quarter of its work).
	const ahead = 4
	ready, free := make(chan []step, ahead), make(chan []step, ahead)
	for range ahead {
		free <- nil
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for d := range f.DLIDs {
			var buf []step
			select {
			case buf = <-free:
			case <-done:
				return
			}
			select {
			case ready <- steps(d, buf[:0]):
			case <-done:
				return
			}
		}
	}()
	var seq []step // the current destination's steps
	// fit adds the destination whose steps are in seq to class c.
	fit := func(c *class) bool { return walk(c, seq) }
	// fitRoute adds the one route from switch u toward d: its injection at
	// u and its transit hops, destination end first.
	var path []int32
	var route []step
	fitRoute := func(c *class, d int, u int32) bool {
		path = path[:0]
		for s := u; ; {
			p, _ := tr.Next(d, s)
			if p < 0 {
				break
			}
			path = append(path, s)
			s = p
		}
		route = route[:0]
		for i := len(path) - 1; i >= 0; i-- {
			s := path[i]
			p, out := tr.Next(d, s)
			e, bit := hx.hop(s, srcIn[s][0], out), W(1) // the caller checked u has sources
			if i > 0 {
				te, in := hx.transit(tr, s, path[i-1], out, d)
				e, bit = te, W(1)<<in
			}
			route = append(route, step{e, hx.next(tr, s, p, out, d), bit})
		}
		return walk(c, route)
	}
	// place puts one destination or route in the first class that takes
	// it, undoing each failed try; -1 when none does. It tries first,
	// then the classes by their last placement, most recent first, then
	// the rest: over ten 512-switch random graphs that order needed 37 %
	// fewer tries than class order, for the same VLs and SLs.
	recent := make([]int, 0, maxSLs)
	order := make([]int, 0, maxSLs)
	place := func(try func(c *class) bool, first int) int {
		order = order[:0]
		var seen uint32
		add := func(k int) {
			if k >= 0 && k < maxSLs && seen&(1<<k) == 0 {
				seen |= 1 << k
				order = append(order, k)
			}
		}
		if first < len(cls) {
			add(first)
		}
		for _, k := range recent {
			add(k)
		}
		for k := range maxSLs {
			add(k)
		}
		for _, k := range order {
			if k == len(cls) { // unused classes come last, in order
				cls = append(cls, &class{st: make([]W, ne)})
			}
			c := cls[k]
			if try(c) {
				if i := slices.Index(recent, k); i >= 0 {
					recent = slices.Delete(recent, i, i+1)
				}
				recent = slices.Insert(recent, 0, k)
				return k
			}
			for i := len(log) - 1; i >= 0; i-- {
				c.st[log[i].e] = log[i].st
			}
			for _, u := range depLog {
				dyn[u.v].Remove(u.e)
			}
		}
		return -1
	}
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(f.R.TopLID)+1)}
	// Fewest VLs first: ACRO's layer count, one more whenever a
	// destination fits no class. Raising the budget keeps every placed
	// destination valid, so placement goes on where it stopped. Only a
	// destination no class takes within maxVLs is split by source switch,
	// its routes placed one by one: the DLID's SL is the class most of
	// them share, the others become per-source overrides.
	budget = min(max(ly.N, 1), maxVLs)
	routeSL := make([]int8, f.N)
	// DLIDs on one switch have nearly the same tree: the class the last
	// of them went to is tried first.
	last := make([]int, f.N)
	for i := range last {
		last[i] = -1
	}
	for d, lid := range f.DLIDs {
		first := -1
		if h := f.Home[d]; h >= 0 {
			first = last[h]
		}
		seq = <-ready
		k := place(fit, first)
		for k < 0 && budget < maxVLs {
			budget++
			k = place(fit, first)
		}
		free <- seq
		if k >= 0 {
			v.SLByDLID[lid] = uint8(k)
			if h := f.Home[d]; h >= 0 {
				last[h] = k
			}
			continue
		}
		cnt := make([]int, maxSLs)
		order := tr.Order[d]
		for i := len(order) - 1; i >= 0; i-- {
			u := order[i]
			routeSL[u] = -1
			if p, _ := tr.Next(d, u); p < 0 || len(srcIn[u]) == 0 {
				continue
			}
			k := place(func(c *class) bool { return fitRoute(c, d, u) }, -1)
			if k < 0 {
				return nil, Stats{SLs: maxSLs + 1}, &LimitError{Algo: "acro", Needed: maxVLs + 1, Available: maxVLs,
					Why: fmt.Sprintf("the route from switch 0x%016x toward DLID %d fits none of the %d SL classes within %d VLs: every class's hops would need a VL beyond a link's VLCap", f.G.SwitchGUID(u), lid, maxSLs, maxVLs)}
			}
			routeSL[u] = int8(k)
			cnt[k] += len(f.G.Group(u))
		}
		best := 0
		for k := range cnt {
			if cnt[k] > cnt[best] {
				best = k
			}
		}
		v.SLByDLID[lid] = uint8(best)
		for _, u := range order {
			if routeSL[u] < 0 || int(routeSL[u]) == best {
				continue
			}
			for _, e := range f.G.Group(u) {
				v.Overrides = append(v.Overrides, plan.SLOverride{Src: e, DLID: lid, SL: uint8(routeSL[u])})
			}
		}
	}
	// Default: every SL on VL 0 (CA links, deliveries, unused hops). A
	// hop's row is gathered class by class (each class's state read in
	// order), then every in-port of the hop gets an entry; the entries
	// are counted first so the table is allocated once.
	nvl := 1
	rows := make([][16]uint8, ne)
	raised := make([]bool, ne)
	for k, c := range cls {
		for e, w := range c.st {
			if x := vlOf[W](w); x > 0 {
				rows[e][k] = uint8(x)
				raised[e] = true
				nvl = max(nvl, x+1)
			}
		}
	}
	entries := func(add func(s int32, in, out uint8, e int32)) {
		for s := int32(0); s < int32(f.N); s++ {
			for in := 0; in <= f.np[s]; in++ {
				if hx.in[f.Chan(s, uint8(in))] < 0 {
					continue
				}
				for out := 1; out <= f.np[s]; out++ {
					if f.peerSw[f.Chan(s, uint8(out))] < 0 {
						continue
					}
					if e := hx.hop(s, uint8(in), uint8(out)); raised[e] {
						add(s, uint8(in), uint8(out), e)
					}
				}
			}
		}
	}
	n := 0
	entries(func(int32, uint8, uint8, int32) { n++ })
	v.SL2VL = make([]plan.SL2VLEntry, 0, n)
	entries(func(s int32, in, out uint8, e int32) {
		v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: sws[s], In: in, Out: out, VL: rows[e]})
	})
	v.VLs = nvl
	return v, Stats{Layers: nvl, SLs: len(cls), Overrides: len(v.Overrides), Tables: len(v.SL2VL)}, nil
}
