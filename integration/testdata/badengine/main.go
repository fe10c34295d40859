// Command badengine is a routing engine that misbehaves on purpose, for the
// host's fault tests. Its config attribute mode selects how: "ok" routes
// with the SDK's reference BFS router, "crash" exits inside Route, "hang"
// never answers, "bad_port" names a port the switch does not have, "loop"
// sends two switches' traffic for one destination back and forth.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

type engine struct{ mode string }

func (e *engine) Info() sdk.Info {
	return sdk.Info{Name: "badengine", Version: "0.0.1", Kind: sdk.KindRouting}
}

func (e *engine) Schema() schema.Block {
	return schema.Object(schema.Attr("mode", cty.String, "ok, crash, hang, bad_port or loop").WithDefault(cty.StringVal("ok")))
}

func (e *engine) Configure(v cty.Value) error {
	m := v.GetAttr("mode")
	if m.IsNull() {
		e.mode = "ok"
		return nil
	}
	switch s := m.AsString(); s {
	case "ok", "crash", "hang", "bad_port", "loop":
		e.mode = s
		return nil
	default:
		return fmt.Errorf("mode %q: want ok, crash, hang, bad_port or loop", s)
	}
}

func (e *engine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	r := sdktest.BFSRoutes(req.Topo)
	switch e.mode {
	case "crash":
		os.Exit(3)
	case "hang":
		select {} // ignores ctx on purpose: the host must kill it
	case "bad_port":
		r.Planes[0].Planes[0][0] = 200
	case "loop":
		if err := loop(req.Topo, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// loop finds two linked switches a, b and a destination that is not on
// either, and points a at b and b at a for it.
func loop(t *topology.Topology, r *plan.Routes) error {
	for _, sw := range t.Switches() {
		n := &t.Nodes[sw]
		for p := 1; p < len(n.Ports); p++ {
			peer := n.Ports[p].Peer
			if !peer.Connected() || t.Nodes[peer.Node].Type != topology.Switch {
				continue
			}
			for d, ep := range t.Endpoints() {
				if ep.Node == sw || ep.Node == peer.Node || t.Nodes[ep.Node].Type == topology.Switch {
					continue
				}
				if att := t.Nodes[ep.Node].Ports[ep.Port].Peer; att.Node == sw || att.Node == peer.Node {
					continue
				}
				pl := r.Planes[d].Planes[0]
				pl[t.SwitchIndex(sw)] = uint8(p)
				pl[t.SwitchIndex(peer.Node)] = peer.Port
				return nil
			}
		}
	}
	return errors.New("badengine: no place for a loop in this topology")
}

func main() { sdk.Serve(&engine{}) }
