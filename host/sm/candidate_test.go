package sm

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/sdk/analysis"
)

func TestUnmetCriteria(t *testing.T) {
	t.Parallel()
	all := []conf.Criterion{conf.RequireDeadlockFree, conf.RequireAllPairs, conf.RequireMaxLoadLEActive, conf.RequireNoWorseHops}
	good := func() *rollout.Metrics {
		return &rollout.Metrics{DeadlockFree: true, CAPairs: analysis.PairStats{Reachable: 6, Total: 6},
			SwitchPairs: analysis.PairStats{Reachable: 2, Total: 2}, MaxLoad: 10, MaxHops: 3}
	}
	active := good()
	for _, tc := range []struct {
		name string
		edit func(*rollout.Metrics)
		err  error
		want []string
	}{
		{"all met", func(*rollout.Metrics) {}, nil, nil},
		{"cyclic", func(m *rollout.Metrics) { m.DeadlockFree = false }, nil, []string{"deadlock_free"}},
		{"switch pair lost", func(m *rollout.Metrics) { m.SwitchPairs.Reachable = 1 }, nil, []string{"all_pairs_reachable"}},
		{"busier", func(m *rollout.Metrics) { m.MaxLoad = 11 }, nil, []string{"max_load_le_active"}},
		{"equal load", func(m *rollout.Metrics) { m.MaxLoad = 10 }, nil, nil},
		{"longer", func(m *rollout.Metrics) { m.MaxHops = 4 }, nil, []string{"max_hops_le_active"}},
		{"no plan", func(*rollout.Metrics) {}, errors.New("rejected"), []string{"deadlock_free", "all_pairs_reachable", "max_load_le_active", "max_hops_le_active"}},
	} {
		c := good()
		tc.edit(c)
		if got := unmetCriteria(all, active, c, tc.err); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: unmet = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStageSwitches(t *testing.T) {
	t.Parallel()
	steps := []rollout.Step{
		{Stage: "a", Switches: []int32{1}, Last: true},
		{Stage: "b", Switches: []int32{2}},
		{Stage: "b", Switches: []int32{3, 4}, Last: true},
		{Stage: "c", Switches: []int32{5}, Last: true},
	}
	for n, want := range map[int][]int32{1: {1}, 3: {3, 4, 2}, 4: {5}} {
		if got := stageSwitches(steps, n); !reflect.DeepEqual(got, want) {
			t.Errorf("stage ending at step %d: %v, want %v", n, got, want)
		}
	}
}
