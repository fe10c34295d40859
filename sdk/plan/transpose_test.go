package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomPlanes returns lids planes of nsw entries, about one in nilEvery
// nil (a LID nobody owns; 0: none).
func randomPlanes(rng *rand.Rand, nsw, lids, nilEvery int) []Plane {
	src := make([]Plane, lids)
	for l := range src {
		if nilEvery > 0 && rng.IntN(nilEvery) == 0 {
			continue
		}
		src[l] = make(Plane, nsw)
		for s := range src[l] {
			src[l][s] = uint8(rng.IntN(256))
		}
	}
	return src
}

func tables(nsw, lids int) [][]uint8 {
	lft := make([][]uint8, nsw)
	for s := range lft {
		lft[s] = make([]uint8, lids)
	}
	return lft
}

// The tiled transpose writes what the definition says, for switch and
// LID counts on and off the 8 x 8 tiles and the 64-LID blocks, with and
// without unowned LIDs.
func TestTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ nsw, lids, nilEvery int }{
		{1, 1, 0}, {7, 5, 0}, {8, 8, 0}, {9, 65, 3}, {16, 64, 0}, {63, 130, 5}, {100, 1000, 7}, {3920 % 97, 200, 2},
	} {
		t.Run(fmt.Sprintf("%dx%d", c.nsw, c.lids), func(t *testing.T) {
			src := randomPlanes(rng, c.nsw, c.lids, c.nilEvery)
			lft := tables(c.nsw, c.lids)
			transpose(lft, src)
			for l, pl := range src {
				for s := range lft {
					want := NoPort
					if pl != nil {
						want = pl[s]
					}
					if lft[s][l] != want {
						t.Fatalf("lft[%d][%d] = %#x, want %#x", s, l, lft[s][l], want)
					}
				}
			}
		})
	}
}

// BenchmarkTranspose: ft3-56's tables (3,920 switches, 47,824 LIDs).
func BenchmarkTranspose(b *testing.B) {
	const nsw, lids = 3920, 47825
	src := randomPlanes(rand.New(rand.NewPCG(1, 1)), nsw, lids, 0)
	lft := tables(nsw, lids)
	b.SetBytes(nsw * lids)
	for b.Loop() {
		transpose(lft, src)
	}
}
