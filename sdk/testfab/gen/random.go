package gen

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
)

// attempts bounds how often a random generator redraws a disconnected
// graph before giving up.
const attempts = 100

// Random describes a random irregular fabric in the style of the GT-ITM flat
// random graphs used by Nienaber, Yuan and Duan §5 (see Paper): a uniformly
// random simple graph of Switches switches with exactly
// round(Switches*Degree/2) inter-switch cables (average degree Degree), and
// CAs machines each placed on a switch drawn uniformly at random. A disconnected draw is redrawn from the same seeded
// stream, so the result is a deterministic function of the parameters.
//
// Ports: switch s carries its h_s CAs on ports 1..h_s and its neighbours,
// in ascending switch order, on the following ports. All switches are
// declared with the same port count: SwitchPorts, or the largest h_s+degree.
type Random struct {
	Switches    int
	Degree      float64
	CAs         int
	SwitchPorts int
	Seed        int64
	Cable       Cable
}

// Graph draws the fabric.
func (t Random) Graph() (*Graph, error) { return cabled(t.graph())(t.Cable) }

func (t Random) graph() (*Graph, error) {
	n := t.Switches
	if n < 1 || n > MaxNodes {
		return nil, fmt.Errorf("topogen: random: --switches %d; give 1..%d", n, MaxNodes)
	}
	if t.CAs < 0 {
		return nil, fmt.Errorf("topogen: random: --cas %d; give the total number of CAs (0 or more)", t.CAs)
	}
	if err := checkSize(n, t.CAs, 0); err != nil {
		return nil, err
	}
	pairs := int64(n) * int64(n-1) / 2
	if math.IsNaN(t.Degree) || t.Degree < 0 || t.Degree*float64(n)/2 > float64(pairs) {
		return nil, fmt.Errorf("topogen: random: --degree %g; with %d switches the average degree must be between 0 and %d", t.Degree, n, n-1)
	}
	m := int64(math.Round(t.Degree * float64(n) / 2))
	if m < int64(n-1) {
		return nil, fmt.Errorf("topogen: random: --degree %g gives %d cables, fewer than the %d that connect %d switches; raise --degree to at least %.2f", t.Degree, m, n-1, n, 2*float64(n-1)/float64(n))
	}
	rng := rand.New(rand.NewSource(t.Seed))
	var adj [][]int32
	for try := 0; ; try++ {
		if try == attempts {
			return nil, fmt.Errorf("topogen: random: %d draws of %d switches with degree %g were all disconnected; raise --degree (about ln(switches) = %.1f or more connects almost surely)", attempts, n, t.Degree, math.Log(float64(n)))
		}
		adj = randomGraph(rng, n, m)
		if connected(adj) {
			break
		}
	}
	hosts := make([]int, n)
	for i := 0; i < t.CAs; i++ {
		hosts[rng.Intn(n)]++
	}
	return regularPorts(adj, hosts, t.SwitchPorts, "random", "random")
}

// randomGraph draws m distinct unordered pairs out of n switches uniformly
// (Floyd's sampling), returning sorted adjacency lists.
func randomGraph(rng *rand.Rand, n int, m int64) [][]int32 {
	total := int64(n) * int64(n-1) / 2
	chosen := make(map[int64]struct{}, m)
	picks := make([]int64, 0, m)
	for j := total - m; j < total; j++ {
		t := rng.Int63n(j + 1)
		if _, dup := chosen[t]; dup {
			t = j
		}
		chosen[t] = struct{}{}
		picks = append(picks, t)
	}
	sort.Slice(picks, func(a, b int) bool { return picks[a] < picks[b] })
	adj := make([][]int32, n)
	u, rowStart := 0, int64(0)
	for _, t := range picks {
		for t >= rowStart+int64(n-1-u) {
			rowStart += int64(n - 1 - u)
			u++
		}
		v := u + 1 + int(t-rowStart)
		adj[u] = append(adj[u], int32(v))
		adj[v] = append(adj[v], int32(u))
	}
	for _, a := range adj {
		sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
	}
	return adj
}

// regularPorts turns a simple switch graph plus CA counts into a graph:
// CAs on ports 1..h_s, neighbours in ascending order after them.
func regularPorts(adj [][]int32, hosts []int, ports int, kind, descKind string) (*Graph, error) {
	need := 0
	cas := 0
	for s := range adj {
		need = max(need, hosts[s]+len(adj[s]))
		cas += hosts[s]
	}
	if ports == 0 {
		ports = max(need, 1)
	}
	if ports < need {
		return nil, fmt.Errorf("topogen: %s: a switch needs %d ports for its CAs and cables but --switch-ports is %d; raise it", kind, need, ports)
	}
	if err := checkSize(len(adj), cas, ports); err != nil {
		return nil, err
	}
	g := &Graph{}
	for s := range adj {
		g.addSwitch(fmt.Sprintf("%s-%d", kind, s), fmt.Sprintf("%s switch %d", descKind, s), ports)
	}
	for s := range adj {
		for c := 0; c < hosts[s]; c++ {
			g.addCA(fmt.Sprintf("%s-%d-host-%d", kind, s, c), fmt.Sprintf("%s switch %d host %d", descKind, s, c), s, c+1)
		}
	}
	for u, nb := range adj {
		for i, v := range nb {
			if int(v) <= u {
				continue
			}
			// Simple graph: u appears once in adj[v].
			j := sort.Search(len(adj[v]), func(k int) bool { return adj[v][k] >= int32(u) })
			g.connect(u, hosts[u]+i+1, int(v), hosts[v]+j+1)
		}
	}
	return g, nil
}

// RRG describes a random regular graph built as Jellyfish does (Singla et
// al., NSDI 2012): Switches switches with NetPorts inter-switch ports each
// and CAsPerSwitch CAs each. Random non-adjacent pairs with free ports are
// joined; when no such pair is left, a switch p with two free ports takes
// over a random cable (x,y) whose ends are not p's neighbours, becoming
// p–x and p–y. Every switch ends with exactly NetPorts neighbours unless
// Switches*NetPorts is odd (one port stays free). Disconnected results are
// redrawn from the same seeded stream.
//
// Ports: 1..CAsPerSwitch carry the CAs, the next NetPorts the neighbours in
// ascending switch order.
type RRG struct {
	Switches     int
	NetPorts     int
	CAsPerSwitch int
	SwitchPorts  int
	Seed         int64
	Cable        Cable
}

// Graph draws the fabric.
func (t RRG) Graph() (*Graph, error) { return cabled(t.graph())(t.Cable) }

func (t RRG) graph() (*Graph, error) {
	n, r, h := t.Switches, t.NetPorts, t.CAsPerSwitch
	if n < 2 || n > MaxNodes {
		return nil, fmt.Errorf("topogen: rrg: --switches %d; give 2..%d", n, MaxNodes)
	}
	if r < 1 || r >= n {
		return nil, fmt.Errorf("topogen: rrg: --ports %d network ports per switch; with %d switches give 1..%d (a switch has at most n-1 distinct neighbours)", r, n, n-1)
	}
	if r == 1 && n > 2 {
		return nil, fmt.Errorf("topogen: rrg: one network port per switch cannot connect %d switches; give --ports 2 or more", n)
	}
	if h < 0 || h > MaxPorts {
		return nil, fmt.Errorf("topogen: rrg: --cas %d; give 0 to %d CAs per switch", h, MaxPorts)
	}
	if err := checkSize(n, n*h, h+r); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewSource(t.Seed))
	for try := 0; try < attempts; try++ {
		j := newJelly(rng, n, r)
		j.build()
		if connected(j.adj) {
			for _, a := range j.adj {
				sort.Slice(a, func(x, y int) bool { return a[x] < a[y] })
			}
			hosts := make([]int, n)
			for s := range hosts {
				hosts[s] = h
			}
			ports := t.SwitchPorts
			if ports == 0 {
				ports = h + r
			}
			return regularPorts(j.adj, hosts, ports, "rrg", "rrg")
		}
	}
	return nil, fmt.Errorf("topogen: rrg: %d draws of %d switches with %d network ports were all disconnected; raise --ports", attempts, n, r)
}

// jelly is the state of one Jellyfish construction.
type jelly struct {
	rng     *rand.Rand
	r       int
	adj     [][]int32
	edges   [][2]int32
	edgeAt  map[uint64]int
	open    []int32 // switches with free ports
	openPos []int   // position in open, or -1
}

func newJelly(rng *rand.Rand, n, r int) *jelly {
	j := &jelly{rng: rng, r: r, adj: make([][]int32, n), edgeAt: make(map[uint64]int, n*r/2),
		open: make([]int32, n), openPos: make([]int, n)}
	for s := range j.open {
		j.open[s], j.openPos[s] = int32(s), s
	}
	return j
}

func pairKey(a, b int32) uint64 {
	if a > b {
		a, b = b, a
	}
	return uint64(a)<<32 | uint64(b)
}

func (j *jelly) free(s int32) int { return j.r - len(j.adj[s]) }

func (j *jelly) adjacent(a, b int32) bool {
	_, ok := j.edgeAt[pairKey(a, b)]
	return ok
}

// sync keeps s in the open list exactly while it has free ports.
func (j *jelly) sync(s int32) {
	in := j.openPos[s] >= 0
	switch want := j.free(s) > 0; {
	case want && !in:
		j.openPos[s] = len(j.open)
		j.open = append(j.open, s)
	case !want && in:
		i, last := j.openPos[s], j.open[len(j.open)-1]
		j.open[i], j.openPos[last] = last, i
		j.open = j.open[:len(j.open)-1]
		j.openPos[s] = -1
	}
}

func (j *jelly) add(a, b int32) {
	j.edgeAt[pairKey(a, b)] = len(j.edges)
	j.edges = append(j.edges, [2]int32{a, b})
	j.adj[a] = append(j.adj[a], b)
	j.adj[b] = append(j.adj[b], a)
	j.sync(a)
	j.sync(b)
}

func (j *jelly) remove(a, b int32) {
	k := pairKey(a, b)
	i := j.edgeAt[k]
	last := j.edges[len(j.edges)-1]
	j.edges[i] = last
	j.edgeAt[pairKey(last[0], last[1])] = i
	j.edges = j.edges[:len(j.edges)-1]
	delete(j.edgeAt, k)
	drop := func(s, v int32) {
		l := j.adj[s]
		for x := range l {
			if l[x] == v {
				l[x] = l[len(l)-1]
				j.adj[s] = l[:len(l)-1]
				return
			}
		}
	}
	drop(a, b)
	drop(b, a)
	j.sync(a)
	j.sync(b)
}

// build runs the construction until every port is used or no move is left.
// Each step uses up two free ports, so it ends after at most n*r/2 steps.
func (j *jelly) build() {
	for len(j.open) > 0 {
		if j.joinPair() || j.rewire() {
			continue
		}
		return
	}
}

// joinPair cables a random non-adjacent pair of open switches.
func (j *jelly) joinPair() bool {
	if len(j.open) < 2 {
		return false
	}
	for try := 0; try < 16; try++ {
		a, b := j.open[j.rng.Intn(len(j.open))], j.open[j.rng.Intn(len(j.open))]
		if a != b && !j.adjacent(a, b) {
			j.add(a, b)
			return true
		}
	}
	// Few candidates left: choose uniformly among all of them.
	var cand [][2]int32
	for x := 0; x < len(j.open); x++ {
		for y := x + 1; y < len(j.open); y++ {
			if a, b := j.open[x], j.open[y]; !j.adjacent(a, b) {
				cand = append(cand, [2]int32{a, b})
			}
		}
	}
	if len(cand) == 0 {
		return false
	}
	c := cand[j.rng.Intn(len(cand))]
	j.add(c[0], c[1])
	return true
}

// rewire handles the stuck state (all open switches mutually adjacent).
func (j *jelly) rewire() bool {
	var ps []int32
	for _, s := range j.open {
		if j.free(s) >= 2 {
			ps = append(ps, s)
		}
	}
	if len(ps) > 0 {
		// Jellyfish's move: p takes over a cable (x,y) far from it.
		p := ps[j.rng.Intn(len(ps))]
		e, ok := j.pickEdge(func(x, y int32) bool {
			return x != p && y != p && !j.adjacent(p, x) && !j.adjacent(p, y)
		})
		if !ok {
			return false
		}
		j.remove(e[0], e[1])
		j.add(p, e[0])
		j.add(p, e[1])
		return true
	}
	if len(j.open) < 2 {
		return false
	}
	// Two switches a, b with one free port each, already adjacent: replace
	// a cable (x,y) with a–x and b–y.
	a, b := j.open[0], j.open[1]
	far := func(s, x int32) bool { return x != s && !j.adjacent(s, x) }
	e, ok := j.pickEdge(func(x, y int32) bool { return (far(a, x) && far(b, y)) || (far(a, y) && far(b, x)) })
	if !ok {
		return false
	}
	x, y := e[0], e[1]
	if !(far(a, x) && far(b, y)) {
		x, y = y, x
	}
	j.remove(e[0], e[1])
	j.add(a, x)
	j.add(b, y)
	return true
}

// pickEdge returns a random cable satisfying ok: random probes first, then
// a scan from a random start, so it fails only if no cable qualifies.
func (j *jelly) pickEdge(ok func(x, y int32) bool) ([2]int32, bool) {
	if len(j.edges) == 0 {
		return [2]int32{}, false
	}
	for try := 0; try < 64; try++ {
		e := j.edges[j.rng.Intn(len(j.edges))]
		if ok(e[0], e[1]) {
			return e, true
		}
	}
	start := j.rng.Intn(len(j.edges))
	for i := range j.edges {
		e := j.edges[(start+i)%len(j.edges)]
		if ok(e[0], e[1]) {
			return e, true
		}
	}
	return [2]int32{}, false
}
