package sa

import (
	"runtime/debug"
	"sync"

	"github.com/ibsm/ibsm/host/internal/flood"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Every MAD the fabric hands the agent is untrusted. Before any decoding,
// Handle charges it to its source (the SLID, or the return path of a
// directed-route SMP) and drops it if the source is over its rate; what
// passes waits in a queue per source, and one worker answers the queues in
// turn. A flooding host therefore gets at most its rate, fills only its
// own queue, and never delays another host by more than one answer per
// busy source; the demultiplexer that calls Handle never blocks, so the
// transport's queue of unsolicited MADs (shared with traps) keeps
// draining. Drops are counted per source and reach the log in a bounded
// number of lines (see package flood).

const (
	// DefaultSARate is how many SA requests per second one source may
	// send before the excess is dropped (burst: one second's worth). It
	// sits above what one host's job start-up asks for (a PathRecord per
	// peer; 63,000 in 10 s from one client were answered before limits
	// existed) and below a flood.
	DefaultSARate = 8000
	// DefaultSMPRate is how many SMPs per second one source may send to
	// the SM's port (SMInfo polls and handovers: a few a minute).
	DefaultSMPRate = 20
	// DefaultQueuePerSource bounds the requests of one source waiting for
	// an answer; DefaultQueueTotal bounds them all.
	DefaultQueuePerSource = 64
	DefaultQueueTotal     = 4096
)

// source is where p came from, for the limits: the return path of a
// directed-route SMP (its SLID is the permissive LID), else the SLID.
func source(p transport.Packet) flood.Source { return flood.SourceOf(p.MAD, p.SLID) }

// admit decides, without decoding p, whether the agent takes it: ok is
// false for MADs that are not the agent's (responses, traps, other
// classes), which Handle reports as not handled. A MAD that is the agent's
// but over its source's limit is taken and dropped.
func (a *Agent) admit(p transport.Packet) (ok bool) {
	var lim *flood.Limiter
	switch smp.PeekClass(p.MAD) {
	case smp.ClassSA:
		lim = a.saLimit
	case smp.ClassSMPLID, smp.ClassSMPDR:
		m := smp.PeekMethod(p.MAD)
		if m&smp.MethodResponse != 0 || m == smp.MethodTrap || m == smp.MethodTrapRepress {
			return false
		}
		lim = a.smpLimit
	default:
		return false
	}
	src := source(p)
	if !lim.Allow(src) {
		return true
	}
	if !a.queue.push(src, p) {
		lim.Drop(src, "queue full")
		return true
	}
	a.startWorker()
	return true
}

// startWorker runs the worker unless it runs; it ends when the queues are
// empty, so an idle agent holds no goroutine.
func (a *Agent) startWorker() {
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	if a.queue.running {
		return
	}
	a.queue.running = true
	a.queue.idle = make(chan struct{})
	go a.work()
}

func (a *Agent) work() {
	for {
		p, ok := a.queue.pop()
		if !ok {
			return
		}
		a.answer(p)
	}
}

// answer handles one queued MAD; a bug must not end the worker.
func (a *Agent) answer(p transport.Packet) {
	defer func() {
		if r := recover(); r != nil {
			a.log.Error("BUG: SA agent panicked; request dropped", "panic", r, "slid", p.SLID, "stack", string(debug.Stack()))
		}
	}()
	a.handle(p)
}

// wait returns when the worker has answered everything queued (tests).
func (a *Agent) wait() {
	a.queue.mu.Lock()
	idle := a.queue.idle
	running := a.queue.running
	a.queue.mu.Unlock()
	if running {
		<-idle
	}
}

// fairQueue holds the MADs waiting for the worker, per source, and hands
// them out round robin over the sources.
type fairQueue struct {
	perSource, total int

	mu      sync.Mutex
	bySrc   map[flood.Source][]transport.Packet
	order   []flood.Source // sources with something queued, next first
	n       int
	running bool
	idle    chan struct{} // closed when the worker stops
}

func newFairQueue(perSource, total int) *fairQueue {
	return &fairQueue{perSource: perSource, total: total, bySrc: map[flood.Source][]transport.Packet{}}
}

// push queues p and reports whether there was room.
func (q *fairQueue) push(src flood.Source, p transport.Packet) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	pend, had := q.bySrc[src]
	if len(pend) >= q.perSource || q.n >= q.total {
		return false
	}
	q.bySrc[src] = append(pend, p)
	if !had {
		q.order = append(q.order, src)
	}
	q.n++
	return true
}

// pop takes the next MAD, round robin over the sources; when none is left
// it marks the worker stopped and returns false.
func (q *fairQueue) pop() (transport.Packet, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		q.running = false
		close(q.idle)
		return transport.Packet{}, false
	}
	src := q.order[0]
	q.order = q.order[1:]
	pend := q.bySrc[src]
	p := pend[0]
	pend[0] = transport.Packet{} // let the MAD go
	if pend = pend[1:]; len(pend) > 0 {
		q.bySrc[src] = pend
		q.order = append(q.order, src)
	} else {
		delete(q.bySrc, src)
	}
	q.n--
	return p, true
}
