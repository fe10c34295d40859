package sdk_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

func TestRouteFormAndNumbers(t *testing.T) {
	info := func(caps ...string) sdk.Info { return sdk.Info{Capabilities: caps} }
	forms := []struct {
		caps []string
		want sdk.RouteForm
	}{
		{nil, sdk.FormUnknown},
		{[]string{"lmc"}, sdk.FormPlanes}, // every planes engine before CapPlanes
		{[]string{"planes"}, sdk.FormPlanes},
		{[]string{"paths"}, sdk.FormPaths},
		{[]string{"lmc", "paths"}, sdk.FormPaths},
		{[]string{"paths", "planes"}, sdk.FormBoth},
	}
	for _, tc := range forms {
		if got := info(tc.caps...).RouteForm(); got != tc.want {
			t.Errorf("RouteForm(%v) = %v, want %v", tc.caps, got, tc.want)
		}
	}
	numbers := []struct {
		caps []string
		form sdk.RouteForm
		want bool
	}{
		{[]string{"lmc"}, sdk.FormPlanes, true},
		{[]string{"lmc"}, sdk.FormPaths, false}, // sequential
		{[]string{"lmc"}, sdk.FormBoth, false},
		{[]string{"lmc", "paths"}, sdk.FormPaths, true}, // the path LID assigners
		{[]string{"lmc", "paths"}, sdk.FormPlanes, true},
		{nil, sdk.FormUnknown, true},
	}
	for _, tc := range numbers {
		if got := info(tc.caps...).Numbers(tc.form); got != tc.want {
			t.Errorf("Numbers(%v, %v) = %v, want %v", tc.caps, tc.form, got, tc.want)
		}
	}
}

type fileSchemaPlugin struct{ fakePlugin }

func (f *fileSchemaPlugin) Schema() schema.Block {
	return schema.Object(
		schema.Attr("roots", cty.String, "a file of GUIDs").AsFile(),
		schema.Attr("mode", cty.String, "not a file"),
	)
}

// TestSDKVersionAndFileFlagCrossTheWire: the host learns the plugin's SDK
// version (which the plugin does not fill in) and which attributes name
// files.
func TestSDKVersionAndFileFlagCrossTheWire(t *testing.T) {
	c := connect(t, &fileSchemaPlugin{fakePlugin{kind: sdk.KindRouting}}, sdk.KindRouting)
	ctx := context.Background()
	info, err := c.GetInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.SDKVersion != sdk.SDKVersion || !info.HasCapability(sdk.CapLMC) {
		t.Errorf("GetInfo = %+v, want SDK version %s and capability lmc", info, sdk.SDKVersion)
	}
	sch, err := c.GetSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sch.Attributes) != 2 || !sch.Attributes[0].File || sch.Attributes[1].File {
		t.Fatalf("schema after the wire: %+v", sch.Attributes)
	}
}
