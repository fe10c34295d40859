package route

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestEach(t *testing.T) {
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name        string
		ctx         context.Context
		n, workers  int
		failAt      int // item that fails, -1 none
		wantWorkers int
		wantErr     error
	}{
		{"no items", context.Background(), 0, 4, -1, 1, nil},
		{"fewer items than workers", context.Background(), 3, 8, -1, 3, nil},
		{"many items", context.Background(), 1000, 4, -1, 4, nil},
		{"an item fails", context.Background(), 1000, 4, 10, 4, boom},
		{"cancelled", cancelled, 100, 2, -1, 2, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen := make([]atomic.Int32, tc.n)
			var ran atomic.Int32
			w, err := Each(tc.ctx, tc.n, tc.workers, func(w, i int) error {
				if w < 0 || w >= max(1, min(tc.workers, tc.n)) {
					t.Errorf("worker %d out of range", w)
				}
				seen[i].Add(1)
				ran.Add(1)
				if i == tc.failAt {
					return boom
				}
				if tc.failAt >= 0 {
					// Items that take a while: the failing worker, even
					// descheduled on a loaded machine, stops the rest
					// long before the other workers could run them all.
					time.Sleep(time.Millisecond)
				}
				return nil
			})
			if w != tc.wantWorkers || !errors.Is(err, tc.wantErr) {
				t.Fatalf("Each = %d, %v; want %d, %v", w, err, tc.wantWorkers, tc.wantErr)
			}
			for i := range seen {
				if c := seen[i].Load(); c > 1 || (tc.wantErr == nil && c != 1) {
					t.Fatalf("item %d ran %d times", i, c)
				}
			}
			if tc.wantErr != nil && int(ran.Load()) == tc.n && tc.n > 100 {
				t.Fatalf("all %d items ran after an error", tc.n)
			}
		})
	}
}
