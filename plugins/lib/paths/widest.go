package paths

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Options tune the path routings. The zero value is not useful: use
// DefaultOptions and change what you need.
type Options struct {
	// Root is the up*/down* root switch index; -1 draws one uniformly from
	// the random source (Nienaber et al. §5.1: "the root node is randomly
	// selected").
	Root int32
	// Switches routes every switch's port 0 too (as source and as
	// destination), so management traffic to switches has paths. The
	// papers route machines only: leave it false to reproduce them.
	Switches bool
	// K is how many shortest legal paths Yen's algorithm keeps per switch
	// pair for PathSelection (Nienaber et al.: 16), 1..MaxK.
	K int
	// MaxStretch bounds PathSelection's candidates to at most this many
	// hops over the pair's shortest legal path; negative lets Yen return
	// longer paths too. Nienaber et al. keep "a maximum of 16 shortest paths"
	// and notes some pairs have fewer, which only holds for equally short
	// ones: default 0.
	MaxStretch int
	// Granularity is what PathSelection picks one path for: every ordered
	// switch pair (the zero value, Nienaber et al.'s scheme) or every ordered
	// endpoint pair on its own.
	Granularity Granularity
}

// Granularity is the unit PathSelection selects one path for.
type Granularity int

const (
	// PerSwitchPair: all endpoint pairs between two switches share the
	// switch pair's path; candidates are weighted by those endpoint pairs.
	PerSwitchPair Granularity = iota
	// PerMachinePair: each ordered endpoint pair is selected on its own.
	PerMachinePair
)

// String is the configuration spelling ("switch", "machine").
func (g Granularity) String() string {
	switch g {
	case PerSwitchPair:
		return "switch"
	case PerMachinePair:
		return "machine"
	}
	return fmt.Sprintf("Granularity(%d)", int(g))
}

// MaxK bounds Options.K: candidate sets are bit masks of 32 bits.
const MaxK = 32

// DefaultOptions: random root, machines only, K = 16, one path per
// switch pair.
func DefaultOptions() Options { return Options{Root: -1, K: 16} }

// Result is a routing's paths and what it decided on the way.
type Result struct {
	// Paths has one path per ordered pair of distinct endpoints that have
	// a legal route, in (src, dst) endpoint order.
	Paths []plan.Path
	// Root is the up*/down* root switch index used.
	Root int32
	// Unrouted counts ordered pairs without any legal path (their switches
	// are in different components, or an endpoint is detached).
	Unrouted int
}

// setup indexes t, orients it and lists the endpoints to route.
func setup(t *topology.Topology, rng *rand.Rand, o Options) (*UpDown, []int32, error) {
	if rng == nil {
		return nil, nil, fmt.Errorf("paths: no random source; pass rand.New(rand.NewPCG(seed, 0)) for a reproducible run")
	}
	f, err := NewFabric(t)
	if err != nil {
		return nil, nil, err
	}
	if f.N == 0 {
		return nil, nil, fmt.Errorf("paths: the fabric has no switches; path routing needs a switched fabric")
	}
	root := o.Root
	if root < 0 {
		root = RandomRoot(f, rng)
	} else if int(root) >= f.N {
		return nil, nil, fmt.Errorf("paths: root switch index %d out of range (fabric has %d switches)", root, f.N)
	}
	return NewUpDown(f, root), f.Endpoints(o.Switches), nil
}

// RandomShortestUpDown routes every ordered pair of distinct machines along
// a shortest legal up*/down* path drawn uniformly among all of them: the
// up*/down* routing of López et al. §5 ("shortest paths are randomly computed
// for each source-destination pair"). Cost: O(N·E) for the legal
// distances plus, per pair, the size of its shortest-path DAG.
func RandomShortestUpDown(t *topology.Topology, rng *rand.Rand) ([]plan.Path, error) {
	r, err := RandomShortestUpDownOpts(t, rng, DefaultOptions())
	if err != nil {
		return nil, err
	}
	return r.Paths, nil
}

// RandomShortestUpDownOpts is RandomShortestUpDown with options.
func RandomShortestUpDownOpts(t *topology.Topology, rng *rand.Rand, o Options) (*Result, error) {
	u, eps, err := setup(t, rng, o)
	if err != nil {
		return nil, err
	}
	return widest(u, eps, rng, false), nil
}

// ShortestWidest is Nienaber et al.'s shortest-widest scheme: pairs are taken
// one by one (in a seeded random order); each takes, among its shortest legal
// up*/down* paths, one whose most loaded channel is least loaded (the
// widest), then among those one of least total load, uniformly at random
// among what is left; then every channel of the chosen path gains 1. Pairs
// are machine pairs, not switch pairs: Nienaber et al. §5.1 "determines the
// paths between machines one by one", raising link weights per path, so
// machines of one switch may take different paths (unlike PathSelection's
// default PerSwitchPair).
//
// Cost: O(N·E) for the legal distance matrix, then per pair the size of
// its shortest-path DAG (at most the states within the pair's distance):
// O(P·N·d) worst case for P pairs and switch degree d, in practice
// O(P·paths' hops·d). 512 machines on 64 switches is 261,632 pairs.
func ShortestWidest(t *topology.Topology, rng *rand.Rand) ([]plan.Path, error) {
	r, err := ShortestWidestOpts(t, rng, DefaultOptions())
	if err != nil {
		return nil, err
	}
	return r.Paths, nil
}

// ShortestWidestOpts is ShortestWidest with options.
func ShortestWidestOpts(t *topology.Topology, rng *rand.Rand, o Options) (*Result, error) {
	u, eps, err := setup(t, rng, o)
	if err != nil {
		return nil, err
	}
	return widest(u, eps, rng, true), nil
}

// pairOf maps an ordered-pair index to endpoint positions (i, j), i != j.
func pairOf(p, n int) (int, int) {
	i, j := p/(n-1), p%(n-1)
	if j >= i {
		j++
	}
	return i, j
}

// dagWalker picks paths on the shortest legal path DAG toward one switch.
type dagWalker struct {
	u     *UpDown
	stamp []uint32
	gen   uint32
	order []int32
	bestB []int32
	bestS []int64
	cnt   []float64
}

func newDAGWalker(u *UpDown) *dagWalker {
	n2 := 2 * u.F.N
	return &dagWalker{u: u, stamp: make([]uint32, n2), order: make([]int32, 0, n2),
		bestB: make([]int32, n2), bestS: make([]int64, n2), cnt: make([]float64, n2)}
}

// pick returns the channels of a shortest legal path from switch a along
// the distance row dist (toward some switch), minimising first the largest
// weight, then the weight sum (w nil: all weights 0, i.e. uniform among
// shortest paths), uniformly at random among the optimal ones. ok is false
// when there is no legal path.
func (w *dagWalker) pick(a int32, dist []uint16, weight []int32, rng *rand.Rand, out []int32) ([]int32, bool) {
	out = out[:0]
	start := Start(a)
	if dist[start] == Unreachable {
		return out, false
	}
	if dist[start] == 0 {
		return out, true
	}
	u, f := w.u, w.u.F
	wt := func(c int32) int32 {
		if weight == nil {
			return 0
		}
		return weight[c]
	}
	w.gen++
	if w.gen == 0 {
		clear(w.stamp)
		w.gen = 1
	}
	w.order = append(w.order[:0], start)
	w.stamp[start] = w.gen
	for h := 0; h < len(w.order); h++ {
		x := w.order[h]
		if dist[x] == 0 {
			continue
		}
		for c := f.Off[x>>1]; c < f.Off[x>>1+1]; c++ {
			y := u.Next(x, c)
			if y >= 0 && dist[y] == dist[x]-1 && w.stamp[y] != w.gen {
				w.stamp[y] = w.gen
				w.order = append(w.order, y)
			}
		}
	}
	// Bottleneck pass (min over successors of max(w, rest)).
	for i := len(w.order) - 1; i >= 0; i-- {
		x := w.order[i]
		if dist[x] == 0 {
			w.bestB[x] = 0
			continue
		}
		b := int32(math.MaxInt32)
		for c := f.Off[x>>1]; c < f.Off[x>>1+1]; c++ {
			y := u.Next(x, c)
			if y >= 0 && dist[y] == dist[x]-1 {
				b = min(b, max(wt(c), w.bestB[y]))
			}
		}
		w.bestB[x] = b
	}
	// Sum pass restricted to channels within the bottleneck, with counts.
	bound := w.bestB[start]
	for i := len(w.order) - 1; i >= 0; i-- {
		x := w.order[i]
		if dist[x] == 0 {
			w.bestS[x], w.cnt[x] = 0, 1
			continue
		}
		s, n := int64(math.MaxInt64), 0.0
		for c := f.Off[x>>1]; c < f.Off[x>>1+1]; c++ {
			y := u.Next(x, c)
			if y < 0 || dist[y] != dist[x]-1 || wt(c) > bound || w.cnt[y] == 0 {
				continue
			}
			switch v := int64(wt(c)) + w.bestS[y]; {
			case v < s:
				s, n = v, w.cnt[y]
			case v == s:
				n += w.cnt[y]
			}
		}
		w.bestS[x], w.cnt[x] = s, n
	}
	for x := start; dist[x] > 0; {
		r := rng.Float64() * w.cnt[x]
		next, via := int32(-1), int32(-1)
		for c := f.Off[x>>1]; c < f.Off[x>>1+1]; c++ {
			y := u.Next(x, c)
			if y < 0 || dist[y] != dist[x]-1 || wt(c) > bound || w.cnt[y] == 0 || int64(wt(c))+w.bestS[y] != w.bestS[x] {
				continue
			}
			next, via = y, c
			if r -= w.cnt[y]; r < 0 {
				break
			}
		}
		out = append(out, via)
		x = next
	}
	return out, true
}

// widest routes all ordered pairs of eps; balance selects shortest-widest
// (seeded pair order, loads updated), otherwise uniform random shortest.
func widest(u *UpDown, eps []int32, rng *rand.Rand, balance bool) *Result {
	f := u.F
	res := &Result{Root: u.Roots[0]}
	n := len(eps)
	if n < 2 {
		return res
	}
	dm := u.DistMatrix()
	n2 := 2 * f.N
	total := n * (n - 1)
	order := make([]int32, total)
	for i := range order {
		order[i] = int32(i)
	}
	var weight []int32
	if balance {
		rng.Shuffle(total, func(i, j int) { order[i], order[j] = order[j], order[i] })
		weight = make([]int32, f.Channels())
		for c := range weight {
			weight[c] = 1
		}
	}
	chosen := make([][]int32, total)
	ok := make([]bool, total)
	w := newDAGWalker(u)
	var buf []int32
	for _, p := range order {
		i, j := pairOf(int(p), n)
		a, b := f.Home[eps[i]], f.Home[eps[j]]
		var found bool
		buf, found = w.pick(a, dm[int(b)*n2:(int(b)+1)*n2], weight, rng, buf)
		if !found {
			continue
		}
		ok[p] = true
		chosen[p] = append([]int32(nil), buf...)
		for _, c := range buf {
			if weight != nil {
				weight[c]++
			}
		}
	}
	res.Paths = make([]plan.Path, 0, total)
	for p := 0; p < total; p++ {
		if !ok[p] {
			res.Unrouted++
			continue
		}
		i, j := pairOf(p, n)
		res.Paths = append(res.Paths, f.Path(eps[i], eps[j], chosen[p]))
	}
	return res
}
