package vl

// HopPlanSLs lets the external tests squeeze HopPlan into fewer than 16 SLs.
var HopPlanSLs = hopPlan
