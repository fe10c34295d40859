package pluginhost

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// The first-party multicast router, built and launched as the host does,
// answers trees that pass the host's check; asking it as another kind
// fails before any call.
func TestMulticastRouterPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the mcast-spanning binary (make test runs it)")
	}
	t.Parallel()
	bin, cleanup, err := buildPlugin("mcast-spanning", "../../plugins/mcast-spanning")
	t.Cleanup(cleanup)
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t)
	p, err := m.Launch(context.Background(), Config{Name: "mcast-spanning", Kind: sdk.KindMulticast, Path: bin})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RoutingEngine(); err == nil {
		t.Fatal("a multicast router served as a routing engine")
	}
	r, err := p.MulticastRouter()
	if err != nil {
		t.Fatal(err)
	}
	topo, err := sdktest.FatTree2(6, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	req := sdk.MulticastRequest{Topo: topo, Groups: sdktest.MulticastGroups(topo, 3)}
	trees, err := r.RouteMulticast(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := sdktest.CheckTrees(&req, trees); err != nil {
		t.Fatal(err)
	}
	if p.Calls() != 1 {
		t.Fatalf("calls = %d", p.Calls())
	}
	if _, err := m.Launch(context.Background(), Config{Name: "wrong", Kind: sdk.KindRouting, Path: bin}); err == nil {
		t.Fatal("mcast-spanning launched as a routing engine")
	}
}
