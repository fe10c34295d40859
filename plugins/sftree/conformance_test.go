package main

import (
	"fmt"
	"github.com/ibsm/ibsm/plugins/lib/sftree"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// TestConformance runs the kit on fat trees only: sftree, like ftree,
// refuses fabrics that are not fat trees. The kit demands every switch
// pair routed, which is what sftree adds to ftree.
func TestConformance(t *testing.T) {
	ft2, err := sdktest.FatTree2(8, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	ft3, err := sdktest.FatTree3(6)
	if err != nil {
		t.Fatal(err)
	}
	fabrics := map[string]*topology.Topology{"ft2": ft2, "ft3": ft3}
	// Both ways of routing keep the stable-planes promise the kit checks:
	// a fresh routing per call, and repairs copy-on-write.
	for _, incremental := range []bool{false, true} {
		t.Run(fmt.Sprintf("incremental=%v", incremental), func(t *testing.T) {
			e := &engine{log: hclog.NewNullLogger()}
			cfg := e.Schema().Defaults()
			m := cfg.AsValueMap()
			m["incremental"] = cty.BoolVal(incremental)
			sdktest.RoutingEngine(t, e, sdktest.Options{LMC: 1, Fabrics: fabrics, Config: cty.ObjectVal(m)})
		})
	}
}

func TestConfigure(t *testing.T) {
	e := &engine{log: hclog.NewNullLogger()}
	obj := func(m map[string]cty.Value) cty.Value { return cty.ObjectVal(m) }
	tests := []struct {
		name    string
		v       cty.Value
		root    uint64
		check   sftree.CDGCheck
		wantErr string
	}{
		{"defaults", e.Schema().Defaults(), 0, sftree.CDGWhenNeeded, ""},
		{"null", cty.NullVal(e.Schema().ObjectType()), 0, sftree.CDGWhenNeeded, ""},
		{"root and no verify", obj(map[string]cty.Value{"subtree_root": cty.StringVal(" 0x2c90000000002"), "verify_cdg": cty.False}), 0x2c90000000002, sftree.CDGWhenNeeded, ""},
		{"always verify", obj(map[string]cty.Value{"verify_cdg": cty.True}), 0, sftree.CDGAlways, ""},
		{"root without prefix", obj(map[string]cty.Value{"subtree_root": cty.StringVal("1234")}), 0, 0, "0x prefix"},
		{"zero root", obj(map[string]cty.Value{"subtree_root": cty.StringVal("0x0")}), 0, 0, "non-zero"},
		{"bad ftree root", obj(map[string]cty.Value{"root_guids": cty.ListVal([]cty.Value{cty.StringVal("0xzz")})}), 0, 0, "root_guids"},
		{"verify not bool", obj(map[string]cty.Value{"verify_cdg": cty.StringVal("yes")}), 0, 0, "must be a bool"},
		{"one root", obj(map[string]cty.Value{"max_subtree_roots": cty.NumberIntVal(1)}), 0, sftree.CDGWhenNeeded, ""},
		{"zero roots", obj(map[string]cty.Value{"max_subtree_roots": cty.NumberIntVal(0)}), 0, 0, "1 (the paper's single root) to 64"},
		{"too many roots", obj(map[string]cty.Value{"max_subtree_roots": cty.NumberIntVal(65)}), 0, 0, "to 64"},
		{"fractional roots", obj(map[string]cty.Value{"max_subtree_roots": cty.NumberFloatVal(2.5)}), 0, 0, "whole number"},
	}
	for _, tc := range tests {
		err := e.Configure(tc.v)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		wantRoots := sftree.DefaultMaxRoots
		if tc.name == "one root" {
			wantRoots = 1
		}
		if e.opt.Root != tc.root || e.opt.CDG != tc.check || e.opt.MaxRoots != wantRoots {
			t.Errorf("%s: options %+v, want root %x check %v", tc.name, e.opt, tc.root, tc.check)
		}
	}
	if info := e.Info(); info.Name != "sftree" || info.Kind != "routing_engine" {
		t.Errorf("Info = %+v", info)
	}
}
