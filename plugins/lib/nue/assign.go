package nue

import (
	"context"
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/plugins/lib/vl"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Assignment says how Assign layered the routes.
type Assignment struct {
	// Budget is the smallest budget whose nue layout layers the routes
	// (each layer's dependency graph acyclic), 0 if none does.
	Budget int
	// FirstFit is set when no nue layout fits (the routes are another
	// engine's, or nue's with another vls) and destinations were placed in
	// the first layer that stays acyclic instead.
	FirstFit bool
	// Layers is the number of layers (VLs, SLs) the plan uses.
	Layers int
}

// Assign layers the realised tables r within maxBudget VLs, one layer (SL)
// per DLID. It tries nue's layout for budgets 1, 2, ... maxBudget (the
// engine's routes fit the layout of the budget they were routed with, and
// of no larger one necessarily), and failing that places each DLID in the
// first layer whose dependency graph stays acyclic, its layout layer
// first. It refuses when a DLID fits no layer. Every layer's CDG is built
// and checked here, so the plan it returns is deadlock-free.
func Assign(ctx context.Context, r *plan.Realized, maxBudget int) (*plan.VLPlan, Assignment, error) {
	var a Assignment
	f, err := vl.NewFabric(r)
	if err != nil {
		return nil, a, err
	}
	n, err := newNet(r.Topo)
	if err != nil {
		return nil, a, err
	}
	sws := r.Topo.Switches()
	peerPort := make([]uint8, f.Chans())
	for s, node := range sws {
		for p := 1; p < len(r.Topo.Nodes[node].Ports); p++ {
			peerPort[f.Chan(int32(s), uint8(p))] = r.Topo.Port(topology.PortRef{Node: node, Port: uint8(p)}).Peer.Port
		}
	}
	// turns lists DLID d's turns: for every switch s whose route crosses
	// t onto another switch link, the turn at t.
	turns := func(d int) []int32 {
		var buf []int32
		for s := int32(0); s < int32(f.N); s++ {
			t, out := f.Next(s, d)
			if t < 0 {
				continue
			}
			if u, out2 := f.Next(t, d); u >= 0 {
				buf = append(buf, f.Edge(t, peerPort[f.Chan(s, out)], out2))
			}
		}
		return buf
	}
	// Every DLID's turns, found once (in parallel): each budget's layout
	// only counts them again. DLIDs of one tree (a switch's CAs sharing
	// it) share the list.
	dt := make([][]int32, len(f.DLIDs))
	if _, err := route.Each(ctx, len(f.DLIDs), 0, func(_, d int) error {
		dt[d] = slices.Clip(turns(d))
		return nil
	}); err != nil {
		return nil, a, err
	}
	for d := 1; d < len(dt); d++ {
		if slices.Equal(dt[d], dt[d-1]) {
			dt[d] = dt[d-1]
		}
	}
	owner := func(d int) int32 { return r.LIDOwner[f.DLIDs[d]] - 1 }
	layerOf := make([]uint8, len(f.DLIDs))
	// Layouts: count every DLID's turns in its layout layer, then search
	// each layer once for a cycle.
	counted := make([]*vl.Layer, maxBudget)
	black := make([]bool, f.Chans())
	for b := 1; b <= maxBudget && a.Budget == 0; b++ {
		if err := ctx.Err(); err != nil {
			return nil, a, err
		}
		for _, l := range counted[:b] {
			if l != nil {
				clear(l.Cnt)
			}
		}
		part, _ := partition(n, b)
		for d := range f.DLIDs {
			l := 0
			if h := n.Home[owner(d)]; h >= 0 {
				l = int(part[h])
			}
			layerOf[d] = uint8(l)
			if counted[l] == nil {
				counted[l] = f.NewLayer()
			}
			for _, e := range dt[d] {
				counted[l].Cnt[e]++
			}
		}
		ok := true
		for _, l := range counted[:b] {
			clear(black)
			if l != nil && l.FindCycle(black) != nil {
				ok = false
				break
			}
		}
		if ok {
			a.Budget, a.Layers = b, b
		}
	}
	if a.Budget == 0 {
		// First fit: each DLID into the first layer that takes all its
		// turns, its layout layer first.
		a.FirstFit = true
		layers := make([]*vl.Layer, maxBudget)
		for i := range layers {
			layers[i] = f.NewLayer()
		}
		place := func(d, l int) bool {
			for i, e := range dt[d] {
				if !layers[l].Insert(e) {
					for _, e := range dt[d][:i] {
						layers[l].Remove(e)
					}
					return false
				}
			}
			return true
		}
		part, _ := partition(n, maxBudget)
		for d := range f.DLIDs {
			pref := 0
			if h := n.Home[owner(d)]; h >= 0 {
				pref = int(part[h])
			}
			l := -1
			for k := -1; k < maxBudget && l < 0; k++ {
				try := k
				if k < 0 {
					try = pref
				} else if k == pref {
					continue
				}
				if place(d, try) {
					l = try
				}
			}
			if l < 0 {
				return nil, a, &vl.LimitError{Algo: "nue", Needed: maxBudget + 1, Available: maxBudget,
					Why: fmt.Sprintf("the routes toward DLID %d close a channel dependency cycle in each of the %d layers; these routes are not nue's: pair vl_assigner \"nue-vl\" with routing_engine \"nue\" (same vls), or use the acro or dfsssp VL assigner", f.DLIDs[d], maxBudget)}
			}
			layerOf[d] = uint8(l)
			a.Layers = max(a.Layers, l+1)
		}
	}
	ly := &vl.Layers{L: make([][]uint8, len(f.DLIDs)), N: a.Layers}
	for d := range ly.L {
		row := make([]uint8, f.N)
		for s := range row {
			row[s] = layerOf[d]
		}
		ly.L[d] = row
	}
	v, _, err := vl.PairPlan(f, ly)
	if err != nil {
		return nil, a, err
	}
	return v, a, nil
}
