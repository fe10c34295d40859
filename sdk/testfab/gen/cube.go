package gen

import (
	"fmt"
	"strconv"
	"strings"
)

// Torus describes a k-ary n-cube: switches on a grid of the given
// dimensions, each cabled to its neighbours along every dimension, with the
// wrap-around links of a torus unless Mesh is set. A ring of n switches is
// Torus{Dims: []int{n}}.
//
// Ports: 1..CAsPerSwitch carry the CAs; then, for dimension d (0-based),
// port CAs+2d+1 goes to the "+" neighbour and port CAs+2d+2 to the "−"
// neighbour. A dimension of size 2 in a torus therefore gets two parallel
// cables between the pair (+ of one to − of the other, both ways), as a
// 2-ary n-cube has; a dimension of size 1 gets none.
type Torus struct {
	Dims         []int
	Mesh         bool
	CAsPerSwitch int
	// SwitchPorts is the declared switch port count (0: CAs + 2 per dimension).
	SwitchPorts int
	Cable       Cable
	// name is the node-name prefix: "ring", "torus" or "mesh".
	name string
}

// Ring returns the torus of n switches in a cycle, named as a ring.
func Ring(switches, casPerSwitch int) Torus {
	return Torus{Dims: []int{switches}, CAsPerSwitch: casPerSwitch, name: "ring"}
}

// Graph builds the grid.
func (t Torus) Graph() (*Graph, error) { return cabled(t.graph())(t.Cable) }

func (t Torus) prefix() string {
	switch {
	case t.name != "":
		return t.name
	case t.Mesh:
		return "mesh"
	}
	return "torus"
}

func (t Torus) graph() (*Graph, error) {
	kind := t.prefix()
	if len(t.Dims) == 0 {
		return nil, fmt.Errorf("topogen: %s: no dimensions; give --dims such as 4x4x4", kind)
	}
	total := 1
	for _, k := range t.Dims {
		if k < 1 || k > MaxNodes {
			return nil, fmt.Errorf("topogen: %s: dimension %d; every dimension needs 1 to %d switches", kind, k, MaxNodes)
		}
		total *= k
		if total > MaxNodes {
			return nil, fmt.Errorf("topogen: %s: %v is more than %d switches; choose smaller dimensions", kind, t.Dims, MaxNodes)
		}
	}
	h := t.CAsPerSwitch
	if h < 0 || h > MaxPorts {
		return nil, fmt.Errorf("topogen: %s: --cas %d; give 0 to %d CAs per switch", kind, h, MaxPorts)
	}
	need := h + 2*len(t.Dims)
	ports := t.SwitchPorts
	if ports == 0 {
		ports = need
	}
	if ports < need {
		return nil, fmt.Errorf("topogen: %s: switches declared with %d ports, but %d CAs and %d dimensions need %d; raise --switch-ports", kind, ports, h, len(t.Dims), need)
	}
	if err := checkSize(total, total*h, ports); err != nil {
		return nil, err
	}
	dimsStr := make([]string, len(t.Dims))
	for i, k := range t.Dims {
		dimsStr[i] = strconv.Itoa(k)
	}
	shape := strings.Join(dimsStr, "x")

	g := &Graph{}
	caDesc := make([]string, total) // the switch's description without the shape
	coord := make([]int, len(t.Dims))
	// Switch index = mixed-radix number with dimension 0 least significant.
	for s := 0; s < total; s++ {
		rem := s
		for d, k := range t.Dims {
			coord[d], rem = rem%k, rem/k
		}
		var name, desc string
		if kind == "ring" {
			name, desc = fmt.Sprintf("ring-%d", s), fmt.Sprintf("ring switch %d", s)
			caDesc[s] = desc
		} else {
			cs := make([]string, len(coord))
			for d, c := range coord {
				cs[d] = strconv.Itoa(c)
			}
			name = fmt.Sprintf("%s-%s", kind, strings.Join(cs, "-"))
			desc = fmt.Sprintf("%s %s switch (%s)", kind, shape, strings.Join(cs, ","))
			caDesc[s] = fmt.Sprintf("%s switch (%s)", kind, strings.Join(cs, ","))
		}
		g.addSwitch(name, desc, ports)
	}
	for s := 0; s < total; s++ {
		for c := 0; c < h; c++ {
			g.addCA(fmt.Sprintf("%s-host-%d", g.Switches[s].Name, c), fmt.Sprintf("%s host %d", caDesc[s], c), s, c+1)
		}
	}
	stride := 1
	for d, k := range t.Dims {
		for s := 0; s < total; s++ {
			c := s / stride % k
			if k == 1 || (c == k-1 && t.Mesh) {
				continue
			}
			next := s + stride
			if c == k-1 {
				next = s - (k-1)*stride
			}
			g.connect(s, h+2*d+1, next, h+2*d+2)
		}
		stride *= k
	}
	return g, nil
}
