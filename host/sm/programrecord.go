package sm

import (
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/rollout"
)

// programRecord is the record of what this SM last programmed as the
// Programmer uses it (a restart restores from it what it would read back;
// every programming marks it stale until recorded), nil without a state
// directory: a nil *Recorder inside the interface would not be nil. With
// the audit off (sm.audit_smps = 0) nothing would ever read restored
// tables back, so the record is only kept stale-marked, never restored
// from.
func programRecord(rec *rollout.Recorder, auditOff bool) program.Record {
	switch {
	case rec == nil:
		return nil
	case auditOff:
		return markOnly{rec}
	}
	return rec
}

// markOnly keeps the record's stale mark but restores nothing.
type markOnly struct{ *rollout.Recorder }

func (markOnly) Held() (*program.Held, error) { return nil, nil }
