package gen

import (
	"fmt"
	"strconv"
	"strings"
)

// Dragonfly is the dragonfly of Kim, Dally, Scott and Abts (ISCA 2008): G
// groups of A switches, fully connected inside a group, each switch with P
// CAs and H global cables to other groups. Global cables follow the
// "consecutive" arrangement: global slot j of a group (switch j/H, its
// cable j mod H) in round q = j/(G−1) goes to the group o+1 further on,
// o = j mod (G−1), landing on that group's slot q(G−1) + G−2−o. With the
// maximal G = A·H+1 every pair of groups shares exactly one cable; with
// fewer groups, slots of an incomplete last round whose partner slot does
// not exist stay free.
//
// Ports: 1..P the CAs, then A−1 local ports (to the other switches of the
// group in index order), then H global ports.
type Dragonfly struct {
	A, P, H, Groups int
	SwitchPorts     int
	Cable           Cable
}

// Graph builds the dragonfly.
func (t Dragonfly) Graph() (*Graph, error) { return cabled(t.graph())(t.Cable) }

func (t Dragonfly) graph() (*Graph, error) {
	if t.A < 1 || t.P < 0 || t.H < 0 {
		return nil, fmt.Errorf("topogen: dragonfly: --a %d --p %d --h %d; give a ≥ 1 switches per group, p ≥ 0 CAs and h ≥ 0 global cables per switch", t.A, t.P, t.H)
	}
	groups := t.Groups
	if groups == 0 {
		groups = t.A*t.H + 1
	}
	if groups < 1 || (groups > 1 && t.H == 0) || groups > t.A*t.H+1 {
		return nil, fmt.Errorf("topogen: dragonfly: %d groups; give 1 to a·h+1 = %d (the default, every pair of groups cabled once), and h ≥ 1 for more than one group", groups, t.A*t.H+1)
	}
	need := t.P + t.A - 1 + t.H
	ports := max(t.SwitchPorts, need)
	if t.SwitchPorts != 0 && t.SwitchPorts < need {
		return nil, fmt.Errorf("topogen: dragonfly: switches declared with %d ports, but p+a−1+h needs %d; raise --switch-ports", t.SwitchPorts, need)
	}
	total := groups * t.A
	if err := checkSize(total, total*t.P, ports); err != nil {
		return nil, err
	}
	shape := fmt.Sprintf("a=%d p=%d h=%d g=%d", t.A, t.P, t.H, groups)
	g := &Graph{}
	for s := 0; s < total; s++ {
		gr, r := s/t.A, s%t.A
		g.addSwitch(fmt.Sprintf("dragonfly-%d-%d", gr, r), fmt.Sprintf("dragonfly %s group %d switch %d", shape, gr, r), ports)
	}
	for s := 0; s < total; s++ {
		for c := 0; c < t.P; c++ {
			g.addCA(fmt.Sprintf("%s-host-%d", g.Switches[s].Name, c), fmt.Sprintf("dragonfly group %d switch %d host %d", s/t.A, s%t.A, c), s, c+1)
		}
	}
	// Local: switch r's local port for peer q is P+1+q, skipping itself.
	local := func(r, q int) int {
		if q > r {
			q--
		}
		return t.P + 1 + q
	}
	for gr := 0; gr < groups; gr++ {
		for r := 0; r < t.A; r++ {
			for q := r + 1; q < t.A; q++ {
				g.connect(gr*t.A+r, local(r, q), gr*t.A+q, local(q, r))
			}
		}
	}
	if groups == 1 {
		return g, nil
	}
	slots, round := t.A*t.H, groups-1
	port := func(j int) int { return t.P + t.A - 1 + j%t.H + 1 }
	for gr := 0; gr < groups; gr++ {
		for j := 0; j < slots; j++ {
			q, o := j/round, j%round
			peer := q*round + round - 1 - o
			og := (gr + o + 1) % groups
			// Each cable once: from the lower (group, slot) end.
			if peer >= slots || [2]int{og, peer} == [2]int{gr, j} || og*slots+peer < gr*slots+j {
				continue
			}
			g.connect(gr*t.A+j/t.H, port(j), og*t.A+peer/t.H, port(peer))
		}
	}
	return g, nil
}

// HyperX is the HyperX of Ahn, Binkert, Davis, McLaren and Schreiber (SC
// 2009): switches on a grid of Dims, each fully connected to every switch
// that differs from it in one coordinate, with K parallel cables per such
// pair (the trunking), and T CAs per switch.
//
// Ports: 1..T the CAs, then per dimension d in order, per other coordinate
// x' in ascending order, K consecutive ports.
type HyperX struct {
	Dims        []int
	K, T        int
	SwitchPorts int
	Cable       Cable
}

// Graph builds the HyperX.
func (t HyperX) Graph() (*Graph, error) { return cabled(t.graph())(t.Cable) }

func (t HyperX) graph() (*Graph, error) {
	if len(t.Dims) == 0 || t.K < 1 || t.T < 0 {
		return nil, fmt.Errorf("topogen: hyperx: give --dims such as 12x8, --links ≥ 1 and --cas ≥ 0")
	}
	total, need := 1, t.T
	for _, s := range t.Dims {
		if s < 1 || s > MaxNodes {
			return nil, fmt.Errorf("topogen: hyperx: dimension %d; every dimension needs 1 to %d switches", s, MaxNodes)
		}
		total *= s
		need += (s - 1) * t.K
		if total > MaxNodes {
			return nil, fmt.Errorf("topogen: hyperx: %v is more than %d switches; choose smaller dimensions", t.Dims, MaxNodes)
		}
	}
	ports := max(t.SwitchPorts, need)
	if t.SwitchPorts != 0 && t.SwitchPorts < need {
		return nil, fmt.Errorf("topogen: hyperx: switches declared with %d ports, but %d CAs and the dimensions need %d; raise --switch-ports", t.SwitchPorts, t.T, need)
	}
	if err := checkSize(total, total*t.T, ports); err != nil {
		return nil, err
	}
	shape := joinInts(t.Dims, "x")
	coord := func(s int) []int {
		c := make([]int, len(t.Dims))
		for d, k := range t.Dims {
			c[d], s = s%k, s/k
		}
		return c
	}
	g := &Graph{}
	for s := 0; s < total; s++ {
		cs := joinInts(coord(s), ",")
		g.addSwitch("hyperx-"+strings.ReplaceAll(cs, ",", "-"), fmt.Sprintf("hyperx %s switch (%s)", shape, cs), ports)
	}
	for s := 0; s < total; s++ {
		for c := 0; c < t.T; c++ {
			g.addCA(fmt.Sprintf("%s-host-%d", g.Switches[s].Name, c), fmt.Sprintf("hyperx switch (%s) host %d", joinInts(coord(s), ","), c), s, c+1)
		}
	}
	base, stride := t.T, 1
	for _, k := range t.Dims {
		// port of switch at coordinate x toward coordinate y, cable i
		port := func(x, y, i int) int {
			if y > x {
				y--
			}
			return base + y*t.K + i + 1
		}
		for s := 0; s < total; s++ {
			x := s / stride % k
			for y := x + 1; y < k; y++ {
				for i := 0; i < t.K; i++ {
					g.connect(s, port(x, y, i), s+(y-x)*stride, port(y, x, i))
				}
			}
		}
		base += (k - 1) * t.K
		stride *= k
	}
	return g, nil
}

// Kautz is the Kautz graph K(D, K) (Kautz 1968; as an interconnect, Li,
// Lu and Su, "Kautz graphs as interconnects", among others): one switch per
// string s0..sK over D+1 symbols with no two equal neighbours, (D+1)·D^K
// switches, and a cable for each arc s0..sK → s1..sK x (x ≠ sK), so every
// switch has D out-cables and D in-cables (the two arcs between strings
// abab.. and baba.. are two parallel cables). T CAs per switch.
//
// Ports: 1..T the CAs, then D ports for the out-arcs (x in ascending
// order, skipping sK), then D ports for the in-arcs (by predecessor's first
// symbol, ascending, skipping s0).
type Kautz struct {
	D, K, T     int
	SwitchPorts int
	Cable       Cable
}

// Graph builds the Kautz graph.
func (t Kautz) Graph() (*Graph, error) { return cabled(t.graph())(t.Cable) }

func (t Kautz) graph() (*Graph, error) {
	if t.D < 2 || t.K < 1 || t.T < 0 {
		return nil, fmt.Errorf("topogen: kautz: --degree %d --diameter %d; give degree ≥ 2 and diameter ≥ 1 (K(d,k) has (d+1)·d^k switches)", t.D, t.K)
	}
	total := t.D + 1
	for i := 0; i < t.K; i++ {
		total *= t.D
		if total > MaxNodes {
			return nil, fmt.Errorf("topogen: kautz: K(%d,%d) has more than %d switches; choose a smaller degree or diameter", t.D, t.K, MaxNodes)
		}
	}
	need := t.T + 2*t.D
	ports := max(t.SwitchPorts, need)
	if t.SwitchPorts != 0 && t.SwitchPorts < need {
		return nil, fmt.Errorf("topogen: kautz: switches declared with %d ports, but %d CAs and 2·%d arcs need %d; raise --switch-ports", t.SwitchPorts, t.T, t.D, need)
	}
	if err := checkSize(total, total*t.T, ports); err != nil {
		return nil, err
	}
	// Enumerate the strings in lexicographic order.
	var words [][]int
	var rec func(w []int)
	rec = func(w []int) {
		if len(w) == t.K+1 {
			words = append(words, append([]int(nil), w...))
			return
		}
		for x := 0; x <= t.D; x++ {
			if len(w) == 0 || w[len(w)-1] != x {
				rec(append(w, x))
			}
		}
	}
	rec(nil)
	index := make(map[string]int, len(words))
	name := func(w []int) string {
		var b strings.Builder
		for _, x := range w {
			b.WriteString(strconv.Itoa(x))
		}
		return b.String()
	}
	g := &Graph{}
	for i, w := range words {
		index[name(w)] = i
		g.addSwitch("kautz-"+name(w), fmt.Sprintf("kautz K(%d,%d) switch %s", t.D, t.K, name(w)), ports)
	}
	for s := range words {
		for c := 0; c < t.T; c++ {
			g.addCA(fmt.Sprintf("%s-host-%d", g.Switches[s].Name, c), fmt.Sprintf("kautz switch %s host %d", name(words[s]), c), s, c+1)
		}
	}
	// slot of symbol x among the D symbols other than skip
	slot := func(x, skip int) int {
		if x > skip {
			x--
		}
		return x
	}
	for s, w := range words {
		last := w[t.K]
		for x := 0; x <= t.D; x++ {
			if x == last {
				continue
			}
			v := index[name(append(append([]int(nil), w[1:]...), x))]
			g.connect(s, t.T+1+slot(x, last), v, t.T+t.D+1+slot(w[0], words[v][0]))
		}
	}
	return g, nil
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, sep)
}
