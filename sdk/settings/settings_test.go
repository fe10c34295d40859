package settings

import (
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func obj(m map[string]cty.Value) cty.Value { return cty.ObjectVal(m) }

func TestInt(t *testing.T) {
	tests := []struct {
		name    string
		v       cty.Value
		want    int
		wantErr string
	}{
		{"absent config", cty.NilVal, 7, ""},
		{"null config", cty.NullVal(cty.DynamicPseudoType), 7, ""},
		{"absent attribute", obj(map[string]cty.Value{"x": cty.True}), 7, ""},
		{"null attribute", obj(map[string]cty.Value{"n": cty.NullVal(cty.Number)}), 7, ""},
		{"set", obj(map[string]cty.Value{"n": cty.NumberIntVal(-3)}), -3, ""},
		{"largest", obj(map[string]cty.Value{"n": cty.NumberIntVal(1<<31 - 1)}), 1<<31 - 1, ""},
		{"too large", obj(map[string]cty.Value{"n": cty.NumberIntVal(1 << 31)}), 0, "out of range"},
		{"fraction", obj(map[string]cty.Value{"n": cty.NumberFloatVal(2.5)}), 0, "whole number, got 2.5"},
		{"string", obj(map[string]cty.Value{"n": cty.StringVal("3")}), 0, "must be a number"},
		{"unknown", obj(map[string]cty.Value{"n": cty.UnknownVal(cty.Number)}), 0, "constant"},
		{"not an object", cty.StringVal("n"), 0, "must be an object"},
	}
	for _, tc := range tests {
		got, err := Int(tc.v, "n", 7)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

func TestInt64(t *testing.T) {
	tests := []struct {
		name    string
		v       cty.Value
		want    int64
		wantErr string
	}{
		{"absent attribute", obj(map[string]cty.Value{"x": cty.True}), 7, ""},
		{"past 32 bits", obj(map[string]cty.Value{"n": cty.NumberIntVal(1 << 40)}), 1 << 40, ""},
		{"largest", obj(map[string]cty.Value{"n": cty.NumberIntVal(1<<63 - 1)}), 1<<63 - 1, ""},
		{"smallest", obj(map[string]cty.Value{"n": cty.NumberIntVal(-1 << 63)}), -1 << 63, ""},
		{"too large", obj(map[string]cty.Value{"n": cty.NumberUIntVal(1 << 63)}), 0, "out of range"},
		{"fraction", obj(map[string]cty.Value{"n": cty.NumberFloatVal(-0.5)}), 0, "whole number, got -0.5"},
		{"bool", obj(map[string]cty.Value{"n": cty.True}), 0, "must be a number, got bool"},
	}
	for _, tc := range tests {
		got, err := Int64(tc.v, "n", 7)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

func TestGUID(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{"0x0002c90000000001", 0x0002c90000000001, ""},
		{" 0X2C90000000002\t", 0x2c90000000002, ""},
		{"0xffffffffffffffff", 1<<64 - 1, ""},
		{"0002c90000000001", 0, "0x prefix"},
		{"", 0, "0x prefix"},
		{"0x", 0, "not a non-zero"},
		{"0x0", 0, "not a non-zero"},
		{"0xzz", 0, "not a non-zero"},
		{"0x10002c90000000001", 0, "not a non-zero"},
	}
	for _, tc := range tests {
		got, err := GUID(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %#x, %v; want %#x", tc.in, got, err, tc.want)
		}
	}
}

func TestGUIDs(t *testing.T) {
	tests := []struct {
		name    string
		v       cty.Value
		want    []uint64
		wantErr string
	}{
		{"absent", obj(map[string]cty.Value{}), nil, ""},
		{"null object", cty.NullVal(cty.EmptyObject), nil, ""},
		{"list, repeats dropped in order", obj(map[string]cty.Value{"l": strList("0x2", " 0X1", "0x2")}), []uint64{2, 1}, ""},
		{"bad list entry names the attribute", obj(map[string]cty.Value{"l": strList("0x1", "12")}), nil, `l: "12" is not a GUID`},
		{"list not strings", obj(map[string]cty.Value{"l": cty.ListVal([]cty.Value{cty.True})}), nil, "only strings"},
	}
	for _, tc := range tests {
		got, err := GUIDs(tc.v, "l")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %x, %v; want %x", tc.name, got, err, tc.want)
		}
	}
}

// strList is a list of strings as HCL decodes one.
func strList(s ...string) cty.Value {
	var vs []cty.Value
	for _, x := range s {
		vs = append(vs, cty.StringVal(x))
	}
	return cty.ListVal(vs)
}
