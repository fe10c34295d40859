package transport

import (
	"context"
	"sync"
	"time"
)

// window bounds the requests in flight and adapts the bound, as TCP's
// congestion window does: it halves on a timeout and opens again by about
// one request per window's worth of answers, up to the ceiling the
// configuration sets (where it starts). The same bound is kept per
// destination, so requests to one slow or dead switch hold at most that
// destination's window (down to windowFloor) and do not stall the rest. Switches
// forward SMPs without flow control, so a timeout is the only congestion
// signal a fabric gives.
//
// Only a timeout from a second destination since the last cut shrinks the
// overall window: one dead switch times out forever and must not throttle
// the healthy ones.
type window struct {
	ceiling int

	mu       sync.Mutex
	all      aimd
	inflight int
	dests    map[destKey]*dest
	// waiters[whead:] wait, oldest first; nil marks one granted or given
	// up out of turn. A queue rather than a list spliced on every grant:
	// a sweep keeps hundreds waiting on a window of 16, and put runs once
	// per MAD.
	waiters []*waiter
	whead   int
	// since the last overall cut: which destinations timed out
	cutAt    time.Time
	timedOut map[destKey]bool
}

// aimd is one adaptive bound.
type aimd struct{ cur float64 }

func (a *aimd) limit() int { return max(1, int(a.cur)) }

func (a *aimd) grow(ceiling int) { a.cur = min(a.cur+1/a.cur, float64(ceiling)) }

func (a *aimd) cut(floor float64) { a.cur = max(floor, a.cur/2) }

type dest struct {
	w        aimd
	inflight int
	// downUntil: a request to it went unanswered on every attempt; until
	// then further requests get one attempt, not retries (a dead switch
	// with 100 blocks to write would hold the sweep for 100 × the retries'
	// time over its small window); they are still sent, so a switch that
	// came back answers them.
	downUntil time.Time
	// lateness counts answers that came after their attempt's timer ran
	// out (+1 each), fading by a tenth with every answer on a first try;
	// from slowLateness on, until slowUntil, its retries back off
	// (backedOff). One late answer among many prompt ones is a lost MAD's
	// luck, not a slow switch.
	lateness  float64
	slowUntil time.Time
}

// slowLateness is the lateness from which a destination counts as slow.
const slowLateness = 2

// slowMemory is how long a late answer makes a destination's retries back
// off: a few sweeps, so a switch that is slow during a large write is
// still treated so on the next sweep.
const slowMemory = time.Minute

type waiter struct {
	key   destKey
	ready chan struct{}
	ok    bool // granted (under window.mu)
	down  bool // set with ok: see downLocked
}

// destKey names where a request goes: the directed route's initial path,
// or the LID. Comparable, so keying the map allocates nothing per MAD. A
// response names the same destination: a directed-route SMP keeps its
// initial path, a LID-routed one comes from the LID it went to.
type destKey struct {
	lid  uint16
	hops uint8
	path [drInitPathSz]byte
}

func destOf(req Packet) destKey {
	m := req.MAD
	if len(m) > drHopCount && m[1] == classSMPDR && len(m) >= drInitPath+drInitPathSz {
		k := destKey{hops: m[drHopCount]}
		n := min(int(k.hops)+1, drInitPathSz)
		copy(k.path[:n], m[drInitPath:drInitPath+n])
		return k
	}
	if len(m) > 3 && m[3]&0x80 != 0 {
		return destKey{lid: req.SLID}
	}
	return destKey{lid: req.DLID}
}

func newWindow(ceiling int) *window {
	return &window{ceiling: ceiling, all: aimd{float64(ceiling)}, dests: map[destKey]*dest{}, timedOut: map[destKey]bool{}}
}

func (w *window) dest(key destKey) *dest {
	d := w.dests[key]
	if d == nil {
		d = &dest{w: aimd{float64(w.ceiling)}}
		w.dests[key] = d
	}
	return d
}

// acquire waits for room for one request to key and reports whether key
// is down (see downLocked), in the same hold of the lock.
func (w *window) acquire(ctx context.Context, done <-chan struct{}, key destKey) (down bool, err error) {
	w.mu.Lock()
	if down, ok := w.grabLocked(key); ok {
		w.mu.Unlock()
		return down, nil
	}
	wt := &waiter{key: key, ready: make(chan struct{})}
	w.enqueue(wt)
	w.mu.Unlock()
	select {
	case <-wt.ready:
		return wt.down, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-done:
		err = ErrClosed
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt.ok { // granted while we gave up: hand the slot on
		w.put(key)
		return false, err
	}
	for i := w.whead; i < len(w.waiters); i++ {
		if w.waiters[i] == wt {
			w.waiters[i] = nil
			break
		}
	}
	w.trim()
	return false, err
}

func (w *window) enqueue(wt *waiter) {
	if len(w.waiters) == cap(w.waiters) {
		// Drop the holes before growing: behind a stuck head (a dead
		// switch's requests wait out their timeouts) grants leave them.
		kept := w.waiters[:0]
		for _, x := range w.waiters[w.whead:] {
			if x != nil {
				kept = append(kept, x)
			}
		}
		clear(w.waiters[len(kept):])
		w.waiters, w.whead = kept, 0
	}
	w.waiters = append(w.waiters, wt)
}

// trim moves the head past waiters that are gone.
func (w *window) trim() {
	for w.whead < len(w.waiters) && w.waiters[w.whead] == nil {
		w.whead++
	}
	if w.whead == len(w.waiters) {
		w.waiters, w.whead = w.waiters[:0], 0
	}
}

// tryAcquire takes a slot for one request to key if there is room now
// (see acquire), without waiting.
func (w *window) tryAcquire(key destKey) (down, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.grabLocked(key)
}

// grabLocked takes a slot for key if there is room. Waiters are never
// grantable at rest (put grants them eagerly, and only put and grow open
// room), so room now is room ahead of nobody. One map lookup: this runs
// once per MAD.
func (w *window) grabLocked(key destKey) (down, ok bool) {
	if w.inflight >= w.all.limit() {
		return false, false
	}
	d := w.dests[key]
	if d != nil && d.inflight >= d.w.limit() {
		return false, false
	}
	if d == nil {
		d = &dest{w: aimd{float64(w.ceiling)}}
		w.dests[key] = d
	}
	w.inflight++
	d.inflight++
	return d.down(), true
}

func (w *window) room(key destKey) bool {
	if w.inflight >= w.all.limit() {
		return false
	}
	d := w.dests[key]
	return d == nil || d.inflight < d.w.limit()
}

func (w *window) take(key destKey) {
	w.inflight++
	w.dest(key).inflight++
}

// put frees a slot of key and grants waiters, oldest first, skipping those
// whose destination is full.
func (w *window) put(key destKey) {
	w.putDest(key, w.dests[key])
}

// putDest is put with key's dest (nil: none) already looked up.
func (w *window) putDest(key destKey, d *dest) {
	w.inflight--
	if d != nil {
		d.inflight--
		if d.inflight == 0 && d.w.cur >= float64(w.ceiling) && d.forgettable() {
			delete(w.dests, key) // at the ceiling: nothing to remember
		}
	}
	// Once the overall window is full nobody further back can be granted.
	for i := w.whead; i < len(w.waiters) && w.inflight < w.all.limit(); i++ {
		wt := w.waiters[i]
		if wt == nil || !w.room(wt.key) {
			continue
		}
		w.take(wt.key)
		wt.ok, wt.down = true, w.downLocked(wt.key)
		close(wt.ready)
		w.waiters[i] = nil
	}
	w.trim()
}

// forgettable reports whether d holds nothing a fresh dest would not: it
// is neither down nor slow now. The clock is read only when it might be.
func (d *dest) forgettable() bool {
	if d.downUntil.IsZero() && d.slowUntil.IsZero() {
		return true
	}
	now := time.Now()
	return now.After(d.downUntil) && now.After(d.slowUntil)
}

// release ends a request to key: answered on its first attempt (the
// windows open), answered later, or not.
func (w *window) release(key destKey, answered, firstTry bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.dests[key]
	if answered && d != nil {
		d.downUntil = time.Time{} // aliveLocked
	}
	if firstTry {
		w.all.grow(w.ceiling)
		if d != nil {
			d.w.grow(w.ceiling)
			d.lateness *= 0.9
		}
	}
	w.putDest(key, d)
}

// timeout records that an attempt to key sent at sent went unanswered.
func (w *window) timeout(key destKey, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.dests[key]; d != nil {
		d.w.cut(w.floor())
	}
	if sent.Before(w.cutAt) {
		return // sent before the last cut took effect: the same congestion
	}
	w.timedOut[key] = true
	if len(w.timedOut) >= 2 {
		w.all.cut(w.floor())
		w.cutAt = time.Now()
		clear(w.timedOut)
	}
}

// failed records that a request to key went unanswered on every attempt:
// the destination counts as down for as long as that took.
func (w *window) failed(key destKey, took time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.dests[key]; d != nil {
		d.downUntil = time.Now().Add(took)
	}
}

// alive records that key answered something, if too late for its
// request or twice: it is not down.
func (w *window) alive(key destKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.aliveLocked(key)
}

// late records that key answered an earlier attempt of a request while a
// retry was out: alive, and one step closer to slow (see dest.lateness).
func (w *window) late(key destKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.aliveLocked(key)
	d := w.dest(key)
	d.lateness++
	d.slowUntil = time.Now().Add(slowMemory)
}

// slow reports whether key's retries back off.
func (w *window) slow(key destKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.dests[key]
	return d != nil && d.lateness >= slowLateness && time.Now().Before(d.slowUntil)
}

func (w *window) aliveLocked(key destKey) {
	if d := w.dests[key]; d != nil {
		d.downUntil = time.Time{}
	}
}

// downLocked reports whether a request to key (holding its slot) gets a single
// attempt: the destination is down and others queue for it. A lone
// request keeps its retries: they cost nobody else anything.
func (w *window) downLocked(key destKey) bool {
	d := w.dests[key]
	return d != nil && d.down()
}

// down is downLocked for a looked-up d.
func (d *dest) down() bool {
	return d.inflight > 1 && !d.downUntil.IsZero() && time.Now().Before(d.downUntil)
}

// floor is as far as a window (a destination's or the overall one)
// shrinks: OpenSM's max_wire_smps. Not every timeout is congestion — a
// port that refuses a wrong M_Key answers nothing, a dead switch's
// requests each wait out their timeout — and a window of one would
// serialize a sweep behind them (a keyed port's lease then ran out before
// the SM's next keyed SMP stopped it: TestMKeyEmbedded).
func (w *window) floor() float64 { return float64(min(w.ceiling, windowFloor)) }

const windowFloor = DefaultWindow

// size is the overall bound now.
func (w *window) size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.limit()
}
