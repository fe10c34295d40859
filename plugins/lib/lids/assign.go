package lids

import (
	"context"
	"fmt"
	"math/bits"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// MaxLIDsPerPort is 2^7, the most LIDs LMC can give one port.
const MaxLIDsPerPort = 128

// Options tune Assign.
type Options struct {
	Heuristic Heuristic
	// MinLMC is a floor: every CA port gets at least 2^MinLMC LIDs (the SM's
	// configured lmc; spare LIDs duplicate existing trees).
	MinLMC uint8
	// MaxLMC caps the LMC of any port (0..7); a destination needing more
	// configurations is an error.
	MaxLMC uint8
	// SwitchLMC lets switch port 0 take more than one LID (OpenSM
	// lmc_esp0, enhanced port 0 only). Off, a switch destination keeps one
	// LID: its largest configuration is realised and the paths of the
	// others are carried by that configuration's tree (completed to every
	// switch) instead, with a warning.
	SwitchLMC bool
	// Previous maps port GUID to the base LID it held before; kept when
	// still aligned to the new LMC and free.
	Previous map[uint64]uint16
	Log      hclog.Logger
}

// Result is Assign's answer: the LID plan plus what the experiments report.
type Result struct {
	Plan *plan.LIDPlan
	// Configs[e] is the number of configurations (distinct LIDs the paths
	// need) of endpoint e before rounding to 2^LMC.
	Configs []int
	// PathGroup[i] is the LID offset path i of the input uses.
	PathGroup []int32
	// Rerouted counts paths toward switch port 0 that could not keep their
	// own LID because SwitchLMC is off.
	Rerouted int
}

// Assign validates the routes, partitions every destination's paths with
// opt.Heuristic and builds the LID plan: per-endpoint LMC (power of two
// covering its configurations, at least MinLMC for CAs), 2^LMC-aligned
// bases without overlap, one plane per LID (configuration trees completed so
// every switch routes every LID; spare LIDs repeat configurations), and a
// DLID override for every (source, destination) pair whose path is not in
// configuration 0. Configuration 0 is the largest, so most pairs need no
// override. When a pair has several paths, its first path picks its DLID;
// the others stay reachable through their own LIDs.
//
// Planes-form routes are accepted too: each source's path is the walk of
// the plane the DLIDSpread rule would give it (source index mod planes).
func Assign(ctx context.Context, t *topology.Topology, r *plan.Routes, opt Options) (*Result, error) {
	if t == nil {
		return nil, fmt.Errorf("no topology in the request")
	}
	if r == nil {
		return nil, fmt.Errorf("no routes in the request; the routing engine must run first")
	}
	if !opt.Heuristic.Valid() {
		return nil, fmt.Errorf("unknown LID heuristic %q (want one of %v)", opt.Heuristic, Heuristics)
	}
	if opt.MaxLMC > 7 || opt.MinLMC > 7 {
		return nil, fmt.Errorf("LMC bounds %d..%d out of range 0..7", opt.MinLMC, opt.MaxLMC)
	}
	if opt.MinLMC > opt.MaxLMC {
		return nil, fmt.Errorf("the SM's lmc %d exceeds this assigner's max_lmc %d; raise max_lmc or lower lmc", opt.MinLMC, opt.MaxLMC)
	}
	log := opt.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	g := newGraph(t)
	paths := r.Paths
	if r.IsPlanes() {
		var err error
		if paths, err = pathsFromPlanes(t, g, r); err != nil {
			return nil, err
		}
	}
	eps := t.Endpoints()
	byDst := make([][]int32, len(eps))
	steps := make([][]Step, len(paths))
	for i := range paths {
		s, err := checkPath(t, g, &paths[i])
		if err != nil {
			return nil, fmt.Errorf("path %d (%s -> %s): %w; the routing engine produced a path this fabric cannot carry", i, epName(t, paths[i].Src), epName(t, paths[i].Dst), err)
		}
		steps[i] = s
		byDst[paths[i].Dst] = append(byDst[paths[i].Dst], int32(i))
	}

	res := &Result{Configs: make([]int, len(eps)), PathGroup: make([]int32, len(paths))}
	lp := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps)), Planes: make([]plan.DestPlanes, len(eps))}
	res.Plan = lp
	nsw := len(t.Switches())
	var dpaths [][]Step
	for d := range eps {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ids := byDst[d]
		dpaths = dpaths[:0]
		for _, i := range ids {
			dpaths = append(dpaths, steps[i])
		}
		grp, k, err := Partition(opt.Heuristic, dpaths, nsw)
		if err != nil {
			return nil, err
		}
		// Renumber by size (largest first, then creation order) so the
		// base LID carries the most pairs.
		size := make([]int, k)
		for _, c := range grp {
			size[c]++
		}
		rank := make([]int32, k)
		byRank := make([]int, k)
		for c := range byRank {
			byRank[c] = c
		}
		slices.SortStableFunc(byRank, func(a, b int) int { return size[b] - size[a] })
		for pos, c := range byRank {
			rank[c] = int32(pos)
		}
		res.Configs[d] = k
		isSwitch := eps[d].Port == 0 && t.SwitchIndex(eps[d].Node) >= 0
		if isSwitch && !opt.SwitchLMC && k > 1 {
			for j, c := range grp {
				if rank[c] != 0 {
					res.Rerouted++
					grp[j] = int32(byRank[0])
				}
			}
			k = 1
			rank[byRank[0]] = 0
		}
		if k == 0 {
			k = 1 // nobody routes here: one tree built from the destination
		}
		lmc, err := lmcFor(k, isSwitch && !opt.SwitchLMC, opt)
		if err != nil {
			return nil, fmt.Errorf("destination %s: %w", epName(t, int32(d)), err)
		}
		lp.Ports[d].LMC = lmc
		// Trees: one per configuration, then completed.
		trees := make([]plan.Plane, k)
		for c := range trees {
			trees[c] = make(plan.Plane, nsw)
			for s := range trees[c] {
				trees[c][s] = plan.NoPort
			}
		}
		for j, i := range ids {
			c := rank[grp[j]]
			res.PathGroup[i] = c
			for _, st := range steps[i] {
				trees[c][st.Switch] = st.Out
			}
		}
		for _, tr := range trees {
			g.complete(t, tr, eps[d])
		}
		n := 1 << lmc
		planes := make([]plan.Plane, n)
		for i := range planes {
			planes[i] = trees[i%k]
		}
		lp.Planes[d].Planes = planes
	}
	// DLID choice: the first path of each pair decides; configuration 0 is
	// the base LID (DLIDBase), everything else an override.
	seen := map[[2]int32]bool{}
	for i, p := range paths {
		key := [2]int32{p.Src, p.Dst}
		if seen[key] {
			continue
		}
		seen[key] = true
		if c := res.PathGroup[i]; c != 0 {
			lp.Overrides = append(lp.Overrides, plan.DLIDOverride{Src: p.Src, Dst: p.Dst, Offset: uint8(c)})
		}
	}
	if res.Rerouted > 0 {
		log.Warn("switch destinations keep one LID (switch_lmc is off): some paths toward switch port 0 follow another path's tree",
			"paths", res.Rerouted, "fix", "set switch_lmc = true if every switch has enhanced port 0")
	}
	if err := allocate(t, lp, opt.Previous); err != nil {
		return nil, err
	}
	return res, nil
}

// lmcFor is the LMC of a destination whose paths need k configurations.
// single marks a switch port 0 without switch_lmc: it keeps one LID and the
// floor does not apply.
func lmcFor(k int, single bool, opt Options) (uint8, error) {
	if k > MaxLIDsPerPort {
		return 0, fmt.Errorf("needs %d LIDs with %s, more than the 128 (LMC 7) a port can have; use a routing with fewer conflicting paths toward it or another heuristic", k, opt.Heuristic)
	}
	lmc := uint8(0)
	if k > 1 {
		lmc = uint8(bits.Len(uint(k - 1)))
	}
	if single {
		return lmc, nil
	}
	if lmc > opt.MaxLMC {
		return 0, fmt.Errorf("needs %d LIDs (LMC %d) with %s, but max_lmc is %d; raise max_lmc (up to 7) or use a routing with fewer conflicting paths", k, lmc, opt.Heuristic, opt.MaxLMC)
	}
	return max(lmc, opt.MinLMC), nil
}

// allocate gives every endpoint a base LID aligned to its 2^LMC: previous
// LIDs first where they still fit, then the rest packed from LID 1 upward,
// largest ranges first so alignment wastes nothing.
func allocate(t *topology.Topology, lp *plan.LIDPlan, previous map[uint64]uint16) error {
	total := 0
	for _, p := range lp.Ports {
		total += p.Count()
	}
	if total > plan.MaxUnicastLID {
		return fmt.Errorf("the plan needs %d LIDs in total but the unicast space 1..0x%X holds %d; use a routing with fewer conflicting paths, a heuristic that needs fewer LIDs (color-l), or a lower lmc", total, plan.MaxUnicastLID, plan.MaxUnicastLID)
	}
	eps := t.Endpoints()
	taken := make([]bool, plan.MaxUnicastLID+1)
	taken[0] = true
	free := func(base, n int) bool {
		if base < 1 || base+n-1 > plan.MaxUnicastLID {
			return false
		}
		return !slices.Contains(taken[base:base+n], true)
	}
	take := func(e, base int) {
		for l := base; l < base+lp.Ports[e].Count(); l++ {
			taken[l] = true
		}
		lp.Ports[e].Base = uint16(base)
	}
	if len(previous) > 0 {
		for e, ep := range eps {
			g := t.PortGUID(ep)
			prev, ok := previous[g]
			n := lp.Ports[e].Count()
			if !ok || g == 0 || int(prev)&(n-1) != 0 || !free(int(prev), n) {
				continue
			}
			take(e, int(prev))
		}
	}
	order := make([]int, 0, len(eps))
	for e := range eps {
		if lp.Ports[e].Base == 0 {
			order = append(order, e)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(lp.Ports[b].LMC) - int(lp.Ports[a].LMC) })
	var cursor [8]int
	for _, e := range order {
		lmc := lp.Ports[e].LMC
		n := 1 << lmc
		base := max(cursor[lmc], n) // LID 0 is reserved: the first aligned range starts at n
		base = (base + n - 1) &^ (n - 1)
		for base+n-1 <= plan.MaxUnicastLID && !free(base, n) {
			base += n
		}
		if base+n-1 > plan.MaxUnicastLID {
			return fmt.Errorf("the unicast LID space 1..0x%X is exhausted: the plan needs %d LIDs and previously held LIDs fragment the rest; restart with a fresh LID state or use fewer LIDs", plan.MaxUnicastLID, total)
		}
		take(e, base)
		cursor[lmc] = base + n
	}
	return nil
}

func epName(t *topology.Topology, e int32) string {
	eps := t.Endpoints()
	if e < 0 || int(e) >= len(eps) {
		return fmt.Sprintf("endpoint %d", e)
	}
	p := eps[e]
	return fmt.Sprintf("%q 0x%016x/%d", t.Nodes[p.Node].Desc, t.Nodes[p.Node].GUID, p.Port)
}
