package paths

import (
	"fmt"
	"math/bits"
	"math/rand/v2"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Candidates are the k-shortest legal paths of every switch pair:
// Of(a, b) lists channel sequences from switch a to switch b.
type Candidates struct {
	u    *UpDown
	n    int
	sets [][][]int32
}

// Of returns the candidate paths from switch a to switch b (nil: no legal
// path, or the pair was not computed).
func (c *Candidates) Of(a, b int32) [][]int32 { return c.sets[int(a)*c.n+int(b)] }

// KShortestLegal runs Yen's algorithm for every ordered pair of switches
// that carry endpoints of eps, keeping up to k paths per pair. Cost:
// O(S²·k·h·E) for S such switches, paths of h hops and E channels.
func KShortestLegal(u *UpDown, eps []int32, k, stretch int, rng *rand.Rand) *Candidates {
	f := u.F
	c := &Candidates{u: u, n: f.N, sets: make([][][]int32, f.N*f.N)}
	used := make([]bool, f.N)
	var sws []int32
	for _, e := range eps {
		if s := f.Home[e]; !used[s] {
			used[s] = true
			sws = append(sws, s)
		}
	}
	y := newYen(u)
	row := make([]uint16, 2*f.N)
	queue := make([]int32, 2*f.N)
	for _, b := range sws {
		u.DistTo(b, row, nil, queue)
		for _, a := range sws {
			c.sets[int(a)*f.N+int(b)] = y.KShortest(a, b, k, stretch, row, rng)
		}
	}
	return c
}

// PathSelection is Nienaber et al.'s path selection scheme with the default
// options: up to 16 shortest legal up*/down* paths per switch pair (Yen),
// then most-loaded-link-first selection of one path per switch pair. See
// PathSelectionOpts.
func PathSelection(t *topology.Topology, rng *rand.Rand) ([]plan.Path, error) {
	r, err := PathSelectionOpts(t, rng, DefaultOptions())
	if err != nil {
		return nil, err
	}
	return r.Paths, nil
}

// PathSelectionOpts computes up to o.K candidate paths per switch pair with
// Yen's algorithm on the legal-turn graph, then repeatedly takes the most
// loaded channel and removes one path crossing it whose pair still has
// more than one, until each pair has one path (the most-loaded-link-first
// heuristic Nienaber et al. cite as [7]).
//
// What a "pair" is follows o.Granularity. PerSwitchPair (the default) selects
// one path per ordered switch pair, which every machine pair between those
// switches then shares; a candidate's load is the number of machine pairs it
// would carry (the product of the two switches' endpoint counts), so the
// heuristic balances the same all-to-all machine traffic Nienaber et al. §5.2
// measures. PerMachinePair selects for every endpoint pair on its own (weight
// 1 each): finer balance, but machines on one switch split toward a
// destination right at their switch, which costs LIDs.
//
// Tie-breaks: among equally loaded channels the lowest channel index (port
// order of the lowest switch) goes first; the path removed from a channel
// is drawn uniformly (seeded) among the removable ones on it. A channel
// whose paths all belong to pairs down to one path is retired: pairs only
// lose candidates, so it can never become relievable again.
//
// Cost: Yen as in KShortestLegal, then O(U·k·h·log E) for U selection
// units (switch pairs, or endpoint pairs). Memory: one int32 per
// (candidate, channel) incidence, about U·k·h·4 bytes (per machine pair
// ≈60 MB for 512 machines on 64 switches; per switch pair under 1 MB).
func PathSelectionOpts(t *topology.Topology, rng *rand.Rand, o Options) (*Result, error) {
	if o.K < 1 || o.K > MaxK {
		return nil, fmt.Errorf("paths: k = %d candidate paths per pair; use 1..%d", o.K, MaxK)
	}
	if o.Granularity != PerSwitchPair && o.Granularity != PerMachinePair {
		return nil, fmt.Errorf("paths: unknown granularity %d; use PerSwitchPair or PerMachinePair", o.Granularity)
	}
	u, eps, err := setup(t, rng, o)
	if err != nil {
		return nil, err
	}
	cands := KShortestLegal(u, eps, o.K, o.MaxStretch, rng)
	return selectPaths(u, eps, cands, o.K, o.Granularity, rng), nil
}

// units lists what selection picks one path for. Per machine pair, unit p
// is endpoint pair pairOf(p, n) with weight 1. Per switch pair, the units
// are the ordered pairs of distinct switches that both carry endpoints of
// eps, weighted by their endpoint pairs; unitOf maps an endpoint pair to
// its unit (-1: both on one switch, the empty path).
type units struct {
	n      int
	perSw  bool
	src    []int32 // per-switch units: the switch pair
	dst    []int32
	weight []int32
	index  []int32 // per-switch: unit of switch pair (a, b) at a*N+b, or -1
	nsw    int
}

func newUnits(f *Fabric, eps []int32, g Granularity) *units {
	n := len(eps)
	us := &units{n: n, perSw: g == PerSwitchPair, nsw: f.N}
	if !us.perSw {
		return us
	}
	count := make([]int32, f.N)
	var sws []int32
	for _, e := range eps {
		if count[f.Home[e]] == 0 {
			sws = append(sws, f.Home[e])
		}
		count[f.Home[e]]++
	}
	us.index = make([]int32, f.N*f.N)
	for i := range us.index {
		us.index[i] = -1
	}
	for _, a := range sws {
		for _, b := range sws {
			if a == b {
				continue
			}
			us.index[int(a)*f.N+int(b)] = int32(len(us.src))
			us.src = append(us.src, a)
			us.dst = append(us.dst, b)
			us.weight = append(us.weight, count[a]*count[b])
		}
	}
	return us
}

func (us *units) len() int {
	if us.perSw {
		return len(us.src)
	}
	return us.n * (us.n - 1)
}

func selectPaths(u *UpDown, eps []int32, cands *Candidates, k int, g Granularity, rng *rand.Rand) *Result {
	f := u.F
	res := &Result{Root: u.Roots[0]}
	n := len(eps)
	if n < 2 {
		return res
	}
	us := newUnits(f, eps, g)
	total := us.len()
	set := func(p int) [][]int32 {
		if us.perSw {
			return cands.Of(us.src[p], us.dst[p])
		}
		i, j := pairOf(p, n)
		return cands.Of(f.Home[eps[i]], f.Home[eps[j]])
	}
	weight := func(p int) int32 {
		if us.perSw {
			return us.weight[p]
		}
		return 1
	}
	mask := make([]uint32, total)
	nch := f.Channels()
	start := make([]int64, nch+1)
	for p := 0; p < total; p++ {
		s := set(p)
		mask[p] = uint32(uint64(1)<<len(s) - 1)
		for _, path := range s {
			for _, c := range path {
				start[c+1]++
			}
		}
	}
	for c := 0; c < nch; c++ {
		start[c+1] += start[c]
	}
	ids := make([]int32, start[nch])
	live := make([]int32, nch)
	load := make([]int32, nch)
	for p := 0; p < total; p++ {
		w := weight(p)
		for i, path := range set(p) {
			for _, c := range path {
				ids[start[c]+int64(live[c])] = int32(p*k + i)
				live[c]++
				load[c] += w
			}
		}
	}
	h := newChanHeap(load)
	for h.len() > 0 {
		c := h.top()
		seg := ids[start[c] : start[c]+int64(live[c])]
		victim := int32(-1)
		for live[c] > 0 {
			x := rng.IntN(int(live[c]))
			id := seg[x]
			p, i := int(id)/k, uint(int(id)%k)
			removable := mask[p]&(1<<i) != 0 && bits.OnesCount32(mask[p]) > 1
			// The victim, a dead path, or its pair's last path: none is
			// removable later, so it leaves the channel's list now.
			live[c]--
			seg[x] = seg[live[c]]
			seg = seg[:live[c]]
			if removable {
				victim = id
				break
			}
		}
		if victim < 0 {
			h.pop()
			continue
		}
		p, i := int(victim)/k, int(victim)%k
		mask[p] &^= 1 << uint(i)
		w := weight(p)
		for _, d := range set(p)[i] {
			load[d] -= w
			h.fix(d)
		}
	}
	res.Paths = make([]plan.Path, 0, n*(n-1))
	for q := 0; q < n*(n-1); q++ {
		i, j := pairOf(q, n)
		a, b := f.Home[eps[i]], f.Home[eps[j]]
		p := q
		if us.perSw {
			if a == b {
				// Same switch: the one empty path, nothing to select.
				if len(cands.Of(a, b)) == 0 {
					res.Unrouted++
					continue
				}
				res.Paths = append(res.Paths, f.Path(eps[i], eps[j], nil))
				continue
			}
			p = int(us.index[int(a)*us.nsw+int(b)])
		}
		s := set(p)
		if len(s) == 0 {
			res.Unrouted++
			continue
		}
		res.Paths = append(res.Paths, f.Path(eps[i], eps[j], s[bits.TrailingZeros32(mask[p])]))
	}
	return res
}

// chanHeap is a max-heap of channels by load (lower index first on ties)
// with positions, so a changed load is re-sifted in O(log E).
type chanHeap struct {
	load []int32
	h    []int32
	pos  []int32 // -1: not in the heap
}

func newChanHeap(load []int32) *chanHeap {
	ch := &chanHeap{load: load, pos: make([]int32, len(load))}
	for c := range load {
		ch.pos[c] = -1
		if load[c] > 0 {
			ch.pos[c] = int32(len(ch.h))
			ch.h = append(ch.h, int32(c))
		}
	}
	for i := len(ch.h)/2 - 1; i >= 0; i-- {
		ch.down(i)
	}
	return ch
}

func (ch *chanHeap) len() int   { return len(ch.h) }
func (ch *chanHeap) top() int32 { return ch.h[0] }

func (ch *chanHeap) less(a, b int32) bool { // a ranks before b
	return ch.load[a] > ch.load[b] || (ch.load[a] == ch.load[b] && a < b)
}

func (ch *chanHeap) swap(i, j int) {
	ch.h[i], ch.h[j] = ch.h[j], ch.h[i]
	ch.pos[ch.h[i]], ch.pos[ch.h[j]] = int32(i), int32(j)
}

func (ch *chanHeap) down(i int) {
	for {
		l, best := 2*i+1, i
		if l < len(ch.h) && ch.less(ch.h[l], ch.h[best]) {
			best = l
		}
		if r := l + 1; r < len(ch.h) && ch.less(ch.h[r], ch.h[best]) {
			best = r
		}
		if best == i {
			return
		}
		ch.swap(i, best)
		i = best
	}
}

func (ch *chanHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !ch.less(ch.h[i], ch.h[p]) {
			return
		}
		ch.swap(i, p)
		i = p
	}
}

func (ch *chanHeap) fix(c int32) {
	if i := ch.pos[c]; i >= 0 {
		ch.down(int(i))
		ch.up(int(i))
	}
}

func (ch *chanHeap) pop() {
	last := len(ch.h) - 1
	c := ch.h[0]
	ch.swap(0, last)
	ch.h = ch.h[:last]
	ch.pos[c] = -1
	if last > 0 {
		ch.down(0)
	}
}
