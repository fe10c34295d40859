package fanout

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// TestGroupRunsEachOnce: functions pushed from several goroutines at once,
// with slow and quick ones mixed so the queue fills and drains, each run
// exactly once; the Group works again after Wait.
func TestGroupRunsEachOnce(t *testing.T) {
	for _, c := range []struct {
		name                string
		n, producers, tasks int
	}{
		{"one worker", 1, 3, 200},
		{"queue fills", 4, 8, 2000},
		{"more workers than tasks", 64, 2, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := New(c.n)
			for round := range 2 {
				ran := make([]atomic.Int32, c.producers*c.tasks)
				var wg sync.WaitGroup
				for p := range c.producers {
					wg.Go(func() {
						for i := range c.tasks {
							k := p*c.tasks + i
							g.Go(func() error {
								if k%7 == 0 {
									time.Sleep(10 * time.Microsecond)
								}
								ran[k].Add(1)
								return nil
							})
						}
					})
				}
				wg.Wait()
				if err := g.Wait("round"); err != nil {
					t.Fatal(err)
				}
				for k := range ran {
					if got := ran[k].Load(); got != 1 {
						t.Fatalf("round %d: function %d ran %d times", round, k, got)
					}
				}
			}
		})
	}
}
