package vl

import "github.com/ibsm/ibsm/sdk/plan"

// HopPlanSLs lets the external tests squeeze HopPlan into fewer than 16 SLs.
var HopPlanSLs = hopPlan

// HopPlanWide is HopPlan on the wide state word whatever the port counts,
// so tests can compare it with the narrow one.
func HopPlanWide(f *Fabric, ly *Layers, tr *Trees, maxVLs int) (*plan.VLPlan, Stats, error) {
	return hopPlanW[uint64](f, ly, tr, newHopIndex(f), maxVLs, MaxSLs)
}

// ACROWords is ACRO on the children mask word of the given bits (16, 32 or
// 64) whatever the port counts, so tests can compare the widths.
func ACROWords(bits int) Algorithm {
	switch bits {
	case 16:
		return acroW[uint16]
	case 32:
		return acroW[uint32]
	}
	return acroW[uint64]
}
