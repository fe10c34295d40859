package lids

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// CheckRealises realises the plan into forwarding tables and checks that
// every path (src, dst) takes exactly its hops when src sends to the DLID
// the plan selects for the pair — or, for a pair's later paths, to some LID
// of the destination. It is the property every heuristic must keep and
// costs O(total hops) after Realize.
func CheckRealises(t *topology.Topology, paths []plan.Path, lp *plan.LIDPlan) error {
	rz, err := plan.Realize(t, nil, lp)
	if err != nil {
		return err
	}
	ov := make(map[[2]int32]uint8, len(lp.Overrides))
	for _, o := range lp.Overrides {
		ov[[2]int32{o.Src, o.Dst}] = o.Offset
	}
	first := map[[2]int32]bool{}
	follows := func(p *plan.Path, lid uint16) bool {
		for _, h := range p.Hops {
			s := t.SwitchIndex(h.Switch)
			if rz.LFT[s][lid] != h.Out {
				return false
			}
		}
		return true
	}
	for i := range paths {
		p := &paths[i]
		if len(p.Hops) == 0 {
			continue
		}
		key := [2]int32{p.Src, p.Dst}
		pl := lp.Ports[p.Dst]
		if !first[key] {
			first[key] = true
			off, ok := ov[key]
			if !ok {
				off = uint8(lp.DLID(p.Src, p.Dst) - pl.Base)
			}
			lid := pl.Base + uint16(off)
			if !follows(p, lid) {
				return fmt.Errorf("path %d (%d -> %d) is not what DLID %d realises", i, p.Src, p.Dst, lid)
			}
			continue
		}
		ok := false
		for k := 0; k < pl.Count() && !ok; k++ {
			ok = follows(p, pl.Base+uint16(k))
		}
		if !ok {
			return fmt.Errorf("path %d (%d -> %d, not the pair's first) is realised by none of the destination's LIDs", i, p.Src, p.Dst)
		}
	}
	return nil
}
