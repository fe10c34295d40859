// Command ftree is the first-party fat-tree routing engine plugin (the
// algorithm is in plugins/lib/ftree): Zahavi et al.'s routing, as in
// OpenSM's ftree, with a dedicated downward path per destination CA chosen
// by the CA's index, so shift permutations are congestion-free on full
// trees. Unlike OpenSM's ftree it keeps routing degraded trees (pure
// up*/down*, one VL, the pairs without a legal route reported, never
// min-hop), supports LMC > 0 (each LID of a range through a different top
// switch), and re-routes a failed cable by re-choosing only the
// destinations that used it.
package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/settings"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

func main() {
	sdk.Serve(&engine{log: sdk.Logger("ftree")})
}

type engine struct {
	log hclog.Logger
	cfg ftree.Config
}

var _ sdk.RoutingEngine = (*engine)(nil)

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: "ftree", Version: version, Kind: sdk.KindRouting, Capabilities: []string{"lmc"}}
}

func (e *engine) Schema() schema.Block {
	return schema.Object(
		schema.Attr("root_guids", cty.List(cty.String),
			`Node GUIDs ("0x...") of the top switches of the tree. Default: per connected component, the switches farthest from any CA-carrying switch. Set it when spare or partially cabled switches make that guess wrong.`),
		schema.Attr("root_guid_file", cty.String,
			`A file with one root node GUID per line, as OpenSM's root_guid_file ('#' starts a comment), relative to the configuration file. Combined with root_guids. The host reads it and sends its contents, so editing it re-routes at the next start or reload.`).AsFile(),
		schema.Attr("ca_order", cty.List(cty.String),
			`CA node or port GUIDs in the order of the application's ranks. Routes are spread by this order, so rank shifts are congestion-free. Default: leaf by leaf (leaves sharing parents together), CAs by port.`),
		schema.Attr("ca_order_file", cty.String,
			`A file with one CA node or port GUID per line, as OpenSM's cn_guid_file but ordered, relative to the configuration file. Listed after ca_order. The host reads it and sends its contents.`).AsFile(),
	)
}

func (e *engine) Configure(v cty.Value) error {
	roots, err := guids(v, "root_guids", "root_guid_file")
	if err != nil {
		return fmt.Errorf("ftree: %w", err)
	}
	order, err := guids(v, "ca_order", "ca_order_file")
	if err != nil {
		return fmt.Errorf("ftree: %w", err)
	}
	e.cfg = ftree.Config{Roots: roots, CAOrder: order}
	return nil
}

// guids reads the GUIDs listed in listAttr, then those in the contents of
// the file fileAttr names (the host sends the contents, not the path).
func guids(v cty.Value, listAttr, fileAttr string) ([]uint64, error) {
	list, err := settings.GUIDs(v, listAttr)
	if err != nil {
		return nil, err
	}
	contents, err := settings.String(v, fileAttr, "")
	if err != nil {
		return nil, err
	}
	more, err := ftree.ParseGUIDFile(fileAttr, contents)
	if err != nil {
		return nil, err
	}
	return ftree.AppendUnique(list, more), nil
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	r, res, err := ftree.Route(ctx, req.Topo, req.LMC, e.cfg)
	if err != nil {
		return nil, err
	}
	t := res.Tree
	roots := make([]string, 0, len(t.Roots))
	for _, s := range t.Roots {
		roots = append(roots, fmt.Sprintf("0x%016x", req.Topo.Nodes[req.Topo.Switches()[s]].GUID))
	}
	e.log.Info("fat tree", "levels", t.Levels, "roots", len(t.Roots), "root_choice", t.How, "leaves", len(t.Leaves),
		"ca_slots_per_leaf", t.CAsPerLeaf, "first_roots", roots[:min(len(roots), 4)])
	if len(t.Missing) > 0 {
		e.log.Warn("configured GUIDs not found in the fabric", "guids", t.Missing)
	}
	if c := res.CAs; c.SwitchPairs > 0 {
		e.log.Warn("some CAs have no up/down route from some switches; those entries are left unrouted, not routed another way",
			"unrouted_ca_pairs", c.CAPairs, "unrouted_switch_to_ca_pairs", c.SwitchPairs, "detached_endpoints", c.Detached, "examples", c.Examples)
	}
	if s := res.Switches; s.SwitchPairs > 0 {
		e.log.Info("switch-to-switch pairs without an up/down route (top switches to each other, and more on degraded trees) are left unrouted; use sftree to route them",
			"unrouted_switch_pairs", s.SwitchPairs, "examples", s.Examples)
	}
	return r, nil
}
