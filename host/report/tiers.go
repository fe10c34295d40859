package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ibsm/ibsm/sdk/topology"
)

// fatTreeTiers gives every switch its tier: 1 for switches with CAs
// (leaves), then one more per hop away from the leaves (breadth-first).
// The fabric is drawn as a fat tree when every CA hangs off a leaf, every
// switch-to-switch link joins adjacent tiers, and no leaf is above tier 1.
func fatTreeTiers(t *topology.Topology) ([]int, bool) {
	tiers := make([]int, len(t.Nodes))
	var queue []int32
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if n.Type == topology.Switch {
			continue
		}
		for p := 1; p < len(n.Ports); p++ {
			if pr := n.Ports[p].Peer; pr.Connected() && t.Nodes[pr.Node].Type == topology.Switch && tiers[pr.Node] == 0 {
				tiers[pr.Node] = 1
				queue = append(queue, pr.Node)
			}
		}
	}
	if len(queue) == 0 {
		return tiers, false
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, p := range t.Nodes[s].Ports[1:] {
			if pr := p.Peer; pr.Connected() && t.Nodes[pr.Node].Type == topology.Switch && tiers[pr.Node] == 0 {
				tiers[pr.Node] = tiers[s] + 1
				queue = append(queue, pr.Node)
			}
		}
	}
	top := 0
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if n.Type != topology.Switch {
			continue
		}
		if tiers[i] == 0 {
			return tiers, false // a switch no leaf reaches
		}
		top = max(top, tiers[i])
		for p := 1; p < len(n.Ports); p++ {
			pr := n.Ports[p].Peer
			if !pr.Connected() {
				continue
			}
			if t.Nodes[pr.Node].Type != topology.Switch {
				if tiers[i] != 1 {
					return tiers, false
				}
				continue
			}
			if d := tiers[i] - tiers[pr.Node]; d != 1 && d != -1 {
				return tiers, false
			}
		}
	}
	return tiers, top >= 2
}

// groupSwitches puts like switches of a fat tree into one box each: the
// switches of a tier with the same neighbours in the tier above (the
// leaves of one pod; the middle switches that share a set of spines), or,
// at the top tier, the same neighbours below. group maps node → box.
func groupSwitches(t *topology.Topology, tiers []int, m *Model, group []int) {
	keyOf := func(i int) string {
		var up, down []string
		for _, p := range t.Nodes[i].Ports[1:] {
			pr := p.Peer
			if !pr.Connected() || t.Nodes[pr.Node].Type != topology.Switch {
				continue
			}
			g := fmt.Sprint(pr.Node)
			if tiers[pr.Node] > tiers[i] {
				up = append(up, g)
			} else {
				down = append(down, g)
			}
		}
		set := up
		if len(set) == 0 {
			set = down
		}
		sort.Strings(set)
		return fmt.Sprintf("%d|%s", tiers[i], strings.Join(dedup(set), ","))
	}
	boxes := map[string]int{}
	first := map[int]string{} // box → its first switch's label
	perTier := map[int]int{}
	for i := range t.Nodes {
		if t.Nodes[i].Type != topology.Switch {
			continue
		}
		k := keyOf(i)
		id, ok := boxes[k]
		if !ok {
			id = len(m.Nodes)
			boxes[k] = id
			perTier[tiers[i]]++
			first[id] = label(&t.Nodes[i])
			// Numbered within the tier, so a table row names one box.
			m.Nodes = append(m.Nodes, Box{ID: id, Kind: "group", Tier: tiers[i], Label: fmt.Sprintf("tier %d group %d", tiers[i], perTier[tiers[i]])})
		}
		group[i] = id
		m.Nodes[id].Members++
	}
	for i := range m.Nodes {
		b := &m.Nodes[i]
		if b.Members == 1 {
			b.Label += ": " + first[i]
		} else {
			b.Label += fmt.Sprintf(": %d switches like %s", b.Members, first[i])
		}
	}
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
