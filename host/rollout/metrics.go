package rollout

import (
	"fmt"
	"io"
	"strings"

	"github.com/ibsm/ibsm/sdk/analysis"
)

// Metrics are the figures `ibsm rollout status` shows for a plan.
type Metrics struct {
	Engine       string             `json:"engine"`
	Key          string             `json:"key"`
	CAPairs      analysis.PairStats `json:"ca_pairs"`
	SwitchPairs  analysis.PairStats `json:"switch_pairs"`
	DeadlockFree bool               `json:"deadlock_free"`
	LoopLIDs     int                `json:"loop_lids"`
	VLsUsed      []int              `json:"vls_used"`
	SLsUsed      []int              `json:"sls_used"`
	LIDsUsed     int                `json:"lids_used"`
	// MaxLoad is the all-to-all maximum channel load (routes crossing the
	// busiest channel), MaxLoadNormalized the same over N-1.
	MaxLoad           int64   `json:"max_load"`
	MaxLoadNormalized float64 `json:"max_load_normalized"`
	// WorstShift is the highest channel load over the sampled shift
	// permutations; EBB the effective bisection bandwidth (0: not measured).
	WorstShift int64   `json:"worst_shift"`
	Shifts     int     `json:"shifts"`
	EBB        float64 `json:"ebb"`
	MaxHops    int     `json:"max_hops"`
	AvgHops    float64 `json:"avg_hops"`
}

// MetricShifts and MetricBisections bound the traffic metrics the shadow
// computes each sweep (a seeded sample: comparable from sweep to sweep).
const (
	MetricShifts     = 32
	MetricBisections = 8
	metricSeed       = 1
)

// Measure analyses p with the traffic metrics.
func Measure(p Plan, engine, key string, workers int) (*Metrics, error) {
	all := false
	for _, l := range p.Rz.LIDs.Ports {
		all = all || l.LMC > 0
	}
	rep, err := analysis.Analyse(p.Rz, p.VLs, analysis.Options{
		Workers: workers, AllLIDs: all, Shifts: MetricShifts, Bisections: MetricBisections, Seed: metricSeed, Samples: 1,
	})
	if err != nil {
		return nil, err
	}
	return MetricsOf(rep, engine, key), nil
}

// MetricsOf extracts the metrics of an analysis report.
func MetricsOf(rep *analysis.Report, engine, key string) *Metrics {
	m := &Metrics{
		Engine: engine, Key: key,
		CAPairs: rep.CAPairs, SwitchPairs: rep.SwitchPairs, DeadlockFree: rep.DeadlockFree, LoopLIDs: rep.LoopLIDs,
		VLsUsed: rep.VLsUsed, SLsUsed: rep.SLsUsed, LIDsUsed: rep.LIDsUsed,
		MaxLoad: rep.Load.Max, MaxLoadNormalized: rep.Load.MaxNormalized,
		MaxHops: rep.MaxHops, AvgHops: rep.AvgHops,
	}
	if rep.Shift != nil {
		m.WorstShift, m.Shifts = rep.Shift.Worst, rep.Shift.Shifts
	}
	if rep.EBB != nil {
		m.EBB = rep.EBB.EBB
	}
	return m
}

// sideBySide writes the two plans' metrics in two columns.
func sideBySide(w io.Writer, a, b *Metrics, aName, bName string) {
	col := func(m *Metrics, f func(*Metrics) string) string {
		if m == nil {
			return "-"
		}
		return f(m)
	}
	pairs := func(p analysis.PairStats) string { return fmt.Sprintf("%d/%d", p.Reachable, p.Total) }
	ints := func(xs []int) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ",")
	}
	rows := []struct {
		name string
		f    func(*Metrics) string
	}{
		{"engine", func(m *Metrics) string { return m.Engine }},
		{"plan key", func(m *Metrics) string { return m.Key }},
		{"CA pairs reachable", func(m *Metrics) string { return pairs(m.CAPairs) }},
		{"switch pairs reachable", func(m *Metrics) string { return pairs(m.SwitchPairs) }},
		{"deadlock-free", func(m *Metrics) string { return fmt.Sprint(m.DeadlockFree) }},
		{"VLs used", func(m *Metrics) string { return ints(m.VLsUsed) }},
		{"SLs used", func(m *Metrics) string { return ints(m.SLsUsed) }},
		{"LIDs used", func(m *Metrics) string { return fmt.Sprint(m.LIDsUsed) }},
		{"all-to-all max load", func(m *Metrics) string { return fmt.Sprintf("%d (%.3f)", m.MaxLoad, m.MaxLoadNormalized) }},
		{"worst shift load", func(m *Metrics) string { return fmt.Sprintf("%d (%d shifts)", m.WorstShift, m.Shifts) }},
		{"eBB", func(m *Metrics) string { return fmt.Sprintf("%.3f", m.EBB) }},
		{"hops max/avg", func(m *Metrics) string { return fmt.Sprintf("%d/%.2f", m.MaxHops, m.AvgHops) }},
	}
	fmt.Fprintf(w, "  %-24s %-24s %s\n", "", aName, bName)
	for _, r := range rows {
		fmt.Fprintf(w, "  %-24s %-24s %s\n", r.name, col(a, r.f), col(b, r.f))
	}
}
