package report

import (
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// loads are per directed channel (the port a packet leaves by).
type loads struct {
	load, worst map[topology.PortRef]int64
	shifts      int
}

// caDests are the CA endpoints and their base LIDs (the DLID every source
// uses toward them under LMC 0; with LMC > 0 the page shows the base
// LID's plane).
func caDests(rz *plan.Realized) ([]topology.PortRef, []uint16) {
	t := rz.Topo
	var eps []topology.PortRef
	var lids []uint16
	for i, ep := range t.Endpoints() {
		if t.Nodes[ep.Node].Type == topology.Switch || rz.LIDs == nil || i >= len(rz.LIDs.Ports) || rz.LIDs.Ports[i].Base == 0 {
			continue
		}
		eps, lids = append(eps, ep), append(lids, rz.LIDs.Ports[i].Base)
	}
	return eps, lids
}

// computeLoads counts, for every channel, the CA→CA routes of uniform
// all-to-all traffic that cross it (one forwarding tree per destination,
// O(switches) each), and the most routes that cross it under any one
// shift permutation i → i+k mod N of the CAs (all shifts, or an even
// sample of n of them).
func computeLoads(rz *plan.Realized, n int) loads {
	t := rz.Topo
	eps, lids := caDests(rz)
	l := loads{load: map[topology.PortRef]int64{}, worst: map[topology.PortRef]int64{}}
	sws := t.Switches()
	// next hop of switch index si toward lid: the port and its peer.
	step := func(si int, lid uint16) (topology.PortRef, topology.PortRef, bool) {
		if int(lid) >= len(rz.LFT[si]) {
			return topology.PortRef{}, topology.PortRef{}, false
		}
		out := rz.LFT[si][lid]
		node := sws[si]
		if out == 0 || int(out) >= len(t.Nodes[node].Ports) {
			return topology.PortRef{}, topology.PortRef{}, false
		}
		here := topology.PortRef{Node: node, Port: out}
		peer := t.Nodes[node].Ports[out].Peer
		return here, peer, peer.Connected()
	}
	// CAs attached to each switch.
	attached := make([]int64, len(sws))
	leafOf := make([]int32, len(eps)) // switch index a CA hangs off, -1 none
	for i, ep := range eps {
		leafOf[i] = -1
		if pr := t.Port(ep).Peer; pr.Connected() && t.Nodes[pr.Node].Type == topology.Switch {
			si := t.SwitchIndex(pr.Node)
			leafOf[i] = si
			attached[si]++
		}
	}
	dist := make([]int, len(sws))
	order := make([]int, 0, len(sws))
	count := make([]int64, len(sws))
	for d, dst := range eps {
		lid := lids[d]
		for i := range dist {
			dist[i] = -2 // unknown; -1: does not arrive
		}
		var walk func(si int, depth int) int
		walk = func(si int, depth int) int {
			if dist[si] != -2 {
				return dist[si]
			}
			if depth > len(sws) {
				return -1 // a loop
			}
			_, peer, ok := step(si, lid)
			switch {
			case !ok:
				dist[si] = -1
			case peer == dst:
				dist[si] = 0
			case t.Nodes[peer.Node].Type == topology.Switch:
				if nd := walk(int(t.SwitchIndex(peer.Node)), depth+1); nd >= 0 {
					dist[si] = nd + 1
				} else {
					dist[si] = -1
				}
			default:
				dist[si] = -1
			}
			return dist[si]
		}
		order = order[:0]
		for si := range sws {
			if walk(si, 0) >= 0 {
				order = append(order, si)
			}
			count[si] = attached[si]
		}
		if ls := leafOf[d]; ls >= 0 {
			count[ls]-- // the destination sends nothing to itself
		}
		sortByDistDesc(order, dist)
		for _, si := range order {
			here, peer, _ := step(si, lid)
			if count[si] == 0 {
				continue
			}
			l.load[here] += count[si]
			if peer != dst {
				count[t.SwitchIndex(peer.Node)] += count[si]
			}
		}
	}
	for i, ep := range eps { // every CA sends to every other over its own link
		if leafOf[i] >= 0 {
			l.load[ep] = int64(len(eps) - 1)
		}
	}
	l.shifts = worstShifts(rz, eps, lids, leafOf, step, n, l.worst)
	return l
}

func sortByDistDesc(order []int, dist []int) {
	// Counting sort: distances are at most the number of switches.
	maxD := 0
	for _, si := range order {
		maxD = max(maxD, dist[si])
	}
	buckets := make([][]int, maxD+1)
	for _, si := range order {
		buckets[dist[si]] = append(buckets[dist[si]], si)
	}
	order = order[:0]
	for d := maxD; d >= 0; d-- {
		order = append(order, buckets[d]...)
	}
}

// worstShifts fills worst with each channel's largest route count over
// the shifts taken and returns how many were taken.
func worstShifts(rz *plan.Realized, eps []topology.PortRef, lids []uint16, leafOf []int32,
	step func(int, uint16) (topology.PortRef, topology.PortRef, bool), n int, worst map[topology.PortRef]int64) int {
	N := len(eps)
	if N < 2 {
		return 0
	}
	if n <= 0 {
		n = N - 1
		if N > 1024 {
			n = 64
		}
	}
	n = min(n, N-1)
	t := rz.Topo
	cur := map[topology.PortRef]int64{}
	for s := 0; s < n; s++ {
		k := 1 + s*(N-1)/n
		clear(cur)
		for i := range eps {
			j := (i + k) % N
			si := leafOf[i]
			if si < 0 {
				continue
			}
			cur[eps[i]]++
			for hops := 0; hops <= len(rz.LFT); hops++ {
				here, peer, ok := step(int(si), lids[j])
				if !ok {
					break
				}
				cur[here]++
				if peer == eps[j] || t.Nodes[peer.Node].Type != topology.Switch {
					break
				}
				si = t.SwitchIndex(peer.Node)
			}
		}
		for ch, v := range cur {
			worst[ch] = max(worst[ch], v)
		}
	}
	return n
}
