package paths

import (
	"math/rand/v2"
)

// Unreachable marks "no legal path" in a distance row.
const Unreachable = ^uint16(0)

// UpDown is the Up*/Down* orientation of Autonet (Schroeder et al.) as seed
// 003 §2.1 describes it: a breadth-first spanning tree from a root; the
// "up" end of a link is the end nearer the root, or, between switches at
// the same depth, the one with the lower ID (here the switch index, i.e.
// GUID order). That is one strict order Ord over switches: a channel climbs
// iff it enters a switch of smaller Ord. A legal path climbs zero or more
// times and then descends, never climbing after a descent, which keeps the
// channel dependency graph acyclic on one VL.
//
// Legal paths are searched on the legal-turn graph whose states are
// (switch, phase): phase U may still climb, phase D only descends. State
// x = 2*switch + phase.
type UpDown struct {
	F *Fabric
	// Roots has one root per connected component: the requested one for
	// its component, the lowest-index switch elsewhere.
	Roots []int32
	// Rank is each switch's hop distance from its component's root.
	Rank []int32
	// Ord is each switch's position in (Rank, index) order.
	Ord []int32
}

// Phases of a legal-turn state.
const (
	PhaseUp   = 0
	PhaseDown = 1
)

// RandomRoot draws a switch uniformly (the random root of Nienaber et al.
// §5.1).
func RandomRoot(f *Fabric, rng *rand.Rand) int32 {
	if f.N == 0 {
		return -1
	}
	return int32(rng.IntN(f.N))
}

// NewUpDown orients f from root (a switch index; -1 picks switch 0).
func NewUpDown(f *Fabric, root int32) *UpDown {
	u := &UpDown{F: f, Rank: make([]int32, f.N), Ord: make([]int32, f.N)}
	if f.N == 0 {
		return u
	}
	if root < 0 || int(root) >= f.N {
		root = 0
	}
	for i := range u.Rank {
		u.Rank[i] = -1
	}
	queue := make([]int32, 0, f.N)
	bfs := func(r int32) {
		u.Roots = append(u.Roots, r)
		u.Rank[r] = 0
		queue = append(queue[:0], r)
		for h := 0; h < len(queue); h++ {
			x := queue[h]
			for c := f.Off[x]; c < f.Off[x+1]; c++ {
				if y := f.Peer[c]; u.Rank[y] < 0 {
					u.Rank[y] = u.Rank[x] + 1
					queue = append(queue, y)
				}
			}
		}
	}
	bfs(root)
	for s := int32(0); s < int32(f.N); s++ {
		if u.Rank[s] < 0 {
			bfs(s)
		}
	}
	// Counting sort by rank keeps index order within a rank.
	maxRank := int32(0)
	for _, r := range u.Rank {
		maxRank = max(maxRank, r)
	}
	start := make([]int32, maxRank+2)
	for _, r := range u.Rank {
		start[r+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	for s, r := range u.Rank {
		u.Ord[s] = start[r]
		start[r]++
	}
	return u
}

// Up reports whether channel c climbs.
func (u *UpDown) Up(c int32) bool { return u.Ord[u.F.Peer[c]] < u.Ord[u.F.From[c]] }

// Next is the state reached from state x through channel c (which must
// leave x's switch), or -1 if that turn is illegal.
func (u *UpDown) Next(x, c int32) int32 {
	if u.Up(c) {
		if x&1 == PhaseDown {
			return -1
		}
		return 2 * u.F.Peer[c]
	}
	return 2*u.F.Peer[c] + PhaseDown
}

// Start is the state a path from switch s starts in.
func Start(s int32) int32 { return 2 * s }

// DistTo fills dist (2N entries) with the legal hop count from every state
// to switch d, Unreachable where there is none; banned switches (may be
// nil) are avoided. queue needs 2N entries.
func (u *UpDown) DistTo(d int32, dist []uint16, banned []bool, queue []int32) {
	f := u.F
	for i := range dist {
		dist[i] = Unreachable
	}
	if banned != nil && banned[d] {
		return
	}
	dist[2*d], dist[2*d+1] = 0, 0
	queue[0], queue[1] = 2*d, 2*d+1
	tail := 2
	for h := 0; h < tail; h++ {
		y := queue[h]
		t, ph := y>>1, y&1
		nd := dist[y] + 1
		// Channels into t are the reverses of t's channels.
		for r := f.Off[t]; r < f.Off[t+1]; r++ {
			c := f.Rev[r]
			s := f.From[c]
			if banned != nil && banned[s] {
				continue
			}
			if u.Up(c) {
				if ph != PhaseUp {
					continue
				}
				if dist[2*s] == Unreachable {
					dist[2*s] = nd
					queue[tail] = 2 * s
					tail++
				}
				continue
			}
			if ph != PhaseDown {
				continue
			}
			for _, x := range [2]int32{2 * s, 2*s + 1} {
				if dist[x] == Unreachable {
					dist[x] = nd
					queue[tail] = x
					tail++
				}
			}
		}
	}
}

// DistMatrix returns DistTo for every destination switch: row d is
// m[d*2N:(d+1)*2N]. Memory is 4N² bytes (1 MiB for 512 switches).
func (u *UpDown) DistMatrix() []uint16 {
	n2 := 2 * u.F.N
	m := make([]uint16, u.F.N*n2)
	queue := make([]int32, n2)
	for d := 0; d < u.F.N; d++ {
		u.DistTo(int32(d), m[d*n2:(d+1)*n2], nil, queue)
	}
	return m
}

// Legal reports whether the channel sequence is a legal up*/down* walk
// (contiguous, no climb after a descent).
func (u *UpDown) Legal(chans []int32) bool {
	if len(chans) == 0 {
		return true
	}
	x := Start(u.F.From[chans[0]])
	for _, c := range chans {
		if u.F.From[c] != x>>1 {
			return false
		}
		if x = u.Next(x, c); x < 0 {
			return false
		}
	}
	return true
}
