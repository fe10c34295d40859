// Package fanout runs many independent SMP exchanges on a bounded number of
// goroutines and keeps enough of their errors to report. The programmer and
// the sweep loop both push thousands of Sets/Gets this way.
package fanout

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// keep is how many errors a Group remembers (the count is exact).
const keep = 10

// Group runs functions on at most n goroutines. Go blocks while n are
// running and n more wait, so a push of half a million Sets never has more
// than n goroutines (and stacks) alive. The goroutines are workers that take
// the next function when they finish one: a goroutine per function paid for
// its creation and for growing its stack again every time (several CPU
// seconds over the 3.5 M Sets of the largest fabrics).
type Group struct {
	limit int

	mu      sync.Mutex
	room    sync.Cond      // signalled when queue shrinks
	queue   []func() error // a ring of limit slots
	head, n int            // queue[head] waits longest; n wait
	workers int
	running sync.WaitGroup // functions not yet finished

	errs   []error
	failed atomic.Int64
}

// New returns a Group of at most n goroutines (256 if n <= 0).
func New(n int) *Group {
	if n <= 0 {
		n = 256
	}
	g := &Group{limit: n, queue: make([]func() error, n)}
	g.room.L = &g.mu
	return g
}

// Go runs f; its error is counted and, among the first few, kept.
func (g *Group) Go(f func() error) {
	g.running.Add(1)
	g.mu.Lock()
	for {
		if g.workers < g.limit {
			g.workers++
			g.mu.Unlock()
			go g.work(f)
			return
		}
		// Every worker is busy, and none leaves while the queue holds
		// anything (work checks under mu), so what is queued here is run.
		if g.n < g.limit {
			g.queue[(g.head+g.n)%g.limit] = f
			g.n++
			g.mu.Unlock()
			return
		}
		g.room.Wait()
	}
}

// work runs f, then whatever is queued, and ends when nothing is.
func (g *Group) work(f func() error) {
	for {
		g.run(f)
		g.mu.Lock()
		if g.n == 0 {
			g.workers--
			g.room.Signal() // a waiting Go may start a worker
			g.mu.Unlock()
			return
		}
		f = g.queue[g.head]
		g.queue[g.head] = nil
		g.head, g.n = (g.head+1)%g.limit, g.n-1
		g.room.Signal()
		g.mu.Unlock()
	}
}

func (g *Group) run(f func() error) {
	defer g.running.Done()
	g.Add(f())
}

// Add counts err (if not nil) as the error of a function run elsewhere
// (a batch of SMPs the transport keeps in flight itself), so Wait and
// Failed report it with the group's own.
func (g *Group) Add(err error) {
	if err == nil {
		return
	}
	g.failed.Add(1)
	g.mu.Lock()
	if len(g.errs) < keep {
		g.errs = append(g.errs, err)
	}
	g.mu.Unlock()
}

// Wait waits for every function and returns nil or an error naming what
// failed, how many, and the first errors.
func (g *Group) Wait(what string) error {
	g.running.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %d SMPs failed, first: %w", what, g.failed.Load(), errors.Join(g.errs...))
}

// Failed is the number of functions that returned an error.
func (g *Group) Failed() int64 { return g.failed.Load() }
