package lidstore

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, in string
		want     map[uint64]Range
		err      string
	}{
		{"opensm layout", "0x0000000000100003 0x000a 0x000b\n\n0x0000000000200000 0x0001 0x0001\n",
			map[uint64]Range{0x100003: {10, 11}, 0x200000: {1, 1}}, ""},
		{"empty", "", map[uint64]Range{}, ""},
		{"two fields", "0x1 0x2\n", nil, "g2l:1:"},
		{"bad guid", "\n0xzz 0x1 0x1\n", nil, "g2l:2: bad GUID"},
		{"zero lid", "0x1 0x0 0x0\n", nil, "bad LID range"},
		{"multicast lid", "0x1 0xc000 0xc000\n", nil, "bad LID range"},
		{"inverted", "0x1 0x5 0x4\n", nil, "bad LID range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse("g2l", strings.NewReader(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want containing %q", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "guid2lid")
	m := map[uint64]Range{0xabc: {4, 7}, 0x1: {1, 1}}
	if err := Save(p, m); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("got %v, %v", got, err)
	}
	missing, err := Load(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(missing) != 0 {
		t.Fatalf("missing file: %v %v", missing, err)
	}
}
