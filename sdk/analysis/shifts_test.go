package analysis_test

import (
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis"
)

func TestParseShifts(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr string
	}{
		{"auto", analysis.ShiftsAuto, ""},
		{"AUTO", analysis.ShiftsAuto, ""},
		{"all", analysis.ShiftsAll, ""},
		{"All", analysis.ShiftsAll, ""},
		{"0", 0, ""},
		{"64", 64, ""},
		{"-1", 0, "give auto, all, 0 to skip"},
		{"-2", 0, "give auto, all, 0 to skip"},
		{"", 0, `"": give auto`},
		{"some", 0, `"some": give auto`},
		{" 8", 0, "give auto"},
		{"2.5", 0, "give auto"},
	}
	for _, tc := range tests {
		got, err := analysis.ParseShifts(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseShifts(%q): %d, %v; want error %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseShifts(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
