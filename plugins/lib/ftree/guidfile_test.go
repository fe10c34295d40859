package ftree

import (
	"slices"
	"strings"
	"testing"
)

func TestParseGUIDFile(t *testing.T) {
	tests := []struct {
		name, in string
		want     []uint64
		err      string
	}{
		{"empty", "", nil, ""},
		{"comments and blanks", "# spines\n0x0002c90000000003\n\n  0x0002c90000000004 # second\r\n", []uint64{0x0002c90000000003, 0x0002c90000000004}, ""},
		{"no trailing newline", "0x1\n0x2", []uint64{1, 2}, ""},
		{"bad line", "0x1\nnot-a-guid\n", nil, "root_guid_file line 2:"},
		{"zero", "0x0\n", nil, "not a non-zero"},
		{"a path from an old host", "/etc/ibsm/roots", nil, "upgrade the host"},
	}
	for _, tc := range tests {
		got, err := ParseGUIDFile("root_guid_file", tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %x, %v; want %x", tc.name, got, err, tc.want)
		}
	}
	if got := AppendUnique([]uint64{2, 1}, []uint64{1, 3, 2, 4}); !slices.Equal(got, []uint64{2, 1, 3, 4}) {
		t.Errorf("AppendUnique = %v", got)
	}
}
