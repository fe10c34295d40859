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
	"math/bits"
	"slices"

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
// Cost: one Dijkstra per plane over switches only, with an indexed radix
// heap on flat arrays: O(P·(E + N·log W)) for P planes, E channels, N
// switches and distances below W; memory O(N + E) besides the planes.
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
//
// Its queue is a radix heap: Dijkstra pops distances in increasing order,
// so a queued switch sits in the bucket of the highest bit where its
// distance differs from the last one popped (bucket 0: equal). The lowest
// non-empty bucket holds the minimum; emptying it moves its switches to
// lower buckets only, so each switch moves a few times at most. Bucket 0
// holds exactly the switches at the popped distance and gives up the
// lowest switch index first, so switches pop in (distance, index) order,
// as from a binary heap with that order, and the trees are the same.
type dijkstra struct {
	f      *paths.Fabric
	dist   []int64
	parent []int32 // channel next→s (the reverse of s's way toward the root), -1 if none / root
	order  []int32 // settle order, root first
	bucket [65][]int32
	used   uint64  // bit b-1 set when bucket b (1..64) is non-empty
	last   int64   // the distance popped last
	sorted bool    // bucket 0 is in descending index order
	in     []int8  // a queued switch's bucket, -1 if not queued
	pos    []int32 // a queued switch's place in its bucket
}

func newDijkstra(f *paths.Fabric) *dijkstra {
	return &dijkstra{f: f, dist: make([]int64, f.N), parent: make([]int32, f.N), order: make([]int32, 0, f.N),
		in: make([]int8, f.N), pos: make([]int32, f.N)}
}

// run builds the tree of shortest routes toward switch root: distances
// over channels s→t of weight back[t→s], searched backwards from root. On
// equal distance the first route found stays.
func (d *dijkstra) run(root int32, back []int64) {
	f := d.f
	for i := range d.dist {
		d.dist[i] = math.MaxInt64
		d.parent[i] = -1
		d.in[i] = -1
	}
	d.order = d.order[:0]
	d.last = 0
	d.dist[root] = 0
	d.push(root)
	for {
		t := d.popMin()
		if t < 0 {
			return
		}
		d.order = append(d.order, t)
		dt := d.dist[t]
		for r := f.Off[t]; r < f.Off[t+1]; r++ {
			s := f.Peer[r]
			if nd := dt + back[r]; nd < d.dist[s] {
				d.dist[s] = nd
				d.parent[s] = r
				if d.in[s] >= 0 {
					d.remove(s)
				}
				d.push(s)
			}
		}
	}
}

// push queues s by its distance.
func (d *dijkstra) push(s int32) {
	b := 0
	if x := uint64(d.dist[s] ^ d.last); x != 0 {
		b = 64 - bits.LeadingZeros64(x)
		d.used |= 1 << (b - 1)
	}
	if b == 0 {
		d.sorted = false
	}
	d.in[s] = int8(b)
	d.pos[s] = int32(len(d.bucket[b]))
	d.bucket[b] = append(d.bucket[b], s)
}

// remove takes queued s out of its bucket.
func (d *dijkstra) remove(s int32) {
	b := d.in[s]
	q := d.bucket[b]
	i, j := d.pos[s], len(q)-1
	q[i] = q[j]
	d.pos[q[i]] = i
	d.bucket[b] = q[:j]
	if j == 0 && b > 0 {
		d.used &^= 1 << (b - 1)
	}
	d.in[s] = -1
}

// popMin takes the queued switch of least (distance, index), -1 if none.
func (d *dijkstra) popMin() int32 {
	if len(d.bucket[0]) == 0 {
		if d.used == 0 {
			return -1
		}
		b := bits.TrailingZeros64(d.used) + 1
		q := d.bucket[b]
		m := d.dist[q[0]]
		for _, s := range q[1:] {
			m = min(m, d.dist[s])
		}
		d.last = m
		d.bucket[b] = q[:0]
		d.used &^= 1 << (b - 1)
		for _, s := range q {
			d.push(s)
		}
	}
	// Bucket 0 is kept in descending index order, so the last switch is
	// the next one; with unit weights early on it holds hundreds of ties.
	q := d.bucket[0]
	if !d.sorted {
		slices.Sort(q)
		slices.Reverse(q)
		for i, s := range q {
			d.pos[s] = int32(i)
		}
		d.sorted = true
	}
	top := q[len(q)-1]
	d.remove(top)
	return top
}
