package program

import (
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
)

// TestLFTBlock: a block holds its 64 entries of the table, and entries
// past the table's end forward nothing; a block the table holds whole is
// the table's own memory, not a copy.
func TestLFTBlock(t *testing.T) {
	lft := make([]uint8, 150)
	for i := range lft {
		lft[i] = uint8(i % 37)
	}
	for _, tc := range []struct {
		name  string
		block int
		full  int  // entries taken from lft
		alias bool // the table's own entries
	}{
		{"first", 0, 64, true},
		{"second", 1, 64, true},
		{"partly past the end", 2, 22, false},
		{"wholly past the end", 3, 0, false},
	} {
		blk := lftBlock(lft, tc.block)
		if alias := tc.block*64 < len(lft) && &blk[0] == &lft[tc.block*64]; alias != tc.alias {
			t.Fatalf("%s: the block is the table's memory: %v, want %v", tc.name, alias, tc.alias)
		}
		for k, v := range blk {
			want := plan.NoPort
			if k < tc.full {
				want = lft[tc.block*64+k]
			}
			if v != want {
				t.Fatalf("%s: entry %d is %d, want %d", tc.name, k, v, want)
			}
		}
	}
}

// TestSameLFTBlock: blocks compare equal when their entries do, NoPort
// standing for entries past either table's end, whether compared in place
// or built.
func TestSameLFTBlock(t *testing.T) {
	table := func(n int, change ...int) []uint8 {
		lft := make([]uint8, n)
		for i := range lft {
			lft[i] = uint8(i % 37)
		}
		for _, i := range change {
			lft[i] = 99
		}
		return lft
	}
	padded := append(table(150), plan.NoPort, plan.NoPort) // 152 entries, the last two forwarding nothing
	for _, tc := range []struct {
		name       string
		known, lft []uint8
		block      int
		want       bool
	}{
		{"same whole block", table(150), table(150), 1, true},
		{"one entry differs", table(150), table(150, 70), 1, false},
		{"tail block, same", table(150), table(150), 2, true},
		{"tail block, one differs", table(150), table(150, 149), 2, false},
		{"the longer table forwards nothing past the shorter", padded, table(150), 2, true},
		{"the longer table forwards past the shorter", table(152), table(150), 2, false},
		{"wholly past both", table(150), table(150), 3, true},
	} {
		if got := sameLFTBlock(tc.known, tc.lft, tc.block); got != tc.want {
			t.Errorf("%s: sameLFTBlock = %v, want %v", tc.name, got, tc.want)
		}
	}
}
