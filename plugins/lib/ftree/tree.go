// Package ftree recognises fat trees (k-ary n-trees, XGFTs and the
// "real-life" 2- and 3-level Clos fabrics with partially populated leaves and
// parallel cables) and routes CA destinations over them the way fat-tree
// routing does (Zahavi et al., the algorithm behind OpenSM's ftree): every
// destination gets one dedicated downward path from a top switch, chosen by
// the destination's index (D-mod-k digits), and every other switch climbs to
// the lowest switch of that path it can reach. Routes are pure up*/down*
// with respect to the tree levels, so one VL is deadlock-free, on degraded
// trees too.
//
// The Tree type is the reusable part: levels, up/down port groups with
// stable slots, leaves and their CAs in index order. Engines built on it
// (ftree, sftree) call RouteCAs to fill the CA destinations of their planes.
package ftree

import (
	"fmt"
	"slices"
	"sort"

	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Group is a set of parallel cables from one switch to one neighbour switch.
type Group struct {
	// Peer is the switch index at the far end.
	Peer int32
	// Ports are this switch's ports of the cables, ascending.
	Ports []uint8
	// Slot is the group's stable position among its switch's up (or down)
	// groups: on uniformly cabled levels it comes from port numbers, so a
	// failed cable leaves a gap instead of renumbering its neighbours.
	Slot int32
	// Rev is the index of the opposite group in the peer's Down (for an up
	// group) or Up (for a down group) list.
	Rev int32
}

// Config says what the operator knows about the tree.
type Config struct {
	// Roots are node GUIDs of the top switches (OpenSM root_guid_file).
	// Empty: the switches farthest from any CA-carrying switch, per
	// connected component.
	Roots []uint64
	// CAOrder lists CA node or port GUIDs in the order the application
	// ranks run on them (OpenSM cn_guid_file, but ordered): CA indices, and
	// so the spreading of routes, follow it. CAs not listed come after, in
	// topology order.
	CAOrder []uint64
}

// Tree is a recognised fat tree. Everything is indexed by switch index
// (Topology.Switches order) or endpoint index (Topology.Endpoints order).
// It is read-only after Build and safe for concurrent use.
type Tree struct {
	Topo  *topology.Topology
	Graph *route.Graph
	// N is the number of switches.
	N int
	// Level is each switch's level: 0 for roots, growing downward; leaves
	// are at LeafLevel. -1: the switch is in a component without CAs and
	// is not part of any tree.
	Level []int32
	// Levels is the number of levels (max Level + 1).
	Levels int
	// ByLevel lists the switches of each level in index order.
	ByLevel [][]int32
	// Order lists every switch of the tree, level by level from the roots.
	Order []int32
	// Roots are the level-0 switches.
	Roots []int32
	// Up and Down are each switch's port groups toward the level above and
	// below, sorted by Slot.
	Up, Down [][]Group
	// UpSlots[s][slot] is the index into Up[s] of the group at that slot,
	// -1 where the slot's cable is missing. len = SlotCount[Level[s]].
	UpSlots [][]int16
	// SlotCount is the nominal number of up slots of each level.
	SlotCount []int32
	// Leaves are the CA-carrying switches in canonical order (switches
	// sharing parents are contiguous, then by GUID); LeafPos is the inverse
	// (-1 for other switches).
	Leaves  []int32
	LeafPos []int32
	// LeafCAs lists, per leaf (by position in Leaves), its CA and router
	// endpoints in CA-index order.
	LeafCAs [][]int32
	// CAIndex is each endpoint's CA index (-1 for switch port 0 and for
	// endpoints not attached to a switch). Indices are unique, increase
	// along Leaves, and may have gaps where leaves are not fully populated.
	CAIndex []int32
	// CAsPerLeaf is the nominal number of CA slots per leaf.
	CAsPerLeaf int32
	outside    []int32 // switches with Level -1
	posInLevel []int32 // index of a switch in its ByLevel list
	// Missing lists configured GUIDs (roots, CA order) not found.
	Missing []string
	// How says how the roots were chosen.
	How string
}

// LeafLevel is the level of the leaves (Levels-1), -1 for an empty tree.
func (t *Tree) LeafLevel() int32 { return int32(t.Levels) - 1 }

// CAOrder returns the CA endpoints in CA-index order: the rank order in
// which shift permutations are congestion-free on a full tree (OpenSM's
// opensm-ftree-ca-order.dump).
func (t *Tree) CAOrder() []int32 {
	var out []int32
	for e, i := range t.CAIndex {
		if i >= 0 {
			out = append(out, int32(e))
		}
	}
	sort.Slice(out, func(a, b int) bool { return t.CAIndex[out[a]] < t.CAIndex[out[b]] })
	return out
}

// NotFatTreeError says why a topology is not a fat tree.
type NotFatTreeError struct {
	Reason string
}

func (e *NotFatTreeError) Error() string { return "not a fat tree: " + e.Reason }

func (t *Tree) name(s int32) string {
	n := &t.Topo.Nodes[t.Topo.Switches()[s]]
	if n.Desc != "" {
		return fmt.Sprintf("0x%016x (%q)", n.GUID, n.Desc)
	}
	return fmt.Sprintf("0x%016x", n.GUID)
}

// Build recognises the fat tree in topo.
func Build(topo *topology.Topology, cfg Config) (*Tree, error) {
	if topo == nil {
		return nil, fmt.Errorf("ftree: no topology")
	}
	g := route.NewGraph(topo)
	n := g.N
	t := &Tree{Topo: topo, Graph: g, N: n, Level: make([]int32, n), LeafPos: make([]int32, n)}
	if n == 0 {
		return nil, &NotFatTreeError{Reason: "the fabric has no switch"}
	}

	// Leaves carry CAs (their group holds more than their own port 0).
	isLeaf := make([]bool, n)
	var leaves []int32
	for s := int32(0); s < int32(n); s++ {
		if len(g.Group(s)) > 1 {
			isLeaf[s] = true
			leaves = append(leaves, s)
		}
	}
	if len(leaves) == 0 {
		return nil, &NotFatTreeError{Reason: "no switch has a CA attached, so there are no leaves to build a tree on"}
	}

	height := make([]uint8, n)
	queue := make([]int32, n)
	if err := g.BFS(leaves, height, queue); err != nil {
		return nil, fmt.Errorf("ftree: %w", err)
	}

	// A leaf switch with no CA cabled yet (a partially populated tree)
	// looks, by height, like a switch above its parents. It is one when
	// its neighbours are all parents of leaves and share a leaf child
	// (a top switch's neighbours span pods and share none); rank it with
	// the leaves.
	if empty := emptyLeaves(g, isLeaf, height); len(empty) > 0 {
		if err := g.BFS(append(slices.Clone(leaves), empty...), height, queue); err != nil {
			return nil, fmt.Errorf("ftree: %w", err)
		}
	}

	isRoot := make([]bool, n)
	for _, guid := range cfg.Roots {
		node := topo.NodeByGUID(guid)
		if node == topology.NoNode || topo.SwitchIndex(node) < 0 {
			t.Missing = append(t.Missing, fmt.Sprintf("root 0x%016x", guid))
			continue
		}
		isRoot[topo.SwitchIndex(node)] = true
	}
	configured, auto := false, false
	var roots []int32
	for _, comp := range g.Components() {
		var have []int32
		var h uint8
		for _, s := range comp {
			if isRoot[s] {
				have = append(have, s)
			}
			if height[s] != route.Unreachable && height[s] > h {
				h = height[s]
			}
		}
		if len(have) > 0 {
			roots = append(roots, have...)
			configured = true
			continue
		}
		if height[comp[0]] == route.Unreachable {
			continue // no CA in this component: not part of any tree
		}
		for _, s := range comp {
			if height[s] == h {
				roots = append(roots, s)
			}
		}
		auto = true
	}
	switch {
	case configured && auto:
		t.How = "configured+farthest from CAs"
	case configured:
		t.How = "configured"
	default:
		t.How = "farthest from CAs"
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i] < roots[j] })
	t.Roots = roots

	depth := make([]uint8, n)
	if err := g.BFS(roots, depth, queue); err != nil {
		return nil, fmt.Errorf("ftree: %w", err)
	}
	maxLevel := int32(-1)
	for s := range depth {
		if depth[s] == route.Unreachable {
			t.Level[s] = -1
			continue
		}
		t.Level[s] = int32(depth[s])
		maxLevel = max(maxLevel, t.Level[s])
	}
	if err := t.validate(isLeaf, isRoot, configured); err != nil {
		return nil, err
	}
	t.Levels = int(maxLevel) + 1
	t.ByLevel = make([][]int32, t.Levels)
	for s := int32(0); s < int32(n); s++ {
		if l := t.Level[s]; l >= 0 {
			t.ByLevel[l] = append(t.ByLevel[l], s)
		}
	}
	t.posInLevel = make([]int32, n)
	for _, lv := range t.ByLevel {
		t.Order = append(t.Order, lv...)
		for i, s := range lv {
			t.posInLevel[s] = int32(i)
		}
	}
	for s := int32(0); s < int32(n); s++ {
		if t.Level[s] < 0 {
			t.outside = append(t.outside, s)
		}
	}
	t.buildGroups()
	t.assignSlots()
	t.orderLeaves(isLeaf)
	t.indexCAs(cfg.CAOrder)
	return t, nil
}

// validate rejects what no fat tree has: cables within a level and CAs on
// switches of different levels of one component.
func (t *Tree) validate(isLeaf, isRoot []bool, configured bool) error {
	g := t.Graph
	hint := "set root_guids to the top switches if the automatic choice is wrong"
	if configured {
		hint = "check root_guids: list every top switch and no other"
	}
	for s := int32(0); s < int32(t.N); s++ {
		ls := t.Level[s]
		if ls < 0 {
			continue
		}
		for _, l := range g.Links(s) {
			if t.Level[l.Peer] == ls && s < l.Peer {
				return &NotFatTreeError{Reason: fmt.Sprintf("switches %s (port %d) and %s are both at level %d (rank %d from the roots) and cabled to each other; a fat tree has no cables within a level (%s)",
					t.name(s), l.Port, t.name(l.Peer), ls, ls, hint)}
			}
		}
	}
	comp := g.Components()
	for _, c := range comp {
		first := int32(-1)
		for _, s := range c {
			if !isLeaf[s] || t.Level[s] < 0 {
				continue
			}
			if first < 0 {
				first = s
				continue
			}
			if t.Level[s] != t.Level[first] {
				return &NotFatTreeError{Reason: fmt.Sprintf("switch %s carries CAs at level %d but switch %s carries CAs at level %d; in a fat tree every CA hangs off the lowest level (%s)",
					t.name(s), t.Level[s], t.name(first), t.Level[first], hint)}
			}
		}
	}
	return nil
}

// buildGroups groups each switch's cables by neighbour and direction.
func (t *Tree) buildGroups() {
	g := t.Graph
	t.Up = make([][]Group, t.N)
	t.Down = make([][]Group, t.N)
	for s := int32(0); s < int32(t.N); s++ {
		ls := t.Level[s]
		if ls < 0 {
			continue
		}
		for _, l := range g.Links(s) { // port order
			lp := t.Level[l.Peer]
			list := &t.Down[s]
			if lp < ls {
				list = &t.Up[s]
			}
			found := false
			for i := range *list {
				if (*list)[i].Peer == l.Peer {
					(*list)[i].Ports = append((*list)[i].Ports, l.Port)
					found = true
					break
				}
			}
			if !found {
				*list = append(*list, Group{Peer: l.Peer, Ports: []uint8{l.Port}})
			}
		}
	}
}

// assignSlots gives every up group a stable slot and pairs each group with
// its opposite end. On a level whose complete switches agree on which ports
// form which group (uniform cabling, the normal case) a group's slot is
// where its ports sit in that common layout, so losing a cable leaves a
// hole rather than shifting the other groups; otherwise slots are the
// groups' order by lowest port.
func (t *Tree) assignSlots() {
	t.SlotCount = make([]int32, t.Levels)
	t.UpSlots = make([][]int16, t.N)
	for l, sws := range t.ByLevel {
		groups := make([][][]uint8, len(sws))
		for i, s := range sws {
			for _, gr := range t.Up[s] {
				groups[i] = append(groups[i], gr.Ports)
			}
		}
		slots, u := stableSlots(groups)
		t.SlotCount[l] = int32(u)
		for i, s := range sws {
			t.UpSlots[s] = make([]int16, u)
			for k := range t.UpSlots[s] {
				t.UpSlots[s][k] = -1
			}
			for gi := range t.Up[s] {
				t.Up[s][gi].Slot = slots[i][gi]
			}
			sort.SliceStable(t.Up[s], func(a, b int) bool { return t.Up[s][a].Slot < t.Up[s][b].Slot })
			for gi, gr := range t.Up[s] {
				t.UpSlots[s][gr.Slot] = int16(gi)
			}
		}
	}
	// Down groups keep port order; their slot is their rank.
	for s := range t.Down {
		for gi := range t.Down[s] {
			t.Down[s][gi].Slot = int32(gi)
		}
	}
	for s := int32(0); s < int32(t.N); s++ {
		for gi := range t.Up[s] {
			p := t.Up[s][gi].Peer
			for di := range t.Down[p] {
				if t.Down[p][di].Peer == s {
					t.Up[s][gi].Rev = int32(di)
					t.Down[p][di].Rev = int32(gi)
				}
			}
		}
	}
}

// stableSlots assigns slots to the groups (each a sorted port list) of the
// switches of one level, as assignSlots describes. It returns the slots per
// switch and group, and the nominal slot count (the most groups any switch
// has, or more when a partial switch's groups do not fit the layout).
func stableSlots(groups [][][]uint8) ([][]int32, int) {
	most := 0
	for _, gs := range groups {
		most = max(most, len(gs))
	}
	var layout [256]int16
	for i := range layout {
		layout[i] = -1
	}
	uniform := most > 0
	for _, gs := range groups {
		if len(gs) != most {
			continue
		}
		for gi, ports := range gs {
			for _, p := range ports {
				if layout[p] >= 0 && layout[p] != int16(gi) {
					uniform = false
				}
				layout[p] = int16(gi)
			}
		}
	}
	out := make([][]int32, len(groups))
	for i, gs := range groups {
		out[i] = make([]int32, len(gs))
		ok := uniform
		if ok {
			var used [256]bool
			for gi, ports := range gs {
				slot := int16(-1)
				for _, p := range ports {
					if layout[p] >= 0 {
						slot = layout[p]
						break
					}
				}
				if slot < 0 || used[slot] {
					ok = false
					break
				}
				used[slot] = true
				out[i][gi] = int32(slot)
			}
		}
		if !ok {
			for gi := range gs {
				out[i][gi] = int32(gi)
			}
		}
	}
	return out, most
}

// orderLeaves puts leaves that share parents next to each other (the pods
// of a 3-level tree, the sub-trees of a k-ary n-tree), keyed by the lowest
// GUID among the leaves reachable through any of their parents, which a
// single lost cable does not change; then by GUID.
func (t *Tree) orderLeaves(isLeaf []bool) {
	guid := func(s int32) uint64 { return t.Topo.Nodes[t.Topo.Switches()[s]].GUID }
	var leaves []int32
	key := make(map[int32]uint64)
	for s := int32(0); s < int32(t.N); s++ {
		if !isLeaf[s] || t.Level[s] < 0 {
			continue
		}
		leaves = append(leaves, s)
		k := guid(s)
		for _, up := range t.Up[s] {
			for _, d := range t.Down[up.Peer] {
				if isLeaf[d.Peer] {
					k = min(k, guid(d.Peer))
				}
			}
		}
		key[s] = k
	}
	sort.Slice(leaves, func(i, j int) bool {
		a, b := leaves[i], leaves[j]
		if key[a] != key[b] {
			return key[a] < key[b]
		}
		return a < b // switch indices follow GUID order
	})
	t.Leaves = leaves
	for s := range t.LeafPos {
		t.LeafPos[s] = -1
	}
	for i, s := range leaves {
		t.LeafPos[s] = int32(i)
	}
}

// indexCAs numbers the CAs: leaf position × CAsPerLeaf + the CA's stable
// slot on its leaf (by port, as for up groups), or the configured order.
func (t *Tree) indexCAs(order []uint64) {
	g := t.Graph
	eps := t.Topo.Endpoints()
	t.CAIndex = make([]int32, len(eps))
	for i := range t.CAIndex {
		t.CAIndex[i] = -1
	}
	perLeaf := make([][]int32, len(t.Leaves))
	ports := make([][][]uint8, len(t.Leaves))
	for li, s := range t.Leaves {
		for _, e := range g.Group(s) {
			if a := g.Attachment(e); !a.IsSwitch {
				perLeaf[li] = append(perLeaf[li], e)
				ports[li] = append(ports[li], []uint8{a.Port})
			}
		}
	}
	slots, c := stableSlots(ports)
	t.CAsPerLeaf = int32(c)
	if len(order) > 0 {
		// Listed CAs first, in the listed order; the rest after, in the
		// default order.
		byGUID := make(map[uint64]int32, 2*len(eps))
		for li := range perLeaf {
			for _, e := range perLeaf[li] {
				ep := eps[e]
				byGUID[t.Topo.Nodes[ep.Node].GUID] = e
				byGUID[t.Topo.Port(ep).GUID] = e
			}
		}
		next := int32(0)
		for _, guid := range order {
			e, ok := byGUID[guid]
			if !ok {
				t.Missing = append(t.Missing, fmt.Sprintf("CA 0x%016x", guid))
				continue
			}
			if t.CAIndex[e] >= 0 {
				continue
			}
			t.CAIndex[e] = next
			next++
		}
		for li := range perLeaf {
			for k, e := range perLeaf[li] {
				if t.CAIndex[e] < 0 {
					t.CAIndex[e] = next + int32(li)*t.CAsPerLeaf + slots[li][k]
				}
			}
		}
	} else {
		for li := range perLeaf {
			for k, e := range perLeaf[li] {
				t.CAIndex[e] = int32(li)*t.CAsPerLeaf + slots[li][k]
			}
		}
	}
	for li := range perLeaf {
		sort.Slice(perLeaf[li], func(a, b int) bool { return t.CAIndex[perLeaf[li][a]] < t.CAIndex[perLeaf[li][b]] })
	}
	t.LeafCAs = perLeaf
}

// emptyLeaves finds CA-less switches all of whose neighbours are at height
// 1 and have a CA-carrying switch in common.
func emptyLeaves(g *route.Graph, isLeaf []bool, height []uint8) []int32 {
	var out []int32
	for s := int32(0); s < int32(g.N); s++ {
		nb := g.Neighbors(s)
		if isLeaf[s] || len(nb) == 0 {
			continue
		}
		ok := true
		for _, p := range nb {
			if height[p] != 1 {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		common := false
		for _, c := range g.Neighbors(nb[0]) {
			if !isLeaf[c] {
				continue
			}
			all := true
			for _, p := range nb[1:] {
				if !slices.Contains(g.Neighbors(p), c) {
					all = false
					break
				}
			}
			if all {
				common = true
				break
			}
		}
		if common {
			out = append(out, s)
		}
	}
	return out
}
