// Package sssp is the balanced shortest-path routing of Hoefler, Schneider
// and Lumsdaine (HOTI'09), the first phase of DFSSSP (Domke, Hoefler and
// Nagel, IPDPS'11): destinations are routed one after the other, each by a
// shortest-path tree under channel weights that grow by one for every
// route already placed on the channel, so later destinations steer around
// loaded channels. It is topology-agnostic and makes no deadlock promise;
// a VL assigner has to break the cycles.
package sssp

import (
	"context"
	"fmt"
	"math"

	"github.com/ibsm/ibsm/plugins/lib/paths"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Report says what Route did besides the planes.
type Report struct {
	// Detached counts endpoints not attached to any switch (all NoPort).
	Detached int
	// Unreached counts (switch, destination plane) entries left NoPort
	// because the switch is in another component.
	Unreached int
	// MaxWeight is the largest channel weight at the end (1 + routes).
	MaxWeight int64
}

// Route returns planes indexed like t.Endpoints(). Destinations are taken
// in endpoint order (CAs and switches as they sort by node GUID). A CA
// destination gets 2^lmc planes, computed one after the other so each sees
// the weight its predecessors added and they diverge where that pays; a
// switch's port 0 gets one plane (switch LIDs carry management traffic
// and usually LMC 0; Realize reuses plane 0 for further LIDs).
//
// Weights start at 1 per directed switch-to-switch channel; after a CA
// destination's plane is built, each channel gains the number of CA
// sources whose route to it crosses the channel (CA-to-CA traffic is what
// the balance is for; switch destinations are routed on the current
// weights without adding to them).
//
// Cost: one Dijkstra per plane over switches only, with an indexed binary
// heap on flat arrays: O(P·E·log N) for P planes, E channels, N switches;
// memory O(N + E) besides the planes.
func Route(ctx context.Context, t *topology.Topology, lmc uint8) ([]plan.DestPlanes, *Report, error) {
	if t == nil {
		return nil, nil, fmt.Errorf("sssp: no topology in the request")
	}
	if lmc > 7 {
		return nil, nil, fmt.Errorf("sssp: LMC %d is out of range 0..7", lmc)
	}
	f, err := paths.NewFabric(t)
	if err != nil {
		return nil, nil, fmt.Errorf("sssp: %w", err)
	}
	n := f.N
	eps := t.Endpoints()
	out := make([]plan.DestPlanes, len(eps))
	rep := &Report{}
	// back[r] is the weight of channel Rev[r]: the search walks channels
	// backwards, from a switch t over the channels r leaving t to the
	// switches whose channel Rev[r] enters t, so it reads weights in
	// order.
	back := make([]int64, f.Channels())
	for r := range back {
		back[r] = 1
	}
	cas := make([]int64, n) // CA sources per switch
	for e, home := range f.Home {
		if f.IsCA[e] && home >= 0 {
			cas[home]++
		}
	}
	d := newDijkstra(f)
	cnt := make([]int64, n)
	// tree fills pl with the tree d.run found toward endpoint e's switch
	// and returns how many switches it does not reach.
	tree := func(d *dijkstra, e int, pl plan.Plane) (unreached int) {
		home := f.Home[e]
		for s := range pl {
			switch {
			case int32(s) == home:
				pl[s] = f.HomePort[e]
			case d.parent[s] < 0:
				pl[s] = plan.NoPort
				unreached++
			default:
				pl[s] = f.PeerPort[d.parent[s]]
			}
		}
		return unreached
	}
	var pool []*dijkstra // one search per worker for runs of switch destinations
	for e := 0; e < len(eps); e++ {
		if e&255 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		home := f.Home[e]
		if !f.IsCA[e] && home >= 0 {
			// A run of switch destinations adds no weight: every one of
			// them is routed on the same weights, so they run in parallel
			// with the same trees as one after the other.
			j := e
			for j < len(eps) && !f.IsCA[j] && f.Home[j] >= 0 {
				j++
			}
			w := route.Workers(j - e)
			for len(pool) < w {
				pool = append(pool, newDijkstra(f))
			}
			unreached := make([]int, w)
			if _, err := route.Each(ctx, j-e, w, func(wk, i int) error {
				pl := make(plan.Plane, n)
				out[e+i].Planes = []plan.Plane{pl}
				pool[wk].run(f.Home[e+i], back)
				unreached[wk] += tree(pool[wk], e+i, pl)
				return nil
			}); err != nil {
				return nil, nil, err
			}
			for _, u := range unreached {
				rep.Unreached += u
			}
			e = j - 1
			continue
		}
		planes := 1
		if f.IsCA[e] {
			planes = 1 << lmc
		}
		out[e].Planes = make([]plan.Plane, planes)
		for k := range out[e].Planes {
			pl := make(plan.Plane, n)
			out[e].Planes[k] = pl
			if home < 0 {
				for s := range pl {
					pl[s] = plan.NoPort
				}
				continue
			}
			d.run(home, back)
			rep.Unreached += tree(d, e, pl)
			// Routes toward e from every other CA: push counts up the tree
			// from the leaves (reverse settle order).
			copy(cnt, cas)
			cnt[home]--
			for i := len(d.order) - 1; i > 0; i-- {
				s := d.order[i]
				r := d.parent[s]
				back[r] += cnt[s]
				cnt[f.From[r]] += cnt[s]
			}
		}
		if home < 0 {
			rep.Detached++
		}
	}
	for _, w := range back {
		rep.MaxWeight = max(rep.MaxWeight, w)
	}
	return out, rep, nil
}

// dijkstra holds one shortest-path-tree search toward a switch, reused
// across destinations.
type dijkstra struct {
	f      *paths.Fabric
	dist   []int64
	parent []int32 // channel next→s (the reverse of s's way toward the root), -1 if none / root
	order  []int32 // settle order, root first
	heap   []int32
	pos    []int32 // -1: not in heap
}

func newDijkstra(f *paths.Fabric) *dijkstra {
	return &dijkstra{f: f, dist: make([]int64, f.N), parent: make([]int32, f.N), order: make([]int32, 0, f.N),
		heap: make([]int32, 0, f.N), pos: make([]int32, f.N)}
}

// run builds the tree of shortest routes toward switch root: distances
// over channels s→t of weight back[t→s], searched backwards from root. On
// equal distance the first route found stays.
func (d *dijkstra) run(root int32, back []int64) {
	f := d.f
	for i := range d.dist {
		d.dist[i] = math.MaxInt64
		d.parent[i] = -1
		d.pos[i] = -1
	}
	d.order = d.order[:0]
	d.heap = d.heap[:0]
	d.dist[root] = 0
	d.push(root)
	for len(d.heap) > 0 {
		t := d.popMin()
		d.order = append(d.order, t)
		dt := d.dist[t]
		for r := f.Off[t]; r < f.Off[t+1]; r++ {
			s := f.Peer[r]
			if nd := dt + back[r]; nd < d.dist[s] {
				d.dist[s] = nd
				d.parent[s] = r
				if d.pos[s] < 0 {
					d.push(s)
				} else {
					d.up(int(d.pos[s]))
				}
			}
		}
	}
}

func (d *dijkstra) push(s int32) {
	d.pos[s] = int32(len(d.heap))
	d.heap = append(d.heap, s)
	d.up(len(d.heap) - 1)
}

func (d *dijkstra) less(a, b int32) bool {
	return d.dist[a] < d.dist[b] || (d.dist[a] == d.dist[b] && a < b)
}

func (d *dijkstra) up(i int) {
	h := d.heap
	for i > 0 {
		p := (i - 1) / 2
		if !d.less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		d.pos[h[i]], d.pos[h[p]] = int32(i), int32(p)
		i = p
	}
}

func (d *dijkstra) popMin() int32 {
	h := d.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	d.pos[h[0]] = 0
	d.heap = h[:last]
	d.pos[top] = -2 // settled
	h = d.heap
	for i := 0; ; {
		l, best := 2*i+1, i
		if l < len(h) && d.less(h[l], h[best]) {
			best = l
		}
		if r := l + 1; r < len(h) && d.less(h[r], h[best]) {
			best = r
		}
		if best == i {
			break
		}
		h[i], h[best] = h[best], h[i]
		d.pos[h[i]], d.pos[h[best]] = int32(i), int32(best)
		i = best
	}
	return top
}
