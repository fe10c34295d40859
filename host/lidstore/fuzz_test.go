package lidstore

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, and whatever it accepts is a valid
// assignment that survives Encode and Parse unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"0x0002c90000000001 0x0001 0x0001\n0x0002c90000000003 0x0004 0x0007\n",
		"# comment\n\n0x1 1 1\n",
		"0x1 0x0 0x1\n",
		"0x1 0xbfff 0xbfff\n0x2 0xc000 0xc000\n",
		"0x1 2 1\n",
		"0xffffffffffffffff 010 0x10",
		"0x1 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz", bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for g, r := range m {
			if r.Min == 0 || r.Max < r.Min || r.Max > 0xBFFF {
				t.Fatalf("accepted port %#x with range %+v", g, r)
			}
		}
		var buf bytes.Buffer
		if err := Encode(&buf, m); err != nil {
			t.Fatalf("Encode of a parsed assignment: %v", err)
		}
		back, err := Parse("again", &buf)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", buf.String(), err)
		}
		if len(back) != len(m) {
			t.Fatalf("round trip: %d entries, want %d", len(back), len(m))
		}
		for g, r := range m {
			if back[g] != r {
				t.Fatalf("round trip: port %#x %+v, want %+v", g, back[g], r)
			}
		}
	})
}
