// Command color-l is a LID assigner for paths-form routes implementing the
// color/L heuristic (§4.3) of Nienaber, Yuan and Duan, "On LID Assignment in
// InfiniBand Networks" (ANCS 2007): colour the split graph, most split path
// first (the paper's best). Each CA port gets the smallest LMC covering the
// LIDs its incoming paths need; see plugins/lib/lids for the plan it
// builds.
package main

import "github.com/ibsm/ibsm/plugins/lib/lids"

func main() { lids.Main(lids.ColorL) }
