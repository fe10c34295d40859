package main

import (
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/vl"
	"github.com/ibsm/ibsm/plugins/lib/vl/vltest"
	"github.com/ibsm/ibsm/sdk/plan"
)

func TestConformance(t *testing.T) { vltest.Conformance(t, vl.KindACRO, oneSLPerDLID) }

// oneSLPerDLID: acro's plan is a rule, not per-pair data.
func oneSLPerDLID(t *testing.T, real *plan.Realized, v *plan.VLPlan) {
	if len(v.Overrides) != 0 || len(v.SLByDLID) != int(real.TopLID)+1 {
		t.Errorf("plan has %d per-source overrides and %d SLByDLID entries, want none and %d", len(v.Overrides), len(v.SLByDLID), int(real.TopLID)+1)
	}
}
