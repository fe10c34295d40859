package verify_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// bfsEngine routes by sdktest's min-hop reference: on a ring its channel
// dependency graph is cyclic, which the host refuses on a single VL.
type bfsEngine struct{}

func (bfsEngine) Info() sdk.Info {
	return sdk.Info{Name: "bfs", Version: "1.0.0", Kind: sdk.KindRouting, Capabilities: []string{sdk.CapPlanes}}
}
func (bfsEngine) Schema() schema.Block      { return schema.Block{} }
func (bfsEngine) Configure(cty.Value) error { return nil }
func (bfsEngine) Route(_ context.Context, r sdk.RouteRequest) (*plan.Routes, error) {
	return sdktest.BFSRoutes(r.Topo), nil
}

// oneVL puts every route on VL 0: the structural checks pass, but on a
// ring routed min-hop VL 0's dependency graph is cyclic.
type oneVL struct{}

func (oneVL) Info() sdk.Info {
	return sdk.Info{Name: "onevl", Version: "1.0.0", Kind: sdk.KindVLAssign}
}
func (oneVL) Schema() schema.Block      { return schema.Block{} }
func (oneVL) Configure(cty.Value) error { return nil }
func (oneVL) AssignVLs(context.Context, sdk.VLRequest) (*plan.VLPlan, error) {
	return &plan.VLPlan{VLs: 1}, nil
}

const kitChildEnv = "IBSM_VERIFY_SDKTEST_CHILD"

// TestSDKTestFailsWithTheHostsMessage: a plan the host's verifier refuses
// fails the sdktest conformance kit, with the host's message word for
// word. The kit runs in a child test process (a failing conformance run
// fails its test); the parent computes the host's verdict through
// sdk/check, the code the pipeline calls before programming.
func TestSDKTestFailsWithTheHostsMessage(t *testing.T) {
	ring, err := sdktest.Ring(5, 1)
	if err != nil {
		t.Fatal(err)
	}
	fabrics := map[string]*topology.Topology{"ring5": ring}
	switch os.Getenv(kitChildEnv) {
	case "routing":
		sdktest.RoutingEngine(t, bfsEngine{}, sdktest.Options{Fabrics: fabrics, SingleVL: true})
		return
	case "vls":
		sdktest.VLAssigner(t, oneVL{}, sdktest.Options{Fabrics: fabrics})
		return
	}
	routes := sdktest.BFSRoutes(ring)
	tests := []struct {
		child string
		plan  check.Plan
		opt   check.Options
	}{
		{"routing", check.Plan{Topo: ring, Routes: routes, LIDs: analysistest.SequentialLIDs(ring, 0, plan.DLIDBase)}, check.Options{}},
		{"vls", check.Plan{Topo: ring, Routes: routes, LIDs: analysistest.SequentialLIDs(ring, 0, plan.DLIDBase), VLs: &plan.VLPlan{VLs: 1}}, check.Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.child, func(t *testing.T) {
			_, hostErr := check.Check(tc.plan, tc.opt)
			if hostErr == nil {
				t.Fatal("the host accepts the plan; the test needs one it refuses")
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestSDKTestFailsWithTheHostsMessage$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), kitChildEnv+"="+tc.child)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the conformance kit passed a plan the host refuses:\n%s", out)
			}
			// t.Fatal indents continuation lines of a message.
			want := strings.ReplaceAll(hostErr.Error(), "\n", "\n        ")
			if !strings.Contains(string(out), want) {
				t.Fatalf("the kit's failure does not carry the host's message\nhost: %s\nkit output:\n%s", hostErr, out)
			}
		})
	}
}
