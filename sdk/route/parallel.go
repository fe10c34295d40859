package route

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Each runs do(w, i) for every item i in 0..n-1 on up to workers
// goroutines (GOMAXPROCS when workers <= 0, never more than n) and returns
// how many it used, W. Items are handed out one at a time, so uneven items
// balance; w (0..W-1) names the goroutine running the item, for scratch
// space and partial results the caller keeps per worker and merges after.
// After the first error, or once ctx is done (checked before every item),
// no further item starts; Each returns that error.
func Each(ctx context.Context, n, workers int, do func(w, i int) error) (int, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, n))
	if n <= 0 {
		return workers, ctx.Err()
	}
	var (
		next  atomic.Int64
		stop  atomic.Bool
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		once.Do(func() { first = err })
		stop.Store(true)
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				if err := do(w, i); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return workers, first
}

// ForEach runs the items 0..n-1 on Workers(n) goroutines. Each goroutine
// calls newWorker once, so the function it gets back can own scratch
// space, and runs items k, k+W, k+2W, ... with it: which items share a
// worker is fixed, so state a worker carries from item to item (the load
// balancer's port counters) gives the same routes on every run. It stops
// at the first error or when ctx is done (checked before every item).
func ForEach(ctx context.Context, n int, newWorker func() func(i int32) error) error {
	w := Workers(n)
	_, err := Each(ctx, w, w, func(_, k int) error {
		do := newWorker()
		for i := k; i < n; i += w {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := do(int32(i)); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}
