package main

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
)

func TestConfigure(t *testing.T) {
	e := &engine{log: hclog.NewNullLogger()}
	list := func(s ...string) cty.Value {
		var vs []cty.Value
		for _, x := range s {
			vs = append(vs, cty.StringVal(x))
		}
		return cty.ObjectVal(map[string]cty.Value{"root_guids": cty.ListVal(vs), "count_switch_destinations": cty.False, "auto_roots": cty.StringVal("leaf")})
	}
	tests := []struct {
		name    string
		v       cty.Value
		want    []uint64
		wantErr string
	}{
		{"defaults", e.Schema().Defaults(), nil, ""},
		{"null", cty.NullVal(e.Schema().ObjectType()), nil, ""},
		{"two roots, one repeated", list("0x0002c90000000001", " 0X2c90000000002", "0x0002c90000000001"), []uint64{0x0002c90000000001, 0x2c90000000002}, ""},
		{"no prefix", list("0002c90000000001"), nil, "0x prefix"},
		{"not hex", list("0xzz"), nil, "not a non-zero"},
		{"zero", list("0x0"), nil, "not a non-zero"},
		{"too long", list("0x10002c90000000001"), nil, "not a non-zero"},
		{"bad auto_roots", cty.ObjectVal(map[string]cty.Value{"auto_roots": cty.StringVal("top")}), nil, `use "spines"`},
		{"auto_roots not a string", cty.ObjectVal(map[string]cty.Value{"auto_roots": cty.True}), nil, "must be a string"},
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
		if len(e.cfg.Roots) != len(tc.want) {
			t.Errorf("%s: roots %x, want %x", tc.name, e.cfg.Roots, tc.want)
			continue
		}
		for i := range tc.want {
			if e.cfg.Roots[i] != tc.want[i] {
				t.Errorf("%s: roots %x, want %x", tc.name, e.cfg.Roots, tc.want)
			}
		}
	}
	if info := e.Info(); info.Name != "updn" || info.Version != "0.1.0" || info.Kind != "routing_engine" {
		t.Errorf("Info = %+v", info)
	}
}
