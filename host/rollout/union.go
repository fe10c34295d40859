package rollout

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
)

// union returns one plan holding the forwarding of both a and b (same
// topology, LIDs and SLs): every destination gets twice its LIDs (LMC+1),
// the lower half forwarded by a's tables, the upper half by b's. Analysed
// with every LID in use, its channel dependency graph is the union of a's
// and b's, so a cycle in it is a credit loop packets of both states can
// close while the tables change.
func union(a, b Plan) (Plan, error) {
	l := a.Rz.LIDs
	ports := make([]plan.PortLID, len(l.Ports))
	top := 0
	for e, p := range l.Ports {
		if p.LMC >= 7 {
			return Plan{}, fmt.Errorf("endpoint %d has LMC 7; the union of two states needs LMC+1 (check not possible, so the stage is refused)", e)
		}
		ports[e] = plan.PortLID{Base: p.Base << 1, LMC: p.LMC + 1}
		top = max(top, int(ports[e].Base)+ports[e].Count()-1)
	}
	if top > plan.MaxUnicastLID {
		return Plan{}, fmt.Errorf("the union of two states needs LIDs up to %d, beyond the unicast space 0x%X (top LID %d): check not possible, so the stage is refused", top, plan.MaxUnicastLID, a.Rz.TopLID)
	}
	nsw := len(a.Rz.LFT)
	back := make([]uint8, nsw*(top+1))
	lft := make([][]uint8, nsw)
	for s := range lft {
		lft[s] = back[s*(top+1) : (s+1)*(top+1)]
		for i := range lft[s] {
			lft[s][i] = plan.NoPort
		}
	}
	owner := make([]int32, top+1)
	// lidMap[u] is the original LID union LID u stands for.
	lidMap := make([]uint16, top+1)
	for e, p := range l.Ports {
		half := p.Count()
		for k := 0; k < 2*half; k++ {
			u := int(ports[e].Base) + k
			orig := int(p.Base) + k%half
			src := a.Rz
			if k >= half {
				src = b.Rz
			}
			for s := range lft {
				lft[s][u] = src.LFT[s][orig]
			}
			owner[u] = int32(e) + 1
			lidMap[u] = uint16(orig)
		}
	}
	lp := &plan.LIDPlan{Ports: ports, Rule: l.Rule}
	lp.Overrides = append(lp.Overrides, l.Overrides...)
	rz := &plan.Realized{Topo: a.Rz.Topo, LFT: lft, TopLID: uint16(top), LIDOwner: owner, LIDs: lp}
	var v *plan.VLPlan
	if b.VLs != nil {
		vv := *b.VLs
		vv.SLByDLID = make([]uint8, top+1)
		for u := range vv.SLByDLID {
			if owner[u] != 0 {
				vv.SLByDLID[u] = sl(b.VLs, int(lidMap[u]))
			}
		}
		vv.Overrides = nil
		for _, o := range b.VLs.Overrides {
			if int(o.DLID) >= len(a.Rz.LIDOwner) || a.Rz.LIDOwner[o.DLID] == 0 {
				continue // a DLID nobody owns: the verifier reports it
			}
			p := l.Ports[a.Rz.LIDOwner[o.DLID]-1]
			u := ports[a.Rz.LIDOwner[o.DLID]-1].Base + (o.DLID - p.Base)
			vv.Overrides = append(vv.Overrides,
				plan.SLOverride{Src: o.Src, DLID: u, SL: o.SL},
				plan.SLOverride{Src: o.Src, DLID: u + uint16(p.Count()), SL: o.SL})
		}
		v = &vv
	}
	return Plan{Rz: rz, VLs: v}, nil
}
