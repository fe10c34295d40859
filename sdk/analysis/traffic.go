package analysis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/ibsm/ibsm/sdk/route"
)

// Fat-tree quality metrics: the worst channel load over shift permutations
// and the effective bisection bandwidth. Both route individual flows over
// the realised LFTs, so they measure the tables that would be programmed.
//
// CA index order. Shift permutations depend on how CAs are numbered. The
// order used here is: CA ports grouped by the switch they are cabled to,
// switches in switch-index order (ascending node GUID), and within one switch
// by switch port ascending. On the fat trees `ibsm topo` writes (and on the
// trees in analysistest), leaf GUIDs ascend in leaf order and CA c of a leaf
// is on port c+1, so CA index = leaf*casPerLeaf + c: the order fat-tree
// engines (ftree, D-mod-k) optimise for. Options.CAOrder replaces it.
//
// Flows use the DLID their source selects under the LID plan (the base LID
// with plan.DLIDBase and no overrides). A flow that does not arrive (no
// route, loop, dead link) loads nothing, counts as unrouted and gets
// bandwidth 0 in the eBB. Every channel is counted: CA→switch,
// switch→switch and switch→CA; all are taken to have equal bandwidth.

// Shift and bisection defaults.
const (
	// ShiftsAuto evaluates every shift up to AllShiftsMaxCAs CAs and a
	// seeded sample of DefaultShiftSample shifts above.
	ShiftsAuto = -1
	// ShiftsAll evaluates every shift 1..N-1 whatever N.
	ShiftsAll          = -2
	AllShiftsMaxCAs    = 4096
	DefaultShiftSample = 256
	DefaultBisections  = 100
)

// ShiftStats is the channel load under shift permutations: for shift s every
// CA i (in CA index order) sends one flow to CA (i+s) mod N. The load of a
// channel is the number of flows crossing it; a fat-tree routing matched to
// the CA order reaches 1 on every shift of a fully populated tree.
type ShiftStats struct {
	CAs   int    `json:"cas"`
	Order string `json:"order"`
	// Shifts is the number of shifts evaluated; All is set when that is
	// every shift 1..N-1, otherwise they are a sample drawn with Seed.
	Shifts int   `json:"shifts"`
	All    bool  `json:"all"`
	Seed   int64 `json:"seed"`
	// Worst is the highest channel load of any evaluated shift, first
	// reached at WorstShift on WorstChannel ("0x<guid>/<port>" out-port).
	Worst        int64  `json:"worst"`
	WorstShift   int    `json:"worst_shift"`
	WorstChannel string `json:"worst_channel,omitempty"`
	// Mean is the mean over shifts of the highest channel load.
	Mean float64 `json:"mean"`
	// CongestionFree counts shifts whose highest load is at most 1.
	CongestionFree int   `json:"congestion_free"`
	UnroutedFlows  int64 `json:"unrouted_flows"`
	// Millis is the wall time of the computation.
	Millis float64 `json:"ms"`
}

// EBBStats is the effective bisection bandwidth (Hoefler et al.): for each
// random bisection the CAs are split in two random halves matched one to one
// (pairs (p[k], p[N/2+k]) of a seeded random permutation p; with N odd one
// CA idles), both members of a pair send to each other, and a flow gets
// bandwidth 1/(highest load on its path). A bisection's value is the mean
// over its flows; EBB is the mean over bisections, 1 meaning every flow
// runs at full link speed.
type EBBStats struct {
	CAs        int     `json:"cas"`
	Bisections int     `json:"bisections"`
	Seed       int64   `json:"seed"`
	EBB        float64 `json:"ebb"`
	// Min and Max are the lowest and highest single-bisection values.
	Min           float64 `json:"min"`
	Max           float64 `json:"max"`
	Flows         int64   `json:"flows"`
	UnroutedFlows int64   `json:"unrouted_flows"`
	Millis        float64 `json:"ms"`
}

// Bisection returns bisection number index of n CAs drawn from seed: a
// permutation p whose pairs are (p[k], p[n/2+k]) for k < n/2. It is the draw
// Analyse uses, exported so results can be reproduced elsewhere.
func Bisection(seed int64, index, n int) []int32 {
	p := make([]int32, n)
	bisection(seed, index, p)
	return p
}

func bisection(seed int64, index int, p []int32) {
	for i := range p {
		p[i] = int32(i)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(index)))
	rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
}

// sampleShifts picks the shifts to evaluate among 1..n-1.
func sampleShifts(n, want int, seed int64) (shifts []int, all bool) {
	if n < 2 {
		return nil, true
	}
	switch {
	case want == ShiftsAll, want == ShiftsAuto && n <= AllShiftsMaxCAs, want >= n-1:
		all = true
	case want == ShiftsAuto:
		want = DefaultShiftSample
	}
	if all {
		shifts = make([]int, n-1)
		for i := range shifts {
			shifts[i] = i + 1
		}
		return shifts, true
	}
	// Partial Fisher-Yates over 1..n-1; sorted so output reads in order.
	pool := make([]int, n-1)
	for i := range pool {
		pool[i] = i + 1
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5417f7))
	for i := 0; i < want; i++ {
		j := i + rng.IntN(len(pool)-i)
		pool[i], pool[j] = pool[j], pool[i]
	}
	shifts = pool[:want]
	sort.Ints(shifts)
	return shifts, false
}

// traffic is the shared read-only state of the flow walkers.
type traffic struct {
	f     *fabric
	order []int32 // CA endpoints in CA index order
	fixed bool    // every source uses the destination's base LID
}

// caOrder builds the CA index order, or validates the caller's.
func (f *fabric) caOrder(custom []int32) ([]int32, error) {
	if custom != nil {
		seen := make([]bool, len(f.eps))
		for _, e := range custom {
			if e < 0 || int(e) >= len(f.eps) || !f.isCA[e] {
				return nil, fmt.Errorf("analysis: CA order names endpoint %d, which is not a CA port; list CA endpoint indices (Topology.Endpoints())", e)
			}
			if f.epSw[e] < 0 {
				return nil, fmt.Errorf("analysis: CA order names %s, which has no up link to a switch; leave it out", f.epName(e))
			}
			if seen[e] {
				return nil, fmt.Errorf("analysis: CA order names %s twice", f.epName(e))
			}
			seen[e] = true
		}
		return custom, nil
	}
	order := make([]int32, 0, len(f.caList))
	for s := 0; s < f.nsw; s++ {
		start := len(order)
		order = append(order, f.caList[f.caStart[s]:f.caStart[s+1]]...)
		at := order[start:]
		slices.SortFunc(at, func(a, b int32) int { return int(f.epIn[a]) - int(f.epIn[b]) })
	}
	return order, nil
}

// dlid is the DLID src uses toward dst.
func (t *traffic) dlid(src, dst int32) uint16 {
	base := t.f.lids.Ports[dst].Base
	if t.fixed {
		return base
	}
	return base + uint16(t.f.selected(src, dst))
}

// route appends the channels of the flow src→dst to buf and reports whether
// it arrives. Both ends are CAs with an up link to a switch.
func (t *traffic) route(buf []int32, src, dst int32) ([]int32, bool) {
	f := t.f
	d := t.dlid(src, dst)
	buf = append(buf, f.caChan[src])
	s := f.epSw[src]
	for hop := 0; hop <= f.nsw; hop++ {
		out := f.r.LFT[s][d]
		if out == 0 || out > f.np[s] { // NoPort is above any port count
			return buf, false
		}
		fp := f.portBase[s] + int32(out)
		if f.link[fp].stat != portOK {
			return buf, false
		}
		buf = append(buf, fp)
		if ps := f.link[fp].sw(); ps >= 0 {
			s = ps
			continue
		}
		return buf, f.peerEp[fp] == dst
	}
	return buf, false // a loop
}

// counter is one walker's scratch: channel loads reset lazily by epoch, so
// a permutation costs O(flows·hops), not O(channels).
type counter struct {
	load  []int32
	epoch []uint32
	cur   uint32
	buf   []int32
	paths []int32 // flat paths of one bisection
	ends  []int32 // end offset of flow i in paths; -1 if unrouted
	perm  []int32
}

func newCounter(f *fabric, n int) *counter {
	return &counter{load: make([]int32, f.nChan), epoch: make([]uint32, f.nChan), buf: make([]int32, 0, 16), perm: make([]int32, n)}
}

func (c *counter) reset() { c.cur++ }

// add loads the channels of path and returns the highest load reached and
// its channel.
func (c *counter) add(path []int32, best int32, bestC int32) (int32, int32) {
	for _, ch := range path {
		if c.epoch[ch] != c.cur {
			c.epoch[ch], c.load[ch] = c.cur, 0
		}
		c.load[ch]++
		if c.load[ch] > best {
			best, bestC = c.load[ch], ch
		}
	}
	return best, bestC
}

type shiftResult struct {
	max      int32
	ch       int32
	unrouted int64
}

// runParallel calls fn(worker scratch, i) for i in 0..n-1 over workers.
func runParallel(f *fabric, cas, n, workers int, fn func(c *counter, i int)) {
	cs := make([]*counter, max(1, min(workers, n)))
	_, _ = route.Each(context.Background(), n, len(cs), func(w, i int) error {
		if cs[w] == nil {
			cs[w] = newCounter(f, cas)
		}
		fn(cs[w], i)
		return nil
	})
}

func newTraffic(f *fabric, custom []int32) (*traffic, error) {
	order, err := f.caOrder(custom)
	if err != nil {
		return nil, err
	}
	return &traffic{f: f, order: order, fixed: !f.spread && len(f.dlidOvAt) == 0}, nil
}

func (t *traffic) orderName(custom bool) string {
	if custom {
		return "caller-supplied"
	}
	return "by switch (ascending GUID), then switch port ascending"
}

// shifts measures the shift permutations.
func (t *traffic) shifts(want int, seed int64, workers int, custom bool) *ShiftStats {
	start := time.Now()
	n := len(t.order)
	shifts, all := sampleShifts(n, want, seed)
	res := make([]shiftResult, len(shifts))
	runParallel(t.f, n, len(shifts), workers, func(c *counter, k int) {
		c.reset()
		s := shifts[k]
		r := shiftResult{ch: -1}
		for i := 0; i < n; i++ {
			j := i + s
			if j >= n {
				j -= n
			}
			var ok bool
			c.buf, ok = t.route(c.buf[:0], t.order[i], t.order[j])
			if !ok {
				r.unrouted++
				continue
			}
			r.max, r.ch = c.add(c.buf, r.max, r.ch)
		}
		res[k] = r
	})
	st := &ShiftStats{CAs: n, Order: t.orderName(custom), Shifts: len(shifts), All: all, Seed: seed}
	var sum int64
	worstCh := int32(-1)
	for k, r := range res {
		sum += int64(r.max)
		if int64(r.max) > st.Worst {
			st.Worst, st.WorstShift, worstCh = int64(r.max), shifts[k], r.ch
		}
		if r.max <= 1 {
			st.CongestionFree++
		}
		st.UnroutedFlows += r.unrouted
	}
	if worstCh >= 0 {
		st.WorstChannel = t.f.chanName(int(worstCh))
	}
	if len(res) > 0 {
		st.Mean = float64(sum) / float64(len(res))
	}
	st.Millis = float64(time.Since(start).Microseconds()) / 1000
	return st
}

type ebbResult struct {
	bw       float64
	flows    int64
	unrouted int64
}

// ebb measures the effective bisection bandwidth over count bisections.
func (t *traffic) ebb(count int, seed int64, workers int) *EBBStats {
	start := time.Now()
	n := len(t.order)
	half := n / 2
	res := make([]ebbResult, count)
	runParallel(t.f, n, count, workers, func(c *counter, b int) {
		c.reset()
		bisection(seed, b, c.perm)
		c.paths, c.ends = c.paths[:0], c.ends[:0]
		var r ebbResult
		for k := 0; k < half; k++ {
			a, z := t.order[c.perm[k]], t.order[c.perm[half+k]]
			for _, fl := range [2][2]int32{{a, z}, {z, a}} {
				from := len(c.paths)
				var ok bool
				c.paths, ok = t.route(c.paths, fl[0], fl[1])
				if !ok {
					c.paths = c.paths[:from]
					c.ends = append(c.ends, -1)
					r.unrouted++
					continue
				}
				c.add(c.paths[from:], 0, -1)
				c.ends = append(c.ends, int32(len(c.paths)))
			}
		}
		from := int32(0)
		for _, end := range c.ends {
			r.flows++
			if end < 0 {
				continue
			}
			m := int32(1)
			for _, ch := range c.paths[from:end] {
				m = max(m, c.load[ch])
			}
			r.bw += 1 / float64(m)
			from = end
		}
		res[b] = r
	})
	st := &EBBStats{CAs: n, Bisections: count, Seed: seed}
	for i, r := range res {
		v := 1.0
		if r.flows > 0 {
			v = r.bw / float64(r.flows)
		}
		if i == 0 || v < st.Min {
			st.Min = v
		}
		if i == 0 || v > st.Max {
			st.Max = v
		}
		st.EBB += v
		st.Flows += r.flows
		st.UnroutedFlows += r.unrouted
	}
	if count > 0 {
		st.EBB /= float64(count)
	}
	st.Millis = float64(time.Since(start).Microseconds()) / 1000
	return st
}

// trafficMetrics fills rep.Shift and rep.EBB as opt asks.
func (f *fabric) trafficMetrics(rep *Report, opt Options) error {
	if opt.Shifts == 0 && opt.Bisections <= 0 {
		return nil
	}
	if opt.Shifts < ShiftsAll {
		return fmt.Errorf("analysis: Shifts %d; use a count, ShiftsAuto (%d), ShiftsAll (%d) or 0 to skip", opt.Shifts, ShiftsAuto, ShiftsAll)
	}
	t, err := newTraffic(f, opt.CAOrder)
	if err != nil {
		return err
	}
	if len(t.order) < 2 {
		return nil // no CA pairs, no traffic to measure
	}
	if opt.Shifts != 0 {
		rep.Shift = t.shifts(opt.Shifts, opt.Seed, opt.Workers, opt.CAOrder != nil)
	}
	if opt.Bisections > 0 {
		rep.EBB = t.ebb(opt.Bisections, opt.Seed, opt.Workers)
	}
	return nil
}
