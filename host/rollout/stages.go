package rollout

import (
	"fmt"
	"math"
	"path"
	"slices"
	"time"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Group is the switches one declared stage promotes (switch indices in
// topology.Switches() order), only those whose tables change.
type Group struct {
	Name     string
	Switches []int32
	Dwell    time.Duration
}

// Tiers returns each switch's tier (indexed like topology.Switches()): 0
// for a switch with a CA attached, else one more than its nearest
// lower-tier neighbour (a fat tree's levels); -1 for a switch no CA reaches.
func Tiers(t *topology.Topology) []int {
	sws := t.Switches()
	tier := make([]int, len(sws))
	var queue []int32
	for s, n := range sws {
		tier[s] = -1
		for p := 1; p < len(t.Nodes[n].Ports); p++ {
			pr := t.Nodes[n].Ports[p].Peer
			if pr.Connected() && t.Nodes[pr.Node].Type != topology.Switch {
				tier[s] = 0
				queue = append(queue, int32(s))
				break
			}
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		n := sws[s]
		for p := 1; p < len(t.Nodes[n].Ports); p++ {
			pr := t.Nodes[n].Ports[p].Peer
			if !pr.Connected() {
				continue
			}
			if q := t.SwitchIndex(pr.Node); q >= 0 && tier[q] < 0 {
				tier[q] = tier[s] + 1
				queue = append(queue, q)
			}
		}
	}
	return tier
}

// Groups assigns the changed switches to the declared stages in order:
// each stage takes what its selector matches among the changed switches
// no earlier stage took; the changed switches left over form a last stage
// "rest" (dwell: the last declared stage's, or conf.DefaultDwell). A
// stage that matches no changed switch is kept, empty, so the operator
// sees it. Without declared stages everything is one stage "all".
func Groups(t *topology.Topology, changed []bool, stages []conf.Stage) ([]Group, error) {
	sws := t.Switches()
	taken := make([]bool, len(sws))
	var tiers []int
	var out []Group
	for _, st := range stages {
		g := Group{Name: st.Name, Dwell: st.Dwell}
		var left []int32
		for s := range sws {
			if changed[s] && !taken[s] {
				left = append(left, int32(s))
			}
		}
		switch {
		case len(st.GUIDs) > 0:
			for _, guid := range st.GUIDs {
				n := t.NodeByGUID(guid)
				if n < 0 || t.Nodes[n].Type != topology.Switch {
					return nil, fmt.Errorf("stage %q (%s) names 0x%016x, which is not a switch of this fabric; fix its guids", st.Name, st.DeclRange, guid)
				}
				if s := t.SwitchIndex(n); changed[s] && !taken[s] {
					g.Switches = append(g.Switches, s)
				}
			}
			slices.Sort(g.Switches)
			g.Switches = slices.Compact(g.Switches)
		case st.NodeDesc != "":
			for _, s := range left {
				if ok, _ := path.Match(st.NodeDesc, t.Nodes[sws[s]].Desc); ok {
					g.Switches = append(g.Switches, s)
				}
			}
		case st.Tier >= 0:
			if tiers == nil {
				tiers = Tiers(t)
			}
			for _, s := range left {
				if tiers[s] == st.Tier {
					g.Switches = append(g.Switches, s)
				}
			}
		case st.Fraction > 0:
			// In GUID order, so the choice does not depend on discovery.
			slices.SortFunc(left, func(a, b int32) int { return cmpU64(t.Nodes[sws[a]].GUID, t.Nodes[sws[b]].GUID) })
			n := int(math.Ceil(st.Fraction * float64(len(left))))
			g.Switches = slices.Clone(left[:n])
			slices.Sort(g.Switches)
		}
		for _, s := range g.Switches {
			taken[s] = true
		}
		out = append(out, g)
	}
	rest := Group{Name: "rest", Dwell: conf.DefaultDwell}
	if len(stages) == 0 {
		rest.Name = "all"
	} else {
		rest.Dwell = stages[len(stages)-1].Dwell
	}
	for s := range sws {
		if changed[s] && !taken[s] {
			rest.Switches = append(rest.Switches, int32(s))
		}
	}
	if len(rest.Switches) > 0 || len(stages) == 0 {
		out = append(out, rest)
	}
	return out, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
