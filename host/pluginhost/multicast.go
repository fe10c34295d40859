package pluginhost

import (
	"context"

	"github.com/ibsm/ibsm/sdk"
)

var _ sdk.MulticastRouter = (*Plugin)(nil)

// MulticastRouter returns the plugin as a multicast router.
func (p *Plugin) MulticastRouter() (sdk.MulticastRouter, error) {
	return p, p.wantKind(sdk.KindMulticast)
}

// RouteMulticast implements sdk.MulticastRouter, with the plugin's call
// deadline, restart and hang handling like every kind call.
func (p *Plugin) RouteMulticast(ctx context.Context, req sdk.MulticastRequest) ([]sdk.MulticastTree, error) {
	if err := p.wantKind(sdk.KindMulticast); err != nil {
		return nil, err
	}
	return do(p, ctx, "RouteMulticast", true, func(ctx context.Context, rpc *sdk.RemoteClient) ([]sdk.MulticastTree, error) {
		return rpc.RouteMulticast(ctx, req)
	})
}
