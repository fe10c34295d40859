package fanout

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

func TestGroup(t *testing.T) {
	cases := []struct {
		name       string
		n, tasks   int
		failEvery  int
		wantFailed int64
	}{
		{"all succeed", 4, 100, 0, 0},
		{"some fail", 3, 100, 10, 10},
		{"all fail, errors capped", 2, 50, 1, 50},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := New(c.n)
			var running, peak atomic.Int64
			for i := 0; i < c.tasks; i++ {
				g.Go(func() error {
					r := running.Add(1)
					for {
						p := peak.Load()
						if r <= p || peak.CompareAndSwap(p, r) {
							break
						}
					}
					defer running.Add(-1)
					if c.failEvery > 0 && i%c.failEvery == 0 {
						return errors.New("lost")
					}
					return nil
				})
			}
			err := g.Wait("phase")
			if peak.Load() > int64(c.n) {
				t.Errorf("%d goroutines ran at once, limit %d", peak.Load(), c.n)
			}
			if g.Failed() != c.wantFailed {
				t.Errorf("failed = %d, want %d", g.Failed(), c.wantFailed)
			}
			if (err != nil) != (c.wantFailed > 0) {
				t.Fatalf("err = %v", err)
			}
			if err != nil && (!strings.Contains(err.Error(), "phase:") || strings.Count(err.Error(), "lost") > keep) {
				t.Errorf("err = %v", err)
			}
		})
	}
}
