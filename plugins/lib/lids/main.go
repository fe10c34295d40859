package lids

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk"
)

// Main is the whole main function of the six first-party LID assigner
// binaries: each serves one heuristic under that heuristic's name, which is
// also the plugin name operators write in HCL and the logger's name.
func Main(h Heuristic) {
	if !h.Valid() {
		// A binary built with an unknown heuristic is a programming error;
		// failing at start names it instead of failing every AssignLIDs.
		panic(fmt.Sprintf("lids.Main: unknown LID heuristic %q (want one of %v)", h, Heuristics))
	}
	sdk.Serve(NewPlugin(h, sdk.Logger(string(h))))
}
