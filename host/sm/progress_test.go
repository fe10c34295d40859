package sm_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
)

// recorder is an sm.Progress that keeps the phases in order and, per
// unit, the highest count and its total.
type recorder struct {
	mu     sync.Mutex
	phases []string
	done   map[string]int64
	total  map[string]int64
}

func (r *recorder) Phase(name, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append(r.phases, name)
}

func (r *recorder) Count(unit string, done, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done[unit] = max(r.done[unit], done)
	r.total[unit] = total
}

// TestProgress: a heavy sweep reports its phases in order, the nodes
// discovery found and the LFT blocks programmed, all of them by the end;
// an unchanged fabric's sweep programs nothing; Plan stops after routing.
func TestProgress(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	_, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{Parallel: 8}, nil)
	ctx := context.Background()
	cases := []struct {
		name   string
		run    func() error
		phases string
		blocks bool // LFT blocks counted
	}{
		{"first heavy sweep", func() error { _, err := s.HeavySweep(ctx); return err }, "discovery routing programming", true},
		{"unchanged fabric", func() error { _, err := s.HeavySweep(ctx); return err }, "discovery routing", false},
		{"plan only", func() error { _, _, _, err := s.Plan(ctx); return err }, "discovery routing", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{done: map[string]int64{}, total: map[string]int64{}}
			s.SetProgress(r)
			defer s.SetProgress(nil)
			must(t, c.run())
			if got := strings.Join(r.phases, " "); got != c.phases {
				t.Errorf("phases %q, want %q", got, c.phases)
			}
			if n := r.done["nodes found"]; n != int64(len(f.Nodes)) {
				t.Errorf("discovery reported %d nodes found, the fabric has %d", n, len(f.Nodes))
			}
			a := s.Applied()
			want := int64(0)
			if c.blocks {
				want = int64(len(a.Topo.Switches()) * ((int(a.Result.Realized.TopLID) + 64) / 64))
			}
			unit := "LFT blocks written or unchanged"
			if r.done[unit] != want || (want > 0 && r.total[unit] != want) {
				t.Errorf("LFT blocks %d of %d, want %d of %d", r.done[unit], r.total[unit], want, want)
			}
		})
	}
	// Without a Progress nothing is reported and nothing breaks.
	s.SetProgress(nil)
	_, err := s.HeavySweep(ctx)
	must(t, err)
}
