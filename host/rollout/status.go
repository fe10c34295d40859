package rollout

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ibsm/ibsm/sdk/topology"
)

// Text writes the status for an operator: both plans side by side, what
// promotion would send, the promotion rule's progress and the rollout.
func (s *Status) Text(w io.Writer) {
	fmt.Fprintf(w, "rollout status at %s (topology %s)\n", s.Updated.Format(time.RFC3339), s.Topology)
	sideBySide(w, s.Active, s.Candidate, "active", "candidate")
	if s.Error != "" {
		fmt.Fprintf(w, "candidate failed: %s\n", s.Error)
	}
	if c := s.Changes; c != nil {
		fmt.Fprintf(w, "promotion would send %d LFT blocks and %d SL2VL tables to %d switches; %d endpoint LIDs change\n",
			c.LFTBlocks, c.SL2VLTables, c.SwitchesChanged, c.LIDsChanged)
	}
	if s.Stageable != "" {
		fmt.Fprintf(w, "cannot be staged: %s\n", s.Stageable)
	}
	fmt.Fprintf(w, "shadow computation: %.0f ms wall, %.0f ms CPU\n", s.ShadowMillis, s.ShadowCPUMillis)
	switch {
	case s.Promote == "auto" && len(s.Unmet) > 0:
		fmt.Fprintf(w, "promote: auto, waiting: %s unmet (streak %d of %d)\n", strings.Join(s.Unmet, ", "), s.Streak, s.Need)
	case s.Promote == "auto":
		fmt.Fprintf(w, "promote: auto, criteria %s met %d of %d sweeps\n", strings.Join(s.Require, ", "), s.Streak, s.Need)
	default:
		fmt.Fprintf(w, "promote: manual (ibsm rollout promote)\n")
	}
	if r := s.Rollout; r != nil {
		r.Text(w)
	}
}

// Text writes the rollout's steps and where it stands.
func (r *Rollout) Text(w io.Writer) {
	fmt.Fprintf(w, "rollout %s: %s, %d of %d steps applied, %d LFT blocks sent of %d that differ", r.ID, r.Phase, r.Applied, len(r.Steps), r.BlocksSent, r.BlocksDiffer)
	if r.Reason != "" {
		fmt.Fprintf(w, "; %s", r.Reason)
	}
	fmt.Fprintln(w)
	for i, st := range r.Steps {
		mark := " "
		switch {
		case i < r.Applied:
			mark = "x"
		case i == r.Entering:
			mark = ">"
		}
		fmt.Fprintf(w, "  [%s] step %d stage %-12s %4d switches", mark, i+1, st.Stage, len(st.GUIDs))
		if st.Last {
			fmt.Fprintf(w, ", then dwell %s", st.Dwell)
		}
		fmt.Fprintln(w)
	}
}

// Resolve fills the switch indices of steps loaded from the state file.
func Resolve(t *topology.Topology, steps []Step) error {
	for i := range steps {
		steps[i].Switches = steps[i].Switches[:0]
		for _, g := range steps[i].GUIDs {
			n := t.NodeByGUID(g)
			if n < 0 || t.SwitchIndex(n) < 0 {
				return fmt.Errorf("step %d names switch 0x%016x, which is not in the fabric", i+1, g)
			}
			steps[i].Switches = append(steps[i].Switches, t.SwitchIndex(n))
		}
	}
	return nil
}
