package sm

import (
	"context"
	"fmt"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/program"
)

// DefaultAuditSMPs is the least read budget per light sweep when
// Options.AuditSMPs is 0. The default budget grows with the fabric so that
// one rotation over everything programmed takes at most DefaultAuditPeriod:
// a table changed behind the SM's back is repaired within minutes on any
// fabric size (ft3-36: ~11,300 reads per 10 s sweep, ~60 ms).
const (
	DefaultAuditSMPs   = 300
	DefaultAuditPeriod = 5 * time.Minute
)

// AuditStats counts what the periodic audit read back and repaired.
type AuditStats = program.AuditStats

// AuditStats returns the audit's counters (safe to call while Run sweeps).
func (s *SM) AuditStats() AuditStats { return s.prog.AuditStats() }

func (s *SM) auditBudget() int {
	switch n := s.Opts.AuditSMPs; {
	case n < 0:
		return 0
	case n == 0:
		interval := s.Opts.SweepInterval
		if interval <= 0 {
			interval = defaultSweepInterval
		}
		sweeps := max(1, int(DefaultAuditPeriod/interval))
		return max(DefaultAuditSMPs, (int(s.auditItems.Load())+sweeps-1)/sweeps)
	default:
		return n
	}
}

// audit reads back the next share of what the programmer wrote to fab's
// nodes and repairs what differs (program.Programmer.Audit). It returns
// the switches found reset (port-0 LID lost), which the caller re-reads so
// that the incremental sweep re-programs them whole. It runs on the sweep
// goroutine, never concurrently with programming.
func (s *SM) audit(ctx context.Context, fab *discovery.Fabric) []discovery.PortRef {
	budget := s.auditBudget()
	if budget == 0 || fab == nil {
		return nil
	}
	rep := s.prog.Audit(ctx, fab, budget)
	s.auditItems.Store(int64(rep.Items))
	if rep.Differences > 0 || rep.ReadFailures > 0 {
		s.Log.Info("audit", "read", rep.Reads, "read_failures", rep.ReadFailures, "differences", rep.Differences,
			"repaired", rep.Repaired, "repair_failures", rep.RepairFailures, "reset_switches", len(rep.Reset), "items", rep.Items)
	}
	if rep.Stopped {
		s.Log.Info("audit stopped at a read that failed; the next sweep looks for what changed, the rest is read after it",
			"error", rep.FirstFailure)
	}
	if rep.Differences > 0 {
		// Tables changed behind the SM's back: a staged rollout's health
		// gate fails on it.
		s.disturb(fmt.Sprintf("the audit found %d programmed items changed on the fabric", rep.Differences))
	}
	if rep.Wrapped {
		st := s.prog.AuditStats()
		s.Log.Debug("audit rotation complete", "items", rep.Items, "rotations", st.Rotations, "differences_total", st.Differences, "repaired_total", st.Repaired)
	}
	var out []discovery.PortRef
	for _, g := range rep.Reset {
		out = append(out, discovery.PortRef{GUID: g, Port: 0})
	}
	return out
}
