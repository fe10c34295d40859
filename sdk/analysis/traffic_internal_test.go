package analysis

import (
	"slices"
	"testing"
)

func TestSampleShifts(t *testing.T) {
	for _, c := range []struct {
		name      string
		n, want   int
		seed      int64
		wantLen   int
		wantAll   bool
		wantFirst int
	}{
		{"auto small takes all", 100, ShiftsAuto, 1, 99, true, 1},
		{"auto at the limit takes all", AllShiftsMaxCAs, ShiftsAuto, 1, AllShiftsMaxCAs - 1, true, 1},
		{"auto above the limit samples", AllShiftsMaxCAs + 1, ShiftsAuto, 1, DefaultShiftSample, false, 0},
		{"all on a big fabric", 5000, ShiftsAll, 1, 4999, true, 1},
		{"count above n-1 is all", 10, 50, 1, 9, true, 1},
		{"explicit sample", 1000, 17, 9, 17, false, 0},
		{"one CA: nothing", 1, ShiftsAuto, 1, 0, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, all := sampleShifts(c.n, c.want, c.seed)
			if len(got) != c.wantLen || all != c.wantAll {
				t.Fatalf("len %d all %v, want %d %v", len(got), all, c.wantLen, c.wantAll)
			}
			if c.wantFirst != 0 && got[0] != c.wantFirst {
				t.Errorf("first shift %d, want %d", got[0], c.wantFirst)
			}
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Errorf("shifts not sorted and distinct: %v", got)
			}
			for _, s := range got {
				if s < 1 || s >= c.n {
					t.Fatalf("shift %d outside 1..%d", s, c.n-1)
				}
			}
			again, _ := sampleShifts(c.n, c.want, c.seed)
			if !slices.Equal(got, again) {
				t.Error("same seed, different sample")
			}
			if !all {
				other, _ := sampleShifts(c.n, c.want, c.seed+1)
				if slices.Equal(got, other) {
					t.Error("different seeds, same sample")
				}
			}
		})
	}
}

func TestBisectionIsAPermutation(t *testing.T) {
	p := Bisection(5, 3, 101)
	seen := make([]bool, 101)
	for _, v := range p {
		if seen[v] {
			t.Fatalf("%d twice in %v", v, p)
		}
		seen[v] = true
	}
	if slices.Equal(p, Bisection(5, 4, 101)) || !slices.Equal(p, Bisection(5, 3, 101)) {
		t.Error("bisections must differ by index and repeat by (seed, index)")
	}
}
