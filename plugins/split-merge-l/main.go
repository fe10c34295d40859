// Command split-merge-l is a LID assigner for paths-form routes implementing
// the split-merge/L heuristic (Figure 7) of Nienaber, Yuan and Duan, "On LID
// Assignment in InfiniBand Networks" (ANCS 2007): split the paths at switches
// used by the most paths first, then merge greedily. Each CA port gets the
// smallest LMC covering the LIDs its incoming paths need; see
// plugins/lib/lids for the plan it builds.
package main

import "github.com/ibsm/ibsm/plugins/lib/lids"

func main() { lids.Main(lids.SplitMergeL) }
