package nue

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Report says what Route did besides the planes.
type Report struct {
	// Layers is the budget the routes were layered in (VLs, SLs).
	Layers int
	// Trees counts the destination trees searched (planes of CAs, and
	// switches without CAs; a switch with CAs shares its first CA's tree).
	Trees int
	// Escaped counts trees in which some switches follow the escape tree,
	// EscapedSwitches the (tree, switch) entries that do.
	Escaped         int
	EscapedSwitches int64
	// EscapedByLayer is Escaped per layer, of TreesByLayer.
	EscapedByLayer, TreesByLayer []int
	// MinimalPairs of Pairs (CA source, CA destination plane) on different
	// switches take a shortest path.
	MinimalPairs, Pairs int64
	// Detached counts endpoints not attached to any switch (all NoPort);
	// Unreached the (switch, plane) entries left NoPort because the switch
	// is in another component.
	Detached  int
	Unreached int64
	// BalancedEscape says the balanced escape tree was kept (one layer:
	// both are tried).
	BalancedEscape bool
	// Inserts counts turn insertions, Searches those against the layer's
	// order (a bounded search), Visited the channels they visited, Refused
	// the turns refused because a search hit its bound.
	Inserts, Searches, Visited, Refused int64
}

// layout is what both plugins derive from the topology and the budget
// alone: the layer of every endpoint.
type layout struct {
	n *net
	// Layer[e] is the layer (SL, VL) of endpoint e's LIDs.
	Layer []uint8
	// seeds[l] is layer l's region seed (none with one layer).
	seeds []int32
}

func newLayout(t *topology.Topology, budget int) (*layout, error) {
	n, err := newNet(t)
	if err != nil {
		return nil, err
	}
	part, seeds := partition(n, budget)
	lay := &layout{n: n, Layer: make([]uint8, len(n.Home)), seeds: seeds}
	for e, h := range n.Home {
		if h >= 0 {
			lay.Layer[e] = part[h]
		}
	}
	return lay, nil
}

// item is one tree to search: plane k toward the endpoints of group (CAs
// of one switch, or a switch's port 0), whose first member stands for all.
type item struct {
	group []int32
	k     int
}

// Options tune Route.
type Options struct {
	// LMC asks for 2^LMC planes per CA.
	LMC uint8
	// Budget is the number of layers (VLs), 1..15.
	Budget int
	// Trees bounds the trees per switch and plane: a switch's CAs share
	// them round-robin (0: one tree per CA, as sssp). Fewer trees cost
	// less (search work is per tree) and add fewer dependencies per
	// layer, at some balance.
	Trees int
	// Reroute is the number of passes that route every tree again after
	// the first, each tree ripped up and searched anew with the loads and
	// turns of all the others in place: the first pass routes early trees
	// under weights that know little of the load to come.
	Reroute int
	// SearchLimit bounds the channels one turn's cycle search visits
	// (0: searchLimit(budget)); a turn beyond it is refused.
	SearchLimit int
	// TurnPenalty, in percent of the mean channel weight, lengthens a
	// channel whose turn is not in the layer yet (0: defaultTurnPenalty,
	// < 0: none).
	TurnPenalty int
	// HopCost, in percent of the mean channel weight, is added to every
	// channel's weight in the search, so that a detour must save more
	// than load alone (0: defaultHopCost, < 0: none).
	HopCost int
}

// defaultHopCost: one hop costs twice the mean channel weight. The
// weights alone (sssp's) let a tree detour as soon as a longer path is a
// little less loaded, and on top of the detours the layers force, that
// lowers the effective bisection bandwidth: with one mean weight per hop
// the dragonfly a=8 p=4 h=4 at 8 VLs goes from 90.5 % to 98.1 % minimal
// paths and eBB 0.448 to 0.463; two take the 512-switch 12-regular random
// graph at 1 VL (seeds 1, 2) from 0.426 / 0.424 to 0.427 / 0.426 and cost
// the 8x8x8 torus at 1 VL 0.228 -> 0.220 (four: 0.427 / 0.426 and 0.211).
const defaultHopCost = 200

// defaultTurnPenalty: a turn the layer does not hold yet costs half the
// mean channel weight, so trees reuse the dependencies already placed
// where that costs little. Fewer distinct turns leave the layer freer for
// later trees and need fewer cycle searches: the 10,000-CA random graph
// at 8 VLs routes in 4.0 s of CPU instead of 6.7 s (same eBB, 0.300),
// the 512-switch 12-regular graph at 1/2/4 VLs gains eBB 0.408/0.426/0.445
// -> 0.411/0.428/0.449.
const defaultTurnPenalty = 50

// orDefault is v, def for 0, and 0 for v < 0.
func orDefault(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Route computes 2^lmc planes per CA and one per switch, each destination
// in its layer of budget (1..15) layers, and returns them with the layer of
// every endpoint. Layers are searched in parallel (each layer's trees in
// turn); channel weights change only between rounds of one tree per
// layer, so the result does not depend on the number of workers.
func Route(ctx context.Context, t *topology.Topology, opt Options) ([]plan.DestPlanes, []uint8, *Report, error) {
	lmc, budget := opt.LMC, opt.Budget
	if t == nil {
		return nil, nil, nil, fmt.Errorf("nue: no topology in the request")
	}
	if lmc > 7 {
		return nil, nil, nil, fmt.Errorf("nue: LMC %d is out of range 0..7", lmc)
	}
	if budget < 1 || budget > 15 {
		return nil, nil, nil, fmt.Errorf("nue: a budget of %d VLs is out of range 1..15", budget)
	}
	lay, err := newLayout(t, budget)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("nue: %w", err)
	}
	n := lay.n
	rep := &Report{Layers: budget}
	out := make([]plan.DestPlanes, len(n.Home))
	// CAs per switch, in endpoint order.
	cas := make([][]int32, n.N)
	for e, h := range n.Home {
		if h >= 0 && n.IsCA[e] {
			cas[h] = append(cas[h], int32(e))
		}
	}
	// Per layer: plane k of every CA, by rank under its switch then by
	// switch, so that consecutive trees start from different switches;
	// then the switches that have no CA.
	items := make([][]item, budget)
	maxRank := 0
	for _, c := range cas {
		maxRank = max(maxRank, len(c))
	}
	groups := make([][][]int32, n.N)
	for s, c := range cas {
		g := len(c)
		if opt.Trees > 0 {
			g = min(g, opt.Trees)
		}
		groups[s] = make([][]int32, g)
		for i, e := range c {
			groups[s][i%g] = append(groups[s][i%g], e)
		}
	}
	for k := 0; k < 1<<lmc; k++ {
		for r := 0; r < maxRank; r++ {
			for s := range groups {
				if r < len(groups[s]) {
					g := groups[s][r]
					l := lay.Layer[g[0]]
					items[l] = append(items[l], item{g, k})
				}
			}
		}
	}
	for e, h := range n.Home {
		np := 1
		if n.IsCA[e] {
			np = 1 << lmc
		}
		out[e].Planes = make([]plan.Plane, np)
		if h < 0 {
			rep.Detached++
			for k := range out[e].Planes {
				out[e].Planes[k] = noRoute(n.N)
			}
			continue
		}
		if !n.IsCA[e] && len(cas[h]) == 0 {
			items[lay.Layer[e]] = append(items[lay.Layer[e]], item{[]int32{int32(e)}, 0})
		}
	}
	// With one layer the escape tree shapes the whole routing, and the
	// BFS tree that suits a fabric differs: parents taken by lowest port
	// follow a HyperX's dimensions (12x8 at 1 VL: eBB 0.632 against
	// 0.620), parents spread over the candidates (balanced) keep a random
	// graph's root region from funnelling (512-switch 12-regular: 0.423 ->
	// 0.428). Both are routed once, in parallel, and the one whose channel
	// loads have the lower sum of squares (longer and less balanced routes
	// load more) goes on to the second pass; that picks the better eBB on
	// the torus, Kautz, dragonfly, HyperX and random graphs measured.
	kinds := []bool{false}
	if budget == 1 {
		kinds = append(kinds, true)
	}
	runs := make([]*run, len(kinds))
	for i, balanced := range kinds {
		rn, err := newRun(n, lay, budget, cas, out, balanced, cmp.Or(opt.SearchLimit, searchLimit(budget)))
		if err != nil {
			return nil, nil, nil, err
		}
		runs[i] = rn
	}
	for l, s := range runs[0].srch {
		// Trees nearest the layer's root go first (plane by plane, in
		// rank order at equal distance): the turns of the central trees
		// are placed while the layer is empty, and the outer trees, whose
		// routes mostly cross the centre, find them there to reuse. With
		// a second pass this gains 1-2 % eBB on random graphs at 1-4 VLs.
		// (Every candidate tree is a BFS tree from the same root: the
		// same hops.)
		hops := s.esc.hops(n, s.esc.roots[0])
		slices.SortStableFunc(items[l], func(a, b item) int {
			return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(hops[n.Home[a.group[0]]], hops[n.Home[b.group[0]]]))
		})
	}
	cfg := passConfig{items: items, workers: max(1, min(runtime.GOMAXPROCS(0), budget)), keep: opt.Reroute > 0,
		hopCost: orDefault(opt.HopCost, defaultHopCost), turnPenalty: orDefault(opt.TurnPenalty, defaultTurnPenalty)}
	if _, err := route.Each(ctx, len(runs), 0, func(_, i int) error { return runs[i].pass(ctx, n, cfg, 0) }); err != nil {
		return nil, nil, nil, err
	}
	rn := runs[0]
	for _, c := range runs[1:] {
		if c.spread() < rn.spread() {
			rn = c
		}
	}
	rep.BalancedEscape = rn.balanced
	for pass := 1; pass <= opt.Reroute; pass++ {
		if err := rn.pass(ctx, n, cfg, pass); err != nil {
			return nil, nil, nil, err
		}
	}
	out, srch := rn.out, rn.srch
	// A switch with CAs shares its first CA's plane 0: the same tree, so
	// no dependency its layer does not hold already.
	for e, h := range n.Home {
		if h >= 0 && !n.IsCA[e] && len(cas[h]) > 0 {
			pl := append(plan.Plane(nil), out[cas[h][0]].Planes[0]...)
			pl[h] = 0
			out[e].Planes[0] = pl
		}
	}
	for _, s := range srch {
		rep.EscapedByLayer = append(rep.EscapedByLayer, s.rep.Escaped)
		rep.TreesByLayer = append(rep.TreesByLayer, s.rep.Trees)
		rep.Trees += s.rep.Trees
		rep.Escaped += s.rep.Escaped
		rep.EscapedSwitches += s.rep.EscapedSwitches
		rep.MinimalPairs += s.rep.MinimalPairs
		rep.Pairs += s.rep.Pairs
		rep.Unreached += s.rep.Unreached
		rep.Inserts += s.l.calls
		rep.Searches += s.l.searches
		rep.Visited += s.l.visited
		rep.Refused += s.l.refused
	}
	return out, lay.Layer, rep, nil
}

// run is one routing of every layer's trees: its searchers (layers and
// escape trees), channel weights, placements and planes.
type run struct {
	srch     []*searcher
	balanced bool
	weight   []int64
	total    int64 // sum of weight
	// placed[l][r] is what item r of layer l put in: its turns and loads.
	placed [][]placement
	out    []plan.DestPlanes
}

type placement struct {
	turns []int32
	loads []delta
}

// newRun builds each layer's escape tree (balanced or not), seeds the
// layer with its turns toward the layer's destinations, and copies the
// planes' skeleton from out.
func newRun(n *net, lay *layout, budget int, cas [][]int32, out []plan.DestPlanes, balanced bool, limit int) (*run, error) {
	rn := &run{srch: make([]*searcher, budget), balanced: balanced, weight: make([]int64, n.Channels()),
		placed: make([][]placement, budget), out: make([]plan.DestPlanes, len(out))}
	for e := range out {
		rn.out[e].Planes = slices.Clone(out[e].Planes)
	}
	for c := range rn.weight {
		rn.weight[c] = 1
	}
	rn.total = int64(len(rn.weight))
	dest := make([]bool, n.N)
	for l := range rn.srch {
		// The layer's escape tree grows from its region's seed (from a
		// central switch with one layer), and it is seeded with the
		// turns toward the layer's destination switches only.
		root := int32(-1)
		if l < len(lay.seeds) {
			root = lay.seeds[l]
		}
		esc := newEscape(n, root, balanced)
		for s := range dest {
			dest[s] = false
		}
		for e, h := range n.Home {
			if h >= 0 && int(lay.Layer[e]) == l {
				dest[h] = true
			}
		}
		ly := newLayer(n, esc.order(n), limit)
		if err := esc.seed(n, ly, dest); err != nil {
			return nil, err
		}
		rn.srch[l] = newSearcher(n, esc, ly, cas)
	}
	return rn, nil
}

// passConfig is what every pass of every run shares.
type passConfig struct {
	items                [][]item
	workers              int
	keep                 bool // record placements for later passes
	hopCost, turnPenalty int
}

// pass routes every layer's trees once, a round of one tree per layer at
// a time; after the first pass each tree is ripped up (its turns and loads
// leave the layer and the weights) before it is searched again.
func (rn *run) pass(ctx context.Context, n *net, cfg passConfig, pass int) error {
	rounds := 0
	for l, it := range cfg.items {
		rounds = max(rounds, len(it))
		if rn.placed[l] == nil {
			rn.placed[l] = make([]placement, len(it))
		}
	}
	for _, s := range rn.srch {
		s.rep = Report{}
	}
	weight := rn.weight
	for r := 0; r < rounds; r++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if pass > 0 {
			for l, s := range rn.srch {
				if r < len(cfg.items[l]) {
					p := &rn.placed[l][r]
					for _, t := range p.turns {
						s.l.remove(t)
					}
					for _, d := range p.loads {
						weight[d.c] -= d.n
						rn.total -= d.n
					}
				}
			}
		}
		// Layers are independent within a round: weights change only
		// between rounds, so the result does not depend on the workers.
		pen := rn.total * int64(cfg.turnPenalty) / int64(100*max(1, len(weight)))
		hop := rn.total * int64(cfg.hopCost) / int64(100*max(1, len(weight)))
		for _, s := range rn.srch {
			s.pen, s.hop = pen, hop
		}
		_, _ = route.Each(ctx, len(rn.srch), cfg.workers, func(_, l int) error {
			if r < len(cfg.items[l]) {
				it := cfg.items[l][r]
				pl := rn.srch[l].tree(it.group, weight)
				if cfg.keep {
					p := &rn.placed[l][r]
					p.turns = append(p.turns[:0], rn.srch[l].added...)
					p.loads = append(p.loads[:0], rn.srch[l].delta...)
				}
				h := n.Home[it.group[0]]
				for i, e := range it.group {
					if i > 0 {
						pl = append(plan.Plane(nil), pl...)
					}
					pl[h] = n.HomePort[e]
					rn.out[e].Planes[it.k] = pl
				}
			}
			return nil
		})
		for _, s := range rn.srch {
			for _, d := range s.delta {
				weight[d.c] += d.n
				rn.total += d.n
			}
			s.delta = s.delta[:0]
		}
	}
	return nil
}

// spread is the sum of the squared channel weights: it grows with the
// routes' length and with their imbalance.
func (rn *run) spread() float64 {
	var sq float64
	for _, w := range rn.weight {
		sq += float64(w) * float64(w)
	}
	return sq
}

func noRoute(n int) plan.Plane {
	pl := make(plan.Plane, n)
	for s := range pl {
		pl[s] = plan.NoPort
	}
	return pl
}

type delta struct {
	c int32
	n int64
}

const (
	unseen uint8 = iota
	queued
	settled
)

// searcher grows the trees of one layer, one after the other.
type searcher struct {
	n   *net
	esc *escape
	l   *layer
	cas [][]int32
	// per tree
	dist    []int64
	par     []int32 // out-channel toward the destination, -1 at its switch or unset
	state   []uint8
	failed  []uint32 // failed[c] == stamp: c's turn would close a cycle
	stamp   uint32
	heap    []int32
	pos     []int32
	order   []int32 // settled switches, destination first
	added   []int32 // turns this tree inserted into the layer
	inS     []bool  // switch follows the escape tree
	tnext   []int32
	queue   []int32
	next    []int32
	hops    []int32
	bfs     []int32
	cnt     []int64
	bucket  []int32
	byDepth []int32
	delta   []delta
	rep     Report
	// pen is the search's penalty for a new turn, hop its cost per
	// channel on top of the weight (cost).
	pen, hop int64
}

func newSearcher(n *net, esc *escape, l *layer, cas [][]int32) *searcher {
	N := n.N
	return &searcher{n: n, esc: esc, l: l, cas: cas,
		dist: make([]int64, N), par: make([]int32, N), state: make([]uint8, N), failed: make([]uint32, n.Channels()),
		pos: make([]int32, N), inS: make([]bool, N), tnext: make([]int32, N), next: make([]int32, N),
		hops: make([]int32, N), byDepth: make([]int32, N), bfs: make([]int32, N), cnt: make([]int64, N)}
}

const inf = int64(1) << 62

// tree routes the endpoints of group (all on one switch) in the layer and
// returns their plane. The channel weights are read only; the loads this
// tree adds go to s.delta.
func (s *searcher) tree(group []int32, weight []int64) plan.Plane {
	n := s.n
	e := group[0]
	h := n.Home[e]
	s.rep.Trees++
	s.search(h, weight)
	if int32(len(s.order)) < n.compSize[n.comp[h]] {
		s.escapeStuck(h)
	} else {
		for _, w := range s.order {
			s.next[w] = s.par[w]
		}
	}
	pl := make(plan.Plane, n.N)
	for w := range pl {
		pl[w] = plan.NoPort
	}
	for _, w := range s.order {
		if w != h {
			pl[w] = n.Port[s.next[w]]
		}
	}
	s.rep.Unreached += int64(n.N - len(s.order))
	s.account(e, h, int64(len(group)))
	return pl
}

// search is the Dijkstra on the layer's dependency graph: switch w joins
// the tree through channel c = w→x only if the turn from c onto x's
// out-channel keeps the layer acyclic. The turn is tried when w leaves the
// heap; if it fails, w waits for its next best settled neighbour.
func (s *searcher) search(h int32, weight []int64) {
	n := s.n
	for w := range s.dist {
		s.dist[w], s.par[w], s.state[w], s.pos[w], s.inS[w] = inf, -1, unseen, -1, false
	}
	s.stamp++
	s.order, s.added, s.heap = s.order[:0], s.added[:0], s.heap[:0]
	s.dist[h] = 0
	s.push(h)
	for len(s.heap) > 0 {
		w := s.pop()
		if w != h {
			s.cheaper(w, weight)
			c := s.par[w]
			if ox := s.par[n.Peer[c]]; ox >= 0 {
				if !s.l.insert(c, ox) {
					s.failed[c] = s.stamp
					s.retry(w, weight)
					continue
				}
				s.added = append(s.added, n.turn(c, ox))
			}
		}
		s.state[w] = settled
		s.order = append(s.order, w)
		for r := n.Off[w]; r < n.Off[w+1]; r++ {
			in := n.Rev[r]
			u := n.From[in]
			if s.state[u] == settled || s.failed[in] == s.stamp {
				continue
			}
			if nd := s.dist[w] + s.cost(in, weight); nd < s.dist[u] {
				s.dist[u], s.par[u] = nd, in
				if s.state[u] == queued {
					s.up(int(s.pos[u]))
				} else {
					s.push(u)
				}
			}
		}
	}
}

// cost is the length of channel c = w→x in the search, x settled: its
// weight, plus the penalty when its turn onto x's channel is not in the
// layer yet (a new dependency narrows what later trees may use).
func (s *searcher) cost(c int32, weight []int64) int64 {
	if s.pen == 0 {
		return weight[c] + s.hop
	}
	if ox := s.par[s.n.Peer[c]]; ox >= 0 && s.l.cnt[s.n.turn(c, ox)] == 0 {
		return weight[c] + s.hop + s.pen
	}
	return weight[c] + s.hop
}

// cheaper switches w to another settled neighbour at the same distance
// when its turn is free (already in the layer, or along the layer's
// order) and the chosen one's is not: the tree is as short and as
// balanced, and the layer is spared a search.
func (s *searcher) cheaper(w int32, weight []int64) {
	n := s.n
	free := func(c int32) bool {
		ox := s.par[n.Peer[c]]
		return ox < 0 || s.l.cnt[n.turn(c, ox)] > 0 || s.l.ord[c] < s.l.ord[ox]
	}
	if free(s.par[w]) {
		return
	}
	for c := n.Off[w]; c < n.Off[w+1]; c++ {
		if x := n.Peer[c]; s.state[x] == settled && s.failed[c] != s.stamp && s.dist[x]+s.cost(c, weight) == s.dist[w] && free(c) {
			s.par[w] = c
			return
		}
	}
}

// retry puts w back with its best settled neighbour whose turn has not
// failed, or leaves it out until a neighbour settles.
func (s *searcher) retry(w int32, weight []int64) {
	n := s.n
	s.dist[w], s.par[w] = inf, -1
	for c := n.Off[w]; c < n.Off[w+1]; c++ {
		if x := n.Peer[c]; s.state[x] == settled && s.failed[c] != s.stamp {
			if nd := s.dist[x] + s.cost(c, weight); nd < s.dist[w] {
				s.dist[w], s.par[w] = nd, c
			}
		}
	}
	if s.par[w] >= 0 {
		s.push(w)
	}
}

// escapeStuck routes the switches the search could not reach along the
// escape tree, and with them every switch their tree paths cross; a
// settled switch whose turn onto an escape switch's tree channel would
// close a cycle joins them too. Tree turns are in every layer from the
// start, so this ends, at worst with the whole tree on escape paths.
func (s *searcher) escapeStuck(h int32) {
	n := s.n
	s.queue = s.esc.toward(n, h, s.tnext, s.queue)
	join := func(w int32) {
		for w != h && !s.inS[w] {
			s.inS[w] = true
			w = n.Peer[s.tnext[w]]
		}
	}
	for w := int32(0); w < int32(n.N); w++ {
		if s.state[w] != settled && n.comp[w] == n.comp[h] {
			join(w)
		}
	}
	for {
		for _, t := range s.added {
			s.l.remove(t)
		}
		s.added = s.added[:0]
		stuck := int32(-1)
		for _, w := range s.order {
			if w == h || s.inS[w] {
				continue
			}
			c := s.par[w]
			x := n.Peer[c]
			ox := s.par[x]
			if s.inS[x] {
				ox = s.tnext[x]
			}
			if ox < 0 {
				continue
			}
			if !s.l.insert(c, ox) {
				stuck = w
				break
			}
			s.added = append(s.added, n.turn(c, ox))
		}
		if stuck < 0 {
			break
		}
		join(stuck)
	}
	s.rep.Escaped++
	for w := int32(0); w < int32(n.N); w++ {
		switch {
		case s.inS[w]:
			s.next[w] = s.tnext[w]
			s.rep.EscapedSwitches++
		case s.state[w] == settled:
			s.next[w] = s.par[w]
		default:
			s.next[w] = -1
		}
	}
	// Escape switches count as part of the tree from here on.
	s.order = s.order[:0]
	for w := int32(0); w < int32(n.N); w++ {
		if w == h || s.inS[w] || s.state[w] == settled {
			s.order = append(s.order, w)
		}
	}
}

// account adds the tree's CA traffic toward its g destinations to s.delta
// (weights grow by the CA sources routed through a channel, as in sssp; a
// switch destination adds nothing) and counts minimal pairs.
func (s *searcher) account(e, h int32, g int64) {
	n := s.n
	// Hops of every tree switch, by walking up to a known one.
	for _, w := range s.order {
		s.hops[w] = -1
	}
	s.hops[h] = 0
	maxHops := int32(0)
	for _, w := range s.order {
		path := s.queue[:0]
		x := w
		for s.hops[x] < 0 {
			path = append(path, x)
			x = n.Peer[s.next[x]]
		}
		for i := len(path) - 1; i >= 0; i-- {
			s.hops[path[i]] = s.hops[x] + 1
			x = path[i]
		}
		s.queue = path
		maxHops = max(maxHops, s.hops[w])
	}
	if !n.IsCA[e] {
		return
	}
	// Shortest distances from h, for the minimal-path share.
	for _, w := range s.order {
		s.bfs[w] = -1
	}
	s.bfs[h] = 0
	q := append(s.queue[:0], h)
	for i := 0; i < len(q); i++ {
		x := q[i]
		for c := n.Off[x]; c < n.Off[x+1]; c++ {
			if y := n.Peer[c]; s.bfs[y] < 0 {
				s.bfs[y] = s.bfs[x] + 1
				q = append(q, y)
			}
		}
	}
	s.queue = q
	// Loads: sources pushed up the tree, deepest switches first.
	if cap(s.bucket) < int(maxHops)+2 {
		s.bucket = make([]int32, maxHops+2)
	}
	b := s.bucket[:maxHops+2]
	for i := range b {
		b[i] = 0
	}
	for _, w := range s.order {
		b[s.hops[w]+1]++
	}
	for i := 1; i < len(b); i++ {
		b[i] += b[i-1]
	}
	byDepth := s.byDepth[:len(s.order)]
	for _, w := range s.order {
		byDepth[b[s.hops[w]]] = w
		b[s.hops[w]]++
	}
	for _, w := range s.order {
		s.cnt[w] = g * int64(len(s.cas[w]))
	}
	for i := len(byDepth) - 1; i >= 0; i-- {
		w := byDepth[i]
		if w == h {
			continue
		}
		k := g * int64(len(s.cas[w]))
		s.rep.Pairs += k
		if s.hops[w] == s.bfs[w] {
			s.rep.MinimalPairs += k
		}
		if s.cnt[w] == 0 {
			continue
		}
		c := s.next[w]
		s.delta = append(s.delta, delta{c, s.cnt[w]})
		s.cnt[n.Peer[c]] += s.cnt[w]
	}
}

func (s *searcher) push(w int32) {
	s.state[w] = queued
	s.pos[w] = int32(len(s.heap))
	s.heap = append(s.heap, w)
	s.up(len(s.heap) - 1)
}

func (s *searcher) less(a, b int32) bool {
	return s.dist[a] < s.dist[b] || (s.dist[a] == s.dist[b] && a < b)
}

func (s *searcher) up(i int) {
	h := s.heap
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		s.pos[h[i]], s.pos[h[p]] = int32(i), int32(p)
		i = p
	}
}

// pop removes the nearest switch; it is neither queued nor settled until
// the caller settles or re-queues it.
func (s *searcher) pop() int32 {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	s.pos[h[0]] = 0
	s.heap = h[:last]
	s.state[top], s.pos[top] = unseen, -1
	h = s.heap
	for i := 0; ; {
		l, best := 2*i+1, i
		if l < len(h) && s.less(h[l], h[best]) {
			best = l
		}
		if r := l + 1; r < len(h) && s.less(h[r], h[best]) {
			best = r
		}
		if best == i {
			break
		}
		h[i], h[best] = h[best], h[i]
		s.pos[h[i]], s.pos[h[best]] = int32(i), int32(best)
		i = best
	}
	return top
}
