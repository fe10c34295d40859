package conf

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/sdk"
)

// Multicast is the multicast {} block: which multicast router plugin
// computes the groups' trees.
//
//	plugin "multicast_router" "mcast-spanning" { path = "bin/mcast-spanning" }
//	multicast { router = "mcast-spanning" }
//
// Without the block, a single declared multicast_router plugin is used;
// with none declared the SM does no multicast (MCMemberRecord joins are
// refused with ERR_NO_RESOURCES and a warning says why).
type Multicast struct {
	// Router names a plugin "multicast_router" block; "" for none.
	Router    string
	DeclRange hcl.Range
}

var multicastSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "router", Required: true}}}

// multicast decodes the multicast block b (nil when absent).
func (d *decoder) multicast(b *hcl.Block, plugins []*Plugin) Multicast {
	if b == nil {
		var only []*Plugin
		for _, p := range plugins {
			if p.Kind == sdk.KindMulticast {
				only = append(only, p)
			}
		}
		if len(only) == 1 {
			return Multicast{Router: only[0].Name, DeclRange: only[0].DeclRange}
		}
		if len(only) > 1 {
			d.errorf(only[1].DeclRange, "Which multicast router?",
				"%d multicast_router plugins are declared. Add multicast { router = \"<name>\" } naming the one to use. %s",
				len(only), declared(plugins, sdk.KindMulticast))
		}
		return Multicast{}
	}
	m := Multicast{DeclRange: b.DefRange}
	c := d.content(b.Body, multicastSchema)
	if c == nil {
		return m
	}
	var name string
	if f := attr(d, c.Attributes, "router", &name); f.ok && d.resolve(plugins, sdk.KindMulticast, name, "multicast.router", f.rng) {
		m.Router = name
	}
	return m
}

// MulticastRouter returns the multicast router plugin block, nil if none.
func (c *Config) MulticastRouter() *Plugin {
	if c.Multicast.Router == "" {
		return nil
	}
	return c.Plugin(sdk.KindMulticast, c.Multicast.Router)
}
