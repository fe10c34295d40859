// Package verify decides whether a plugin's plan may be programmed. The host
// never trusts plugin output: before any Set it checks LIDs, forwarding
// tables, reachability, loops, per-VL deadlock freedom and VL capabilities.
// The checks live in sdk/check, so that the sdktest conformance kit runs
// the very code the host runs; this package keeps the host's API and adds
// the host-only checks (P_Key tables).
package verify

import (
	"github.com/ibsm/ibsm/host/analysis"
	"github.com/ibsm/ibsm/sdk/check"
)

// Rules names the verifier's rules (see check.Rules).
const Rules = check.Rules

type (
	Plan         = check.Plan
	Options      = check.Options
	SwitchPolicy = check.SwitchPolicy
	Verdict      = check.Verdict
	Error        = check.Error
)

// Switch-to-switch policies (routing.switch_to_switch).
const (
	SwitchRequired   = check.SwitchRequired
	SwitchBestEffort = check.SwitchBestEffort
)

// Verify checks p (see check.Verify).
func Verify(p Plan, opt Options) (*analysis.Report, error) { return check.Verify(p, opt) }

// Check checks p and returns its verdict (see check.Check).
func Check(p Plan, opt Options) (*Verdict, error) { return check.Check(p, opt) }
