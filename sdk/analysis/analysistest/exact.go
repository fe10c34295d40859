package analysistest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// SelectedDLID is the LID src uses toward dst: the last DLID override of
// the pair, else the plan's rule.
func SelectedDLID(l *plan.LIDPlan, src, dst int32) uint16 {
	for i := len(l.Overrides) - 1; i >= 0; i-- {
		o := l.Overrides[i]
		if o.Src == src && o.Dst == dst {
			return l.Ports[dst].Base + uint16(o.Offset)
		}
	}
	return l.DLID(src, dst)
}

// Hop is a switch out-channel held on a VL: a node of the exact graph.
type Hop struct {
	Ch topology.PortRef
	VL uint8
}

// ExactCDG is the (channel, VL) dependency graph built by following every
// (source, DLID) route hop by hop and looking up each hop's SL2VL table:
// slow (pairs × hops) and independent of sdk/analysis's per-destination
// trees and SL grouping, to check it on small fabrics.
type ExactCDG struct {
	Edges map[[2]Hop]bool
	VLs   map[topology.PortRef]uint16 // switch out-channel -> VLs on it
}

// Exact builds the exact graph of r under v; allLIDs makes every source use
// every LID of every range (analysis.Options.AllLIDs).
func Exact(r *plan.Realized, v *plan.VLPlan, allLIDs bool) ExactCDG {
	t := r.Topo
	eps := t.Endpoints()
	ex := ExactCDG{Edges: map[[2]Hop]bool{}, VLs: map[topology.PortRef]uint16{}}
	tabs := map[[3]int32][16]uint8{}
	if v != nil {
		for _, e := range v.SL2VL {
			tabs[[3]int32{e.Node, int32(e.In), int32(e.Out)}] = e.VL
		}
	}
	vlOf := func(node int32, in, out, sl uint8) uint8 {
		if v == nil {
			return 0
		}
		if tab, ok := tabs[[3]int32{node, int32(in), int32(out)}]; ok {
			return tab[sl] & 15
		}
		return v.Default[sl] & 15
	}
	for src := range eps {
		for dst := range eps {
			if src == dst {
				continue
			}
			lids := []uint16{SelectedDLID(r.LIDs, int32(src), int32(dst))}
			if allLIDs {
				lids = lids[:0]
				p := r.LIDs.Ports[dst]
				for k := 0; k < p.Count(); k++ {
					lids = append(lids, p.Base+uint16(k))
				}
			}
			for _, d := range lids {
				var sl uint8
				if v != nil {
					sl = v.SL(int32(src), d)
				}
				cur, in := eps[src].Node, uint8(0)
				if t.SwitchIndex(cur) < 0 {
					peer := t.Port(eps[src]).Peer
					if !t.IsLinkUp(eps[src]) || t.SwitchIndex(peer.Node) < 0 {
						continue
					}
					cur, in = peer.Node, peer.Port
				}
				var path []Hop
				ok := false
				for step := 0; step <= len(t.Switches()); step++ {
					out := r.LFT[t.SwitchIndex(cur)][d]
					if out == 0 {
						ok = eps[dst] == topology.PortRef{Node: cur, Port: 0}
						break
					}
					ref := topology.PortRef{Node: cur, Port: out}
					if out == plan.NoPort || int(out) >= len(t.Nodes[cur].Ports) || !t.IsLinkUp(ref) {
						break
					}
					path = append(path, Hop{ref, vlOf(cur, in, out, sl)})
					peer := t.Port(ref).Peer
					if t.SwitchIndex(peer.Node) < 0 {
						ok = peer == eps[dst]
						break
					}
					cur, in = peer.Node, peer.Port
				}
				if !ok {
					continue
				}
				for i, h := range path {
					ex.VLs[h.Ch] |= 1 << h.VL
					if h.VL == 15 {
						break // dropped here
					}
					if i > 0 {
						ex.Edges[[2]Hop{path[i-1], h}] = true
					}
				}
			}
		}
	}
	return ex
}

// OnCycle returns the nodes that lie on a cycle (reach themselves).
func (ex ExactCDG) OnCycle() map[Hop]bool {
	succ := map[Hop][]Hop{}
	for e := range ex.Edges {
		succ[e[0]] = append(succ[e[0]], e[1])
	}
	on := map[Hop]bool{}
	for u := range succ {
		seen := map[Hop]bool{}
		stack := slices.Clone(succ[u])
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if x == u {
				on[u] = true
				break
			}
			if !seen[x] {
				seen[x] = true
				stack = append(stack, succ[x]...)
			}
		}
	}
	return on
}

// Compare lists every disagreement between the report's CDG figures (per
// VL dependencies, channels, acyclicity, the cycles it names, deadlock
// freedom, VL problems on switch channels) and the exact graph.
func (ex ExactCDG) Compare(r *plan.Realized, rep *analysis.Report) []string {
	var errs []string
	errorf := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	topo := r.Topo
	names := map[string]topology.PortRef{}
	for _, n := range topo.Switches() {
		for p := 1; p < len(topo.Nodes[n].Ports); p++ {
			names[fmt.Sprintf("0x%016x/%d", topo.Nodes[n].GUID, p)] = topology.PortRef{Node: n, Port: uint8(p)}
		}
	}
	var edges, cross, chans [16]int
	for e := range ex.Edges {
		edges[e[1].VL]++
		if e[0].VL != e[1].VL {
			cross[e[1].VL]++
		}
	}
	for _, m := range ex.VLs {
		for v := range 16 {
			if m&(1<<v) != 0 {
				chans[v]++
			}
		}
	}
	on := ex.OnCycle()
	var cyclic [16]bool
	for h := range on {
		cyclic[h.VL] = true
	}
	seen := [16]bool{}
	for _, st := range rep.VLs {
		v := st.VL
		seen[v] = true
		if st.Edges != edges[v] || st.FromOtherVLs != cross[v] || st.Channels != chans[v] {
			errorf("VL%d: %d dependencies (%d from other VLs) on %d channels, exact graph %d (%d) on %d", v, st.Edges, st.FromOtherVLs, st.Channels, edges[v], cross[v], chans[v])
		}
		if st.Acyclic != !cyclic[v] {
			errorf("VL%d: acyclic %v, but the exact graph has a cycle through it: %v", v, st.Acyclic, cyclic[v])
		}
		if st.Acyclic {
			continue
		}
		if len(st.Cycle) < 2 || len(st.CycleVLs) != len(st.Cycle) || !slices.Contains(st.CycleVLs, v) {
			errorf("VL%d: cycle %v with VLs %v", v, st.Cycle, st.CycleVLs)
			continue
		}
		hops := make([]Hop, len(st.Cycle))
		for i, s := range st.Cycle {
			name, _, _ := strings.Cut(s, " ")
			ref, ok := names[name]
			if !ok {
				errorf("VL%d: cycle names %q, not a switch port", v, s)
				return errs
			}
			hops[i] = Hop{ref, uint8(st.CycleVLs[i])}
		}
		for i := range hops {
			if e := [2]Hop{hops[i], hops[(i+1)%len(hops)]}; !ex.Edges[e] {
				errorf("VL%d: cycle %v: %v -> %v is not a dependency", v, st.Cycle, e[0], e[1])
			}
		}
	}
	for v := range 15 {
		if (edges[v] > 0 || chans[v] > 0) && !seen[v] {
			errorf("VL%d carries traffic (%d channels, %d dependencies) but the report has no entry", v, chans[v], edges[v])
		}
	}
	// VLCap and VL15 per hop, on switch channels (when no sample was cut).
	if rep.VLProblemCount == len(rep.VLProblems) {
		want, got := 0, 0
		for ch, m := range ex.VLs {
			capv := topo.LinkVLs(ch)
			for v := range 16 {
				if m&(1<<v) != 0 && (v == 15 || v >= capv) {
					want++
				}
			}
		}
		for _, p := range rep.VLProblems {
			if _, ok := names[p.Channel]; ok {
				got++
			}
		}
		if got != want {
			errorf("%d VL problems on switch channels, exact per-hop count %d: %+v", got, want, rep.VLProblems)
		}
	}
	if rep.DeadlockFree != (len(on) == 0) {
		errorf("deadlock-free %v, exact graph has %d nodes on cycles", rep.DeadlockFree, len(on))
	}
	return errs
}
