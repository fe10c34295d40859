package route

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestForEach(t *testing.T) {
	errBad := errors.New("bad item")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		n       int
		failAt  int32 // -1: no item fails
		wantErr error
		wantAll bool // every item ran exactly once
	}{
		{name: "empty", ctx: context.Background(), n: 0, failAt: -1, wantAll: true},
		{name: "one", ctx: context.Background(), n: 1, failAt: -1, wantAll: true},
		{name: "many", ctx: context.Background(), n: 1000, failAt: -1, wantAll: true},
		{name: "item error", ctx: context.Background(), n: 1000, failAt: 517, wantErr: errBad},
		{name: "cancelled", ctx: cancelled, n: 10, failAt: -1, wantErr: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen := make([]atomic.Int32, tc.n)
			var workers atomic.Int32
			err := ForEach(tc.ctx, tc.n, func() func(int32) error {
				workers.Add(1)
				return func(i int32) error {
					seen[i].Add(1)
					if i == tc.failAt {
						return errBad
					}
					return nil
				}
			})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got, max := int(workers.Load()), Workers(tc.n); got > max {
				t.Errorf("%d workers, want at most %d", got, max)
			}
			if !tc.wantAll {
				return
			}
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("item %d ran %d times, want once", i, c)
				}
			}
		})
	}
}
