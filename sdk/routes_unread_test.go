package sdk_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// capsPlugin is fakePlugin declaring caps.
type capsPlugin struct {
	*fakePlugin
	caps []string
}

func (c capsPlugin) Info() sdk.Info {
	i := c.fakePlugin.Info()
	i.Capabilities = c.caps
	return i
}

// TestRoutesUnreadGetsShape: a LID assigner declaring CapRoutesUnread is
// sent the routes' form and count only (once the host has read its Info);
// every other assigner, and one whose Info the host has not read, gets the
// routes in full as before.
func TestRoutesUnreadGetsShape(t *testing.T) {
	topo, err := sdktest.FatTree2(4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	full := sdktest.BFSRoutes(topo)
	neps := len(topo.Endpoints())
	cases := []struct {
		name      string
		caps      []string
		getInfo   bool
		wantShape bool
	}{
		{"declared", []string{sdk.CapLMC, sdk.CapRoutesUnread}, true, true},
		{"declared, Info not read", []string{sdk.CapRoutesUnread}, false, false},
		{"not declared", []string{sdk.CapLMC}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *plan.Routes
			f := &fakePlugin{kind: sdk.KindLIDAssign, lids: func(r sdk.LIDRequest) (*plan.LIDPlan, error) {
				got = r.Routes
				return sequentialLIDs(neps, 0), nil
			}}
			c := connect(t, capsPlugin{f, tc.caps}, sdk.KindLIDAssign)
			ctx := context.Background()
			if tc.getInfo {
				if _, err := c.GetInfo(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.AssignLIDs(ctx, sdk.LIDRequest{Topo: topo, Routes: full}); err != nil {
				t.Fatal(err)
			}
			if !got.IsPlanes() || len(got.Planes) != neps {
				t.Fatalf("assigner saw %d destinations (planes %v), want %d", len(got.Planes), got.IsPlanes(), neps)
			}
			for e, dp := range got.Planes {
				if shape := dp.Planes == nil; shape != tc.wantShape {
					t.Fatalf("destination %d: planes sent %v, want shape only %v", e, !shape, tc.wantShape)
				}
				if !tc.wantShape && string(dp.Planes[0]) != string(full.Planes[e].Planes[0]) {
					t.Fatalf("destination %d plane differs", e)
				}
			}
		})
	}
}

// TestTablesUnreadGetsNoTables: the SDK realises the forwarding tables in
// the plugin for a VL assigner unless it declared CapTablesUnread; the
// routes and LID plan come whole either way.
func TestTablesUnreadGetsNoTables(t *testing.T) {
	topo, err := sdktest.FatTree2(4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	full := sdktest.BFSRoutes(topo)
	neps := len(topo.Endpoints())
	for _, tc := range []struct {
		name       string
		caps       []string
		wantTables bool
	}{
		{"declared", []string{sdk.CapTablesUnread}, false},
		{"not declared", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got sdk.VLRequest
			f := &fakePlugin{kind: sdk.KindVLAssign, vls: func(r sdk.VLRequest) (*plan.VLPlan, error) {
				got = r
				return &plan.VLPlan{VLs: 1}, nil
			}}
			c := connect(t, capsPlugin{f, tc.caps}, sdk.KindVLAssign)
			if _, err := c.AssignVLs(context.Background(), sdk.VLRequest{Topo: topo, Routes: full, LIDs: sequentialLIDs(neps, 0), MaxVLs: 8}); err != nil {
				t.Fatal(err)
			}
			if (got.Realized != nil) != tc.wantTables {
				t.Fatalf("tables realised %v, want %v", got.Realized != nil, tc.wantTables)
			}
			if len(got.Routes.Planes) != neps || string(got.Routes.Planes[1].Planes[0]) != string(full.Planes[1].Planes[0]) || len(got.LIDs.Ports) != neps {
				t.Fatalf("routes or LIDs not sent whole: %d destinations, %d ports", len(got.Routes.Planes), len(got.LIDs.Ports))
			}
		})
	}
}
