// Command renaming is a LID assigner for paths-form routes implementing the
// destination renaming of López, Flich and Duato, "Deadlock-free Routing in
// InfiniBand through Destination Renaming" (ICPP 2001), Figures 3-4: each
// path in order takes the first LID of its destination with no conflicting
// entry along it. Each CA port gets the smallest LMC covering the LIDs its
// incoming paths need; see plugins/lib/lids for the plan it builds.
package main

import "github.com/ibsm/ibsm/plugins/lib/lids"

func main() { lids.Main(lids.Renaming) }
