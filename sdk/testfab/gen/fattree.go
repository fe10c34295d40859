package gen

import (
	"fmt"
)

// FatTree describes a fat tree. Set exactly one of Radix, Arity or
// Children/Parents:
//
//   - Radix k, Levels n: the maximal folded Clos of k-port switches, as
//     built in practice. Every switch uses all k ports; the top level has
//     half as many switches as the others. n=2 is the "real-life" two-level
//     tree (k leaves with k/2 CAs each, k/2 spines; k=36: 648 CAs, 54
//     switches); n=3 is the pod construction (k pods of k/2 leaves and k/2
//     spines, (k/2)^2 cores; k=36: 11,664 CAs, 1,620 switches). In general
//     2(k/2)^n CAs. It is XGFT(n; k/2,…,k/2,k; 1,k/2,…,k/2).
//   - Arity k, Levels n: the k-ary n-tree of Petrini and Vanneschi: k^n CAs,
//     n levels of k^(n-1) switches with 2k ports; top switches use only
//     their k down ports. It is XGFT(n; k,…,k; 1,k,…,k).
//   - Children m and Parents w (same length n): the extended generalised
//     fat tree XGFT(n; m1..mn; w1..wn): a level-i switch has m_i children
//     and w_{i+1} parents; CAs are the leaves (w1 must be 1).
//
// Port numbering, as fat-tree engines and operators expect: on a level-i
// switch, ports 1..m_i*p go down (child c on ports c*p+1..c*p+p, so CA c of a
// leaf is on port c+1) and the following w_{i+1}*p ports go up (parent b on
// the b-th group). A CA's port 1 is cabled to its leaf.
type FatTree struct {
	Radix    int
	Arity    int
	Levels   int
	Children []int
	Parents  []int
	// Parallel is the number of cables between each connected pair of
	// switches (0 means 1). With Radix, the number of switches above the
	// leaves shrinks by this factor so that every switch still uses k ports.
	Parallel int
	// CAsPerLeaf partially populates the leaves (0 means fully populated);
	// CAs take the lowest down ports.
	CAsPerLeaf int
	// SwitchPorts is the declared switch port count (0: Radix, or the smallest
	// count every level fits in).
	SwitchPorts int
	Cable       Cable
}

// xgft holds per-level parameters; index i is level i+1.
type xgft struct {
	m, w, p []int
	kind    string // for errors and usage hints
}

func (t FatTree) shape() (xgft, error) {
	par := t.Parallel
	if par == 0 {
		par = 1
	}
	if par < 0 || par > MaxPorts {
		return xgft{}, fmt.Errorf("topogen: fat-tree: --parallel %d; give 1 to %d cables per switch pair", t.Parallel, MaxPorts)
	}
	modes := 0
	for _, set := range []bool{t.Radix != 0, t.Arity != 0, len(t.Children)+len(t.Parents) != 0} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return xgft{}, fmt.Errorf("topogen: fat-tree: give exactly one of --radix, --arity or --children/--parents (for example --radix 36 --levels 2)")
	}
	n := t.Levels
	var x xgft
	switch {
	case t.Radix != 0:
		k := t.Radix
		if n == 0 {
			n = 2
		}
		if n < 1 || n > 16 {
			return xgft{}, fmt.Errorf("topogen: fat-tree: --levels %d; give 1 to 16 switch levels", t.Levels)
		}
		if k < 2 || k%2 != 0 || k > MaxPorts {
			return xgft{}, fmt.Errorf("topogen: fat-tree: --radix %d; the radix must be even and between 2 and %d (half the ports go down, half up)", k, MaxPorts)
		}
		if n > 1 && (k/2)%par != 0 {
			return xgft{}, fmt.Errorf("topogen: fat-tree: --parallel %d does not divide the %d up ports of a radix-%d switch; pick a divisor of %d", par, k/2, k, k/2)
		}
		x.kind = fmt.Sprintf("radix-%d %d-level fat tree", k, n)
		for i := 0; i < n; i++ {
			switch {
			case n == 1:
				x.m, x.w, x.p = append(x.m, k), append(x.w, 1), append(x.p, 1)
			case i == 0:
				x.m, x.w, x.p = append(x.m, k/2), append(x.w, 1), append(x.p, 1)
			case i == n-1:
				x.m, x.w, x.p = append(x.m, k/par), append(x.w, k/2/par), append(x.p, par)
			default:
				x.m, x.w, x.p = append(x.m, k/2/par), append(x.w, k/2/par), append(x.p, par)
			}
		}
	case t.Arity != 0:
		k := t.Arity
		if n < 1 || n > 16 {
			return xgft{}, fmt.Errorf("topogen: fat-tree: --arity needs --levels between 1 and 16 (got %d)", t.Levels)
		}
		if k < 1 || k > MaxPorts {
			return xgft{}, fmt.Errorf("topogen: fat-tree: --arity %d; give 1 to %d", k, MaxPorts)
		}
		x.kind = fmt.Sprintf("%d-ary %d-tree", k, n)
		for i := 0; i < n; i++ {
			w, p := k, par
			if i == 0 {
				w, p = 1, 1
			}
			x.m, x.w, x.p = append(x.m, k), append(x.w, w), append(x.p, p)
		}
	default:
		if len(t.Children) != len(t.Parents) || len(t.Children) == 0 {
			return xgft{}, fmt.Errorf("topogen: fat-tree: --children has %d entries and --parents %d; give one per level, e.g. --children 18,36 --parents 1,18", len(t.Children), len(t.Parents))
		}
		if n != 0 && n != len(t.Children) {
			return xgft{}, fmt.Errorf("topogen: fat-tree: --levels %d but --children lists %d levels; drop --levels", n, len(t.Children))
		}
		n = len(t.Children)
		if t.Parents[0] != 1 {
			return xgft{}, fmt.Errorf("topogen: fat-tree: --parents starts with %d; CAs have one port, so the first entry must be 1", t.Parents[0])
		}
		x.kind = fmt.Sprintf("XGFT(%d; %v; %v)", n, t.Children, t.Parents)
		for i := 0; i < n; i++ {
			if t.Children[i] < 1 || t.Parents[i] < 1 || t.Children[i] > MaxPorts || t.Parents[i] > MaxPorts {
				return xgft{}, fmt.Errorf("topogen: fat-tree: level %d has %d children and %d parents; both must be 1 to %d", i+1, t.Children[i], t.Parents[i], MaxPorts)
			}
			p := par
			if i == 0 {
				p = 1
			}
			x.m, x.w, x.p = append(x.m, t.Children[i]), append(x.w, t.Parents[i]), append(x.p, p)
		}
	}
	return x, nil
}

// levelCounts returns the number of nodes at levels 0 (CA slots) .. n.
func (x xgft) levelCounts() ([]int, error) {
	n := len(x.m)
	counts := make([]int, n+1)
	for lvl := 0; lvl <= n; lvl++ {
		c := 1
		for j := 0; j < n; j++ {
			f := x.w[j]
			if j >= lvl {
				f = x.m[j]
			}
			c *= f
			if c > MaxNodes {
				return nil, fmt.Errorf("topogen: %s has more than %d nodes at level %d, more than the %d unicast LIDs; choose a smaller tree", x.kind, MaxNodes, lvl, MaxNodes)
			}
		}
		counts[lvl] = c
	}
	return counts, nil
}

// need is the port count a level-(i+1) switch uses.
func (x xgft) need(i int) int {
	d := x.m[i] * x.p[i]
	if i+1 < len(x.m) {
		d += x.w[i+1] * x.p[i+1]
	}
	return d
}

// levelName names switch levels the way operators do: leaf and spine for
// two levels, leaf/spine/core for three, l2..l(n-1) between leaf and core
// for deeper trees.
func levelName(lvl, n int) string {
	switch {
	case lvl == 1:
		return "leaf"
	case lvl == n && n == 2, lvl == 2 && n == 3:
		return "spine"
	case lvl == n:
		return "core"
	}
	return fmt.Sprintf("l%d", lvl)
}

// Graph builds the tree.
func (t FatTree) Graph() (*Graph, error) { return cabled(t.graph())(t.Cable) }

func (t FatTree) graph() (*Graph, error) {
	x, err := t.shape()
	if err != nil {
		return nil, err
	}
	n := len(x.m)
	counts, err := x.levelCounts()
	if err != nil {
		return nil, err
	}
	cas := t.CAsPerLeaf
	if cas == 0 {
		cas = x.m[0]
	}
	if cas < 0 || cas > x.m[0] {
		return nil, fmt.Errorf("topogen: fat-tree: --cas %d per leaf, but a leaf of a %s has %d down ports; give 1..%d", t.CAsPerLeaf, x.kind, x.m[0], x.m[0])
	}
	ports := t.SwitchPorts
	if ports == 0 {
		ports = t.Radix
	}
	need := 0
	for i := range x.m {
		need = max(need, x.need(i))
	}
	if ports == 0 {
		ports = need
	}
	if ports < need {
		return nil, fmt.Errorf("topogen: fat-tree: switches declared with %d ports, but a %s needs %d; raise --switch-ports", ports, x.kind, need)
	}
	switches := 0
	for lvl := 1; lvl <= n; lvl++ {
		switches += counts[lvl]
	}
	if err := checkSize(switches, counts[1]*cas, ports); err != nil {
		return nil, err
	}

	g := &Graph{
		Switches: make([]Node, 0, switches),
		CAs:      make([]Node, 0, counts[1]*cas),
		Links:    make([]Link, 0, counts[1]*cas+switches*ports/2),
	}
	// A level-l node's index is cp*W_l + pp: cp encodes its child-part
	// digits (a_{l+1} least significant) and pp its parent-part digits
	// (b_l most significant), W_l = w_1*…*w_l. Leaves of one pod, and the
	// spines above them, are therefore numbered consecutively.
	offset := make([]int, n+2) // switch index of the first node of level l
	W := make([]int, n+1)      // W[l] = w_1*…*w_l
	W[0] = 1
	for l := 1; l <= n; l++ {
		W[l] = W[l-1] * x.w[l-1]
		offset[l+1] = offset[l] + counts[l]
	}
	prefix := fmt.Sprintf("ft%d", n)
	for l := 1; l <= n; l++ {
		name := levelName(l, n)
		// The pod is the subtree under the top level: the most significant
		// child-part digit, a_n.
		podSize := 1
		for j := l; j < n-1; j++ {
			podSize *= x.m[j]
		}
		for i := 0; i < counts[l]; i++ {
			desc := fmt.Sprintf("%s %s %d", prefix, name, i)
			if n >= 3 && l < n {
				desc = fmt.Sprintf("%s pod %d %s %d", prefix, i/W[l]/podSize, name, i)
			}
			g.addSwitch(fmt.Sprintf("%s-%s-%d", prefix, name, i), desc, ports)
		}
	}
	// CAs: leaf i's CA c on down port c+1.
	for i := 0; i < counts[1]; i++ {
		for c := 0; c < cas; c++ {
			g.addCA(fmt.Sprintf("%s-leaf-%d-host-%d", prefix, i, c), fmt.Sprintf("%s leaf %d host %d", prefix, i, c), offset[1]+i, c+1)
		}
	}
	// Switch levels l -> l+1.
	for l := 1; l < n; l++ {
		m, wUp, pUp := x.m[l], x.w[l], x.p[l] // parents' children, this level's parents, cables
		upBase := x.m[l-1] * x.p[l-1]
		for i := 0; i < counts[l]; i++ {
			cp, pp := i/W[l], i%W[l]
			a, parentCP := cp%m, cp/m
			for b := 0; b < wUp; b++ {
				parent := parentCP*W[l+1] + pp + W[l]*b
				for q := 0; q < pUp; q++ {
					g.connect(offset[l]+i, upBase+b*pUp+q+1, offset[l+1]+parent, a*pUp+q+1)
				}
			}
		}
	}
	return g, nil
}
