package nue

import (
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

// MaxTrees bounds trees_per_switch.
const MaxTrees = 64

// MaxReroute bounds reroute.
const MaxReroute = 3

// Config is what the nue plugins are configured with.
type Config struct {
	// VLs is the budget, 0 for the default (Budget).
	VLs int
	// Trees is Options.Trees, Reroute Options.Reroute (the engine's only).
	Trees, Reroute int
}

var vlsAttr = schema.Attr("vls", cty.Number,
	fmt.Sprintf("VL budget: the number of virtual layers (VLs, SLs) the routes are spread over, 1..%d; each layer's channel dependency graph is kept acyclic. 0: the fabric's smallest VLCap, at most %d. Give the routing engine and the VL assigner the same value.", MaxBudget, MaxBudget)).
	WithDefault(cty.NumberIntVal(0))

var treesAttr = schema.Attr("trees_per_switch", cty.Number,
	fmt.Sprintf("Destination trees per switch (and LMC plane), 0..%d: a switch's CAs share them round-robin. 0: one tree per CA, the best balance (as sssp). The search work is per tree, so 1 or 2 route a fabric with many CAs per switch several times faster for a few percent of eBB.", MaxTrees)).
	WithDefault(cty.NumberIntVal(0))

var rerouteAttr = schema.Attr("reroute", cty.Number,
	fmt.Sprintf("Passes, 0..%d, that route every destination tree again after the first, each ripped up and searched anew with all the other trees' loads and dependencies in place. 1 gains 1-2 %% of eBB where the budget is small (512-switch 12-regular random graph, seed 1: 0.422 -> 0.427 at 1 VL, 0.436 -> 0.443 at 2 VLs) for 1.6-2x the route CPU; 0 for speed on large fabrics.", MaxReroute)).
	WithDefault(cty.NumberIntVal(1))

// EngineSchema is the routing engine's config block.
func EngineSchema() schema.Block { return schema.Object(vlsAttr, treesAttr, rerouteAttr) }

// AssignerSchema is the VL assigner's config block.
func AssignerSchema() schema.Block { return schema.Object(vlsAttr) }

// Configure checks a decoded config against b and reads it.
func Configure(v cty.Value, b schema.Block) (Config, error) {
	var c Config
	if v != cty.NilVal && !v.IsNull() && v.Type().IsObjectType() {
		for name := range v.Type().AttributeTypes() {
			if !slices.ContainsFunc(b.Attributes, func(a schema.Attribute) bool { return a.Name == name }) {
				return c, fmt.Errorf("nue: unknown attribute %q; remove it from the plugin's config block", name)
			}
		}
	}
	var err error
	if c.VLs, err = settings.Int(v, "vls", 0); err != nil {
		return c, err
	}
	if c.VLs < 0 || c.VLs > MaxBudget {
		return c, fmt.Errorf("vls = %d is out of range 0..%d (0: the fabric's smallest VLCap)", c.VLs, MaxBudget)
	}
	if c.Trees, err = settings.Int(v, "trees_per_switch", 0); err != nil {
		return c, err
	}
	if c.Trees < 0 || c.Trees > MaxTrees {
		return c, fmt.Errorf("trees_per_switch = %d is out of range 0..%d (0: one tree per CA)", c.Trees, MaxTrees)
	}
	if c.Reroute, err = settings.Int(v, "reroute", 1); err != nil {
		return c, err
	}
	if c.Reroute < 0 || c.Reroute > MaxReroute {
		return c, fmt.Errorf("reroute = %d is out of range 0..%d (0: one pass)", c.Reroute, MaxReroute)
	}
	return c, nil
}
