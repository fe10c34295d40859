package rollout

import (
	"encoding/json"
	"fmt"
	"io"
)

// What `ibsm plan diff` compared a plan against.
const (
	// SourceDaemon: read back from the fabric by the daemon running on
	// the state directory, asked over its control socket.
	SourceDaemon = "daemon"
	// SourceFabric: read back from the fabric by the command itself.
	SourceFabric = "fabric"
	// SourceState: the state directory's record of what the SM last
	// programmed (ProgrammedFile).
	SourceState = "state"
)

// PlanDiff is what a plan would change against what is programmed.
type PlanDiff struct {
	Engine    string `json:"engine"`
	Key       string `json:"plan_key"`
	Candidate bool   `json:"candidate"`
	Source    string `json:"source"`
	// From says in words what the plan was compared against.
	From string `json:"from"`
	// Unread is what could not be read back ("" when everything was):
	// it counts as changed.
	Unread string `json:"unread,omitempty"`
	*Diff
	// SwitchesUnlisted and LIDsUnlisted count entries left out of the
	// lists so that the daemon's answer fits the control socket's line;
	// the totals include them.
	SwitchesUnlisted int `json:"switches_unlisted,omitempty"`
	LIDsUnlisted     int `json:"lids_unlisted,omitempty"`
}

// Fit shortens the per-switch and per-LID lists until the encoded diff
// takes at most limit bytes.
func (p *PlanDiff) Fit(limit int) {
	size := func(v any) int {
		b, _ := json.Marshal(v)
		return len(b) + 1
	}
	used := size(PlanDiff{Engine: p.Engine, Key: p.Key, Source: p.Source, From: p.From, Unread: p.Unread, Diff: &Diff{}}) + 200
	keep := func(n int, at func(int) any) int {
		for i := 0; i < n; i++ {
			if used += size(at(i)); used > limit {
				return i
			}
		}
		return n
	}
	ns := keep(len(p.Switches), func(i int) any { return p.Switches[i] })
	p.SwitchesUnlisted, p.Switches = len(p.Switches)-ns, p.Switches[:ns]
	nl := keep(len(p.LIDs), func(i int) any { return p.LIDs[i] })
	p.LIDsUnlisted, p.LIDs = len(p.LIDs)-nl, p.LIDs[:nl]
}

// Text writes the diff for an operator.
func (p *PlanDiff) Text(w io.Writer) {
	what := "configured plan"
	if p.Candidate {
		what = "candidate plan"
	}
	fmt.Fprintf(w, "%s %s (engine %s) against %s:\n", what, p.Key, p.Engine, p.From)
	p.Diff.Text(w)
	if p.SwitchesUnlisted > 0 || p.LIDsUnlisted > 0 {
		fmt.Fprintf(w, "(%d more switches and %d more LID changes not listed: the daemon's answer is capped; stop it and use --from state, or --json on a smaller fabric)\n", p.SwitchesUnlisted, p.LIDsUnlisted)
	}
	if p.Unread != "" {
		fmt.Fprintf(w, "not read back, counted as changed: %s\n", p.Unread)
	}
}
