package settings

import (
	"math"
	"math/big"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// FuzzDecode feeds Decode objects whose attributes have fuzzed types and
// values: it must never panic, and whatever it accepts must be what was
// given (numbers in range, exact strings and bools).
func FuzzDecode(f *testing.F) {
	f.Add(uint8(0), int64(8), 0.5, "x", true)
	f.Add(uint8(0xff), int64(-1), 1e300, "0x1", false)
	f.Add(uint8(0x5a), int64(1<<40), math.Copysign(0, -1), "", true)
	f.Fuzz(func(t *testing.T, types uint8, n int64, x float64, s string, b bool) {
		// Each attribute takes one of four values by two bits of types.
		vals := []cty.Value{cty.NumberIntVal(n), cty.NumberVal(new(big.Float).SetFloat64(finite(x))), cty.StringVal(s), cty.BoolVal(b)}
		pick := func(shift uint) cty.Value { return vals[(types>>shift)&3] }
		v := cty.ObjectVal(map[string]cty.Value{
			"workers": pick(0), "lmc": pick(2), "name": pick(4), "spread": pick(6),
			"tags": cty.ListVal([]cty.Value{cty.StringVal(s)}), "ratio": pick(0),
		})
		var d decoded
		if err := Decode(v, &d); err != nil {
			return
		}
		at := func(shift uint) uint8 { return (types >> shift) & 3 }
		if at(0) == 0 && int64(d.Workers) != n {
			t.Fatalf("workers = %d, given %d", d.Workers, n)
		}
		if at(4) == 2 && d.Name != s {
			t.Fatalf("name = %q, given %q", d.Name, s)
		}
		if at(6) == 3 && d.Spread != b {
			t.Fatalf("spread = %v, given %v", d.Spread, b)
		}
		if len(d.Tags) != 1 || d.Tags[0] != s {
			t.Fatalf("tags = %q, given [%q]", d.Tags, s)
		}
	})
}

// finite maps NaN and infinities (which cty numbers cannot hold) to 0.
func finite(x float64) float64 {
	if x != x || x > 1e308 || x < -1e308 {
		return 0
	}
	return x
}
