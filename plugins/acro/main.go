// Command acro is ACRO (Kawano et al., "ACRO: Assignment of Channels in
// Reverse Order to Make Arbitrary Routing Deadlock-free") as a VL assigner:
// on each destination's channel dependency tree, channels are settled from
// the destination backwards, layer by layer, so a packet may drop to a lower
// VL along its path. The switch SL2VL tables (in, out, SL) carry those drops.
// The plan gives each DLID one SL (no per-source overrides unless a DLID fits
// no SL class whole): DLIDs share an SL class whose hops agree on their VL,
// VLs never rise along a route and same-VL hops follow ACRO's channel order,
// so the plan is deadlock-free by construction (see vl.HopPlan). It may use a
// few more VLs than ACRO's layers to fit 16 SLs, never more than the links
// carry, and refuses when even that is not enough.
package main

import "github.com/ibsm/ibsm/plugins/lib/vl"

func main() { vl.Main(vl.KindACRO) }
