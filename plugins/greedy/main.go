// Command greedy is a LID assigner for paths-form routes implementing the
// greedy heuristic (Figure 5) of Nienaber, Yuan and Duan, "On LID Assignment
// in InfiniBand Networks" (ANCS 2007): fill one configuration (LID) at a time
// with every remaining path that does not split with it. Each CA port gets
// the smallest LMC covering the LIDs its incoming paths need; see
// plugins/lib/lids for the plan it builds.
package main

import "github.com/ibsm/ibsm/plugins/lib/lids"

func main() { lids.Main(lids.Greedy) }
