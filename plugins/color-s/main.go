// Command color-s is a LID assigner for paths-form routes implementing
// seed 000's color/S heuristic (§4.3): colour the split graph, least split path first.
// Each CA port gets the smallest LMC covering the LIDs its incoming paths
// need; see plugins/internal/lids for the plan it builds.
package main

import "github.com/ibsm/ibsm/plugins/internal/lids"

func main() { lids.Main(lids.ColorS) }
