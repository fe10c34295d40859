package torus

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// VLStats describes a VL plan for logs and reports.
type VLStats struct {
	VLs, SLs int
	// PerLevel is the VLs of one QoS level: 1, plus 1 with datelines,
	// plus 1 for first hops when the fabric has faults.
	PerLevel  int
	Datelines []int
	FirstHop  bool
}

// SL is the SL toward destination switch t within QoS level 0: bit j set
// when the destination's "+" arcs in the j-th dateline dimension cross the
// wrap link (its coordinate is below their reach).
func (g *Grid) SL(t int32) uint8 {
	var sl uint8
	for j, d := range g.Dateline() {
		if x := g.Coord[t][d]; x < g.plusReach(d, x) {
			sl |= 1 << j
		}
	}
	return sl
}

// VLPlan assigns SLs per DLID and the SL2VL tables of every switch for the
// dimension-order routes realised in r, for levels QoS levels within
// maxVLs VLs. Level l uses SLs l·2^b .. (l+1)·2^b−1 (b dateline bits) and
// VLs l·PerLevel ..; DLIDs get level 0's SL.
func (g *Grid) VLPlan(r *plan.Realized, maxVLs, levels int) (*plan.VLPlan, VLStats, error) {
	ds := g.Dateline()
	st := VLStats{Datelines: ds, PerLevel: 1, FirstHop: g.Faults > 0}
	if len(ds) > 0 {
		st.PerLevel++
	}
	if st.FirstHop {
		st.PerLevel++
	}
	nb := len(ds)
	if levels < 1 {
		return nil, st, fmt.Errorf("torus-vl: qos_levels = %d; give 1 or more", levels)
	}
	if st.SLs = levels << nb; st.SLs > 16 {
		return nil, st, fmt.Errorf("torus-vl: %d QoS levels × %d SLs (one bit per wrapped dimension of 5+ switches, %d here) need %d SLs, more than 16; lower qos_levels or use another engine", levels, 1<<nb, nb, st.SLs)
	}
	if st.VLs = levels * st.PerLevel; st.VLs > maxVLs {
		why := fmt.Sprintf("%d per QoS level", st.PerLevel)
		if st.FirstHop {
			why += fmt.Sprintf(", one of them for the first hops around %d fault(s)", g.Faults)
		}
		return nil, st, fmt.Errorf("torus-vl: needs %d VLs (%s; %d QoS level(s)) but the budget is %d; lower qos_levels, raise the ports' VLCap, or use an engine that fits (nue, updn)", st.VLs, why, levels, maxVLs)
	}
	t := g.T
	sw := t.Switches()
	eps := t.Endpoints()
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(r.TopLID)+1), VLs: st.VLs}
	for lid, o := range r.LIDOwner {
		if o == 0 {
			continue
		}
		if h, _ := Home(t, eps[o-1]); h >= 0 {
			v.SLByDLID[lid] = g.SL(h)
		}
	}
	vl := func(sl, f int) uint8 {
		if l := sl >> nb; l < levels {
			return uint8(l*st.PerLevel + f)
		}
		return 0
	}
	for sl := range v.Default {
		v.Default[sl] = vl(sl, 0)
	}
	dimOf := make([]int, 256)
	for s, n := range sw {
		for i := range dimOf {
			dimOf[i] = -1
		}
		for k, ports := range g.nb[s] {
			for _, p := range ports {
				dimOf[p] = k / 2
			}
		}
		live := []uint8{}
		for p := 1; p < len(t.Nodes[n].Ports); p++ {
			if t.IsLinkUp(topology.PortRef{Node: n, Port: uint8(p)}) {
				live = append(live, uint8(p))
			}
		}
		for _, in := range append([]uint8{0}, live...) {
			first := in == 0 || dimOf[in] < 0 // from a CA or the switch itself
			for _, out := range live {
				if out == in {
					continue
				}
				e := plan.SL2VLEntry{Node: n, In: in, Out: out}
				for sl := range e.VL {
					f := 0
					switch d := dimOf[out]; {
					case d < 0:
					case st.FirstHop && first:
						f = st.PerLevel - 1
					default:
						for j, dd := range ds {
							if dd == d {
								f = sl >> j & 1
							}
						}
					}
					e.VL[sl] = vl(sl, f)
				}
				if e.VL != v.Default {
					v.SL2VL = append(v.SL2VL, e)
				}
			}
		}
	}
	return v, st, nil
}
