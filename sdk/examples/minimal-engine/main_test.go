package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

func newEngine() *engine { return &engine{log: hclog.NewNullLogger()} }

// TestConformance runs the SDK's conformance kit (which ends with the
// host's own plan checks) on the engine in-process, with default settings.
func TestConformance(t *testing.T) {
	sdktest.RoutingEngine(t, newEngine(), sdktest.Options{})
	sdktest.RoutingEngine(t, newEngine(), sdktest.Options{LMC: 1})
}

// TestConformanceAcyclic: with require_acyclic, min-hop on a fat tree is
// deadlock-free on one VL, which the kit checks as the host would with no
// VL assigner after the engine.
func TestConformanceAcyclic(t *testing.T) {
	ft, err := sdktest.FatTree2(6, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cty.ObjectVal(map[string]cty.Value{"count_switch_destinations": cty.False, "require_acyclic": cty.True})
	sdktest.RoutingEngine(t, newEngine(), sdktest.Options{Config: cfg, SingleVL: true, Fabrics: map[string]*topology.Topology{"fattree2": ft}})
}

// TestRefusesCyclicRoutes: on a ring min-hop routes close a dependency
// cycle; require_acyclic refuses them with the cycle named, and the
// default accepts them (a VL assigner must then break the cycle).
func TestRefusesCyclicRoutes(t *testing.T) {
	ring, err := sdktest.Ring(5, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine()
	if _, err := e.Route(context.Background(), sdk.RouteRequest{Topo: ring}); err != nil {
		t.Fatalf("default settings: %v", err)
	}
	if err := e.Configure(cty.ObjectVal(map[string]cty.Value{"require_acyclic": cty.True})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Route(context.Background(), sdk.RouteRequest{Topo: ring}); err == nil || !strings.Contains(err.Error(), "can deadlock") {
		t.Fatalf("require_acyclic on a ring: %v, want a refusal", err)
	}
	if err := e.Configure(cty.ObjectVal(map[string]cty.Value{"require_acyclic": cty.StringVal("maybe")})); err == nil {
		t.Fatal("a string for a bool was accepted")
	}
	if !e.cfg.RequireAcyclic {
		t.Fatal("a refused config changed the settings")
	}
}

// TestBinary builds the plugin binary and checks it through the same
// go-plugin handshake the host uses.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "minimal-engine")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sdktest.RunRoutingEngine(t, bin, sdktest.Options{})
}
