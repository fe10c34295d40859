package sm

import (
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/rollout"
)

// programRecord is the record of what this SM last programmed as the
// Programmer uses it (a restart restores from it what it would read back;
// every programming marks it stale until recorded), nil without a state
// directory: a nil *Recorder inside the interface would not be nil.
func programRecord(rec *rollout.Recorder) program.Record {
	if rec == nil {
		return nil
	}
	return rec
}
