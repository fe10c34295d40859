package testfab

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Walk follows plane pl from switch index s toward endpoint e and returns
// the number of switch-to-switch links crossed. It fails on NoPort, a port
// without a peer, a loop, or delivery to the wrong port.
func Walk(t *topology.Topology, pl plan.Plane, s, e int32) (int, error) {
	sws := t.Switches()
	dst := t.Endpoints()[e]
	hops := 0
	for hops <= len(sws) {
		node := sws[s]
		out := pl[s]
		if out == plan.NoPort {
			return hops, fmt.Errorf("switch %d has no route to endpoint %d", s, e)
		}
		if out == 0 {
			if dst != (topology.PortRef{Node: node, Port: 0}) {
				return hops, fmt.Errorf("switch %d delivers endpoint %d to its own port 0", s, e)
			}
			return hops, nil
		}
		if int(out) >= len(t.Nodes[node].Ports) {
			return hops, fmt.Errorf("switch %d routes to port %d it does not have", s, out)
		}
		peer := t.Nodes[node].Ports[out].Peer
		if !peer.Connected() {
			return hops, fmt.Errorf("switch %d routes endpoint %d out of unconnected port %d", s, e, out)
		}
		if peer == dst {
			return hops, nil
		}
		ns := t.SwitchIndex(peer.Node)
		if ns < 0 {
			return hops, fmt.Errorf("switch %d delivers endpoint %d to the wrong CA", s, e)
		}
		s = ns
		hops++
	}
	return hops, fmt.Errorf("loop toward endpoint %d", e)
}

// LIDOption changes what SequentialLIDs gives.
type LIDOption func(*lidStyle)

type lidStyle struct {
	switchLMC bool
	rule      *plan.DLIDRule
}

// SwitchLMC gives switch port 0 the LMC too (by default it gets LMC 0).
func SwitchLMC() LIDOption { return func(s *lidStyle) { s.switchLMC = true } }

// DLIDRule sets the plan's DLID rule (by default DLIDSpread when lmc > 0).
func DLIDRule(r plan.DLIDRule) LIDOption { return func(s *lidStyle) { s.rule = &r } }

// SequentialLIDs gives endpoints consecutive LIDs from 1 in endpoint order:
// switch port 0 with LMC 0, other ports with lmc, aligned. It is the test
// stand-in for a LID assigner (the one in the SDK's kits and tests).
func SequentialLIDs(t *topology.Topology, lmc uint8, opts ...LIDOption) *plan.LIDPlan {
	var st lidStyle
	for _, o := range opts {
		o(&st)
	}
	eps := t.Endpoints()
	l := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps))}
	next := 1
	for i, ep := range eps {
		m := lmc
		if !st.switchLMC && t.SwitchIndex(ep.Node) >= 0 {
			m = 0
		}
		n := 1 << m
		next = (next + n - 1) &^ (n - 1)
		l.Ports[i] = plan.PortLID{Base: uint16(next), LMC: m}
		next += n
	}
	switch {
	case st.rule != nil:
		l.Rule = *st.rule
	case lmc > 0:
		l.Rule = plan.DLIDSpread
	}
	return l
}

// Realize realises r with SequentialLIDs.
func Realize(t *topology.Topology, r *plan.Routes, lmc uint8) (*plan.Realized, error) {
	return plan.Realize(t, r, SequentialLIDs(t, lmc))
}

// SwitchDistances is a plain reference BFS over links that are up:
// d[a][b] is the hop count between switches a and b, -1 if unreachable.
func SwitchDistances(t *topology.Topology) [][]int {
	sws := t.Switches()
	d := make([][]int, len(sws))
	for a := range sws {
		row := make([]int, len(sws))
		for i := range row {
			row[i] = -1
		}
		row[a] = 0
		q := []int{a}
		for len(q) > 0 {
			x := q[0]
			q = q[1:]
			n := &t.Nodes[sws[x]]
			for p := 1; p < len(n.Ports); p++ {
				r := topology.PortRef{Node: sws[x], Port: uint8(p)}
				if !t.IsLinkUp(r) {
					continue
				}
				y := t.SwitchIndex(n.Ports[p].Peer.Node)
				if y >= 0 && row[y] < 0 {
					row[y] = row[x] + 1
					q = append(q, int(y))
				}
			}
		}
		d[a] = row
	}
	return d
}

// HomeSwitch is the switch index endpoint e is attached to, -1 if none.
func HomeSwitch(t *topology.Topology, e int32) int32 {
	ep := t.Endpoints()[e]
	if s := t.SwitchIndex(ep.Node); s >= 0 {
		return s
	}
	if !t.IsLinkUp(ep) {
		return -1
	}
	return t.SwitchIndex(t.Port(ep).Peer.Node)
}

// SetLinkState sets both ends of the link at switch index s, port p.
func SetLinkState(t *topology.Topology, s int32, p uint8, st topology.PortState) {
	r := topology.PortRef{Node: t.Switches()[s], Port: p}
	t.Port(r).State = st
	if peer := t.Port(r).Peer; peer.Connected() {
		t.Port(peer).State = st
	}
}
