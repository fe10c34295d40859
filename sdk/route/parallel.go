package route

import (
	"context"
	"sync"
)

// ForEach runs the items 0..n-1 on Workers(n) goroutines. Each worker calls
// newWorker once, so the function it gets back can own scratch space, and
// runs items k, k+w, k+2w, ... with it: item i is always handled by one
// goroutine, so per-item output needs no locking. A worker stops at its
// first error or when ctx is done (checked before every item); ForEach
// returns the error of the lowest-numbered worker that failed.
func ForEach(ctx context.Context, n int, newWorker func() func(i int32) error) error {
	w := Workers(n)
	errs := make([]error, w)
	var wg sync.WaitGroup
	for k := 0; k < w; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			do := newWorker()
			for i := k; i < n; i += w {
				if err := ctx.Err(); err != nil {
					errs[k] = err
					return
				}
				if err := do(int32(i)); err != nil {
					errs[k] = err
					return
				}
			}
		}(k)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
