package transport

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DoAll sends n requests, each as Do would send it (the same window,
// timeouts, retries, back-off, down and slow destinations, errors), without
// a goroutine per request: the calling goroutine keeps up to the window in
// flight and handles their answers, bounces and timeouts as they come. A
// sweep's millions of Sets paid two goroutine switches each through Do.
//
// build writes request i into buf (MAD-sized, DoAll's until done(i) has
// returned) and returns it as a Packet; an error ends request i with it.
// done(i, resp, err) hears how each request ended, on the calling
// goroutine, in no particular order; resp.MAD is valid until done returns.
// DoAll returns once every request has ended: when ctx is done or the
// Dispatcher closes, those in flight and those not yet sent end with the
// error Do would return.
func (d *Dispatcher) DoAll(ctx context.Context, n int, build func(i int, buf []byte) (Packet, error), done func(i int, resp Packet, err error)) {
	d.DoEach(ctx, 0, func() int { return n }, build, done)
}

// DoEach is DoAll over requests first to n()-1 where n may grow while it
// runs (done may add requests: a walk whose answers tell what to ask
// next). It asks n whenever it has room for another request and returns
// once every request below n() has ended and none is in flight, with the
// index of the first request it did not handle; requests added after that
// are the caller's to send.
func (d *Dispatcher) DoEach(ctx context.Context, first int, n func() int, build func(i int, buf []byte) (Packet, error), done func(i int, resp Packet, err error)) (end int) {
	lim := d.lim.Load()
	// At most one answer and one bounce per request in flight wait in ev,
	// so the receiver never blocks on it.
	most := lim.win.ceiling
	b := &batch{d: d, ctx: ctx, lim: lim, done: done, ev: make(chan batchEvent, 2*most)}
	b.recycle, _ = d.conn.(Recycler)
	b.bs, _ = d.conn.(BatchSender)
	defer func() {
		for _, c := range b.spare {
			d.pool.Put(c)
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := first
	// pend is built and waits for a slot (held by value: a heap
	// batchState per request was one allocation per SMP).
	var pend batchState
	havePend := false
	for {
		for len(b.live) < most && (havePend || next < n()) {
			if !havePend {
				havePend = b.build(&pend, next, build)
				next++
				if !havePend {
					continue
				}
			}
			to := destOf(pend.req)
			down, ok := lim.win.tryAcquire(to)
			if !ok {
				if len(b.live) > 0 {
					break // an answer of ours frees a slot
				}
				var err error
				if down, err = lim.win.acquire(ctx, d.done, to); err != nil {
					if ctx.Err() == nil {
						err = d.endErr()
					}
					return b.abort(&pend, havePend, next, n, err)
				}
			}
			b.start(&pend, to, down)
			havePend = false
		}
		b.flush()
		if len(b.live) == 0 {
			if !havePend && next >= n() {
				return next
			}
			continue
		}
		if b.rearm {
			b.armed, b.rearm = b.earliest(), false
			timer.Reset(time.Until(b.armed))
		}
		select {
		case e := <-b.ev:
			b.event(e)
			for len(b.ev) > 0 {
				b.event(<-b.ev)
			}
		case now := <-timer.C:
			b.armed, b.rearm = time.Time{}, true
			b.expire(now)
		case <-ctx.Done():
			return b.abort(&pend, havePend, next, n, ctx.Err())
		case <-d.done:
			return b.abort(&pend, havePend, next, n, d.endErr())
		}
	}
}

// batchEvent is an answer (p) or a bounce of attempt key for c.
type batchEvent struct {
	c       *call
	p       Packet
	key     uint32
	bounced bool
}

// batchState is a DoAll request's progress (what attempts keeps in locals).
type batchState struct {
	idx  int
	req  Packet
	buf  []byte // req.MAD's buffer, DoAll's
	slot int    // in batch.live
	// zombie: ended while a bounce for it waited in ev; back to the pool
	// when that comes out (a call in the pool must not be named by an
	// event).
	zombie   bool
	attempt  int
	waitedN  int // attempts that timed out
	unsent   int
	sendErr  error
	lastErr  error
	sent     time.Time
	deadline time.Time // of the current attempt; never while its answer waits in ev
}

type batch struct {
	d    *Dispatcher
	ctx  context.Context
	lim  *limits
	done func(int, Packet, error)
	ev   chan batchEvent
	live []*call
	free [][]byte // request buffers
	// recycle takes the answers' buffers back (the Conn's, if it can).
	recycle Recycler
	// bs, if the Conn can, writes the attempts send queued in out, in one
	// system call (flush), before the batch waits.
	bs            BatchSender
	out, flushing []*call
	outP          []Packet
	// The timer is armed for armed, no later than any live deadline;
	// rearm: set it to the earliest again before waiting (a deadline came
	// earlier, or it fired). Not per MAD: earliest scans the window.
	armed time.Time
	rearm bool
	// spare holds the calls of ended requests for the next ones: the
	// Dispatcher's pool, a Get and a Put per request, cost 0.3 of the
	// 6.5 CPU-s an ft3-56 Apply spent (pprof). They go back to the pool
	// when DoEach returns.
	spare []*call
}

// never is a deadline that does not come: the call's answer is on its way.
var never = time.Now().Add(100 * 365 * 24 * time.Hour)

// build builds request i into st, or ends it (false) if build fails.
func (b *batch) build(st *batchState, i int, build func(int, []byte) (Packet, error)) bool {
	var buf []byte
	if k := len(b.free); k > 0 {
		buf, b.free = b.free[k-1], b.free[:k-1]
	} else {
		buf = make([]byte, 256)
	}
	req, err := build(i, buf)
	if err == nil {
		err = checkRequest(req)
	}
	if err != nil {
		b.free = append(b.free, buf)
		b.done(i, Packet{}, err)
		return false
	}
	*st = batchState{idx: i, req: req, buf: buf}
	return true
}

// start sends st's first attempt, which holds a window slot for to.
func (b *batch) start(st *batchState, to destKey, down bool) {
	var c *call
	if k := len(b.spare); k > 0 {
		c, b.spare = b.spare[k-1], b.spare[:k-1]
		c = b.d.beginCall(c, b.lim, st.req, to, down)
	} else {
		c = b.d.begin(b.lim, st.req, to, down)
	}
	c.bs = *st
	c.bs.slot = len(b.live)
	c.batch = b.ev
	b.live = append(b.live, c)
	b.send(c)
}

// send makes c's next attempt (c.bs.attempt), as attempts does.
func (b *batch) send(c *call) {
	d, st := b.d, &c.bs
	_, ok := d.newAttempt(c, st.req)
	if !ok {
		st.deadline = never // answered meanwhile: the answer waits in ev
		return
	}
	if st.attempt > 0 {
		d.retries.Add(1)
		d.onMAD(MADRetry, c)
	}
	d.sent.Add(1)
	st.req.Timeout = c.timeout
	if st.attempt > 0 && c.win.slow(c.to) {
		st.req.Timeout = backedOff(c.timeout, st.waitedN)
	}
	if b.bs != nil {
		b.out = append(b.out, c) // written by flush
		st.deadline = never
		return
	}
	b.written(c, d.conn.Send(st.req), time.Now())
}

// written records that c's attempt was handed to the Conn at now with
// err.
func (b *batch) written(c *call, err error, now time.Time) {
	d, st := b.d, &c.bs
	if err != nil {
		key := c.keys[len(c.keys)-1] // only this goroutine adds keys
		switch {
		case d.isClosed():
			b.fail(c, d.endErr())
			return
		case errors.Is(err, ErrConnLost):
			d.lose(err)
			b.fail(c, d.endErr())
			return
		case st.attempt == 0:
			b.fail(c, fmt.Errorf("transport: send TID %#x: %w", key, err))
			return
		}
		st.unsent++
		st.sendErr = err
		d.log.Debug("re-send not written; still waiting for the earlier attempts", "tid", key, "error", err)
	}
	st.sent = now
	st.deadline = now.Add(st.req.Timeout)
	if b.armed.IsZero() || st.deadline.Before(b.armed) {
		b.rearm = true
	}
}

// flush writes the attempts send queued, in one SendBatch.
func (b *batch) flush() {
	if len(b.out) == 0 {
		return
	}
	ps := b.outP[:0]
	for _, c := range b.out {
		ps = append(ps, c.bs.req)
	}
	out := b.out
	b.out = b.flushing[:0]
	// A request the Conn refuses (its error, its attempt's) does not hold
	// back those after it.
	for off := 0; off < len(ps); {
		n, err := b.bs.SendBatch(ps[off:])
		now := time.Now()
		for _, c := range out[off : off+n] {
			b.written(c, nil, now)
		}
		if off += n; err != nil && off < len(ps) {
			b.written(out[off], err, now)
			off++
		}
	}
	clear(ps)
	b.outP = ps[:0]
	clear(out)
	b.flushing = out[:0]
}

// next makes c's next attempt if it has one left, else ends it with its
// last attempt's error.
func (b *batch) next(c *call) {
	if c.bs.attempt < c.retries {
		c.bs.attempt++
		b.send(c)
		return
	}
	b.fail(c, nil)
}

// fail ends c with err (nil: the failure of its last attempt, lastErr),
// unless its answer came meanwhile (it waits in ev and wins, as in
// lastChance).
func (b *batch) fail(c *call, err error) {
	d := b.d
	d.mu.Lock()
	if c.answered {
		d.mu.Unlock()
		c.bs.deadline = never
		return
	}
	d.unregister(c)
	d.mu.Unlock()
	if err == nil {
		err = d.failure(c, c.bs.lastErr, c.bs.unsent, c.bs.sendErr)
	}
	b.finish(c, Packet{}, err)
}

func (b *batch) event(e batchEvent) {
	c := e.c
	if c.bs.zombie {
		b.d.release(c)
		return
	}
	if !e.bounced {
		b.finish(c, e.p, nil)
		return
	}
	if c.keys[len(c.keys)-1] != e.key {
		return // an earlier attempt's: its retry is already out
	}
	c.bs.lastErr = ErrUndeliverable // retry at once; the fabric said no
	b.next(c)
}

// expire ends the attempts whose timer ran out by now.
func (b *batch) expire(now time.Time) {
	for i := 0; i < len(b.live); i++ {
		c := b.live[i]
		st := &c.bs
		if st.deadline.After(now) {
			continue
		}
		st.lastErr = ErrTimeout
		st.waitedN++
		c.waited += st.req.Timeout
		c.win.timeout(c.to, st.sent)
		b.next(c)
		if i < len(b.live) && b.live[i] != c {
			i-- // c ended: another took its place
		}
	}
}

func (b *batch) earliest() time.Time {
	t := never
	for _, c := range b.live {
		if c.bs.deadline.Before(t) {
			t = c.bs.deadline
		}
	}
	return t
}

// finish reports c's end and gives back its slot, buffer and call.
func (b *batch) finish(c *call, resp Packet, err error) {
	b.d.finish(b.ctx, b.lim, c, err)
	last := b.live[len(b.live)-1]
	b.live[c.bs.slot], last.bs.slot = last, c.bs.slot
	b.live = b.live[:len(b.live)-1]
	b.done(c.bs.idx, resp, err)
	if b.recycle != nil && resp.MAD != nil {
		b.recycle.Recycle(resp.MAD) // done has returned: nobody holds it now
	}
	b.free = append(b.free, c.bs.buf)
	b.d.mu.Lock()
	zombie := c.bouncing && !c.answered // its bounce still waits in ev
	b.d.mu.Unlock()
	if zombie {
		c.bs.zombie = true
		return
	}
	b.d.reset(c)
	b.spare = append(b.spare, c)
}

// abort ends what is in flight with err (an answer already in ev wins),
// then pend (if havePend) and the requests from next on, which were never
// sent, and returns the index after the last it ended.
func (b *batch) abort(pend *batchState, havePend bool, next int, n func() int, err error) int {
	d := b.d
	b.out = b.out[:0] // never written: they end with err below
	d.mu.Lock()
	for _, c := range b.live {
		if !c.answered {
			d.unregister(c)
		}
	}
	d.mu.Unlock()
	for len(b.ev) > 0 {
		if e := <-b.ev; !e.bounced && !e.c.bs.zombie {
			b.finish(e.c, e.p, nil)
		}
	}
	for len(b.live) > 0 {
		b.finish(b.live[0], Packet{}, err)
	}
	if havePend {
		b.done(pend.idx, Packet{}, err)
	}
	end := n()
	for i := next; i < end; i++ {
		b.done(i, Packet{}, err)
	}
	return max(end, next)
}
