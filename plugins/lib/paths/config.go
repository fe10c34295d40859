package paths

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// Config is what the shortest-widest and path-selection plugins are
// configured with.
type Config struct {
	// RootGUID is the node GUID of the up*/down* root switch; 0 draws one
	// from Seed.
	RootGUID uint64
	// Seed fixes every random choice (root, pair order, ties).
	Seed uint64
	// Switches routes switch port 0 endpoints too.
	Switches bool
	// K, MaxStretch and Granularity are path-selection's (see Options).
	K, MaxStretch int
	Granularity   Granularity
}

// DefaultConfig is the configuration of an unconfigured plugin: the
// schema's defaults.
func DefaultConfig() Config { return Config{Seed: 1, Switches: true, K: 16} }

// SchemaAttrs are the attributes both path plugins take; withK adds
// path-selection's k and max_stretch.
func SchemaAttrs(withK bool) []schema.Attribute {
	a := []schema.Attribute{
		schema.Attr("root_guid", cty.String,
			`Node GUID ("0x...") of the up*/down* root switch. Unset: a switch drawn with seed, as Nienaber et al. do.`),
		schema.Attr("seed", cty.Number,
			"Seed of every random choice (root, pair order, ties between equally good paths). Same fabric and seed, same routes.").
			WithDefault(cty.NumberIntVal(1)),
		schema.Attr("switch_endpoints", cty.Bool,
			"Also route to and from every switch's port 0, so the SM and SA reach switches by LID. false routes CA pairs only, as the papers do; the LID assigner must then give switches their own planes.").
			WithDefault(cty.True),
	}
	if withK {
		a = append(a,
			schema.Attr("k", cty.Number,
				fmt.Sprintf("Candidate paths per switch pair found by Yen's algorithm before selection (Nienaber et al.: 16), 1..%d.", MaxK)).
				WithDefault(cty.NumberIntVal(16)),
			schema.Attr("max_stretch", cty.Number,
				"Extra hops a candidate may have over the pair's shortest legal path; 0 keeps shortest paths only (Nienaber et al.), -1 lets Yen return longer ones.").
				WithDefault(cty.NumberIntVal(0)),
			schema.Attr("granularity", cty.String,
				`What one path is selected for. "switch": one path per ordered switch pair, shared by every machine pair between the two switches, candidates weighted by those machine pairs (about 1-2 LIDs per machine with color-l). "machine": every machine pair on its own (a little better balance, but machines of one switch split toward a destination at their switch: 4-5 LIDs per machine).`).
				WithDefault(cty.StringVal("switch")))
	}
	return a
}

// ParseConfig reads v (null attributes take their defaults).
func ParseConfig(v cty.Value, withK bool) (Config, error) {
	c := DefaultConfig()
	root, err := settings.String(v, "root_guid", "")
	if err != nil {
		return c, err
	}
	if strings.TrimSpace(root) != "" {
		if c.RootGUID, err = settings.GUID(root); err != nil {
			return c, fmt.Errorf("root_guid: %w", err)
		}
	}
	seed, err := number(v, "seed", 1, 0, 1<<63-1)
	if err != nil {
		return c, err
	}
	c.Seed = uint64(seed)
	if c.Switches, err = settings.Bool(v, "switch_endpoints", true); err != nil {
		return c, err
	}
	if withK {
		k, err := number(v, "k", 16, 1, MaxK)
		if err != nil {
			return c, err
		}
		s, err := number(v, "max_stretch", 0, -1, 64)
		if err != nil {
			return c, err
		}
		c.K, c.MaxStretch = int(k), int(s)
		g, err := settings.String(v, "granularity", "switch")
		if err != nil {
			return c, err
		}
		if c.Granularity, err = ParseGranularity(g); err != nil {
			return c, err
		}
	}
	return c, nil
}

// number reads an integer attribute within [lo, hi].
func number(v cty.Value, name string, def, lo, hi int64) (int64, error) {
	i, err := settings.Int64(v, name, def)
	if err != nil {
		return def, err
	}
	if i < lo || i > hi {
		return def, fmt.Errorf("config attribute %q = %d: give a whole number in %d..%d", name, i, lo, hi)
	}
	return i, nil
}

// Options resolves the configuration against a topology: the random
// source and, if a root GUID is configured, its switch index.
func (c Config) Options(t *topology.Topology) (Options, *rand.Rand, error) {
	o := Options{Root: -1, Switches: c.Switches, K: c.K, MaxStretch: c.MaxStretch, Granularity: c.Granularity}
	if c.RootGUID != 0 {
		n := t.NodeByGUID(c.RootGUID)
		if n == topology.NoNode || t.SwitchIndex(n) < 0 {
			return o, nil, fmt.Errorf("root_guid 0x%016x is not a switch of this fabric; fix root_guid or remove it to draw a root from seed", c.RootGUID)
		}
		o.Root = t.SwitchIndex(n)
	}
	return o, rand.New(rand.NewPCG(c.Seed, 0x5eed)), nil
}

// ParseGranularity reads the configuration spelling of a Granularity.
func ParseGranularity(s string) (Granularity, error) {
	switch s {
	case "switch":
		return PerSwitchPair, nil
	case "machine":
		return PerMachinePair, nil
	}
	return PerSwitchPair, fmt.Errorf("granularity %q: use \"switch\" (one path per switch pair) or \"machine\" (one per machine pair)", s)
}
