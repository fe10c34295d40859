package settings

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

type decoded struct {
	Workers int      `ibsm:"workers"`
	Spread  bool     `ibsm:"spread"`
	Name    string   `ibsm:"name"`
	LMC     uint8    `ibsm:"lmc"`
	Ratio   float64  `ibsm:"ratio"`
	Tags    []string `ibsm:"tags"`
	Roots   []uint64 `ibsm:"roots,guids"`
	Plain   int      // untagged: never touched
}

func TestDecode(t *testing.T) {
	defaults := decoded{Workers: 4, Name: "x", LMC: 1, Plain: 7}
	tests := []struct {
		name    string
		v       cty.Value
		want    decoded
		wantErr string
	}{
		{"null object keeps defaults", cty.NullVal(cty.EmptyObject), defaults, ""},
		{"absent and null attributes keep defaults", obj(map[string]cty.Value{"workers": cty.NullVal(cty.Number)}), defaults, ""},
		{"every kind", obj(map[string]cty.Value{
			"workers": cty.NumberIntVal(8), "spread": cty.True, "name": cty.StringVal("e"), "lmc": cty.NumberIntVal(3),
			"ratio": cty.NumberFloatVal(0.5), "tags": strList("a", "b"), "roots": strList("0x2", "0x1", "0x2"),
		}), decoded{Workers: 8, Spread: true, Name: "e", LMC: 3, Ratio: 0.5, Tags: []string{"a", "b"}, Roots: []uint64{2, 1}, Plain: 7}, ""},
		{"uint8 overflow names the attribute", obj(map[string]cty.Value{"lmc": cty.NumberIntVal(300)}), defaults, `"lmc" = 300 is out of range for uint8`},
		{"negative into unsigned", obj(map[string]cty.Value{"lmc": cty.NumberIntVal(-1)}), defaults, `"lmc" = -1 is out of range`},
		{"wrong type", obj(map[string]cty.Value{"spread": cty.StringVal("yes")}), defaults, `"spread" must be a bool`},
		{"fraction into int", obj(map[string]cty.Value{"workers": cty.NumberFloatVal(1.5)}), defaults, `"workers" must be a whole number`},
		{"bad GUID", obj(map[string]cty.Value{"roots": strList("12")}), defaults, `roots: "12" is not a GUID`},
	}
	for _, tc := range tests {
		got := defaults
		err := Decode(tc.v, &got)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestDecodeRefusesBadTargets(t *testing.T) {
	var notStruct int
	var badGUIDs struct {
		R []string `ibsm:"r,guids"`
	}
	var badOpt struct {
		R string `ibsm:"r,weird"`
	}
	var unexported struct {
		r string `ibsm:"r"` //nolint:unused // the point of the test
	}
	v := obj(map[string]cty.Value{"r": cty.ListValEmpty(cty.String)})
	for name, dst := range map[string]any{"non-pointer": decoded{}, "pointer to int": &notStruct, "guids not []uint64": &badGUIDs, "unknown option": &badOpt, "unexported": &unexported} {
		if err := Decode(v, dst); err == nil {
			t.Errorf("%s: Decode accepted it", name)
		}
	}
}
