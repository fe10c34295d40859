package sdk_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// BenchmarkRouteRoundTripReference measures one Route call on the reference
// fabric (3-level fat tree of 36-port switches: 1,620 switches, 13,284
// endpoints) over a real unix-socket gRPC connection: topology encode, stream,
// decode + rebuild + hash check in the plugin, then 21.5 MB of planes back and
// their validation on the host. The engine itself does no work.
func BenchmarkRouteRoundTripReference(b *testing.B) {
	topo, err := sdktest.FatTree3(36)
	if err != nil {
		b.Fatal(err)
	}
	nsw, neps := len(topo.Switches()), len(topo.Endpoints())
	if nsw != 1620 || neps != 13284 {
		b.Fatalf("reference fabric has %d switches and %d endpoints, want 1620 and 13284", nsw, neps)
	}
	routes := &plan.Routes{Planes: make([]plan.DestPlanes, neps)}
	for e := range routes.Planes {
		pl := make(plan.Plane, nsw)
		for s := range pl {
			pl[s] = uint8(1 + (e+s)%36)
		}
		routes.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{pl}}
	}
	f := &fakePlugin{kind: sdk.KindRouting, routes: func(sdk.RouteRequest) (*plan.Routes, error) { return routes, nil }}
	c := connect(b, f, sdk.KindRouting)
	b.SetBytes(int64(nsw * neps))
	b.ResetTimer()
	for b.Loop() {
		got, err := c.Route(context.Background(), sdk.RouteRequest{Topo: topo})
		if err != nil {
			b.Fatal(err)
		}
		if len(got.Planes) != neps {
			b.Fatal("short answer")
		}
	}
}
