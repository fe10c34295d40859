// Package torus is dimension-order routing on tori and meshes and its
// dateline VL plan, shared by the torus routing engine and the torus-vl VL
// assigner (one binary per plugin kind; both place switches on the grid
// the same way from the same config).
//
// Routing: toward each destination a switch corrects dimension 0 first,
// then 1, and so on, along the shorter way round a wrapped ring (ties go
// "+"). A switch whose dimension-order route meets a failed link or switch
// instead sends the packet one hop to a live neighbour whose own
// dimension-order route is intact (the nearest such); no other switch
// forwards through it, so that hop is always the packet's first
// switch-to-switch hop.
//
// VLs: each wrapped dimension of 5 or more switches gets one SL bit per
// destination, 1 when the destination's coordinate is below half the ring
// (those destinations' "+" arcs cross the wrap link, their "−" arcs never
// do; the others' "+" arcs never do). A hop in that dimension travels on VL
// base+bit, so on each VL every ring direction has a channel no route
// holds, and dimension order forbids cycles across dimensions. When the
// fabric has faults, hops leaving a switch from a CA or the switch's own
// port 0 take a third VL: they are first hops, so nothing waits on them
// and the detour hop cannot close a loop. The SL depends on the
// destination's coordinates alone, so a fault changes no path's SL.
// Several QoS levels get disjoint copies of that VL set and of the SLs.
package torus

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"

	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

// DefaultPattern matches the switch descriptions 'ibsm topo torus' and
// 'ibsm topo mesh' write: "torus 8x8x8 switch (3,0,7)".
const DefaultPattern = `\((\d+(?:,\d+)*)\)`

// Config places switches on the grid.
type Config struct {
	// Dims is the grid size per dimension; nil: one more than the largest
	// coordinate seen.
	Dims []int
	// Wrap says per dimension whether it is a ring; nil: detected from the
	// links (a link joining coordinates 0 and k-1 of a dimension of k > 2).
	Wrap []bool
	// Pattern finds a switch's coordinates in its NodeDescription: its
	// first capture group holds them, comma-separated.
	Pattern *regexp.Regexp
	// Coords, by node GUID, win over Pattern.
	Coords map[uint64][]int
}

// Attributes is the config schema both torus plugins declare.
func Attributes() []schema.Attribute {
	return []schema.Attribute{
		schema.Attr("dims", cty.List(cty.Number),
			"Switches per dimension, e.g. [8, 8, 8]. Default: one more than the largest coordinate found."),
		schema.Attr("wrap", cty.List(cty.Bool),
			"Per dimension, whether it is a ring (torus) or a line (mesh). Default: a dimension wraps when a live link joins its first and last coordinate."),
		schema.Attr("node_desc_pattern", cty.String,
			"Regular expression whose first capture group holds a switch's coordinates, comma-separated, in its NodeDescription. The default matches what 'ibsm topo torus' and 'ibsm topo mesh' write. When no switch matches and coordinates is empty, the switches are placed from the switch graph alone (whole tori with rings of 5 or more, whole meshes).").
			WithDefault(cty.StringVal(DefaultPattern)),
		schema.Attr("coordinates", cty.Map(cty.List(cty.Number)),
			`Coordinates by switch node GUID ("0x..." = [x, y, z]); they win over node_desc_pattern.`),
	}
}

// Decode reads the attributes of Attributes from a config object.
func Decode(v cty.Value) (Config, error) {
	var c Config
	pat, err := settings.String(v, "node_desc_pattern", DefaultPattern)
	if err != nil {
		return c, err
	}
	if c.Pattern, err = regexp.Compile(pat); err != nil {
		return c, fmt.Errorf("node_desc_pattern %q: %v", pat, err)
	}
	if c.Pattern.NumSubexp() < 1 {
		return c, fmt.Errorf("node_desc_pattern %q has no capture group; put the coordinates in one, like %s", pat, DefaultPattern)
	}
	if c.Dims, err = ints(v, "dims"); err != nil {
		return c, err
	}
	for _, k := range c.Dims {
		if k < 1 {
			return c, fmt.Errorf("dims = %v: every dimension needs at least 1 switch", c.Dims)
		}
	}
	if w := attr(v, "wrap"); !w.IsNull() {
		for _, e := range w.AsValueSlice() {
			if e.IsNull() {
				return c, fmt.Errorf("wrap: null element; give true or false per dimension")
			}
			c.Wrap = append(c.Wrap, e.True())
		}
		if c.Dims != nil && len(c.Wrap) != len(c.Dims) {
			return c, fmt.Errorf("wrap has %d entries but dims %d; give one per dimension", len(c.Wrap), len(c.Dims))
		}
	}
	if m := attr(v, "coordinates"); !m.IsNull() {
		c.Coords = map[uint64][]int{}
		for k, l := range m.AsValueMap() {
			g, err := settings.GUID(k)
			if err != nil {
				return c, fmt.Errorf("coordinates: key %q: %v", k, err)
			}
			xs, err := numbers(l)
			if err != nil {
				return c, fmt.Errorf("coordinates[%q]: %v", k, err)
			}
			c.Coords[g] = xs
		}
	}
	return c, nil
}

func attr(v cty.Value, name string) cty.Value {
	if v == cty.NilVal || v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute(name) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return v.GetAttr(name)
}

func ints(v cty.Value, name string) ([]int, error) {
	l := attr(v, name)
	if l.IsNull() {
		return nil, nil
	}
	xs, err := numbers(l)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return xs, nil
}

func numbers(l cty.Value) ([]int, error) {
	var out []int
	for _, e := range l.AsValueSlice() {
		if e.IsNull() || e.Type() != cty.Number {
			return nil, fmt.Errorf("want whole numbers")
		}
		f := e.AsBigFloat()
		i, acc := f.Int64()
		if acc != big.Exact || i < 0 || i > 1<<20 {
			return nil, fmt.Errorf("%s is not a coordinate (a whole number from 0)", f.String())
		}
		out = append(out, int(i))
	}
	return out, nil
}

// parseCoords reads "3,0,7".
func parseCoords(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var x int
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%d", &x); err != nil || x < 0 {
			return nil, fmt.Errorf("coordinate %q is not a whole number", f)
		}
		out = append(out, x)
	}
	return out, nil
}
