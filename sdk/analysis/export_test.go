package analysis

import "github.com/ibsm/ibsm/sdk/plan"

// General returns opt with every LID on the general path, which the
// tests compare with the single-pass path of plain LIDs.
func General(opt Options) Options {
	opt.general = true
	return opt
}

// LeanChunks reports how many chunks of r's LIDs the verdict-only path
// takes under opt (all of them, or it stops at the first that it leaves
// to runChunk), and how many chunks there are.
func LeanChunks(r *plan.Realized, v *plan.VLPlan, opt Options) (lean, chunks int, err error) {
	f, err := newFabric(r, v)
	if err != nil {
		return 0, 0, err
	}
	vt := f.leanVL(opt)
	w := newWorker(f, opt)
	w.packedVT = int8(vt)
	starts := f.chunks()
	for c := range len(starts) - 1 {
		if vt >= 0 && w.leanChunk(f.lidList[starts[c]:starts[c+1]]) {
			lean++
		}
	}
	return lean, len(starts) - 1, nil
}
