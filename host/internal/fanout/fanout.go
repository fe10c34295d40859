// Package fanout runs many independent SMP exchanges on a bounded number of
// goroutines and keeps enough of their errors to report. The programmer and
// the sweep loop both push thousands of Sets/Gets this way.
package fanout

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// keep is how many errors a Group remembers (the count is exact).
const keep = 10

// Group runs functions on at most n goroutines. Go blocks while n are
// running, so a push of half a million Sets never has more than n
// goroutines (and stacks) alive.
type Group struct {
	g      errgroup.Group
	mu     sync.Mutex
	errs   []error
	failed atomic.Int64
}

// New returns a Group of at most n goroutines (256 if n <= 0).
func New(n int) *Group {
	if n <= 0 {
		n = 256
	}
	g := &Group{}
	g.g.SetLimit(n)
	return g
}

// Go runs f; its error is counted and, among the first few, kept.
func (g *Group) Go(f func() error) {
	g.g.Go(func() error {
		if err := f(); err != nil {
			g.failed.Add(1)
			g.mu.Lock()
			if len(g.errs) < keep {
				g.errs = append(g.errs, err)
			}
			g.mu.Unlock()
		}
		return nil
	})
}

// Wait waits for every function and returns nil or an error naming what
// failed, how many, and the first errors.
func (g *Group) Wait(what string) error {
	g.g.Wait()
	if len(g.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %d SMPs failed, first: %w", what, g.failed.Load(), errors.Join(g.errs...))
}

// Failed is the number of functions that returned an error.
func (g *Group) Failed() int64 { return g.failed.Load() }
