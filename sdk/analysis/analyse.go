package analysis

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"

	"github.com/ibsm/ibsm/sdk/plan"

	"github.com/ibsm/ibsm/sdk/route"
)

// Options tune Analyse. The zero value is usable.
type Options struct {
	// Samples caps every list of examples in the report (default 10).
	Samples int
	// Workers is the number of goroutines (default GOMAXPROCS).
	Workers int
	// AllLIDs treats every LID of every range as used by every source: for
	// multipath planes (LMC > 0 realised from routing-engine planes) SA may
	// hand any of them out, so all must arrive and all count in the CDG.
	AllLIDs bool

	// Shifts enables the shift-permutation metric (Report.Shift): 0 skips
	// it, ShiftsAuto picks all shifts or a sample by size, ShiftsAll takes
	// every shift, n > 0 a seeded sample of n shifts (all if n >= N-1).
	Shifts int
	// Bisections is the number of random bisections for the effective
	// bisection bandwidth (Report.EBB); 0 skips it.
	Bisections int
	// Seed draws the shift sample and the bisections.
	Seed int64
	// CAOrder replaces the CA index order of the shift metric (endpoint
	// indices of CA ports, each with an up link to a switch).
	CAOrder []int32

	// VerdictOnly leaves the metrics out (Report.Hops, MaxHops, AvgHops
	// and Load stay zero, Report.VerdictOnly is set): what is left is
	// what a verdict needs, and one-VL plans without LMC or overrides
	// take a path that looks at each LFT entry once (lean.go).
	VerdictOnly bool

	// general makes every LID take the general path (tests compare it
	// with plainLID); noLean keeps chunks off the verdict-only path.
	general, noLean bool
}

// Walk states.
const (
	stUnknown uint8 = iota
	stProgress
	stArrive
	stFail
)

// Failure codes (indices into failNames).
const (
	fNone uint8 = iota
	fNoRoute
	fNoSuchPort
	fUnconnected
	fDown
	fPort0
	fWrongPort
	fLoop
	fSourceLink
)

var failNames = [...]string{"", FailNoRoute, FailNoSuchPort, FailUnconnected, FailDown, FailPort0, FailWrongPort, FailLoop, FailSourceLink}

// chanAcc is what a worker accumulates per channel (worker.chans).
type chanAcc struct {
	v    uint64 // load (low loadBits bits) | VLs << loadBits
	succ uint64 // on VL packedVT: out-ports of the far switch the traffic continues on
}

// unpackDeps ORs dependencies kept per channel (succ[ch]: out-ports of
// the far switch) into the (switch, in, out) bitset *dep, allocating it
// if need be.
func (f *fabric) unpackDeps(succ []uint64, dep *[]uint64) {
	if *dep == nil {
		*dep = make([]uint64, (f.nEdges+63)/64)
	}
	bs := *dep
	for ch, m := range succ {
		if m == 0 {
			continue
		}
		l := f.link[ch]
		t := l.sw()
		base := f.edgeBase[t] + int(l.port)*(int(f.np[t])+1)
		for ; m != 0; m &= m - 1 {
			i := base + bits.TrailingZeros64(m)
			bs[i>>6] |= 1 << (i & 63)
		}
	}
}

// A channel's load counts (source, destination) pairs, at most 49,151²
// < 2^32, so it fits below the VL bits of worker.chans.
const (
	loadBits = 48
	loadMask = 1<<loadBits - 1
)

// chunkLIDs LIDs are handled by one worker in a row: the LFTs are stored
// switch-major, so 64 consecutive LIDs share a cache line per switch.
const chunkLIDs = 64

// rowGroup LFT rows are read together (worker.hopWords).
const rowGroup = 8

// Analyse measures the realised routing r under the VL plan vls (nil: one SL,
// one VL). It returns an error only when the inputs are malformed (shapes that
// cannot be indexed); routing defects are reported in the Report.
func Analyse(r *plan.Realized, vls *plan.VLPlan, opt Options) (*Report, error) {
	f, err := newFabric(r, vls)
	if err != nil {
		return nil, err
	}
	if opt.Samples <= 0 {
		opt.Samples = 10
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	starts := f.chunks()
	nChunks := len(starts) - 1
	results := make([]*chunkResult, nChunks)
	ws := make([]*worker, min(opt.Workers, max(nChunks, 1)))
	vt := f.leanVL(opt)
	for i := range ws {
		ws[i] = newWorker(f, opt)
		if vt >= 0 {
			ws[i].packedVT = int8(vt)
		}
	}
	_, _ = route.Each(context.Background(), nChunks, len(ws), func(w, c int) error {
		lo, hi := starts[c], starts[c+1]
		if vt >= 0 && ws[w].leanChunk(f.lidList[lo:hi]) {
			ws[w].leaned = true
			results[c] = &chunkResult{}
			return nil
		}
		results[c] = ws[w].runChunk(f.lidList[lo:hi])
		return nil
	})
	rep, err := f.merge(ws, results, opt)
	if err != nil {
		return nil, err
	}
	leaned := false
	for _, w := range ws {
		leaned = leaned || w.leaned
	}
	if leaned && !rep.DeadlockFree {
		// A loop among valid entries, or a real credit loop: the general
		// path tells which, as it would have from the start.
		opt.noLean = true
		return Analyse(r, vls, opt)
	}
	if opt.VerdictOnly {
		rep.Hops, rep.MaxHops, rep.AvgHops, rep.Load = nil, 0, 0, LoadStats{}
		rep.VerdictOnly = true
	}
	if err := f.trafficMetrics(rep, opt); err != nil {
		return nil, err
	}
	return rep, nil
}

// chunks returns where the chunks of lidList start, and its length: a
// chunk holds the LIDs that share a cache line in every row, LIDs 64k to
// 64k+63 (LID 0 is nobody's, so counting from it cut every row's line in
// two).
func (f *fabric) chunks() []int {
	var starts []int
	for i, d := range f.lidList {
		if i == 0 || d/chunkLIDs != f.lidList[i-1]/chunkLIDs {
			starts = append(starts, i)
		}
	}
	return append(starts, len(f.lidList))
}

// chunkResult holds the order-dependent findings of one chunk of LIDs.
type chunkResult struct {
	unreach []Unreachable
	loops   []Loop
	bad     []BadEntry
}

// worker holds per-goroutine scratch (O(switches)) and accumulators.
type worker struct {
	f   *fabric
	opt Options
	// block holds a chunk's entries switch-major (leanChunk); leaned is
	// set once a chunk took that path. leanSucc holds its dependencies as
	// chans[].succ does, on VL packedVT, leanUsed per switch the
	// out-ports its traffic takes (port 0 aside), leanAcc a switch's
	// dependencies while its entries are read and leanUndo what a chunk
	// changed. touch keeps the reads that fetch rows ahead.
	block    []uint8
	leaned   bool
	ran      bool // runChunk ran: chans holds something
	leanSucc []uint64
	leanUsed []uint64
	leanAcc  [2][64]uint64
	leanUndo []leanWas
	touch    uint8

	st []uint8
	// hopCols holds the chunk's hop words, LID-major (hopCols[j*nsw+s] is
	// switch s toward the chunk's LID j, see hopNext); hop is the column of
	// the LID being walked.
	hopCols []uint32
	hop     []uint32
	rowBuf  [rowGroup * chunkLIDs]uint8 // rowGroup rows' entries for the chunk
	// flowCols holds, LID-major like hopCols, what plainLID leaves for flush
	// to add to the switch's out-channel (see flowCarry); zero: nothing.
	flowCols []uint32
	// Per chunk LID: the VL bit its traffic holds and where its one-VL
	// dependencies go (packed into chans[].succ, or a bitset, or nowhere:
	// VL15), set by plainLID for flush.
	lidVL  []uint64 // as in chanAcc.v
	lidDep [][]uint64
	lidPkd []bool
	dsts   []int32 // per chunk LID: its owner
	// flowAcc: per switch, plainLID's CA sources crossing it and whether
	// any traffic does.
	flowAcc []uint32
	code    []uint8
	at      []int32
	depth   []uint16
	order   []int32
	visit   []int32 // the order arrived visits the switches in: the last complete order
	path    []int32
	wCA     []int32
	wSW     []int32
	acc     []int32 // per switch: CA sources whose traffic toward the LID crosses it (at most 49,151)
	active  []bool
	slOvSw  []bool // switch holds a source with an SL override for this LID

	caPairs, swPairs, caLID, swLID PairStats
	loopLIDs                       int
	bad                            int64
	hops                           []int64
	// chans holds per channel the CA pairs crossing it (its load, low
	// loadBits bits of v) and, for switch out-channels, the VLs its
	// traffic holds (high 16 bits of v) and, on VL packedVT, the
	// out-ports of the far switch it continues on (succ, when every
	// switch has at most 63 ports): plainLID updates all three in one
	// cache line per (LID, switch) where three tables took three.
	chans      []chanAcc
	packedVT   int8    // the VL whose dependencies chans[].succ holds; -1 none yet
	arrByClass []int32 // nsw*nc: CA-destination LIDs of a class arriving from a switch
	// arrAll[c]: CA-destination LIDs of class c that every switch reaches
	// (plainLID), to add to arrByClass of every switch with CAs.
	arrAll     []int32
	allArrived bool // the last walk found every switch arriving
	caAdj      map[int32]int64
	selfArr    []bool // per endpoint: own selected LID arrives (shared slot per worker, merged by OR)
	orphanOut  map[int32]int64
	// dep[a][b] is the bitset of (switch, in, out) dependencies from the
	// in-channel on VL a to the out-channel on VL b, allocated for the VL
	// pairs in use only (one for a single-VL plan).
	dep         [16][16][]uint64
	vlm         []uint16 // per switch: VLs on its out-channel toward the current LID and SL
	anyCA       bool     // the last default-SL walk had a CA source
	epSL        []uint8  // per endpoint: 1+SL of its override toward the current LID, 0 = none
	dlidOvHere  bool     // the current LID's owner has DLID overrides
	lmc         uint8    // the current LID's LMC
	caSLByClass []uint16 // per class: SLs CAs use
	caSLOv      map[int32]uint16
	slsUsed     uint16
}

func newWorker(f *fabric, opt Options) *worker {
	n := f.nsw
	w := &worker{
		f: f, opt: opt,
		st: make([]uint8, n), hopCols: make([]uint32, chunkLIDs*n), flowCols: make([]uint32, chunkLIDs*n),
		lidVL: make([]uint64, chunkLIDs), lidDep: make([][]uint64, chunkLIDs), lidPkd: make([]bool, chunkLIDs), dsts: make([]int32, chunkLIDs),
		flowAcc: make([]uint32, n), code: make([]uint8, n), at: make([]int32, n),
		depth: make([]uint16, n), order: make([]int32, 0, n), visit: make([]int32, n),
		wCA: make([]int32, n), wSW: make([]int32, n), acc: make([]int32, n),
		active: make([]bool, n), slOvSw: make([]bool, n),
		hops:        make([]int64, n+1), // a path crosses each switch once at most
		chans:       make([]chanAcc, f.nChan),
		packedVT:    -1,
		arrByClass:  make([]int32, n*f.nc),
		arrAll:      make([]int32, f.nc),
		caAdj:       map[int32]int64{},
		selfArr:     make([]bool, len(f.eps)),
		orphanOut:   map[int32]int64{},
		vlm:         make([]uint16, n),
		epSL:        make([]uint8, len(f.eps)),
		caSLByClass: make([]uint16, f.nc),
		caSLOv:      map[int32]uint16{},
	}
	for i := range w.visit {
		w.visit[i] = int32(i)
	}
	return w
}

// A hop word says where switch s sends one LID, in four bytes:
// bits 0-15 the next switch + 1 when the entry forwards to a switch over
// an up link (else 0), bits 16-23 the port that switch receives on (else
// the failure code, fNone when the LID arrives here: s owns it or
// delivers it to its owner), bits 24-31 the LFT entry itself.
func hopNext(h uint32) int32 { return int32(h&0xffff) - 1 }
func hopIn(h uint32) uint8   { return uint8(h >> 16) }
func hopOut(h uint32) uint8  { return uint8(h >> 24) }

// A flow word is what a plain LID's traffic does to switch s's
// out-channel: bits 0-15 the CA sources crossing it (at most the CAs,
// each of which holds a LID, so below 49,152), bits 16-23 the next
// switch's out-port when a dependency (channel, next channel) is to be
// recorded (else 0), bit 24 set when any traffic crosses it (its VL).
const flowCarry = 1 << 24

// runChunk analyses lids (at most chunkLIDs, ascending) switch-major
// where it can: hopWords resolves every (switch, LID) entry with the
// switch's links in cache, each LID's tree is then walked over its own
// short column of hop words, and flush adds the plain LIDs' loads and
// dependencies to the channels switch by switch. Walking a LID down all
// switches instead looked up a different switch's links and channel
// records at every step (223,440 switch ports at ft3-56, beyond the
// core's caches).
func (w *worker) runChunk(lids []uint16) *chunkResult {
	w.ran = true
	res := &chunkResult{}
	n := w.f.nsw
	w.hopWords(lids)
	for j, d := range lids {
		w.hop = w.hopCols[j*n : (j+1)*n]
		w.lid(j, d, res)
	}
	w.flush(lids)
	return res
}

// hopWords fills the chunk's hop words, one switch at a time: its LFT row
// holds the chunk's LIDs in one or two cache lines and its ports' hop
// words (fabric.hopTmpl) stay in L1 while they are resolved. The rows are read eight at a time first, so
// the core waits for eight row misses at once (each row is on its own
// page).
func (w *worker) hopWords(lids []uint16) {
	f := w.f
	n, m := f.nsw, len(lids)
	dsts := w.dsts[:m]
	for j, d := range lids {
		dsts[j] = f.r.LIDOwner[d] - 1
	}
	hops := w.hopCols[:m*n]
	buf := &w.rowBuf
	lo, hi := int(lids[0]), int(lids[m-1])+1
	dense := hi-lo == m // the chunk's LIDs are consecutive: copy row slices
	for s0 := 0; s0 < n; s0 += rowGroup {
		g := min(rowGroup, n-s0)
		for i := range g {
			row, b := f.r.LFT[s0+i], buf[i*chunkLIDs:(i+1)*chunkLIDs]
			if dense {
				copy(b, row[lo:hi])
				continue
			}
			for j, d := range lids {
				b[j] = row[d]
			}
		}
		for i := range g {
			s := s0 + i
			pb := int(f.portBase[s])
			np := f.np[s]
			tmpl := f.hopTmpl[pb : pb+int(np)+1]
			deliver := f.deliver[pb : pb+int(np)+1]
			for j, out := range buf[i*chunkLIDs : i*chunkLIDs+m] {
				var h uint32
				switch {
				case out == plan.NoPort:
					h = uint32(fNoRoute) << 16
				case out > np:
					h = uint32(fNoSuchPort) << 16
				default:
					if h = tmpl[out]; h&tmplOwner != 0 {
						h &^= tmplOwner
						if deliver[out] == dsts[j] {
							h = 0 // arrives
						}
					}
				}
				hops[j*n+s] = h | uint32(out)<<24
			}
		}
	}
}

// flush adds what plainLID left in the flow words of the chunk's LIDs to
// the channels, switch by switch, so that a switch's channel records stay
// in cache while its LIDs are added (one LID at a time they were one
// miss per (LID, switch)).
func (w *worker) flush(lids []uint16) {
	f := w.f
	n := f.nsw
	flows, hops := w.flowCols[:len(lids)*n], w.hopCols[:len(lids)*n]
	for s := range n {
		chans := w.chans[f.portBase[s]:f.portBase[s+1]]
		for j := range lids {
			fl := flows[j*n+s]
			if fl == 0 {
				continue
			}
			h := hops[j*n+s]
			cv := &chans[hopOut(h)]
			v := cv.v + uint64(fl&0xffff)
			if fl&flowCarry != 0 {
				v |= w.lidVL[j]
			}
			cv.v = v
			tout := uint8(fl >> 16)
			switch {
			case tout == 0:
			case w.lidPkd[j]:
				cv.succ |= 1 << tout
			default:
				t := hopNext(h)
				i := f.edgeBase[t] + int(hopIn(h))*(int(f.np[t])+1) + int(tout)
				w.lidDep[j][i>>6] |= 1 << (i & 63)
			}
		}
	}
}

// walk computes, for every switch, whether following the LFTs toward d
// arrives at endpoint dst, and the forwarding tree: depth, and order,
// the switches that arrive, each after its next hop (the next hops are
// in the hop words). Where every switch arrives, arrived does it;
// otherwise the switches are walked again in index order, which names
// loops and failures where earlier versions did.
func (w *worker) walk(d uint16, res *chunkResult) {
	if w.allArrived = w.arrived(); w.allArrived {
		return
	}
	f := w.f
	st, code, at, depth, hop := w.st, w.code, w.at, w.depth, w.hop
	clear(st)
	w.order = w.order[:0]
	loopFound := false
	for s0 := int32(0); s0 < int32(f.nsw); s0++ {
		if st[s0] != stUnknown {
			continue
		}
		path := w.path[:0]
		cur := s0
		var rSt, rCode uint8
		var rAt int32
		var rDepth uint16
		for {
			st[cur] = stProgress
			path = append(path, cur)
			h := hop[cur]
			rSt, rCode, rAt, rDepth = stFail, fNone, cur, 0
			ps := hopNext(h)
			if ps < 0 {
				if rCode = hopIn(h); rCode == fNone {
					rSt, rDepth = stArrive, 1
				}
				break
			}
			switch st[ps] {
			case stUnknown:
				cur = ps
				continue
			case stProgress:
				rCode, rAt = fLoop, ps
				if !loopFound {
					loopFound = true
					w.loopLIDs++
					if len(res.loops) < w.opt.Samples {
						res.loops = append(res.loops, Loop{DLID: d, Switch: f.swName(ps), Port: hopOut(hop[ps])})
					}
				}
			case stArrive:
				rSt, rDepth = stArrive, depth[ps]+1
			default:
				rCode, rAt = code[ps], at[ps]
			}
			break
		}
		// A local defect (bad port, port 0, wrong endpoint) is a bad entry
		// whatever the traffic; a missing route only matters if used.
		if rSt == stFail && rAt == cur && rCode != fNoRoute && rCode != fLoop {
			w.bad++
			if len(res.bad) < w.opt.Samples {
				res.bad = append(res.bad, BadEntry{Switch: f.swName(cur), LID: d, Port: hopOut(hop[cur]), Code: failNames[rCode]})
			}
		}
		if rSt == stArrive {
			for i, s := range slices.Backward(path) {
				st[s], depth[s] = stArrive, rDepth+uint16(len(path)-1-i)
				w.order = append(w.order, s)
			}
		} else {
			for _, s := range path {
				st[s], code[s], at[s] = rSt, rCode, rAt
			}
		}
		w.path = path
	}
}

// arrived walks the tree toward the current LID when every switch
// arrives, and reports false, leaving st and order to walk, as soon as
// one does not. It visits the switches in the order the last such tree
// resolved them (the next hop first): neighbouring LIDs' trees are
// alike, so a switch's next hop is mostly resolved already and each
// branch goes the way it went for the switch before. Depth alone is the
// state while it runs (0: not yet, inProgress: on the current path).
func (w *worker) arrived() bool {
	const inProgress = math.MaxUint16
	n := w.f.nsw
	depth, hop := w.depth[:n], w.hop[:n]
	if len(w.order) == n {
		w.visit, w.order = w.order, w.visit
	}
	clear(depth)
	order := w.order[:0]
	for _, s0 := range w.visit {
		if depth[s0] != 0 {
			continue
		}
		if ps := hopNext(hop[s0]); ps >= 0 {
			if dp := depth[ps]; dp != 0 && dp != inProgress {
				depth[s0] = dp + 1
				order = append(order, s0)
				continue
			}
		}
		path := w.path[:0]
		var dd uint16
		for cur := s0; ; {
			depth[cur] = inProgress
			path = append(path, cur)
			h := hop[cur]
			ps := hopNext(h)
			if ps < 0 {
				if hopIn(h) != fNone {
					return false
				}
				dd = 1
				break
			}
			if dd = depth[ps]; dd == 0 {
				cur = ps
				continue
			}
			if dd == inProgress {
				return false // a loop
			}
			dd++
			break
		}
		for i, s := range slices.Backward(path) {
			depth[s] = dd + uint16(len(path)-1-i)
			order = append(order, s)
		}
		w.path = path
	}
	w.order = order
	copy(w.st, w.f.allArrive)
	return true
}

func (w *worker) lid(j int, d uint16, res *chunkResult) {
	f := w.f
	dst := w.dsts[j]
	pl := f.lids.Ports[dst]
	l := pl.LMC
	k := uint8(d - pl.Base)
	c := cls(l, k)
	dstCA := f.isCA[dst]
	w.walk(d, res)
	st := w.st

	flows := w.flowCols[j*f.nsw : (j+1)*f.nsw]
	if w.plain(d, dst) {
		w.plainLID(j, flows, d, dst, l, k, c, dstCA, res)
		return
	}
	clear(flows) // the general path adds to the channels itself
	w.weights(dst, l, k, c, dstCA)

	// Reachability, hops and the CA out-port loads.
	var reached, total, lidReached int64
	if dstCA {
		for s := 0; s < f.nsw; s++ {
			n := int64(w.wCA[s])
			total += n
			if st[s] == stArrive {
				reached += n
				lidReached += int64(f.caCount[s])
				h := int(w.depth[s])
				for h >= len(w.hops) {
					w.hops = append(w.hops, 0)
				}
				w.hops[h] += n
				if f.caCount[s] > 0 {
					w.arrByClass[s*f.nc+c]++
				}
			}
		}
		if ds := f.epSw[dst]; ds >= 0 && st[ds] == stArrive {
			lidReached-- // the destination itself
		}
		ot, or, ol := w.orphanPairs(dst, k)
		total, reached, lidReached = total+ot, reached+or, lidReached+ol
	} else {
		for s := 0; s < f.nsw; s++ {
			n := int64(w.wSW[s])
			total += n
			if st[s] == stArrive {
				reached += n
				lidReached++
			}
		}
		if ds := f.epSw[dst]; st[ds] == stArrive {
			lidReached--
		}
	}
	w.countPairs(dstCA, reached, total, lidReached)
	if reached < total {
		w.sampleUnreachable(d, dst, k, dstCA, res)
	}

	// Channel load: CA sources accumulated along the tree, leaves first
	// (reverse resolution order visits a switch before its next hop).
	order := w.order
	if dstCA {
		for s := 0; s < f.nsw; s++ {
			w.acc[s] = 0
			if st[s] == stArrive {
				w.acc[s] = w.wCA[s]
			}
		}
		for i := len(order) - 1; i >= 0; i-- {
			s := order[i]
			if t := hopNext(w.hop[s]); st[s] == stArrive && t >= 0 {
				w.acc[t] += w.acc[s]
			}
		}
		for s := 0; s < f.nsw; s++ {
			if st[s] == stArrive && w.acc[s] > 0 {
				if out := hopOut(w.hop[s]); out != 0 {
					w.chans[int(f.portBase[s])+int(out)].v += uint64(w.acc[s])
				}
			}
		}
	}

	// Channel dependencies over (channel, VL) pairs: the tree toward d is
	// walked once per distinct SL its sources use (d's default SL, then
	// each other SL its per-source overrides name), so the cost stays
	// O(switches) per SL and per destination.
	def := f.sl(d)
	ovs := f.slOvs[d]
	var other uint16
	w.dlidOvHere, w.lmc = len(f.dlidOvs[dst]) > 0, l
	for _, o := range ovs {
		if s := f.epSw[o.src]; s >= 0 {
			w.slOvSw[s] = true
		}
		w.epSL[o.src] = o.sl + 1
		if o.sl != def {
			other |= 1 << o.sl
		}
	}
	if w.depWalk(d, dst, k, def, nil) {
		w.slsUsed |= 1 << def
	}
	if w.anyCA {
		w.caSLByClass[c] |= 1 << def
		if w.opt.AllLIDs {
			for _, ll := range f.lmcs {
				for kk := 0; kk < 1<<ll; kk++ {
					w.caSLByClass[cls(ll, uint8(kk))] |= 1 << def
				}
			}
		}
	}
	for m := other; m != 0; m &= m - 1 {
		x := uint8(bits.TrailingZeros16(m))
		if w.depWalk(d, dst, k, x, ovs) {
			w.slsUsed |= 1 << x
		}
	}
	for _, o := range ovs {
		if s := f.epSw[o.src]; s >= 0 {
			w.slOvSw[s] = false
		}
		w.epSL[o.src] = 0
	}
}

// plain reports whether LID d (owned by dst) takes plainLID: every
// source uses d's default SL, every switch maps it to one VL (a single
// SL2VL table), no DLID override names dst and only the selected LIDs
// count. Single-VL plans from destination-based engines are plain for
// every LID.
func (w *worker) plain(d uint16, dst int32) bool {
	f := w.f
	return !w.opt.general && !w.opt.AllLIDs && f.tabIdx == nil && len(f.slOvs[d]) == 0 && len(f.dlidOvs[dst]) == 0
}

// plainLID does for a plain LID, in one pass over the tree computed by
// walk (leaves first), what lid's general path does in several: the
// pairs reached and their hops, the channel loads, and the channel
// dependencies, which sit on a single VL. The sources at a switch are
// the counts of the CA class and of the switch's own port 0; their
// totals over all switches are precomputed (fabric.classTotal). What
// crosses each out-channel goes to the LID's flow words (flows), which
// flush adds to the channels with the rest of the chunk.
func (w *worker) plainLID(j int, flows []uint32, d uint16, dst int32, l, k uint8, c int, dstCA bool, res *chunkResult) {
	f := w.f
	n := f.nsw
	st, hop, depth, acc := w.st, w.hop, w.depth[:n], w.flowAcc[:n]
	clear(acc)
	clear(flows)
	ds := f.epSw[dst]
	selfSel := f.offset(dst, l) == k
	x := f.sl(d)
	vt := f.tables[0][x&15] & 15
	vbit := uint16(1) << vt
	var dep []uint64
	packed := false
	if vt != 15 {
		if f.narrow && (w.packedVT < 0 || w.packedVT == int8(vt)) {
			w.packedVT, packed = int8(vt), true
		} else if dep = w.dep[vt][vt]; dep == nil {
			dep = make([]uint64, (f.nEdges+63)/64)
			w.dep[vt][vt] = dep
		}
	}
	w.lidVL[j], w.lidDep[j], w.lidPkd[j] = uint64(vbit)<<loadBits, dep, packed
	deps := dep != nil || packed // VL15 drops the traffic: no dependencies
	// acc holds per switch the CA sources whose traffic crosses it, and
	// the accCarry bit when any (CA or switch) traffic reaches it over a
	// dependency.
	const accCarry = 1 << 31
	srcs, hops, arr, nc := f.srcs[c*n:(c+1)*n], w.hops[:n+1], w.arrByClass, f.nc
	var reached, lidReached int64
	// When every switch arrives, the sums over them are the fabric's.
	count := !w.allArrived
	if !count {
		if dstCA {
			reached, lidReached = f.classTotal[c], int64(f.caStart[n])
			w.arrAll[c]++
		} else {
			reached, lidReached = f.swClassTotal[c], int64(n)
		}
		if ds >= 0 && selfSel {
			reached-- // the destination itself
		}
	}
	var anyCA, anySrc uint32
	for _, s := range slices.Backward(w.order) {
		src := srcs[s]
		nca, self := src&srcCAs, src&srcSelf
		if s == ds && selfSel {
			if dstCA {
				nca--
			} else {
				self = 0
			}
		}
		if dstCA {
			hops[depth[s]] += int64(nca)
		}
		switch {
		case !count:
		case dstCA:
			cas := src >> srcCountShift
			reached += int64(nca)
			lidReached += int64(cas)
			arr[int(s)*nc+c] += int32((cas + srcCAs) >> 8) // 1 where s has CAs: no branch to mispredict
		default:
			lidReached++
			if self != 0 {
				reached++
			}
		}
		h := hop[s]
		if hopOut(h) == 0 {
			continue // s owns d
		}
		anyCA |= nca
		anySrc |= nca | self
		ac := acc[s]
		a := ac &^ accCarry
		if dstCA {
			a += nca
		}
		carry := ac&accCarry != 0 || nca|self != 0
		fl := a
		if carry {
			fl |= flowCarry
		}
		if t := hopNext(h); t >= 0 {
			acc[t] += a
			if carry && deps {
				acc[t] |= accCarry
				fl |= uint32(hopOut(hop[t])) << 16
			}
		}
		flows[s] = fl
	}
	found := anySrc != 0
	if found {
		w.slsUsed |= 1 << x
	}
	if anyCA != 0 {
		w.caSLByClass[c] |= 1 << x
	}
	arrives := ds >= 0 && st[ds] == stArrive
	var total int64
	if dstCA {
		total = f.classTotal[c]
		if ds >= 0 && selfSel {
			total--
			if arrives {
				w.selfArr[dst] = true
			}
		}
		if arrives {
			lidReached-- // the destination itself
		}
		ot, or, ol := w.orphanPairs(dst, k)
		total, reached, lidReached = total+ot, reached+or, lidReached+ol
	} else {
		total = f.swClassTotal[c]
		if selfSel {
			total--
		}
		if arrives {
			lidReached--
		}
	}
	w.countPairs(dstCA, reached, total, lidReached)
	if reached < total {
		w.weights(dst, l, k, c, dstCA)
		w.sampleUnreachable(d, dst, k, dstCA, res)
	}
}

// countPairs adds one LID's (source, DLID) pairs, reached and in total,
// and its (source, LID) pairs reached, to the worker's counts.
func (w *worker) countPairs(dstCA bool, reached, total, lidReached int64) {
	if dstCA {
		w.caPairs.Reachable += reached
		w.caPairs.Total += total
		w.caLID.Reachable += lidReached
		w.caLID.Total += int64(w.f.nCA - 1)
		return
	}
	w.swPairs.Reachable += reached
	w.swPairs.Total += total
	w.swLID.Reachable += lidReached
	w.swLID.Total += int64(w.f.nsw - 1)
}

// weights fills wCA and wSW, the sources at each switch that select LID
// offset k (class c) of dst: CAs by class, switches by their port-0
// endpoint, then DLID overrides, minus the destination itself. It also
// counts what overrides and the destination's own choice change in the
// CA out-port loads.
func (w *worker) weights(dst int32, l, k uint8, c int, dstCA bool) {
	f, st := w.f, w.st
	for s := 0; s < f.nsw; s++ {
		w.wCA[s] = f.caClass[s*f.nc+c]
		w.wSW[s] = 0
		if f.offset(f.swEp[s], l) == k {
			w.wSW[s] = 1
		}
	}
	for _, o := range f.dlidOvs[dst] {
		s := f.epSw[o.src]
		if s < 0 {
			continue
		}
		delta := int32(0)
		if f.offset(o.src, l) == k {
			delta--
		}
		if o.off == k {
			delta++
		}
		if f.isCA[o.src] {
			w.wCA[s] += delta
		} else {
			w.wSW[s] += delta
		}
		if dstCA && f.isCA[o.src] && delta != 0 && st[s] == stArrive {
			w.caAdj[o.src] += int64(delta)
		}
	}
	selfSel := f.selected(dst, dst) == k
	if ds := f.epSw[dst]; ds >= 0 && selfSel {
		if dstCA {
			w.wCA[ds]--
			if st[ds] == stArrive {
				w.selfArr[dst] = true
			}
		} else {
			w.wSW[ds] = 0
		}
	}
}

// orphanPairs counts the pairs toward CA dst (offset k) whose source is a
// CA without an up link to a switch: all of them in total, and as reached
// those cabled straight to dst (and their loads).
func (w *worker) orphanPairs(dst int32, k uint8) (total, reached, lidReached int64) {
	f := w.f
	for _, o := range f.orphans {
		if o == dst {
			continue
		}
		if f.selected(o, dst) == k {
			total++
		}
		if p := f.topo.Port(f.eps[o]).Peer; f.topo.EndpointIndex(p) == dst && f.topo.IsLinkUp(f.eps[o]) {
			lidReached++
			if f.selected(o, dst) == k {
				reached++
				w.hops[0]++
				w.orphanOut[o]++
			}
		}
	}
	return total, reached, lidReached
}

// sends reports whether endpoint e sends toward LID d (offset k of dst's
// range): every source does under AllLIDs, else the one selecting k.
func (w *worker) sends(e, dst int32, k uint8) bool {
	switch {
	case e == dst:
		return false
	case w.opt.AllLIDs:
		return true
	case !w.dlidOvHere:
		return w.f.offset(e, w.lmc) == k
	}
	return w.f.selected(e, dst) == k
}

// depWalk follows the tree toward d (computed by walk) for the sources
// that send to d on SL x: those of d's default SL when ovs is nil, else
// the overriding sources with SL x. Every switch's out-channel collects
// the VLs the traffic holds on it (one per in-port it arrives on, each by
// the SL2VL table of (switch, in, out)); a dependency joins (channel, VL)
// to (next channel, its VL). It reports whether any source was found
// and sets w.anyCA when a CA source with the default SL arrives.
func (w *worker) depWalk(d uint16, dst int32, k uint8, x uint8, ovs []slOv) bool {
	f := w.f
	st, m := w.st, w.vlm
	clear(m)
	found := false
	w.anyCA = false
	if ovs == nil {
		for s := int32(0); s < int32(f.nsw); s++ {
			if st[s] != stArrive {
				continue
			}
			out := hopOut(w.hop[s])
			if w.slOvSw[s] {
				m[s] = w.originMixed(s, out, d, dst, k, x)
			} else {
				m[s] = w.originDefault(s, out, dst, k, x)
			}
			if m[s] != 0 {
				found = true
			}
		}
	} else {
		for _, o := range ovs {
			s := f.epSw[o.src]
			if o.sl != x || s < 0 || st[s] != stArrive || !w.sends(o.src, dst, k) {
				continue
			}
			found = true
			out := hopOut(w.hop[s])
			if f.isCA[o.src] {
				w.caSLOv[o.src] |= 1 << x
				if out != 0 {
					m[s] |= 1 << (f.vl(s, f.epIn[o.src], out, x) & 15)
				}
			} else if out != 0 {
				m[s] |= 1 << (f.vl(s, 0, out, x) & 15)
			}
		}
	}
	if !found {
		return false
	}
	// Leaves first: reverse resolution order visits every switch before
	// its next hop, so m[s] is complete when s is reached.
	order, hop := w.order, w.hop
	for i := len(order) - 1; i >= 0; i-- {
		s := order[i]
		ms := m[s]
		if ms == 0 {
			continue
		}
		pb := int(f.portBase[s])
		h := hop[s]
		out := hopOut(h)
		w.chans[pb+int(out)].v |= uint64(ms) << loadBits
		ms &^= 1 << 15 // VL15 drops the packet here: no dependency beyond
		t := hopNext(h)
		if t < 0 || ms == 0 {
			continue
		}
		tout := hopOut(hop[t])
		if tout == 0 {
			continue // t owns d
		}
		in := hopIn(h)
		vt := f.vl(t, in, tout, x) & 15
		m[t] |= 1 << vt
		if vt == 15 {
			continue
		}
		i := f.edgeBase[t] + int(in)*(int(f.np[t])+1) + int(tout)
		for ; ms != 0; ms &= ms - 1 {
			w.setDep(uint8(bits.TrailingZeros16(ms)), vt, i)
		}
	}
	return true
}

// originDefault is the VL mask that sources at switch s put on its
// out-channel toward d with d's default SL x, when no source at s has an
// SL override toward d: the counts of the LID walk say who sends.
func (w *worker) originDefault(s int32, out uint8, dst int32, k uint8, x uint8) uint16 {
	f := w.f
	if out == 0 {
		return 0 // s owns d
	}
	var m uint16
	self, nca := w.wSW[s] > 0, int(w.wCA[s])
	if w.opt.AllLIDs {
		self = f.swEp[s] != dst
		nca = int(f.caCount[s])
		if f.epSw[dst] == s && f.isCA[dst] {
			nca--
		}
	}
	if self {
		m |= 1 << (f.vl(s, 0, out, x) & 15)
	}
	if nca <= 0 {
		return m
	}
	w.anyCA = true
	all := int(f.caCount[s])
	if f.epSw[dst] == s && f.isCA[dst] {
		all--
	}
	switch {
	case f.tabIdx == nil:
		m |= 1 << (f.tables[0][x] & 15)
	case nca == all:
		m |= f.caVLs[(int(f.portBase[s])+int(out))*16+int(x)]
	default:
		// Only some CAs of s send to d (LMC, DLID overrides) and
		// their in-ports may map x differently: ask each sender.
		for _, e := range f.caList[f.caStart[s]:f.caStart[s+1]] {
			if w.sends(e, dst, k) {
				m |= 1 << (f.vl(s, f.epIn[e], out, x) & 15)
			}
		}
	}
	return m
}

// originMixed is originDefault for a switch where some sources override
// d's default SL x: every source there is asked for its own SL.
func (w *worker) originMixed(s int32, out uint8, d uint16, dst int32, k uint8, x uint8) uint16 {
	f := w.f
	if out == 0 {
		return 0
	}
	var m uint16
	if e := f.swEp[s]; w.sends(e, dst, k) && w.slOf(e, x) == x {
		m |= 1 << (f.vl(s, 0, out, x) & 15)
	}
	for _, e := range f.caList[f.caStart[s]:f.caStart[s+1]] {
		if w.sends(e, dst, k) && w.slOf(e, x) == x {
			m |= 1 << (f.vl(s, f.epIn[e], out, x) & 15)
			w.anyCA = true
		}
	}
	return m
}

// slOf is the SL src uses toward the current LID: its override (marked
// in epSL for the LID's overriding sources), else def.
func (w *worker) slOf(src int32, def uint8) uint8 {
	if sl := w.epSL[src]; sl > 0 {
		return sl - 1
	}
	return def
}

// setDep records the dependency of edge i = (switch, in, out) from the
// in-channel on VL from to the out-channel on VL to.
func (w *worker) setDep(from, to uint8, i int) {
	bs := w.dep[from][to]
	if bs == nil {
		bs = make([]uint64, (w.f.nEdges+63)/64)
		w.dep[from][to] = bs
	}
	bs[i>>6] |= 1 << (i & 63)
}

func (w *worker) sampleUnreachable(d uint16, dst int32, k uint8, dstCA bool, res *chunkResult) {
	f := w.f
	if len(res.unreach) >= w.opt.Samples {
		return
	}
	add := func(src int32, code uint8, at int32) {
		u := Unreachable{Src: f.epName(src), Dst: f.epName(dst), DLID: d, Code: failNames[code]}
		var where string
		switch code {
		case fSourceLink:
			where = f.epName(src)
			u.Message = fmt.Sprintf("%s -> %s DLID %d: source has no up link to a switch", u.Src, u.Dst, d)
		case fLoop:
			where = fmt.Sprintf("%s port %d", f.swName(at), f.r.LFT[at][d])
			u.Message = fmt.Sprintf("%s -> %s: loop at switch %s for DLID %d", u.Src, u.Dst, where, d)
		case fNoRoute:
			where = f.swName(at)
			u.Message = fmt.Sprintf("%s -> %s: switch %s has no route (LFT 0xFF) for DLID %d", u.Src, u.Dst, where, d)
		case fNoSuchPort:
			where = fmt.Sprintf("%s port %d", f.swName(at), f.r.LFT[at][d])
			u.Message = fmt.Sprintf("%s -> %s: switch %s does not exist (%d ports) for DLID %d", u.Src, u.Dst, where, f.np[at], d)
		case fUnconnected:
			where = fmt.Sprintf("%s port %d", f.swName(at), f.r.LFT[at][d])
			u.Message = fmt.Sprintf("%s -> %s: switch %s is not cabled, for DLID %d", u.Src, u.Dst, where, d)
		case fDown:
			where = fmt.Sprintf("%s port %d", f.swName(at), f.r.LFT[at][d])
			u.Message = fmt.Sprintf("%s -> %s: switch %s link is down, for DLID %d", u.Src, u.Dst, where, d)
		case fPort0:
			where = fmt.Sprintf("%s port 0", f.swName(at))
			u.Message = fmt.Sprintf("%s -> %s: switch %s consumes DLID %d it does not own", u.Src, u.Dst, where, d)
		default:
			out := f.r.LFT[at][d]
			where = fmt.Sprintf("%s port %d", f.swName(at), out)
			u.Message = fmt.Sprintf("%s -> %s: switch %s delivers DLID %d to %s, not the destination", u.Src, u.Dst, where, d, f.epName(f.peerEp[int(f.portBase[at])+int(out)]))
		}
		u.Where = where
		res.unreach = append(res.unreach, u)
	}
	for s := int32(0); s < int32(f.nsw) && len(res.unreach) < w.opt.Samples; s++ {
		if w.st[s] != stFail {
			continue
		}
		if dstCA {
			if w.wCA[s] <= 0 {
				continue
			}
			for _, e := range f.caList[f.caStart[s]:f.caStart[s+1]] {
				if e != dst && f.selected(e, dst) == k {
					add(e, w.code[s], w.at[s])
					break
				}
			}
		} else if w.wSW[s] > 0 {
			add(f.swEp[s], w.code[s], w.at[s])
		}
	}
	if dstCA {
		for _, o := range f.orphans {
			if len(res.unreach) >= w.opt.Samples {
				break
			}
			if o != dst && f.selected(o, dst) == k && f.topo.EndpointIndex(f.topo.Port(f.eps[o]).Peer) != dst {
				add(o, fSourceLink, -1)
			}
		}
	}
}

// merge combines the workers' accumulators and the chunk results in LID
// order and finishes the report.
func (f *fabric) merge(ws []*worker, results []*chunkResult, opt Options) (*Report, error) {
	rep := &Report{
		Switches: f.nsw, CAs: f.nCA, Endpoints: len(f.eps),
		LIDsUsed: len(f.lidList), TopLID: f.r.TopLID, AllLIDs: opt.AllLIDs,
	}
	for _, p := range f.lids.Ports {
		rep.MaxLMC = max(rep.MaxLMC, p.LMC)
	}
	for _, c := range results {
		if c == nil {
			continue
		}
		rep.Unreachable = appendCap(rep.Unreachable, c.unreach, opt.Samples)
		rep.Loops = appendCap(rep.Loops, c.loops, opt.Samples)
		rep.BadSamples = appendCap(rep.BadSamples, c.bad, opt.Samples)
	}
	load := make([]int64, f.nChan)
	var dep [16][16][]uint64
	var packed [16][]uint64 // per VL: dependencies as chans[].succ keeps them
	chanVL := make([]uint16, f.nChan)
	caSLByClass := make([]uint16, f.nc)
	arr := make([]int64, f.nsw*f.nc)
	selfArr := make([]bool, len(f.eps))
	caAdj := map[int32]int64{}
	caSLOv := map[int32]uint16{}
	var slsUsed uint16
	for _, w := range ws {
		add := func(a *PairStats, b PairStats) { a.Reachable += b.Reachable; a.Total += b.Total }
		add(&rep.CAPairs, w.caPairs)
		add(&rep.SwitchPairs, w.swPairs)
		add(&rep.CALIDPairs, w.caLID)
		add(&rep.SwitchLIDPairs, w.swLID)
		rep.LoopLIDs += w.loopLIDs
		rep.BadEntries += w.bad
		for h, n := range w.hops {
			for h >= len(rep.Hops) {
				rep.Hops = append(rep.Hops, 0)
			}
			rep.Hops[h] += n
		}
		if w.ran {
			for i, v := range w.chans {
				load[i] += int64(v.v & loadMask)
				chanVL[i] |= uint16(v.v >> loadBits)
			}
		}
		if vt := w.packedVT; vt >= 0 {
			if packed[vt] == nil {
				packed[vt] = make([]uint64, f.nSwPorts)
			}
			ps := packed[vt]
			if w.ran {
				for ch := range ps {
					ps[ch] |= w.chans[ch].succ
				}
			}
			if w.leanSucc != nil {
				for ch, m := range w.leanSucc {
					ps[ch] |= m
				}
				for sw, used := range w.leanUsed {
					pb := int(f.portBase[sw])
					for used &^= 1; used != 0; used &= used - 1 {
						chanVL[pb+bits.TrailingZeros64(used)] |= 1 << vt
					}
				}
			}
		}
		for a := range w.dep {
			for b, bs := range w.dep[a] {
				if bs == nil {
					continue
				}
				if dep[a][b] == nil {
					dep[a][b] = bs // owned by the finished worker
					continue
				}
				for i, x := range bs {
					dep[a][b][i] |= x
				}
			}
		}
		for i, v := range w.caSLByClass {
			caSLByClass[i] |= v
		}
		for i, v := range w.arrByClass {
			arr[i] += int64(v)
		}
		for s := range f.nsw {
			if f.caCount[s] > 0 {
				for c, v := range w.arrAll {
					arr[s*f.nc+c] += int64(v)
				}
			}
		}
		for i, v := range w.selfArr {
			selfArr[i] = selfArr[i] || v
		}
		for e, v := range w.caAdj {
			caAdj[e] += v
		}
		for e, v := range w.orphanOut {
			caAdj[e] += v
		}
		for e, v := range w.caSLOv {
			caSLOv[e] |= v
		}
		slsUsed |= w.slsUsed
	}
	for len(rep.Hops) > 1 && rep.Hops[len(rep.Hops)-1] == 0 {
		rep.Hops = rep.Hops[:len(rep.Hops)-1]
	}
	var pairs, sum int64
	for h, n := range rep.Hops {
		if n > 0 {
			rep.MaxHops = h
		}
		pairs += n
		sum += int64(h) * n
	}
	if pairs > 0 {
		rep.AvgHops = float64(sum) / float64(pairs)
	}

	// CA out-port loads: the destinations each CA reaches with the DLID it
	// selects, and the SLs it sends with.
	caSL := make([]uint16, len(f.eps))
	for e := range f.eps {
		if !f.isCA[e] {
			continue
		}
		v := caAdj[int32(e)]
		var m uint16
		if s := f.epSw[e]; s >= 0 {
			for _, l := range f.lmcs {
				c := cls(l, f.offset(int32(e), l))
				v += arr[int(s)*f.nc+c]
				m |= caSLByClass[c]
			}
			if selfArr[e] {
				v--
			}
		}
		load[f.caChan[e]] += v
		caSL[e] = m | caSLOv[int32(e)]
	}
	n1 := float64(f.nCA - 1)
	rep.Load.CAs = f.nCA
	maxC, maxSW := -1, -1
	for c, v := range load {
		if maxC < 0 || v > load[maxC] {
			maxC = c
		}
		if c < f.nSwPorts && f.link[c].sw() >= 0 && (maxSW < 0 || v > load[maxSW]) {
			maxSW = c
		}
	}
	if maxC >= 0 && load[maxC] > 0 {
		rep.Load.Max = load[maxC]
		rep.Load.MaxChannel = f.chanName(maxC)
	}
	if maxSW >= 0 && load[maxSW] > 0 {
		rep.Load.MaxSwitchLink = load[maxSW]
		rep.Load.MaxSwitchLinkChannel = f.chanName(maxSW)
	}
	if n1 > 0 {
		rep.Load.MaxNormalized = float64(rep.Load.Max) / n1
		rep.Load.MaxSwitchLinkNormalized = float64(rep.Load.MaxSwitchLink) / n1
	}

	for e, m := range caSL {
		for ; m != 0; m &= m - 1 {
			sl := uint8(bits.TrailingZeros16(m))
			chanVL[f.caChan[e]] |= 1 << (f.caVL(int32(e), sl) & 15)
		}
	}
	f.checkVLCaps(rep, chanVL, slsUsed, opt)
	if vt, ok := onePacked(dep, &packed); ok && f.acyclicPacked(rep, vt, packed[vt], chanVL) {
		return rep, nil
	}
	for vt, ps := range packed {
		if ps != nil {
			for ch := range ps {
				ps[ch] &^= 1 // leanChunk's "the next switch owns the LID"
			}
			f.unpackDeps(ps, &dep[vt][vt])
		}
	}
	f.finishVLs(rep, dep, chanVL)
	return rep, nil
}

func appendCap[T any](dst, src []T, n int) []T {
	for _, x := range src {
		if len(dst) >= n {
			break
		}
		dst = append(dst, x)
	}
	return dst
}

func maskList(m uint32) []int {
	out := []int{}
	for m != 0 {
		b := bits.TrailingZeros32(m)
		out = append(out, b)
		m &^= 1 << b
	}
	return out
}
