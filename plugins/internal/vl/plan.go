package vl

import (
	"fmt"

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

// HopPlan realises ACRO's per-hop layers. A switch's SL2VL tables see only
// (in, out, SL), not the DLID, so the SL must tell the switch which layer a
// packet is in at every hop of its route (seed 001 §V leaves this open).
// Routes — (source switch, DLID) — are grouped into SL classes whose
// members agree on the layer of every hop (switch, in, out) they share. A
// DLID's routes share a class when one fits them all (no override);
// otherwise each route takes the lowest class it fits and the DLID's
// default is the most common one, the rest becoming per-source overrides.
// More than 16 classes fail.
func HopPlan(f *Fabric, ly *Layers, tr *Trees) (*plan.VLPlan, Stats, error) {
	if !ly.PerHop {
		return nil, Stats{}, fmt.Errorf("pair layers need PairPlan")
	}
	ne := f.Edges()
	// tab[sl][edge]: layer+1 of the class on dependency (s, in, out), 0 = free.
	var tab [MaxSLs][]uint8
	classes := 0
	t := f.R.Topo
	sws := t.Switches()
	// srcIn[s] are the in-ports traffic originates on at switch s: 0 and
	// its CA ports.
	srcIn := make([][]uint8, f.N)
	for s := int32(0); s < int32(f.N); s++ {
		for _, e := range f.G.Group(s) {
			srcIn[s] = append(srcIn[s], f.G.Attachment(e).Port)
		}
	}
	// hops of dest d at switch s: every in-port its traffic arrives on
	// (sources at s, and the channels of its children) with its out-port.
	hopsAt := func(d int, s int32, fn func(e int32) bool) bool {
		_, out := f.Next(s, d)
		for _, in := range srcIn[s] {
			if !fn(f.Edge(s, in, out)) {
				return false
			}
		}
		for _, k := range tr.Kids(d, s) {
			_, kp := f.Next(k, d)
			if !fn(f.Edge(s, f.peerPort[f.Chan(k, kp)], out)) {
				return false
			}
		}
		return true
	}
	fits := func(k int, d int, s int32, want uint8) bool {
		return hopsAt(d, s, func(e int32) bool { x := tab[k][e]; return x == 0 || x == want })
	}
	set := func(k int, d int, s int32, want uint8) {
		hopsAt(d, s, func(e int32) bool { tab[k][e] = want; return true })
	}
	class := func(k int) {
		if tab[k] == nil {
			tab[k] = make([]uint8, ne)
			classes = max(classes, k+1)
		}
	}
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(f.R.TopLID)+1), VLs: ly.N}
	used := uint16(0)
	routeSL := make([]int8, f.N)
	for d, lid := range f.DLIDs {
		order := tr.Order[d] // leaves first; every switch's hops come from its own layer
		whole := -1
		for k := 0; k < MaxSLs && whole < 0; k++ {
			class(k)
			ok := true
			for _, s := range order {
				if !fits(k, d, s, ly.L[d][s]+1) {
					ok = false
					break
				}
			}
			if ok {
				whole = k
			}
		}
		if whole >= 0 {
			for _, s := range order {
				set(whole, d, s, ly.L[d][s]+1)
			}
			v.SLByDLID[lid] = uint8(whole)
			used |= 1 << whole
			continue
		}
		// Route by route: the route from u takes the hops of every switch
		// on its walk, but only the source in-ports at u itself.
		// Home outwards, each route first tries its successor's class:
		// whole subtrees then share a class and overrides stay few.
		var cnt [MaxSLs]int
		for i := len(order) - 1; i >= 0; i-- {
			u := order[i]
			routeSL[u] = -1
			if t, _ := f.Next(u, d); t >= 0 && routeFits(f, int(routeSL[t]), d, u, ly, tab[routeSL[t]], srcIn) {
				routeSL[u] = routeSL[t]
			}
			for k := 0; k < MaxSLs && routeSL[u] < 0; k++ {
				class(k)
				if routeFits(f, k, d, u, ly, tab[k], srcIn) {
					routeSL[u] = int8(k)
				}
			}
			if routeSL[u] < 0 {
				return nil, Stats{Layers: ly.N, SLs: MaxSLs + 1}, fmt.Errorf("acro: the per-hop layers (%d VLs) need more than %d SL classes: the route from switch 0x%016x toward DLID %d conflicts with every class on some hop; use dfsssp or layered (one SL per layer) for this routing", ly.N, MaxSLs, f.G.SwitchGUID(u), lid)
			}
			routeMark(f, int(routeSL[u]), d, u, ly, tab[routeSL[u]], srcIn)
			if u != f.Home[d] {
				cnt[routeSL[u]] += len(f.G.Group(u))
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
		for _, u := range order {
			if int(routeSL[u]) == best || u == f.Home[d] {
				continue
			}
			used |= 1 << routeSL[u]
			for _, e := range f.G.Group(u) {
				if e != owner {
					v.Overrides = append(v.Overrides, plan.SLOverride{Src: e, DLID: lid, SL: uint8(routeSL[u])})
				}
			}
		}
	}
	// Default: every SL on VL 0 (CA links, deliveries, layer-0 hops).
	// Hops with a higher layer for some class get their own table.
	for s := int32(0); s < int32(f.N); s++ {
		for in := 0; in <= f.np[s]; in++ {
			for out := 1; out <= f.np[s]; out++ {
				e := f.Edge(s, uint8(in), uint8(out))
				var row [16]uint8
				any := false
				for k := 0; k < classes; k++ {
					if x := tab[k][e]; x > 1 {
						row[k] = x - 1
						any = true
					}
				}
				if any {
					v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: sws[s], In: uint8(in), Out: uint8(out), VL: row})
				}
			}
		}
	}
	return v, Stats{Layers: ly.N, SLs: popcount(used), Overrides: len(v.Overrides), Tables: len(v.SL2VL)}, nil
}

// routeFits reports whether class k can carry the route from u toward d.
func routeFits(f *Fabric, k, d int, u int32, ly *Layers, tab []uint8, srcIn [][]uint8) bool {
	ok := true
	routeHops(f, d, u, srcIn, func(s int32, e int32) {
		if x := tab[e]; x != 0 && x != ly.L[d][s]+1 {
			ok = false
		}
	})
	return ok
}

func routeMark(f *Fabric, k, d int, u int32, ly *Layers, tab []uint8, srcIn [][]uint8) {
	routeHops(f, d, u, srcIn, func(s int32, e int32) { tab[e] = ly.L[d][s] + 1 })
}

// routeHops calls fn for every hop (switch, in, out) of the route from
// switch u toward d: the source in-ports at u, the arriving port after.
func routeHops(f *Fabric, d int, u int32, srcIn [][]uint8, fn func(s int32, e int32)) {
	s := u
	_, out := f.Next(s, d)
	for _, in := range srcIn[s] {
		fn(s, f.Edge(s, in, out))
	}
	for hops := 0; hops <= f.N; hops++ {
		t, out := f.Next(s, d)
		if t < 0 {
			return
		}
		in := f.peerPort[f.Chan(s, out)]
		_, tout := f.Next(t, d)
		fn(t, f.Edge(t, in, tout))
		s = t
	}
}
