package analysistest

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// RingPositions returns, per switch index of a Ring topology, its position
// along port 1 (position p's port 1 is cabled to position p+1's port 2),
// starting from switch index 0.
func RingPositions(t *topology.Topology) ([]int, error) {
	sws := t.Switches()
	pos := make([]int, len(sws))
	for i := range pos {
		pos[i] = -1
	}
	cur := int32(0)
	for p := range sws {
		if pos[cur] >= 0 {
			return nil, fmt.Errorf("ring closes after %d of %d switches", p, len(sws))
		}
		pos[cur] = p
		peer := t.Port(topology.PortRef{Node: sws[cur], Port: 1}).Peer
		if !peer.Connected() || t.SwitchIndex(peer.Node) < 0 {
			return nil, fmt.Errorf("switch 0x%016x port 1 leads to no switch: not a Ring", t.Nodes[sws[cur]].GUID)
		}
		cur = t.SwitchIndex(peer.Node)
	}
	return pos, nil
}

// ClockwiseRing realises a Ring routed one way only: every switch forwards
// every LID it does not deliver out of port 1. On one VL that routing has a
// credit loop around the ring.
func ClockwiseRing(t *topology.Topology, lmc uint8) (*plan.Realized, error) {
	r, err := Realize(t, MinHop(t), lmc, plan.DLIDBase)
	if err != nil {
		return nil, err
	}
	for s := range r.LFT {
		for lid := 1; lid <= int(r.TopLID); lid++ {
			o := r.LIDOwner[lid]
			if o == 0 {
				continue
			}
			home, port := attachment(t, o-1)
			if home == int32(s) {
				r.LFT[s][lid] = port
			} else {
				r.LFT[s][lid] = 1
			}
		}
	}
	return r, nil
}

// attachment is the switch an endpoint hangs off and the switch port that
// delivers to it (0 for a switch's own port).
func attachment(t *topology.Topology, e int32) (int32, uint8) {
	ref := t.Endpoints()[e]
	if s := t.SwitchIndex(ref.Node); s >= 0 {
		return s, 0
	}
	peer := t.Port(ref).Peer
	return t.SwitchIndex(peer.Node), peer.Port
}

// DatelineVLs is a two-VL plan for ClockwiseRing in which the VL changes in
// the middle of paths, the classic dateline. A route from ring position s
// to position d "crosses" when s > d: it must take the link from the last
// position back to position 0. Routes that do not cross use SL 0 (the
// DLIDs' default) and VL 1 everywhere. A crossing route gets the
// per-source SL override 1+d and rides VL 0 until the last position, whose
// out-channel (the dateline) and every hop after it are on VL 1. No VL
// holds a dependency around the ring, but dependencies go from VL 0 into
// VL 1, and VL 1 channels also carry VL 0 traffic.
//
// With dropBack the hops after the dateline return to VL 0: that closes a
// credit loop VL 0 -> ... -> VL 0 -> VL 1 (dateline) -> VL 0 around the
// ring (for rings of four or more switches).
//
// Every LID of every range gets the crossing source's override, so the
// plan holds for LMC > 0 under AllLIDs.
func DatelineVLs(r *plan.Realized, dropBack bool) (*plan.VLPlan, error) {
	t := r.Topo
	pos, err := RingPositions(t)
	if err != nil {
		return nil, err
	}
	n := len(pos)
	if n > 15 {
		return nil, fmt.Errorf("dateline plan needs one SL per ring position: %d switches > 15", n)
	}
	eps := t.Endpoints()
	posOf := make([]int, len(eps))
	for e := range eps {
		s, _ := attachment(t, int32(e))
		if s < 0 {
			return nil, fmt.Errorf("endpoint %d is not attached to a switch", e)
		}
		posOf[e] = pos[s]
	}
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(r.TopLID)+1), VLs: 2}
	for src := range eps {
		for dst := range eps {
			if src == dst || posOf[src] <= posOf[dst] {
				continue
			}
			p := r.LIDs.Ports[dst]
			for k := 0; k < p.Count(); k++ {
				v.Overrides = append(v.Overrides, plan.SLOverride{Src: int32(src), DLID: p.Base + uint16(k), SL: uint8(1 + posOf[dst])})
			}
		}
	}
	// The same table for every (in, out) of a switch: only its position
	// and the SL decide the VL.
	for s, node := range t.Switches() {
		j := pos[s]
		var tab [16]uint8
		tab[0] = 1
		for d := 0; d < n; d++ {
			switch {
			case j == n-1:
				tab[1+d] = 1 // the dateline
			case j > d:
				tab[1+d] = 0 // before the dateline
			case dropBack:
				tab[1+d] = 0
			default:
				tab[1+d] = 1 // after the dateline
			}
		}
		np := t.Nodes[node].NumPorts()
		for in := 0; in <= np; in++ {
			for out := 1; out <= np; out++ {
				if in != out {
					v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: node, In: uint8(in), Out: uint8(out), VL: tab})
				}
			}
		}
	}
	return v, nil
}
