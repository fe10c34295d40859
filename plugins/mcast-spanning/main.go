// Command mcast-spanning is the first-party multicast router: for each
// group it builds a spanning tree over the switches its members attach to,
// rooted at a centre of the group (a switch halfway along the group's
// longest shortest path), with branches that follow shortest paths to the
// root. Groups spread over the fabric: among the equally central switches
// (the spines of a fat tree) the root is picked by MLID, and so is the
// parent among equally short ones. A group's tree depends on nothing but
// the group and the fabric.
package main

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

func main() {
	sdk.Serve(&router{})
}

type router struct{}

var _ sdk.MulticastRouter = (*router)(nil)

func (*router) Info() sdk.Info {
	return sdk.Info{Name: "mcast-spanning", Version: version, Kind: sdk.KindMulticast}
}

// Schema is empty: there is nothing to tune.
func (*router) Schema() schema.Block { return schema.Object() }

func (*router) Configure(v cty.Value) error {
	if v == cty.NilVal || v.IsNull() {
		return nil
	}
	if !v.Type().IsObjectType() || len(v.Type().AttributeTypes()) != 0 {
		return fmt.Errorf("mcast-spanning: takes no configuration, got %s", v.Type().FriendlyName())
	}
	return nil
}

func (*router) RouteMulticast(ctx context.Context, req sdk.MulticastRequest) ([]sdk.MulticastTree, error) {
	return route(ctx, req)
}
