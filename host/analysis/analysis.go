// Package analysis is the host's name for sdk/analysis, which measures a
// realised routing (reachability, loops, bad LFT entries, hops, channel
// load, the (channel, VL) dependency graph). The code lives in the SDK so
// that plugins and the sdktest conformance kit run exactly what the host
// runs; these aliases keep the host's imports and API as they were.
package analysis

import (
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
)

type (
	Options     = analysis.Options
	Report      = analysis.Report
	PairStats   = analysis.PairStats
	Unreachable = analysis.Unreachable
	Loop        = analysis.Loop
	BadEntry    = analysis.BadEntry
	LoadStats   = analysis.LoadStats
	VLStats     = analysis.VLStats
	VLProblem   = analysis.VLProblem
	ShiftStats  = analysis.ShiftStats
	EBBStats    = analysis.EBBStats
)

// Failure codes of Unreachable.Reason and BadEntry.Code.
const (
	FailNoRoute     = analysis.FailNoRoute
	FailNoSuchPort  = analysis.FailNoSuchPort
	FailUnconnected = analysis.FailUnconnected
	FailDown        = analysis.FailDown
	FailPort0       = analysis.FailPort0
	FailWrongPort   = analysis.FailWrongPort
	FailLoop        = analysis.FailLoop
	FailSourceLink  = analysis.FailSourceLink
)

// Options.Shifts values and traffic defaults.
const (
	ShiftsAuto         = analysis.ShiftsAuto
	ShiftsAll          = analysis.ShiftsAll
	AllShiftsMaxCAs    = analysis.AllShiftsMaxCAs
	DefaultShiftSample = analysis.DefaultShiftSample
	DefaultBisections  = analysis.DefaultBisections
)

// Analyse is sdk/analysis.Analyse.
func Analyse(r *plan.Realized, vls *plan.VLPlan, opt Options) (*Report, error) {
	return analysis.Analyse(r, vls, opt)
}

// ParseShifts is sdk/analysis.ParseShifts.
func ParseShifts(v string) (int, error) { return analysis.ParseShifts(v) }
