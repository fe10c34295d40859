package ftree

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Report says what could not be routed. A pure up*/down* route does not
// exist between some pairs of a degraded tree (and never between two top
// switches); those entries are left at NoPort, never routed some other way.
type Report struct {
	// SwitchPairs counts (source switch, destination endpoint) pairs
	// without a route, plane 0.
	SwitchPairs int64
	// CAPairs counts (source CA, destination CA) pairs without a route.
	CAPairs int64
	// Detached counts endpoints that hang off no switch by a link that is up.
	Detached int
	// Examples names a few unrouted pairs, for logs.
	Examples []string
}

const maxExamples = 5

func (r *Report) add(o *Report) {
	r.SwitchPairs += o.SwitchPairs
	r.CAPairs += o.CAPairs
	r.Detached += o.Detached
	for _, ex := range o.Examples {
		if len(r.Examples) < maxExamples {
			r.Examples = append(r.Examples, ex)
		}
	}
}

// Table values of the up-reachability table.
const (
	noUp    uint8 = 0xFF // the switch cannot climb to the target
	multiUp uint8 = 0xFE // several of its up groups lead to the target
)

// Router holds what routing needs beyond the Tree: D-mod-k divisors and,
// for every switch v with switches below it, which up group each switch
// below climbs through toward v. Build one per Tree with NewRouter; it is
// read-only afterwards.
type Router struct {
	t *Tree
	// div[l] is the divisor that extracts level l's digit from a CA index.
	div []int64
	// below[v] lists the switches that can climb to v, nearest first
	// (level by level), each with the index into its Up of the group it
	// climbs through toward v, or multiUp.
	below [][]centry
	// Flat copies of the groups for the per-switch loop: switch s's up
	// groups are up[upOff[s]:upOff[s+1]], its slots slot[slotOff[s]:...]
	// (flat group index, -1 missing), likewise for down.
	upOff, downOff, slotOff []int32
	up, down                []cgroup
	slot                    []int32
	par                     [][]uint8 // ports of parallel groups, by cgroup.par
	// upSet[s] numbers s's climbing choice: switches of one level with the
	// same parents in the same order and the same slots (a pod's leaves,
	// an aggregation column) choose the same parent position in up, so
	// each plane scans once per set, not once per switch.
	upSet  []int32
	upSets int
	// For the D-mod-k path (see dmkLeaf, dmkPlane): runs cover the
	// switches in index order, slotPorts holds each switch's up port by
	// slot from slotOff[s] (NoPort where missing); holes[l][j] lists the
	// switches of level l without slot j, and slotOK[l][j] says every
	// up group of level l at slot j, and every up group of those without
	// it, is a single cable; mixed[v] says the switches of some level
	// below v climb toward v through different slots, or some through
	// several groups (multiUp).
	runs      []run
	slotPorts []uint8
	holes     [][][]int32
	slotOK    [][]bool
	mixed     []bool
	lines     *valueLines
	// general turns the D-mod-k path off (tests compare the two).
	general bool
}

// run is a stretch lo..hi-1 of switch indices that take the same port in a
// D-mod-k plane: one level (level, or 0 for NoPort: roots, which are all
// ancestors then, and switches outside the tree) and the same up port at
// every slot (slotPorts[at+slot]).
type run struct {
	lo, hi, level, at int32
}

// centry32 is a switch and a slot.
type centry32 struct{ node, slot int32 }

// centry is one switch below another.
type centry struct {
	node int32
	g    uint8
}

// cgroup is a compact Group: the peer, the first port and, for parallel
// cables, where the full port list is.
type cgroup struct {
	peer int32
	port uint8
	npar uint8 // number of cables
	par  uint16
}

func (r *Router) compact(gs []Group) []cgroup {
	out := make([]cgroup, len(gs))
	for i, g := range gs {
		out[i] = cgroup{peer: g.Peer, port: g.Ports[0], npar: uint8(len(g.Ports))}
		if len(g.Ports) > 1 {
			out[i].par = uint16(len(r.par))
			r.par = append(r.par, g.Ports)
		}
	}
	return out
}

// numberUpSets fills upSet: the key of a switch is its level, its
// parents in up order and its slots as positions in that order.
func (r *Router) numberUpSets() {
	t := r.t
	r.upSet = make([]int32, t.N)
	index := map[string]int32{}
	var key []byte
	for s := range int32(t.N) {
		lo := r.upOff[s]
		key = binary.AppendVarint(key[:0], int64(t.Level[s]))
		for _, g := range r.up[lo:r.upOff[s+1]] {
			key = binary.AppendVarint(key, int64(g.peer))
		}
		key = append(key, '/')
		for _, g := range r.slot[r.slotOff[s]:r.slotOff[s+1]] {
			if g >= 0 {
				g -= lo
			}
			key = binary.AppendVarint(key, int64(g))
		}
		id, ok := index[string(key)]
		if !ok {
			id = int32(len(index))
			index[string(key)] = id
		}
		r.upSet[s] = id
	}
	r.upSets = len(index)
}

// port picks among a group's parallel cables.
func (r *Router) port(g *cgroup, sp uint32) uint8 {
	if g.npar == 1 {
		return g.port
	}
	return r.par[g.par][sp%uint32(g.npar)]
}

// NewRouter precomputes, for every switch, the switches below it and how
// they climb to it: O(Σ links below each switch) work and memory.
func NewRouter(ctx context.Context, t *Tree) (*Router, error) {
	r := &Router{t: t, div: make([]int64, t.Levels)}
	if t.Levels > 0 {
		d := int64(1)
		for l := t.Levels - 1; l >= 0; l-- {
			r.div[l] = d
			if u := int64(t.SlotCount[l]); u > 0 && d < 1<<40 {
				d *= u
			}
		}
	}
	r.upOff = make([]int32, t.N+1)
	r.downOff = make([]int32, t.N+1)
	r.slotOff = make([]int32, t.N+1)
	r.par = [][]uint8{nil}
	for s := 0; s < t.N; s++ {
		r.up = append(r.up, r.compact(t.Up[s])...)
		r.down = append(r.down, r.compact(t.Down[s])...)
		for _, gi := range t.UpSlots[s] {
			if gi >= 0 {
				r.slot = append(r.slot, r.upOff[s]+int32(gi))
			} else {
				r.slot = append(r.slot, -1)
			}
		}
		r.upOff[s+1] = int32(len(r.up))
		r.downOff[s+1] = int32(len(r.down))
		r.slotOff[s+1] = int32(len(r.slot))
	}
	r.numberUpSets()
	if len(r.par) > 1<<16 {
		return nil, fmt.Errorf("ftree: %d groups of parallel cables, more than the %d supported", len(r.par), 1<<16)
	}
	n := t.N
	r.below = make([][]centry, n)
	r.mixed = make([]bool, n)
	err := ForEach(ctx, n, func() func(int32) error {
		queue := make([]int32, 0, n)
		val := make([]uint8, n)
		for i := range val {
			val[i] = noUp
		}
		at := make([]int32, t.Levels) // the slot climbed through, per level
		return func(v int32) error {
			if len(t.Down[v]) == 0 {
				return nil
			}
			queue = append(queue[:0], v)
			for h := 0; h < len(queue); h++ {
				x := queue[h]
				for _, dg := range t.Down[x] {
					c, ug := dg.Peer, uint8(dg.Rev)
					switch cur := val[c]; {
					case cur == noUp:
						val[c] = ug
						queue = append(queue, c)
					case cur != ug:
						val[c] = multiUp
					}
				}
			}
			list := make([]centry, len(queue)-1)
			for l := range at {
				at[l] = -1
			}
			for i, c := range queue[1:] {
				list[i] = centry{node: c, g: val[c]}
				if val[c] == multiUp {
					r.mixed[v] = true
				} else {
					slot, l := t.Up[c][val[c]].Slot, t.Level[c]
					if at[l] >= 0 && at[l] != slot {
						r.mixed[v] = true
					}
					at[l] = slot
				}
				val[c] = noUp
			}
			r.below[v] = list
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	r.buildRuns()
	return r, nil
}

// buildRuns fills slotPorts, holes, slotOK and runs for the D-mod-k path.
func (r *Router) buildRuns() {
	t := r.t
	r.lines = newValueLines()
	r.slotPorts = make([]uint8, len(r.slot))
	for i, g := range r.slot {
		r.slotPorts[i] = plan.NoPort
		if g >= 0 {
			r.slotPorts[i] = r.up[g].port
		}
	}
	r.holes = make([][][]int32, t.Levels)
	r.slotOK = make([][]bool, t.Levels)
	for l, sws := range t.ByLevel {
		r.holes[l] = make([][]int32, t.SlotCount[l])
		r.slotOK[l] = make([]bool, t.SlotCount[l])
		for j := range r.slotOK[l] {
			r.slotOK[l][j] = true
			for _, s := range sws {
				g := r.slot[r.slotOff[s]+int32(j)]
				if g >= 0 {
					r.slotOK[l][j] = r.slotOK[l][j] && r.up[g].npar == 1
					continue
				}
				r.holes[l][j] = append(r.holes[l][j], s)
				for _, ug := range r.up[r.upOff[s]:r.upOff[s+1]] {
					r.slotOK[l][j] = r.slotOK[l][j] && ug.npar == 1
				}
			}
		}
	}
	same := func(a, b int32) bool {
		la, lb := t.Level[a], t.Level[b]
		if max(la, 0) != max(lb, 0) {
			return false
		}
		if la <= 0 {
			return true
		}
		pa := r.slotPorts[r.slotOff[a]:r.slotOff[a+1]]
		pb := r.slotPorts[r.slotOff[b]:r.slotOff[b+1]]
		return string(pa) == string(pb)
	}
	for s := range int32(t.N) {
		if n := len(r.runs); n > 0 && same(r.runs[n-1].lo, s) {
			r.runs[n-1].hi = s + 1
			continue
		}
		r.runs = append(r.runs, run{lo: s, hi: s + 1, level: max(t.Level[s], 0), at: r.slotOff[s]})
	}
}

// digit is CA index i's D-mod-k digit at level l, shifted by plane k.
func (r *Router) digit(i int64, l int32, k int) int64 {
	u := int64(r.t.SlotCount[l])
	if u == 0 {
		return 0
	}
	return (i/r.div[l] + int64(k)) % u
}

// spread is the part of i above level l's digit: it picks among parallel
// cables and among the survivors when a slot's cable is missing.
func (r *Router) spread(i int64, l int32, k int) int64 {
	u := max(int64(r.t.SlotCount[l]), 1)
	return i/r.div[l]/u + int64(k)
}

// NewRoutes allocates planes-form routes for the tree's topology: planes
// planes per CA/router endpoint and one per switch port 0. The planes of
// the CAs on the tree's leaves are left for RouteCAs, which writes every
// entry of them (so the pages are first touched by its workers, in
// parallel, not here); every other plane is NoPort.
func NewRoutes(t *Tree, planes int) *plan.Routes {
	eps := t.Topo.Endpoints()
	n := t.N
	count := 0
	for e := range eps {
		if t.CAIndex[e] >= 0 || !isSwitchEP(t, int32(e)) {
			count += planes
		} else {
			count++
		}
	}
	back := make([]uint8, count*n)
	all := make([]plan.Plane, count)
	rs := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	at := 0
	for e := range eps {
		np := planes
		if isSwitchEP(t, int32(e)) {
			np = 1
		}
		for k := 0; k < np; k++ {
			all[at+k] = back[(at+k)*n : (at+k+1)*n : (at+k+1)*n]
			if t.CAIndex[e] < 0 {
				Fill(all[at+k], plan.NoPort)
			}
		}
		rs.Planes[e].Planes = all[at : at+np : at+np]
		at += np
	}
	return rs
}

func isSwitchEP(t *Tree, e int32) bool { return t.Graph.Attachment(e).IsSwitch }

// worker is one goroutine's scratch space.
type worker struct {
	r   *Router
	run int32   // current ancestor-set stamp
	anc []int32 // anc[s] == run: s reaches the target by descending only
	// elig[a] are the down groups (indices into Down[a]) of ancestor a
	// that keep descending toward the target.
	elig [][]int16
	// simple lists ancestors with one single-cable way down, and its port:
	// their entry is the same for every plane toward the target's CAs.
	simple []centry
	// Current destination plane.
	dst      int32
	asg      []int32  // == dst: the switch has its entry in this plane
	mark     []int64  // closure marks: dst<<8 | level of the main-path switch
	onMain   []int32  // == dst: on the main path
	mainPort []uint8  // down port of a main-path switch
	mainAt   []int32  // main-path switch per level, -1 above its top
	dig      []int32  // per-level digit of the destination plane
	sp       []uint32 // per-level spread of the destination plane
	alt      []uint32 // per-level choice among survivors of a missing slot
	queue    []int32
	rep      Report
	// choice[c] is the up group (flat index) the main path of the leaf's
	// c-th CA takes in the current plane; leafUp is the one fill uses (-1:
	// choose by digit).
	choice []int32
	leafUp int32
	used   []int32
	// upAt[set] is the parent position up chose for the switches of an
	// up set in the plane upStamp[set] (-1: none has a route).
	upAt, upStamp []int32
	// ancRuns are the current target's ancestors as runs of switch
	// indices with the same port (level unused), for fillDmk.
	ancRuns []run
	// lost counts the current target's top switches that do not reach
	// it, lostKids the switches below them with the slot they climb
	// through.
	lost     int
	lostKids []centry32
	// patch lists the entries fillDmk writes over the runs: switches that
	// lack their digit slot or whose digit parent is lost.
	patch []centry
}

// leafChoices picks the first hop of the main path of every CA of leaf for
// plane k: the up group at the CA's digit slot, or, where that cable is
// missing, the surviving group the fewest of the leaf's CAs use (lowest
// slot first). Only CAs whose cable is gone move, and they spread.
func (w *worker) leafChoices(leaf int32, cas []int32, k int) {
	r := w.r
	t := r.t
	lo, hi := r.upOff[leaf], r.upOff[leaf+1]
	w.choice = w.choice[:0]
	w.used = w.used[:0]
	for g := lo; g < hi; g++ {
		w.used = append(w.used, 0)
	}
	l := t.Level[leaf]
	for _, e := range cas {
		g := int32(-1)
		if lo < hi {
			g = r.slot[r.slotOff[leaf]+int32(r.digit(int64(t.CAIndex[e]), l, k))]
			if g >= 0 {
				w.used[g-lo]++
			}
		}
		w.choice = append(w.choice, g)
	}
	if lo == hi {
		return
	}
	n := len(w.used)
	for ci, g := range w.choice {
		if g >= 0 {
			continue
		}
		// Ties rotate with the leaf's position so that the leaves of a pod
		// do not all load the same parent.
		first := int(r.spread(int64(t.CAIndex[cas[ci]]), l, k) % int64(n))
		best := first
		for j := 1; j < n; j++ {
			if x := (first + j) % n; w.used[x] < w.used[best] {
				best = x
			}
		}
		w.used[best]++
		w.choice[ci] = lo + int32(best)
	}
}

func (r *Router) newWorker() *worker {
	n := r.t.N
	l := r.t.Levels
	w := &worker{r: r, anc: make([]int32, n), elig: make([][]int16, n), asg: make([]int32, n), mark: make([]int64, n),
		onMain: make([]int32, n), mainPort: make([]uint8, n), mainAt: make([]int32, l),
		dig: make([]int32, l), sp: make([]uint32, l), alt: make([]uint32, l), queue: make([]int32, 0, n)}
	w.upAt, w.upStamp = make([]int32, r.upSets), make([]int32, r.upSets)
	for i := range w.upStamp {
		w.upStamp[i] = -1
	}
	for i := range w.anc {
		w.anc[i] = -1
		w.asg[i] = -1
		w.onMain[i] = -1
		w.mark[i] = -1
	}
	return w
}

// ancestors stamps the switches that reach target by descending only, and
// for each the down groups that keep descending toward it.
func (w *worker) ancestors(target int32) {
	r := w.r
	t := r.t
	w.run++
	w.anc[target] = w.run
	w.queue = append(w.queue[:0], target)
	for h := 0; h < len(w.queue); h++ {
		c := w.queue[h]
		for _, ug := range t.Up[c] {
			p := ug.Peer
			if w.anc[p] != w.run {
				w.anc[p] = w.run
				w.elig[p] = w.elig[p][:0]
				w.queue = append(w.queue, p)
			}
			w.elig[p] = append(w.elig[p], int16(ug.Rev))
		}
	}
	w.simple = w.simple[:0]
	for _, a := range w.queue[1:] {
		if el := w.elig[a]; len(el) == 1 {
			if g := &r.down[r.downOff[a]+int32(el[0])]; g.npar == 1 {
				w.simple = append(w.simple, centry{node: a, g: g.port})
			}
		}
	}
}

// RouteCAs fills the planes of every CA and router endpoint of routes
// (allocated like NewRoutes, planes per endpoint) with fat-tree routes.
// Destinations are independent, so the work is spread over leaves.
func (r *Router) RouteCAs(ctx context.Context, routes *plan.Routes) (*Report, error) {
	t := r.t
	rep, err := r.forEach(ctx, len(t.Leaves), func(w *worker) func(int32) error {
		return func(li int32) error {
			leaf := t.Leaves[li]
			w.ancestors(leaf)
			cas := t.LeafCAs[li]
			if len(cas) == 0 {
				return nil
			}
			np := len(routes.Planes[cas[0]].Planes)
			dmk := w.dmkLeaf(leaf)
			for k := 0; k < np; k++ {
				chosen := false
				for ci, e := range cas {
					pl := routes.Planes[e].Planes[k]
					i, out := int64(t.CAIndex[e]), t.Graph.Attachment(e).Port
					if dmk && w.dmkPlane(leaf, i, k) {
						w.fillDmk(pl, leaf, out)
						if k == 0 && (len(t.outside) > 0 || w.lost > 0) {
							w.count(pl, e, true) // only those and lost top switches are NoPort
						}
						continue
					}
					if !chosen {
						w.leafChoices(leaf, cas, k)
						chosen = true
					}
					w.leafUp = w.choice[ci]
					w.fill(pl, e, leaf, i, k, out)
					if k == 0 {
						w.count(pl, e, true)
					}
				}
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	for e := range t.CAIndex {
		if t.CAIndex[e] < 0 && !isSwitchEP(t, int32(e)) {
			rep.Detached++
			rep.SwitchPairs += int64(t.N)
			if len(rep.Examples) < maxExamples {
				ep := t.Topo.Endpoints()[e]
				rep.Examples = append(rep.Examples, fmt.Sprintf("endpoint 0x%016x/%d is not linked to any switch by a link that is up", t.Topo.Nodes[ep.Node].GUID, ep.Port))
			}
		}
	}
	return rep, nil
}

// RouteSwitches fills the plane of every switch's port-0 endpoint with the
// up*/down* routes that exist toward it: from below and beside it, but
// not from switches whose every climb misses its ancestors (for example
// another top switch). Those stay NoPort and are counted.
func (r *Router) RouteSwitches(ctx context.Context, routes *plan.Routes) (*Report, error) {
	t := r.t
	sws := t.Topo.Switches()
	return r.forEach(ctx, t.N, func(w *worker) func(int32) error {
		return func(d int32) error {
			e := t.Topo.EndpointIndex(topology.PortRef{Node: sws[d]})
			pl := routes.Planes[e].Planes[0]
			if t.Level[d] < 0 {
				pl[d] = 0
				w.count(pl, e, false)
				return nil
			}
			w.ancestors(d)
			w.leafUp = -1
			l := t.Level[d]
			w.fill(pl, e, d, int64(t.posInLevel[d])*r.div[l], 0, 0)
			w.count(pl, e, false)
			return nil
		}
	})
}

// ForEach is route.ForEach with the items handed out one at a time
// (route.Each) instead of in fixed strides: when a core is busy elsewhere
// (the host beside the call, other processes), the goroutine that runs
// takes on the items the stalled one would have had, instead of waiting
// for it. Each goroutine gets its own newWorker().
func ForEach(ctx context.Context, n int, newWorker func() func(i int32) error) error {
	dos := make([]func(int32) error, route.Workers(n))
	_, err := route.Each(ctx, n, len(dos), func(w, i int) error {
		if dos[w] == nil {
			dos[w] = newWorker() // only goroutine w touches dos[w]
		}
		return dos[w](int32(i))
	})
	return err
}

// forEach runs body over 0..n-1 with one worker per goroutine and merges
// the workers' reports.
func (r *Router) forEach(ctx context.Context, n int, body func(w *worker) func(int32) error) (*Report, error) {
	var reps []*Report
	var mu sync.Mutex
	err := ForEach(ctx, n, func() func(int32) error {
		w := r.newWorker()
		mu.Lock()
		reps = append(reps, &w.rep)
		mu.Unlock()
		return body(w)
	})
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	for _, x := range reps {
		rep.add(x)
	}
	return rep, nil
}

// fill writes one plane toward endpoint e, which hangs off switch target
// (whose ancestors are stamped) through port out, for CA index i, plane k.
//
// Ancestors of the target descend: along the main path, which climbs from
// the target by the digits of i, or else toward it. Every other switch
// climbs to the lowest main-path switch it can reach (the closure lists,
// deepest main-path switch first); in a degraded tree, switches that reach
// none climb to any parent that has a route.
func (w *worker) fill(pl plan.Plane, e, target int32, i int64, k int, out uint8) {
	r := w.r
	t := r.t
	w.dst++
	stamp := w.dst
	for l := range w.mainAt {
		w.mainAt[l] = -1
	}
	w.digits(i, k)
	for _, a := range w.simple {
		pl[a.node] = a.g
		w.asg[a.node] = stamp
	}
	lt := t.Level[target]
	w.mainAt[lt] = target
	for l := lt; l > 0; l-- {
		s := w.mainAt[l]
		lo, hi := r.upOff[s], r.upOff[s+1]
		if lo == hi {
			break
		}
		g := r.slot[r.slotOff[s]+w.dig[l]]
		if l == lt && w.leafUp >= 0 {
			g = w.leafUp
		}
		sp := w.sp[l]
		if g < 0 {
			g = lo + int32(w.alt[l]%uint32(hi-lo)) // the slot's cable is missing
		}
		p := r.up[g].peer
		dg := &r.down[r.downOff[p]+t.Up[s][g-lo].Rev]
		w.onMain[p] = stamp
		w.mainPort[p] = r.port(dg, sp)
		pl[p] = w.mainPort[p]
		w.asg[p] = stamp
		w.mainAt[l-1] = p
	}
	pl[target] = out
	w.asg[target] = stamp
	for m := lt - 1; m >= 0; m-- {
		v := w.mainAt[m]
		if v < 0 {
			continue
		}
		key := int64(stamp)<<8 | int64(m)
		for _, c := range r.below[v] {
			s := c.node
			w.mark[s] = key
			if w.asg[s] == stamp || w.anc[s] == w.run {
				continue
			}
			sp := w.sp[t.Level[s]]
			lo := r.upOff[s]
			if c.g != multiUp {
				pl[s] = r.port(&r.up[lo+int32(c.g)], sp)
				w.asg[s] = stamp
				continue
			}
			// Several parents lead to v: take the sp-th of them.
			hi := r.upOff[s+1]
			cnt := uint32(0)
			for j := lo; j < hi; j++ {
				if p := r.up[j].peer; p == v || w.mark[p] == key {
					cnt++
				}
			}
			want := sp % cnt
			for j := lo; j < hi; j++ {
				if p := r.up[j].peer; p == v || w.mark[p] == key {
					if want == 0 {
						pl[s] = r.port(&r.up[j], sp)
						w.asg[s] = stamp
						break
					}
					want--
				}
			}
		}
	}
	for _, s := range t.outside {
		pl[s] = plan.NoPort
	}
	for _, s := range t.Order {
		if w.asg[s] == stamp {
			continue
		}
		var p uint8
		if w.anc[s] == w.run {
			p = w.down(s, stamp, target)
		} else {
			p = w.up(s, stamp)
		}
		pl[s] = p
		if p != plan.NoPort {
			w.asg[s] = stamp
		}
	}
}

// dmkLeaf reports whether the CA planes toward leaf (whose ancestors are
// stamped) may take the D-mod-k path, and if so prepares ancRuns and the
// lost top switches (those that do not reach the leaf): the leaf is on the
// lowest level, some top switch is its ancestor, and every ancestor has
// one way down toward it, a single cable (w.simple holds them all).
// dmkPlane then says which planes do. For such a plane, CA index i and
// plane k with digits d[l], fill provably writes what fillDmk does:
//
//   - the main path climbs from the leaf through the slot d[l] of each
//     level l (checked present), and an ancestor's main-path port is its
//     only way down, so every ancestor takes its simple port, the leaf the
//     CA's port;
//   - a switch s of level l below some main-path switch v climbs toward
//     the deepest such v through the one slot every switch of level l
//     takes toward v (v is not mixed), which is the main path's own slot
//     d[l]; so a switch without slot d[l] is below no main-path switch;
//   - any other switch of level l ≥ 1 climbs through the slot d[l] if it
//     has it, else through its first parent from position alt[l] on, that
//     has a route, and from level 2 down every parent has one: a lost top
//     switch has none (NoPort), so a level-1 switch whose parent there is
//     lost takes the next one that is not (firstUp; none: the plane goes
//     general), and then every level-1 switch, and by induction every
//     switch below, has a route;
//   - the groups at slot d[l], and all of those switches without it, are
//     single cables (slotOK), and so is each group firstUp picks, so sp
//     picks nothing.
//
// So every switch outside the tree and every lost top switch is NoPort,
// and every other switch that is not an ancestor takes its up port at
// slot d[l], or the patch dmkPlane computed: D-mod-k with holes.
func (w *worker) dmkLeaf(leaf int32) bool {
	r := w.r
	t := r.t
	if r.general || t.Level[leaf] != t.LeafLevel() || len(w.simple) != len(w.queue)-1 {
		return false
	}
	w.lost, w.lostKids = 0, w.lostKids[:0]
	for _, root := range t.ByLevel[0] {
		if w.anc[root] == w.run {
			continue
		}
		w.lost++
		for _, dg := range t.Down[root] {
			w.lostKids = append(w.lostKids, centry32{node: dg.Peer, slot: t.Up[dg.Peer][dg.Rev].Slot})
		}
	}
	if w.lost == len(t.ByLevel[0]) {
		return false
	}
	w.ancRuns = w.ancRuns[:0]
	for _, a := range w.simple {
		if n := len(w.ancRuns); n > 0 && w.ancRuns[n-1].hi == a.node && w.ancRuns[n-1].at == int32(a.g) {
			w.ancRuns[n-1].hi++
			continue
		}
		w.ancRuns = append(w.ancRuns, run{lo: a.node, hi: a.node + 1, at: int32(a.g)})
	}
	return true
}

// digits sets w.dig, w.sp and w.alt, per level, for CA index i, plane k.
func (w *worker) digits(i int64, k int) {
	r := w.r
	for l := range w.dig {
		w.dig[l] = int32(r.digit(i, int32(l), k))
		w.sp[l] = uint32(r.spread(i, int32(l), k) & 0x7FFFFFFF)
		// Destinations displaced from one missing slot share their higher
		// digits; their lower digits tell them apart.
		w.alt[l] = w.sp[l] + uint32(i%r.div[l])
	}
}

// dmkPlane sets the digits (digits) for CA index i, plane k, and reports
// whether that plane toward leaf (dmkLeaf true) takes the D-mod-k path:
// every level's digit slot is slotOK, the main path has the digit slots
// and none of its switches is mixed.
func (w *worker) dmkPlane(leaf int32, i int64, k int) bool {
	r := w.r
	t := r.t
	w.digits(i, k)
	s := leaf
	for l := t.LeafLevel(); l > 0; l-- {
		if len(r.slotOK[l]) == 0 || !r.slotOK[l][w.dig[l]] {
			return false
		}
		g := r.slot[r.slotOff[s]+w.dig[l]]
		if g < 0 {
			return false
		}
		s = r.up[g].peer
		if r.mixed[s] {
			return false
		}
	}
	w.patch = w.patch[:0]
	if len(r.holes) < 2 {
		return true
	}
	d1 := w.dig[1]
	for _, x := range r.holes[1][d1] {
		if !w.firstUp(x, int32(w.alt[1]%uint32(r.upOff[x+1]-r.upOff[x]))) {
			return false
		}
	}
	for _, c := range w.lostKids {
		if c.slot == d1 && !w.firstUp(c.node, r.slot[r.slotOff[c.node]+d1]-r.upOff[c.node]) {
			return false
		}
	}
	for l := 2; l < len(r.holes); l++ {
		for _, x := range r.holes[l][w.dig[l]] {
			lo, hi := r.upOff[x], r.upOff[x+1]
			w.patch = append(w.patch, centry{node: x, g: r.up[lo+int32(w.alt[l]%uint32(hi-lo))].port})
		}
	}
	return true
}

// firstUp patches level-1 switch x with its first parent, from position
// start on, that is not a lost top switch, as up would choose; false if
// there is none or it is cabled in parallel.
func (w *worker) firstUp(x, start int32) bool {
	r := w.r
	lo, hi := r.upOff[x], r.upOff[x+1]
	n := hi - lo
	for j := range n {
		g := &r.up[lo+(start+j)%n]
		if w.anc[g.peer] != w.run && r.t.Level[g.peer] == 0 {
			continue // lost: it has no route
		}
		if g.npar != 1 {
			return false
		}
		w.patch = append(w.patch, centry{node: x, g: g.port})
		return true
	}
	return false
}

// fillDmk writes the D-mod-k plane toward the CA on port out of leaf for
// the digits dmkPlane set: every switch's up port at its level's digit
// (the holes' at alt), the ancestors' ways down over it, the leaf's port
// to the CA.
func (w *worker) fillDmk(pl plan.Plane, leaf int32, out uint8) {
	r := w.r
	for _, rn := range r.runs {
		v := plan.NoPort
		if rn.level > 0 {
			v = r.slotPorts[rn.at+w.dig[rn.level]]
		}
		r.lines.set(pl[rn.lo:rn.hi], v)
	}
	for _, p := range w.patch {
		pl[p.node] = p.g
	}
	for _, rn := range w.ancRuns {
		r.lines.set(pl[rn.lo:rn.hi], uint8(rn.at))
	}
	pl[leaf] = out
}

// Fill sets every byte of b to v by doubling copies (a byte loop costs
// ten times more on the 15 MB of switch planes at ft3-56).
func Fill(b []uint8, v uint8) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// valueLines holds lineLen copies of every byte value, so that a run of
// up to lineLen equal bytes is one copy (a byte loop, or doubling copies,
// cost several times more on the 28-byte runs of a radix-56 tree).
type valueLines [256 * lineLen]uint8

const lineLen = 256

func newValueLines() *valueLines {
	var l valueLines
	for v := range 256 {
		for i := range lineLen {
			l[v*lineLen+i] = uint8(v)
		}
	}
	return &l
}

// set sets every byte of b to v.
func (l *valueLines) set(b []uint8, v uint8) {
	line := l[int(v)*lineLen : (int(v)+1)*lineLen]
	for len(b) > lineLen {
		copy(b, line)
		b = b[lineLen:]
	}
	copy(b, line)
}

// down picks the way down of an ancestor off the main path: a child on the
// main path if it has one, else a descending child by the digit.
func (w *worker) down(s, stamp, target int32) uint8 {
	r := w.r
	el := w.elig[s]
	lc := r.t.Level[s] + 1
	sp := w.sp[lc]
	base := r.downOff[s]
	if len(el) == 1 {
		return r.port(&r.down[base+int32(el[0])], sp)
	}
	at := -1
	for _, di := range el {
		c := r.down[base+int32(di)].peer
		if c == target || w.onMain[c] == stamp {
			at = int(di)
			break
		}
	}
	if at < 0 {
		at = int(el[(uint32(w.dig[lc])+sp)%uint32(len(el))])
	}
	return r.port(&r.down[base+int32(at)], sp)
}

// up picks the way up of a switch that cannot climb to the main path (on a
// full tree: toward a top switch off the main path, e.g. an aggregation
// switch in another column): the parent at the digit's slot if it has a
// route, else the next parent that has one.
func (w *worker) up(s, stamp int32) uint8 {
	r := w.r
	lo, hi := r.upOff[s], r.upOff[s+1]
	if lo == hi {
		return plan.NoPort
	}
	ls := r.t.Level[s]
	set := r.upSet[s]
	if w.upStamp[set] != stamp {
		// The set's parents are a level up, all decided in this plane.
		w.upStamp[set] = stamp
		w.upAt[set] = -1
		k := hi - lo
		start := int32(w.alt[ls] % uint32(k))
		if g := r.slot[r.slotOff[s]+w.dig[ls]]; g >= 0 {
			start = g - lo
		}
		for j := int32(0); j < k; j++ {
			if at := (start + j) % k; w.asg[r.up[lo+at].peer] == stamp {
				w.upAt[set] = at
				break
			}
		}
	}
	if at := w.upAt[set]; at >= 0 {
		return r.port(&r.up[lo+at], w.sp[ls])
	}
	return plan.NoPort
}

// count adds the pairs plane pl leaves unrouted toward endpoint e.
func (w *worker) count(pl plan.Plane, e int32, ca bool) {
	t := w.r.t
	for s, out := range pl {
		if out != plan.NoPort {
			continue
		}
		w.rep.SwitchPairs++
		if ca {
			if lp := t.LeafPos[s]; lp >= 0 {
				w.rep.CAPairs += int64(len(t.LeafCAs[lp]))
			}
		}
		if len(w.rep.Examples) < maxExamples {
			ep := t.Topo.Endpoints()[e]
			w.rep.Examples = append(w.rep.Examples, fmt.Sprintf("switch %s has no up/down route to endpoint 0x%016x/%d", t.name(int32(s)), t.Topo.Nodes[ep.Node].GUID, ep.Port))
		}
	}
}
