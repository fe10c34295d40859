package ftree

import (
	"context"
	"fmt"
	"sync"

	"github.com/ibsm/ibsm/plugins/internal/route"
	"github.com/ibsm/ibsm/sdk/plan"
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
	// rowOf[v] is v's row in upT, -1 if nothing is below v.
	rowOf []int32
	// upT[rowOf[v]*N + s] is the index into Up[s] of the group s climbs
	// through toward v, noUp or multiUp.
	upT []uint8
}

// NewRouter precomputes the up-reachability table: O(switches × links
// below each switch) work, rows × switches bytes.
func NewRouter(ctx context.Context, t *Tree) (*Router, error) {
	r := &Router{t: t, div: make([]int64, t.Levels), rowOf: make([]int32, t.N)}
	if t.Levels > 0 {
		d := int64(1)
		for l := t.Levels - 1; l >= 0; l-- {
			r.div[l] = d
			if u := int64(t.SlotCount[l]); u > 0 && d < 1<<40 {
				d *= u
			}
		}
	}
	var rows []int32
	for s := int32(0); s < int32(t.N); s++ {
		r.rowOf[s] = -1
		if len(t.Down[s]) > 0 {
			r.rowOf[s] = int32(len(rows))
			rows = append(rows, s)
		}
	}
	n := t.N
	r.upT = make([]uint8, len(rows)*n)
	err := route.ForEach(ctx, len(rows), func() func(int32) error {
		queue := make([]int32, 0, n)
		return func(ri int32) error {
			v := rows[ri]
			row := r.upT[int(ri)*n : int(ri+1)*n]
			for i := range row {
				row[i] = noUp
			}
			queue = append(queue[:0], v)
			for h := 0; h < len(queue); h++ {
				x := queue[h]
				for _, dg := range t.Down[x] {
					c, ug := dg.Peer, uint8(dg.Rev)
					switch cur := row[c]; {
					case cur == noUp:
						row[c] = ug
						queue = append(queue, c)
					case cur != ug:
						row[c] = multiUp
					}
				}
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	return r, nil
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
// planes per CA/router endpoint and one per switch port 0, all NoPort.
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
	for i := range back {
		back[i] = plan.NoPort
	}
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
		}
		rs.Planes[e].Planes = all[at : at+np : at+np]
		at += np
	}
	return rs
}

func isSwitchEP(t *Tree, e int32) bool { return t.Graph.Attachment(e).IsSwitch }

// worker is one goroutine's scratch space.
type worker struct {
	r    *Router
	run  int32   // current ancestor-set stamp
	anc  []int32 // anc[s] == run: s reaches the target by descending only
	elig [][]int16
	// main path of the current destination plane
	dst      int32
	onMain   []int32 // == dst+1 when on the main path
	mainPort []uint8 // down port of a main-path switch
	mainAt   []int32 // main-path switch per level, -1 above its top
	queue    []int32
	rep      Report
}

func (r *Router) newWorker() *worker {
	n := r.t.N
	w := &worker{r: r, anc: make([]int32, n), elig: make([][]int16, n), onMain: make([]int32, n),
		mainPort: make([]uint8, n), mainAt: make([]int32, r.t.Levels), queue: make([]int32, 0, n)}
	for i := range w.anc {
		w.anc[i] = -1
		w.onMain[i] = -1
	}
	return w
}

// ancestors stamps the switches that reach target by descending only, and
// for each the down groups that keep descending toward it.
func (w *worker) ancestors(target int32) {
	t := w.r.t
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
}

// RouteCAs fills the planes of every CA and router endpoint of routes
// (allocated like NewRoutes, planes per endpoint) with fat-tree routes.
// Destinations are independent, so the work is spread over leaves.
func (r *Router) RouteCAs(ctx context.Context, routes *plan.Routes) (*Report, error) {
	t := r.t
	reps := make([]*Report, 0, 4)
	var mu sync.Mutex
	err := route.ForEach(ctx, len(t.Leaves), func() func(int32) error {
		w := r.newWorker()
		mu.Lock()
		reps = append(reps, &w.rep)
		mu.Unlock()
		return func(li int32) error {
			leaf := t.Leaves[li]
			w.ancestors(leaf)
			for _, e := range t.LeafCAs[li] {
				port := t.Graph.Attachment(e).Port
				i := int64(t.CAIndex[e])
				for k, pl := range routes.Planes[e].Planes {
					w.fill(pl, e, leaf, i, k, port)
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
	rep := &Report{}
	for _, x := range reps {
		rep.add(x)
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
	reps := make([]*Report, 0, 4)
	var mu sync.Mutex
	err := route.ForEach(ctx, t.N, func() func(int32) error {
		w := r.newWorker()
		mu.Lock()
		reps = append(reps, &w.rep)
		mu.Unlock()
		return func(d int32) error {
			e := t.Topo.EndpointIndex(topology.PortRef{Node: sws[d]})
			pl := routes.Planes[e].Planes[0]
			if t.Level[d] < 0 {
				pl[d] = 0
				w.count(pl, e, false)
				return nil
			}
			w.ancestors(d)
			l := t.Level[d]
			w.fill(pl, e, d, int64(t.posInLevel[d])*r.div[l], 0, 0)
			w.count(pl, e, false)
			return nil
		}
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
func (w *worker) fill(pl plan.Plane, e, target int32, i int64, k int, out uint8) {
	r := w.r
	t := r.t
	n := int32(t.N)
	w.dst++
	stamp := w.dst
	for l := range w.mainAt {
		w.mainAt[l] = -1
	}
	// The main path: climb from the target by the digits of i.
	lt := t.Level[target]
	w.mainAt[lt] = target
	for l := lt; l > 0; l-- {
		s := w.mainAt[l]
		ups := t.Up[s]
		if len(ups) == 0 {
			break
		}
		gi := int(t.UpSlots[s][r.digit(i, l, k)])
		sp := r.spread(i, l, k)
		if gi < 0 {
			gi = int(sp % int64(len(ups))) // the slot's cable is missing
		}
		ug := &ups[gi]
		p := ug.Peer
		dg := &t.Down[p][ug.Rev]
		w.onMain[p] = stamp
		w.mainPort[p] = dg.Ports[sp%int64(len(dg.Ports))]
		w.mainAt[l-1] = p
	}
	for _, s := range t.outside {
		pl[s] = plan.NoPort
	}
	for _, s := range t.Order {
		if s == target {
			pl[s] = out
			continue
		}
		ls := t.Level[s]
		if w.anc[s] == w.run {
			if w.onMain[s] == stamp {
				pl[s] = w.mainPort[s]
				continue
			}
			pl[s] = w.down(s, ls, i, k, stamp, target)
			continue
		}
		pl[s] = w.up(pl, s, ls, i, k, n)
	}
}

// down picks an ancestor's way down when it is off the main path: a child
// on the main path if it has one, else a descending child by the digit.
func (w *worker) down(s, ls int32, i int64, k int, stamp, target int32) uint8 {
	t := w.r.t
	el := w.elig[s]
	pick := -1
	for _, di := range el {
		c := t.Down[s][di].Peer
		if c == target || w.onMain[c] == stamp {
			pick = int(di)
			break
		}
	}
	lc := ls + 1
	sp := w.r.spread(i, lc, k)
	if pick < 0 {
		pick = int(el[(w.r.digit(i, lc, k)+sp)%int64(len(el))])
	}
	ports := t.Down[s][pick].Ports
	return ports[sp%int64(len(ports))]
}

// up picks a non-ancestor's way up: toward the lowest main-path switch it
// can climb to; failing that (degraded trees), any parent that has a route,
// trying the digit's slot first.
func (w *worker) up(pl plan.Plane, s, ls int32, i int64, k int, n int32) uint8 {
	r := w.r
	t := r.t
	ups := t.Up[s]
	if len(ups) == 0 {
		return plan.NoPort
	}
	sp := r.spread(i, ls, k)
	for m := ls - 1; m >= 0; m-- {
		v := w.mainAt[m]
		if v < 0 {
			continue
		}
		row := r.rowOf[v]
		if row < 0 {
			continue
		}
		base := row * n
		gi := int(r.upT[base+s])
		if gi == int(noUp) {
			continue
		}
		if gi == int(multiUp) {
			// Several parents lead to v: take the sp-th of them.
			cnt := 0
			for _, ug := range ups {
				if ug.Peer == v || r.upT[base+ug.Peer] != noUp {
					cnt++
				}
			}
			want := int(sp % int64(cnt))
			for j, ug := range ups {
				if ug.Peer == v || r.upT[base+ug.Peer] != noUp {
					if want == 0 {
						gi = j
						break
					}
					want--
				}
			}
		}
		ports := ups[gi].Ports
		return ports[sp%int64(len(ports))]
	}
	start := 0
	if gi := t.UpSlots[s][r.digit(i, ls, k)]; gi >= 0 {
		start = int(gi)
	} else {
		start = int(sp % int64(len(ups)))
	}
	for j := 0; j < len(ups); j++ {
		ug := &ups[(start+j)%len(ups)]
		if pl[ug.Peer] != plan.NoPort {
			return ug.Ports[sp%int64(len(ug.Ports))]
		}
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
