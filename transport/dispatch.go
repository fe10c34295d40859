package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Options configures New. Zero values select the defaults.
type Options struct {
	// Window is the maximum number of requests outstanding at once
	// (default DefaultWindow). Callers beyond it wait in Do for a slot.
	Window int
	// Timeout is the per-attempt response timeout (default 200ms).
	Timeout time.Duration
	// Retries is how many times a request is re-sent after a timeout
	// (default 3; negative means 0). A request makes at most Retries+1
	// attempts.
	Retries int
	// UnsolicitedBuffer is the capacity of the Unsolicited channel
	// (default 1024). When it is full further unsolicited packets are
	// dropped and counted; the receiver never blocks on a slow consumer.
	UnsolicitedBuffer int
	// Logger receives receive errors and drops (default: discard).
	Logger hclog.Logger
	// OnMAD, when set, hears every request (once, as Gets/Sets count
	// them), every re-send and every request that timed out, with its
	// management class and attribute ID (metrics by attribute). It must
	// not block.
	OnMAD func(ev MADEvent, class uint8, attr uint16)
}

// MADEvent is what Options.OnMAD hears.
type MADEvent uint8

// MADEvents.
const (
	MADRequest MADEvent = iota
	MADRetry
	MADTimeout
)

// DefaultWindow is the window when Options.Window is 0: 4 requests in
// flight, OpenSM's default max_wire_smps. Switches forward management
// packets without flow control, so on real fabrics more SMPs in flight
// means more of them dropped (and retried); simulators can take more.
const DefaultWindow = 4

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Timeout <= 0 {
		o.Timeout = 200 * time.Millisecond
	}
	if o.Retries < 0 {
		o.Retries = 0
	} else if o.Retries == 0 {
		o.Retries = 3
	}
	if o.UnsolicitedBuffer <= 0 {
		o.UnsolicitedBuffer = 1024
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// NoRetries can be assigned to Options.Retries to disable retries (zero
// selects the default of 3).
const NoRetries = -1

// Dispatcher is the Transport returned by New. Besides the Transport
// methods it reports UnsolicitedDropped, Bounced, Done and Err.
//
// TIDs: every attempt of a request, the first and each retry, gets a fresh
// TID, written into req.MAD[8:16] in place before the attempt is handed to
// the Conn (the caller's buffer is modified and must not be touched until
// Do returns; a Conn must not keep the MAD after Send returns). The low 32
// bits are unique among outstanding attempts and are all that matching
// uses, because peers rewrite the upper bits: ibsim puts its client index
// in bits 63..48, and the kernel's MAD layer (umad) replaces all of bits
// 63..32 of a request with its MAD client id; responses keep the TID they
// answer. Every attempt's TID stays registered until the request ends, so
// the answer to any attempt completes it.
//
// Why a fresh TID per attempt rather than re-sending the same one: the
// kernel refuses (EINVAL) a request whose TID and class are still on its
// send list, and a request stays there until the kernel's own timer
// expires — which starts at send completion, later than ours — or until
// the kernel has finished with its response, which it queues for reading
// before it takes the request off the list. A re-send with the same TID
// would race both; a fresh TID never collides, needs no wait for the
// kernel's timeout record, and keeps retries, timeouts and bounces in one
// place for every Conn (OpenSM instead hands the retries to the kernel,
// which re-sends the same TID itself; that would split the accounting
// between the kernel and this dispatcher and make the sim and ibsim Conns
// behave differently from umad).
//
// A response is accepted only if its R bit is set, its low TID bits match
// a pending attempt and its class and attribute ID equal the request's;
// for SMPs also its AttributeModifier (an SMA echoes it, IBA 14.2.1.1) and,
// directed route, its hop count and initial path (IBA 14.2.2: the
// responder keeps them). Anything else that carries the R bit is counted
// in Unmatched and dropped: a forged answer must guess what was asked as
// well as when. TIDs start at a random value per Dispatcher so that they
// cannot be guessed from the start of a run either.
//
// Stats semantics: Gets/Sets/Others count requests once by method; Sent
// counts every transmission (attempts and Send); Retries counts re-sends;
// Timeouts counts requests that failed after exhausting their retries;
// Received counts every packet read; Unmatched counts responses that
// matched nothing (late, duplicate or foreign) and short packets.
type Dispatcher struct {
	conn  Conn
	opts  Options
	log   hclog.Logger
	lim   atomic.Pointer[limits] // window, timeout, retries: SetLimits swaps them
	unsol chan Packet

	mu      sync.Mutex
	pending map[uint32]*call
	nextTID uint32

	pool sync.Pool

	closeOnce sync.Once
	closeErr  error
	lost      chan struct{} // the Conn reported ErrConnLost
	lostOnce  sync.Once
	lostErr   error         // set before lost is closed
	done      chan struct{} // closed or lost
	doneOnce  sync.Once
	cancel    context.CancelFunc
	recvDone  chan struct{}

	gets, sets, others atomic.Uint64
	sent, received     atomic.Uint64
	retries, timeouts  atomic.Uint64
	unmatched, dropped atomic.Uint64
	bounced            atomic.Uint64
}

// limits are the settings SetLimits may change while requests run.
type limits struct {
	win     *window
	timeout time.Duration
	retries int
}

// SetLimits changes the window, per-attempt timeout and retries for the
// requests that start from now on (zero values select the defaults, as
// in Options; NoRetries for none). Requests already in flight keep the limits they started
// with, so for a moment up to the old plus the new window may be
// outstanding.
func (d *Dispatcher) SetLimits(window int, timeout time.Duration, retries int) {
	o := Options{Window: window, Timeout: timeout, Retries: retries}.withDefaults()
	d.lim.Store(&limits{win: newWindow(o.Window), timeout: o.Timeout, retries: o.Retries})
}

// Limits returns the window, timeout and retries new requests get.
func (d *Dispatcher) Limits() (window int, timeout time.Duration, retries int) {
	l := d.lim.Load()
	return l.win.ceiling, l.timeout, l.retries
}

// Window is the bound on requests in flight now: it adapts between 1 and
// the window Limits reports (see window).
func (d *Dispatcher) Window() int { return d.lim.Load().win.size() }

func (d *Dispatcher) onMAD(ev MADEvent, c *call) {
	if d.opts.OnMAD != nil {
		d.opts.OnMAD(ev, c.class, c.attr)
	}
}

// call is one outstanding request. Calls are pooled with their timer,
// channel and key slice so the steady state allocates nothing per MAD.
type call struct {
	// keys are the low TID bits of every attempt so far, newest last;
	// each maps to this call in Dispatcher.pending until it is answered
	// or ends. Guarded by Dispatcher.mu.
	keys []uint32
	// answered is set, under Dispatcher.mu, when a response was handed to
	// done; no attempt is registered after that.
	answered bool
	class    uint8
	attr     uint16
	timeout  time.Duration // the limits it started with
	retries  int
	waited   time.Duration // the timers of its unanswered attempts so far
	win      *window       // the window it holds a slot of, and for whom
	to       destKey
	// smp is set for SMP classes: mod and, directed route (hops > 0 or
	// class 0x81), the hop count and initial path must match too.
	smp   bool
	mod   uint32
	hops  uint8
	ipath [64]byte
	// done receives the outcome, written under Dispatcher.mu: at most one
	// bounce (only into an empty channel) and one response, hence cap 2.
	done  chan result
	timer *time.Timer
	// batch is set for a DoAll request: answers and bounces go there
	// (with the call) instead of done; the rest is DoAll's (batch.go).
	batch chan<- batchEvent
	// bouncing: a bounce of the current attempt waits in batch (under
	// Dispatcher.mu; at most one, so batch never blocks the receiver).
	bouncing bool
	bs       batchState
}

type result struct {
	p       Packet
	bounced bool
}

var _ Transport = (*Dispatcher)(nil)

// New starts a Transport over conn and its receive goroutine. Close stops
// it and closes conn.
func New(conn Conn, opts Options) Transport {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dispatcher{
		conn:     conn,
		opts:     opts,
		log:      opts.Logger,
		unsol:    make(chan Packet, opts.UnsolicitedBuffer),
		pending:  make(map[uint32]*call, opts.Window),
		lost:     make(chan struct{}),
		done:     make(chan struct{}),
		cancel:   cancel,
		recvDone: make(chan struct{}),
		nextTID:  rand.Uint32(),
	}
	d.pool.New = func() any {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return &call{done: make(chan result, 2), timer: t}
	}
	d.lim.Store(&limits{win: newWindow(opts.Window), timeout: opts.Timeout, retries: opts.Retries})
	go d.receive(ctx)
	return d
}

// Do implements Transport.
func (d *Dispatcher) Do(ctx context.Context, req Packet) (Packet, error) {
	if err := checkRequest(req); err != nil {
		return Packet{}, err
	}
	if d.isClosed() {
		return Packet{}, d.endErr()
	}
	lim := d.lim.Load()
	to := destOf(req)
	down, err := lim.win.acquire(ctx, d.done, to)
	if err != nil {
		if ctx.Err() == nil {
			return Packet{}, d.endErr()
		}
		return Packet{}, err
	}
	c := d.begin(lim, req, to, down)
	resp, err := d.attempts(ctx, c, req)
	d.finish(ctx, lim, c, err)
	d.release(c)
	return resp, err
}

func checkRequest(req Packet) error {
	if len(req.MAD) < 24 {
		return fmt.Errorf("transport: request MAD is %d bytes, need at least the 24-byte header", len(req.MAD))
	}
	if req.MAD[3]&0x80 != 0 {
		return fmt.Errorf("transport: method %#02x is a response; use Send for responses", req.MAD[3])
	}
	return nil
}

// begin counts req and takes a call for it, which holds a slot of lim's
// window for to (down: see window.acquire).
func (d *Dispatcher) begin(lim *limits, req Packet, to destKey, down bool) *call {
	return d.beginCall(d.pool.Get().(*call), lim, req, to, down)
}

// beginCall is begin with a call from the pool (or reset).
func (d *Dispatcher) beginCall(c *call, lim *limits, req Packet, to destKey, down bool) *call {
	d.countMethod(req)
	c.class = req.MAD[1]
	c.attr = binary.BigEndian.Uint16(req.MAD[16:])
	c.timeout, c.retries = lim.timeout, lim.retries
	if down {
		c.retries = 0 // its last request went unanswered on every attempt
	}
	c.win, c.to = lim.win, to
	d.onMAD(MADRequest, c)
	c.remember(req.MAD)
	return c
}

// finish gives c's window slot back once its request ended with err.
func (d *Dispatcher) finish(ctx context.Context, lim *limits, c *call, err error) {
	// Unanswered on several attempts (one lost MAD is no sign): down.
	if errors.Is(err, ErrTimeout) && c.retries > 0 && ctx.Err() == nil {
		lim.win.failed(c.to, c.waited)
	}
	lim.win.release(c.to, err == nil, err == nil && len(c.keys) == 1)
}

func (d *Dispatcher) countMethod(req Packet) {
	switch req.MAD[3] {
	case 0x01: // Get
		d.gets.Add(1)
	case 0x02: // Set
		d.sets.Add(1)
	default:
		d.others.Add(1)
	}
}

// newAttempt registers a fresh TID for c and writes it into req. It
// reports false if c was answered meanwhile (the answer is in c.done).
func (d *Dispatcher) newAttempt(c *call, req Packet) (uint32, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c.answered {
		return 0, false
	}
	for {
		d.nextTID++
		if d.nextTID == 0 { // TID 0 is what ibsim's own traps carry
			continue
		}
		if _, busy := d.pending[d.nextTID]; !busy {
			break
		}
	}
	key := d.nextTID
	c.keys = append(c.keys, key)
	c.bouncing = false
	d.pending[key] = c
	binary.BigEndian.PutUint64(req.MAD[8:], uint64(key))
	return key, true
}

func (d *Dispatcher) attempts(ctx context.Context, c *call, req Packet) (Packet, error) {
	var lastErr, sendErr error
	unsent, waited := 0, 0 // waited: attempts that timed out
	c.waited = 0
	for attempt := 0; attempt <= c.retries; attempt++ {
		if attempt > 0 {
			// A bounce of an earlier attempt must not end this one; an
			// answer that slipped in wins.
			for len(c.done) > 0 {
				if r := <-c.done; !r.bounced {
					return r.p, nil
				}
			}
		}
		key, ok := d.newAttempt(c, req)
		if !ok {
			return d.lastChance(c, lastErr)
		}
		if attempt > 0 { // counted once it is really re-sent
			d.retries.Add(1)
			d.onMAD(MADRetry, c)
		}
		d.sent.Add(1)
		req.Timeout = c.timeout
		if attempt > 0 && c.win.slow(c.to) { // backedOff of a first attempt is the timeout
			req.Timeout = backedOff(c.timeout, waited)
		}
		if err := d.conn.Send(req); err != nil {
			switch {
			case d.isClosed():
				return d.lastChance(c, d.endErr())
			case errors.Is(err, ErrConnLost):
				d.lose(err)
				return d.lastChance(c, d.endErr())
			case attempt == 0:
				return d.lastChance(c, fmt.Errorf("transport: send TID %#x: %w", key, err))
			}
			// A re-send that could not be written: earlier attempts may
			// still be answered (the kernel may even have refused it
			// because it is busy delivering one), so this attempt waits
			// its timeout like a lost one.
			unsent++
			sendErr = err
			d.log.Debug("re-send not written; still waiting for the earlier attempts", "tid", key, "error", err)
		}
		sent := time.Now()
		c.timer.Reset(req.Timeout)
		select {
		case r := <-c.done:
			c.timer.Stop()
			if !r.bounced {
				return r.p, nil
			}
			lastErr = ErrUndeliverable // retry at once; the fabric said no
		case <-c.timer.C:
			lastErr = ErrTimeout
			waited++
			c.waited += req.Timeout
			c.win.timeout(c.to, sent)
		case <-ctx.Done():
			c.timer.Stop()
			return d.lastChance(c, ctx.Err())
		case <-d.done:
			c.timer.Stop()
			return d.lastChance(c, d.endErr())
		}
	}
	p, err := d.lastChance(c, lastErr)
	if err == nil {
		return p, nil
	}
	return Packet{}, d.failure(c, err, unsent, sendErr)
}

// failure is the error a request that made every attempt ends with: err
// names why the last one ended (ErrUndeliverable or ErrTimeout). c must be
// unregistered (nobody else reads or writes c.keys then).
func (d *Dispatcher) failure(c *call, err error, unsent int, sendErr error) error {
	last := c.keys[len(c.keys)-1]
	if errors.Is(err, ErrUndeliverable) {
		return fmt.Errorf("%w: TID %#x class %#02x attribute %#04x, returned by the fabric on all %d attempts; check the route and the port states along it",
			err, last, c.class, c.attr, c.retries+1)
	}
	d.timeouts.Add(1)
	d.onMAD(MADTimeout, c)
	tids := fmt.Sprintf("TID %#x", last)
	if len(c.keys) > 1 {
		tids = fmt.Sprintf("TIDs %#x to %#x", c.keys[0], last)
	}
	unwritten := ""
	if unsent > 0 {
		unwritten = fmt.Sprintf(" (%d re-sends could not be written: %v)", unsent, sendErr)
	}
	return fmt.Errorf("%w: %s class %#02x attribute %#04x, no answer after %d attempts in %v%s; check that the destination is reachable",
		ErrTimeout, tids, c.class, c.attr, c.retries+1, c.waited, unwritten)
}

// maxBackoff caps how far the per-attempt timeout grows: 4× the configured
// one, so even a slow port fails within a few timeouts once it stops
// answering.
const maxBackoff = 2

// backedOff is the timer of a retry to a destination known to answer late
// (window.slow), after waited unanswered attempts: the configured timeout,
// doubled after each, up to 4×. A switch slow to answer (busy writing a
// large table, a congested management path) is then given longer each time
// instead of being asked again at the rate it missed, which only adds to
// its load. A destination that never answered late, dead or healthy, keeps
// the configured timeout on every attempt, so a dead port fails as fast as
// it always did.
func backedOff(base time.Duration, waited int) time.Duration {
	return base << min(waited, maxBackoff)
}

// unregister removes every attempt of c from pending. Caller holds d.mu.
func (d *Dispatcher) unregister(c *call) {
	for _, k := range c.keys {
		if d.pending[k] == c {
			delete(d.pending, k)
		}
	}
}

// lastChance unregisters c; if the receiver completed it in the meantime
// the response wins over the timeout, bounce or cancellation err.
func (d *Dispatcher) lastChance(c *call, err error) (Packet, error) {
	d.mu.Lock()
	d.unregister(c)
	d.mu.Unlock()
	for {
		select {
		case r := <-c.done:
			if !r.bounced {
				return r.p, nil
			}
		default:
			return Packet{}, err
		}
	}
}

// release unregisters c (if still pending), drains it and returns it to the pool.
func (d *Dispatcher) release(c *call) {
	d.reset(c)
	d.pool.Put(c)
}

// reset unregisters c (if still pending) and drains it, for beginCall.
func (d *Dispatcher) reset(c *call) {
	if c.answered {
		// dispatch unregistered it when it handed over the answer (and
		// set answered before that send, which Do received: no race).
		c.keys, c.answered = c.keys[:0], false
	} else {
		d.mu.Lock()
		d.unregister(c)
		c.keys = c.keys[:0]
		d.mu.Unlock()
	}
	for len(c.done) > 0 {
		<-c.done
	}
	c.timer.Stop()
	c.batch, c.bouncing, c.bs = nil, false, batchState{}
}

func (d *Dispatcher) receive(ctx context.Context) {
	defer close(d.recvDone)
	defer close(d.unsol)
	if dl, ok := d.conn.(Deliverer); ok {
		dl.Deliver(ctx, func(p Packet, err error) {
			if err == nil {
				d.received.Add(1)
				d.dispatch(p)
				return
			}
			if !d.failed(err) && !errors.Is(err, ErrClosed) && !errors.Is(err, net.ErrClosed) {
				d.log.Warn("MAD receive failed", "error", err)
			}
		})
		return
	}
	backoff := time.Millisecond
	for {
		p, err := d.conn.Recv(ctx)
		if err != nil {
			if d.failed(err) {
				if errors.Is(err, ErrConnLost) {
					return
				}
				continue
			}
			if ctx.Err() != nil || d.isClosed() || errors.Is(err, ErrClosed) || errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient receive error must not spin the CPU; waiters
			// time out and retry on their own.
			d.log.Warn("MAD receive failed", "error", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(2*backoff, 100*time.Millisecond)
			continue
		}
		backoff = time.Millisecond
		d.received.Add(1)
		d.dispatch(p)
	}
}

// failed handles what a receive error says about the Conn: a bounce
// (true, handled) or a lost attachment (true: the transport has ended).
func (d *Dispatcher) failed(err error) bool {
	if b := asBounce(err); b != nil {
		d.received.Add(1)
		d.bounce(b.Packet)
		return true
	}
	if errors.Is(err, ErrConnLost) {
		d.lose(err)
		return true
	}
	return false
}

// SMP management classes and where a directed-route SMP keeps its hop
// count and initial path (IBA 14.2.1.2).
const (
	classSMPLID  = 0x01
	classSMPDR   = 0x81
	drHopCount   = 7
	drInitPath   = 128
	drInitPathSz = 64
)

// remember keeps what a genuine answer to req must repeat.
func (c *call) remember(req []byte) {
	c.smp = c.class == classSMPLID || c.class == classSMPDR
	if !c.smp {
		return
	}
	c.mod = binary.BigEndian.Uint32(req[20:])
	c.hops = 0
	if c.class == classSMPDR && len(req) >= drInitPath+drInitPathSz {
		c.hops = req[drHopCount]
		copy(c.ipath[:], req[drInitPath:drInitPath+drInitPathSz])
	}
}

// answers reports whether response m can be the answer to c.
func (c *call) answers(m []byte) bool {
	if c.class != m[1] || c.attr != binary.BigEndian.Uint16(m[16:]) {
		return false
	}
	if !c.smp {
		return true
	}
	if binary.BigEndian.Uint32(m[20:]) != c.mod {
		return false
	}
	if c.class == classSMPDR {
		if len(m) < drInitPath+drInitPathSz || m[drHopCount] != c.hops {
			return false
		}
		// Only the hops used: bytes past the hop count are not the path.
		n := int(c.hops) + 1
		if string(m[drInitPath:drInitPath+n]) != string(c.ipath[:n]) {
			return false
		}
	}
	return true
}

func (d *Dispatcher) dispatch(p Packet) {
	m := p.MAD
	if len(m) < 24 {
		d.unmatched.Add(1)
		d.log.Debug("dropping short packet", "len", len(m), "slid", p.SLID)
		return
	}
	if m[3]&0x80 == 0 {
		select {
		case d.unsol <- p:
		default:
			if n := d.dropped.Add(1); n&(n-1) == 0 { // log at powers of two
				d.log.Warn("unsolicited queue full, dropping", "dropped", n, "capacity", cap(d.unsol))
			}
		}
		return
	}
	key := uint32(binary.BigEndian.Uint64(m[8:]))
	d.mu.Lock()
	c := d.pending[key]
	if c == nil || !c.answers(m) {
		d.mu.Unlock()
		d.unmatched.Add(1)
		// Too late for its request, or a duplicate (a retry's answer
		// after the first): alive, but no measure of lateness.
		d.lim.Load().win.alive(destOf(p))
		d.log.Trace("unmatched response", "tid", binary.BigEndian.Uint64(m[8:]), "class", m[1],
			"attr", binary.BigEndian.Uint16(m[16:]), "attr_mod", binary.BigEndian.Uint32(m[20:]))
		return
	}
	c.answered = true
	late := key != c.keys[len(c.keys)-1] // an earlier attempt's answer
	win, to := c.win, c.to
	d.unregister(c) // answers to its other attempts are now duplicates
	if c.batch != nil {
		c.batch <- batchEvent{c: c, p: p} // never blocks: see DoAll
	} else {
		c.done <- result{p: p} // never blocks: see call.done
	}
	d.mu.Unlock()
	if late {
		win.late(to)
	}
}

// bounce fails the current attempt of the request p belongs to; a bounce
// of an earlier attempt is ignored (its retry is already out). The
// request stays registered and retries with a fresh TID.
func (d *Dispatcher) bounce(p Packet) {
	d.bounced.Add(1)
	m := p.MAD
	if len(m) < 24 {
		return
	}
	key := uint32(binary.BigEndian.Uint64(m[8:]))
	d.mu.Lock()
	if c := d.pending[key]; c != nil && c.answers(m) && !c.answered && c.keys[len(c.keys)-1] == key {
		switch {
		case c.batch != nil && !c.bouncing:
			c.bouncing = true
			c.batch <- batchEvent{c: c, key: key, bounced: true}
		case c.batch == nil && len(c.done) == 0:
			c.done <- result{bounced: true}
		}
	}
	d.mu.Unlock()
}

// Unsolicited implements Transport. The channel is closed after Close.
func (d *Dispatcher) Unsolicited() <-chan Packet { return d.unsol }

// Send implements Transport.
func (d *Dispatcher) Send(p Packet) error {
	if d.isClosed() {
		return d.endErr()
	}
	d.sent.Add(1)
	err := d.conn.Send(p)
	if err != nil && errors.Is(err, ErrConnLost) {
		d.lose(err)
		return d.endErr()
	}
	return err
}

// Stats implements Transport.
func (d *Dispatcher) Stats() Stats {
	return Stats{
		Gets: d.gets.Load(), Sets: d.sets.Load(), Others: d.others.Load(),
		Sent: d.sent.Load(), Received: d.received.Load(),
		Retries: d.retries.Load(), Timeouts: d.timeouts.Load(),
		Unmatched: d.unmatched.Load(),
	}
}

// Pending is the number of attempts registered and not yet answered or
// ended (a request being retried holds one per attempt); 0 when idle.
func (d *Dispatcher) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}

// Bounced is the number of BounceErrors the Conn reported.
func (d *Dispatcher) Bounced() uint64 { return d.bounced.Load() }

// UnsolicitedDropped is the number of unsolicited packets dropped because
// the Unsolicited channel was full.
func (d *Dispatcher) UnsolicitedDropped() uint64 { return d.dropped.Load() }

// Close stops the receiver, fails every pending and waiting Do with
// ErrClosed, closes the Unsolicited channel and closes the Conn.
func (d *Dispatcher) Close() error {
	d.closeOnce.Do(func() {
		d.end()
		d.cancel()
		d.closeErr = d.conn.Close()
		<-d.recvDone
	})
	return d.closeErr
}

// lose ends the transport because the Conn reported ErrConnLost: the
// receiver stops, pending and later calls fail with Err, Unsolicited is
// closed. Close must still be called to release the Conn.
func (d *Dispatcher) lose(err error) {
	d.lostOnce.Do(func() {
		d.lostErr = fmt.Errorf("%w: %w", ErrClosed, err)
		close(d.lost)
		d.end()
		d.cancel()
		d.log.Error("MAD attachment lost; the transport has ended", "error", err)
	})
}

func (d *Dispatcher) end() { d.doneOnce.Do(func() { close(d.done) }) }

// Done is closed when the transport has ended: Close was called or the
// Conn reported that its attachment is gone (ErrConnLost). An SM selects
// on it to notice a removed HCA and exit with Err.
func (d *Dispatcher) Done() <-chan struct{} { return d.done }

// Err is nil while the transport runs. After it ended it is the error
// pending and later calls fail with: ErrClosed, or, if the attachment was
// lost, an error wrapping ErrClosed and the Conn's error (which wraps
// ErrConnLost and says what happened).
func (d *Dispatcher) Err() error {
	if !d.isClosed() {
		return nil
	}
	return d.endErr()
}

func (d *Dispatcher) endErr() error {
	select {
	case <-d.lost:
		return d.lostErr
	default:
		return ErrClosed
	}
}

func (d *Dispatcher) isClosed() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// ErrUndeliverable is returned (wrapped) when the fabric handed a request
// back on every attempt (see BounceError).
var ErrUndeliverable = errors.New("MAD undeliverable")

// BounceError is what a Conn's Recv returns when the fabric gives a packet
// back undelivered instead of answering it (ibsim's status 110: no route,
// port down, injected drop, nobody to deliver to). Packet is the returned
// MAD; only its TID, class and attribute are used. The dispatcher ends the
// current attempt of the matching request at once and retries it; after the
// last attempt Do fails with ErrUndeliverable instead of waiting for
// timeouts. Conns that cannot tell bounces apart simply never return it.
type BounceError struct {
	Packet Packet
	Reason string
}

func (e *BounceError) Error() string {
	return fmt.Sprintf("MAD TID %#x bounced: %s", peekTID(e.Packet.MAD), e.Reason)
}

func peekTID(m []byte) uint64 {
	if len(m) < 24 {
		return 0
	}
	return binary.BigEndian.Uint64(m[8:])
}

// asBounce is kept out of the receive loop so the errors.As target does
// not escape to the heap on every packet.
func asBounce(err error) *BounceError {
	var b *BounceError
	if errors.As(err, &b) {
		return b
	}
	return nil
}
