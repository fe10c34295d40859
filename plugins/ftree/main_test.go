package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/zclconf/go-cty/cty"
)

func TestConfigure(t *testing.T) {
	// File attributes carry the file's contents: the host reads the file.
	rootFile := "# spines\n0x0002c90000000003\n\n  0x0002c90000000004 # second\n"
	badFile := "0x1\nnot-a-guid\n"
	e := &engine{log: hclog.NewNullLogger()}
	obj := func(m map[string]cty.Value) cty.Value {
		full := map[string]cty.Value{}
		for name, typ := range e.Schema().ObjectType().AttributeTypes() {
			full[name] = cty.NullVal(typ)
		}
		for k, v := range m {
			full[k] = v
		}
		return cty.ObjectVal(full)
	}
	list := func(s ...string) cty.Value {
		var vs []cty.Value
		for _, x := range s {
			vs = append(vs, cty.StringVal(x))
		}
		return cty.ListVal(vs)
	}
	tests := []struct {
		name         string
		v            cty.Value
		roots, order []uint64
		wantErr      string
	}{
		{"defaults", e.Schema().Defaults(), nil, nil, ""},
		{"null", cty.NullVal(e.Schema().ObjectType()), nil, nil, ""},
		{"lists, repeats dropped", obj(map[string]cty.Value{"root_guids": list("0x2", " 0X1", "0x2"), "ca_order": list("0x10", "0x11")}), []uint64{2, 1}, []uint64{0x10, 0x11}, ""},
		{"list then file", obj(map[string]cty.Value{"root_guids": list("0x9"), "root_guid_file": cty.StringVal(rootFile)}), []uint64{9, 0x0002c90000000003, 0x0002c90000000004}, nil, ""},
		{"file repeats the list", obj(map[string]cty.Value{"ca_order": list("0x3", "0x1"), "ca_order_file": cty.StringVal("0x2\n0x1\n0x4\n")}), nil, []uint64{3, 1, 2, 4}, ""},
		{"file line in error", obj(map[string]cty.Value{"ca_order_file": cty.StringVal(badFile)}), nil, nil, "ca_order_file line 2"},
		{"empty file", obj(map[string]cty.Value{"root_guid_file": cty.StringVal("")}), nil, nil, ""},
		{"a path from an old host", obj(map[string]cty.Value{"root_guid_file": cty.StringVal("/etc/ibsm/roots")}), nil, nil, "upgrade the host"},
		{"no prefix", obj(map[string]cty.Value{"root_guids": list("0002c90000000001")}), nil, nil, "0x prefix"},
		{"zero", obj(map[string]cty.Value{"ca_order": list("0x0")}), nil, nil, "not a non-zero"},
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
		if !slices.Equal(e.cfg.Roots, tc.roots) || !slices.Equal(e.cfg.CAOrder, tc.order) {
			t.Errorf("%s: roots %x order %x, want %x %x", tc.name, e.cfg.Roots, e.cfg.CAOrder, tc.roots, tc.order)
		}
	}
	if info := e.Info(); info.Name != "ftree" || info.Kind != sdk.KindRouting || !slices.Contains(info.Capabilities, "lmc") {
		t.Errorf("Info = %+v", info)
	}
	for _, a := range e.Schema().Attributes {
		if want := strings.HasSuffix(a.Name, "_file"); a.File != want {
			t.Errorf("attribute %s: File = %v, want %v", a.Name, a.File, want)
		}
	}
}

// connect serves the engine over a real gRPC connection.
func connect(t testing.TB, e *engine) *sdk.RemoteClient {
	t.Helper()
	return sdktest.InProcess(t, e, sdk.KindRouting)
}

// TestOverTheWire routes multi-root trees through gRPC: every CA pair
// arrives, with 2^LMC planes, and what stays unrouted is switch-to-switch
// only.
func TestOverTheWire(t *testing.T) {
	c := connect(t, &engine{log: hclog.NewNullLogger()})
	topo, err := sdktest.FatTree3(8)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Route(context.Background(), sdk.RouteRequest{Topo: topo, LMC: 1})
	if err != nil {
		t.Fatal(err)
	}
	sws := topo.Switches()
	for e, ep := range topo.Endpoints() {
		if topo.SwitchIndex(ep.Node) >= 0 {
			continue
		}
		if n := len(r.Planes[e].Planes); n != 2 {
			t.Fatalf("CA endpoint %d has %d planes, want 2", e, n)
		}
		for k, pl := range r.Planes[e].Planes {
			for s := range sws {
				if testfab.HomeSwitch(topo, int32(s)) < 0 {
					continue
				}
				if _, err := testfab.Walk(topo, pl, int32(s), int32(e)); err != nil {
					t.Fatalf("plane %d: %v", k, err)
				}
			}
		}
	}
}

func TestNotAFatTree(t *testing.T) {
	c := connect(t, &engine{log: hclog.NewNullLogger()})
	ring, err := sdktest.Ring(5, 2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Route(context.Background(), sdk.RouteRequest{Topo: ring})
	if err == nil || !strings.Contains(err.Error(), "not a fat tree") || !strings.Contains(err.Error(), "level") {
		t.Fatalf("ring: err = %v, want a not-a-fat-tree error naming the level", err)
	}
	var nf *ftree.NotFatTreeError
	if _, _, err := ftree.Route(context.Background(), ring, 0, ftree.Config{}); !errors.As(err, &nf) {
		t.Fatalf("ring in process: err = %v, want *NotFatTreeError", err)
	}
}

// BenchmarkRouteOverGRPC measures one Route call including the plugin
// round trip (topology out, planes back, decoded and validated by the SDK
// client) on the 3-level trees of 36- and 48-port switches.
func BenchmarkRouteOverGRPC(b *testing.B) {
	c := connect(b, &engine{log: hclog.NewNullLogger()})
	for _, k := range []int{36, 48} {
		topo, err := sdktest.FatTree3(k)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(map[int]string{36: "ft3-36", 48: "ft3-48"}[k], func(b *testing.B) {
			var r *plan.Routes
			testfab.Bench(b, func() error {
				r, err = c.Route(context.Background(), sdk.RouteRequest{Topo: topo})
				return err
			})
			b.SetBytes(int64(len(topo.Switches()) * len(r.Planes)))
		})
	}
}
