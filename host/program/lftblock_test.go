package program

import (
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
)

// TestLFTBlock: a block holds its 64 entries of the table, and entries
// past the table's end forward nothing.
func TestLFTBlock(t *testing.T) {
	lft := make([]uint8, 150)
	for i := range lft {
		lft[i] = uint8(i % 37)
	}
	for _, tc := range []struct {
		name  string
		block int
		full  int // entries taken from lft
	}{
		{"first", 0, 64},
		{"second", 1, 64},
		{"partly past the end", 2, 22},
		{"wholly past the end", 3, 0},
	} {
		blk := lftBlock(lft, tc.block)
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
