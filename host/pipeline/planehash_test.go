package pipeline

import (
	"math/rand/v2"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
)

// TestPlaneHashEdits: a hash moved by edit equals the hash of the planes
// as edited, for entries in every byte of a word and in a partial last
// word; and a single changed entry changes the hash.
func TestPlaneHashEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ planes, width int }{{1, 8}, {1, 13}, {2, 40}, {4, 3920}, {3, 1}} {
		h := newPlaneHasher(0x1234567|1, c.planes, c.width)
		d := plan.DestPlanes{Planes: make([]plan.Plane, c.planes)}
		for k := range d.Planes {
			d.Planes[k] = make(plan.Plane, c.width)
			for s := range d.Planes[k] {
				d.Planes[k][s] = uint8(rng.IntN(256))
			}
		}
		x := h.hash(d)
		for range 200 {
			k, s, port := rng.IntN(c.planes), rng.IntN(c.width), uint8(rng.IntN(256))
			old := d.Planes[k][s]
			d.Planes[k][s] = port
			moved := h.edit(x, k, s, old, port)
			if want := h.hash(d); moved != want {
				t.Fatalf("%d planes of %d: entry (%d, %d) %d -> %d: edit gives %x, hash of the edited planes %x", c.planes, c.width, k, s, old, port, moved, want)
			}
			if (moved == x) != (old == port) {
				t.Fatalf("%d planes of %d: entry (%d, %d) %d -> %d changed the hash: %v", c.planes, c.width, k, s, old, port, moved != x)
			}
			x = moved
		}
	}
}

// TestPlaneHashShape: the hash tells the number and length of planes
// apart, and depends on the key.
func TestPlaneHashShape(t *testing.T) {
	hash := func(key uint64, dests []plan.DestPlanes) []uint64 {
		return plan.HashDests(dests, hasherFor(key, dests).hash)
	}
	hs := hash(7, []plan.DestPlanes{
		{},
		{Planes: []plan.Plane{{}}},
		{Planes: []plan.Plane{{0}}},
		{Planes: []plan.Plane{{0, 0}}},
		{Planes: []plan.Plane{{0}, {0}}},
		{Planes: []plan.Plane{{1, 0}}},
		{Planes: []plan.Plane{{0, 1}}},
	})
	seen := map[uint64]int{}
	for i, x := range hs {
		if j, ok := seen[x]; ok {
			t.Errorf("destinations %d and %d differ but hash alike (%x)", j, i, x)
		}
		seen[x] = i
	}
	other := hash(9, []plan.DestPlanes{{Planes: []plan.Plane{{1, 0}}}})
	if other[0] == hs[5] {
		t.Error("two keys hash alike")
	}
}

// BenchmarkDestHashes: every destination's planes at the edge of the LID
// space (47,824 destinations, 3,920 switches), the host's keyed hash
// against the SDK's xxhash of the same bytes.
func BenchmarkDestHashes(b *testing.B) {
	const dests, width = 47824, 3920
	back := make([]uint8, dests*width)
	for i := range back {
		back[i] = uint8(i * 7 % 57)
	}
	ds := make([]plan.DestPlanes, dests)
	for d := range ds {
		ds[d].Planes = []plan.Plane{back[d*width : (d+1)*width]}
	}
	b.Run("keyed", func(b *testing.B) {
		for b.Loop() {
			destHashes(ds)
		}
	})
	b.Run("xxhash", func(b *testing.B) {
		for b.Loop() {
			plan.DestHashes(ds)
		}
	})
}
