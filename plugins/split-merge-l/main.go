// Command split-merge-l is a LID assigner for paths-form routes implementing
// seed 000's split-merge/L heuristic (Figure 7): split the paths at switches used by the most paths first, then merge greedily.
// Each CA port gets the smallest LMC covering the LIDs its incoming paths
// need; see plugins/internal/lids for the plan it builds.
package main

import "github.com/ibsm/ibsm/plugins/internal/lids"

func main() { lids.Main(lids.SplitMergeL) }
