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

// auditChunk is how many reads the audit makes between two looks at
// whether a trap waits: at ft3-56 a tick's share is ~100 k reads (seconds
// on a loaded host), which a cable event's trap would otherwise wait out.
const auditChunk = 4096

// audit reads back the next share of what the programmer wrote to fab's
// nodes and repairs what differs (program.Programmer.Audit). It returns
// the switches found reset (port-0 LID lost), which the caller re-reads so
// that the incremental sweep re-programs them whole. It runs on the sweep
// goroutine, never concurrently with programming. It reads in chunks
// (of auditChunk) and stops early, leaving the rest of the share for the
// next tick, when yield says something more urgent waits (nil: never).
func (s *SM) audit(ctx context.Context, fab *discovery.Fabric, chunk int, yield func() bool) []discovery.PortRef {
	budget := s.auditBudget()
	if budget == 0 || fab == nil {
		return nil
	}
	var rep program.AuditReport
	for left := budget; left > 0; {
		r := s.prog.Audit(ctx, fab, min(left, chunk))
		left = min(left, r.Items) - min(left, chunk)
		rep = addAudit(rep, r)
		if r.Stopped || r.Items == 0 || yield != nil && yield() {
			break
		}
	}
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

// addAudit sums two reports of one rotation's consecutive calls.
func addAudit(a, b program.AuditReport) program.AuditReport {
	a.Reads += b.Reads
	a.ReadFailures += b.ReadFailures
	a.Differences += b.Differences
	a.Repaired += b.Repaired
	a.RepairFailures += b.RepairFailures
	a.Reset = append(a.Reset, b.Reset...)
	a.Wrapped = a.Wrapped || b.Wrapped
	a.Items = b.Items
	a.Stopped = b.Stopped
	if a.FirstFailure == nil {
		a.FirstFailure = b.FirstFailure
	}
	return a
}
