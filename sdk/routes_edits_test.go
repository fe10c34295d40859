package sdk

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
)

// TestDiffPlane: the word-at-a-time diff names exactly the entries a byte
// by byte comparison does, in switch order, whatever the plane's length
// and wherever the differences fall (word edges, the tail, every byte).
func TestDiffPlane(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 16, 17, 63, 64, 1000} {
		for trial := range 200 {
			was := make(plan.Plane, n)
			for s := range was {
				was[s] = uint8(rng.IntN(256))
			}
			is := slices.Clone(was)
			for s := range is {
				if trial%10 == 0 || rng.IntN(8) == 0 {
					is[s] ^= uint8(1 + rng.IntN(255))
				}
			}
			var want []plan.Edit
			for s := range is {
				if is[s] != was[s] {
					want = append(want, plan.Edit{Dest: 3, Switch: int32(s), Plane: 1, Port: is[s]})
				}
			}
			got := diffPlane([]plan.Edit{{Dest: 2}}, 3, 1, was, is)
			if got[0] != (plan.Edit{Dest: 2}) || !slices.Equal(got[1:], want) {
				t.Fatalf("%d switches: diff %v, want %v", n, got[1:], want)
			}
		}
	}
}

// TestChangedEntriesFallsBack: the changed destinations go as edits
// unless a destination's plane count or a plane's width changed, or the
// edits outnumber both an eighth of the changed planes' entries and
// 4,096.
func TestChangedEntriesFallsBack(t *testing.T) {
	const width = 40000
	planes := func(n int, fill func(s int) uint8) plan.DestPlanes {
		d := plan.DestPlanes{}
		for range n {
			pl := make(plan.Plane, width)
			for s := range pl {
				pl[s] = fill(s)
			}
			d.Planes = append(d.Planes, pl)
		}
		return d
	}
	zero := func(int) uint8 { return 0 }
	base := []plan.DestPlanes{planes(1, zero), planes(2, zero)}
	for _, tc := range []struct {
		name  string
		dests []plan.DestPlanes
		edits int // -1: the planes go whole
	}{
		{"an entry", []plan.DestPlanes{planes(1, func(s int) uint8 { return uint8(min(1, s/(width-1))) }), base[1]}, 1},
		{"an eighth of the entries", []plan.DestPlanes{base[0], planes(2, func(s int) uint8 { return uint8(s % 8 / 7) })}, 10000},
		{"more than an eighth", []plan.DestPlanes{planes(1, func(s int) uint8 { return uint8(s % 7 / 6) }), base[1]}, -1},
		{"a plane more", []plan.DestPlanes{planes(2, zero), base[1]}, -1},
		{"a plane fewer", []plan.DestPlanes{base[0], planes(1, zero)}, -1},
		{"a short plane", []plan.DestPlanes{{Planes: []plan.Plane{make(plan.Plane, width-1)}}, base[1]}, -1},
	} {
		var changed []int32
		for e := range base {
			if base[e].Hash() != tc.dests[e].Hash() {
				changed = append(changed, int32(e))
			}
		}
		edits, ok := changedEntries(base, tc.dests, changed, width)
		switch {
		case tc.edits < 0 && ok:
			t.Errorf("%s: %d edits, want the planes whole", tc.name, len(edits))
		case tc.edits >= 0 && (!ok || len(edits) != tc.edits):
			t.Errorf("%s: %d edits (%t), want %d", tc.name, len(edits), ok, tc.edits)
		}
	}
	// Up to 4,096 entries go as edits however few the planes' bytes.
	small := []plan.DestPlanes{{Planes: []plan.Plane{make(plan.Plane, 100)}}}
	if edits, ok := changedEntries(small, []plan.DestPlanes{{Planes: []plan.Plane{slices.Repeat([]byte{1}, 100)}}}, []int32{0}, 100); !ok || len(edits) != 100 {
		t.Errorf("a whole plane of 100 switches: %d edits (%t), want 100", len(edits), ok)
	}
}
