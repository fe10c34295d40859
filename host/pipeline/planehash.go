package pipeline

import (
	"encoding/binary"
	"math/bits"

	"github.com/ibsm/ibsm/sdk/plan"
)

// planeHasher hashes a destination's planes so that a changed entry
// changes the hash by an amount the host computes from the old and new
// port alone: an answer that names only the changed entries
// (plan.Routes.Edits) updates the hashes the next stages' keys are made
// of without the planes. Each plane is read as little-endian 64-bit words
// w (eight switches each); the hash is
//
//	Σ_planes Σ_words w·R(plane, word) + n·R(n) + Σ_planes (len+1)·R(len)  mod 2^61−1
//
// for a destination of n planes, with multipliers R drawn from planeKey.
// Two different sets of planes collide with probability about 2^-61.
// Linear in each entry: an entry of word w going from old to new adds
// (new−old)·2^(8·(s mod 8))·R. Like the xxhash it stands in for, it
// names planes and does not vouch for them: the key is fixed, so that a
// plan has the same key in every state directory and on every host (a
// plugin set on making two answers collide could do it here with less
// work than against xxhash).
type planeHasher struct {
	key uint64
	r   [][]uint64 // r[plane][word]: the multipliers of the planes hashed
}

// planeKey is the key the multipliers R are drawn from.
const planeKey = 0x6962736d2d706c6e // "ibsm-pln"

// mersenne61 is the prime 2^61−1 the hash is taken modulo.
const mersenne61 = 1<<61 - 1

// fold61 reduces x to at most 2^61+6 (congruent modulo 2^61−1).
func fold61(x uint64) uint64 { return x&mersenne61 + x>>61 }

// mulmod61 returns a·b modulo 2^61−1, for b < 2^61 (any a), not fully
// reduced (below 2^62+16): 2^64 ≡ 8.
func mulmod61(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return fold61(lo) + fold61(hi<<3)
}

// canon61 fully reduces x (below 2^63) modulo 2^61−1.
func canon61(x uint64) uint64 {
	x = fold61(fold61(x))
	if x >= mersenne61 {
		x -= mersenne61
	}
	return x
}

// multiplier derives R(plane, word) from the key: splitmix64's finaliser
// over the key and the position, reduced to [1, 2^61−1).
func multiplier(key uint64, plane, word int) uint64 { // word < 2^32
	x := key + (uint64(plane)<<32|uint64(word))*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	if x = canon61(x >> 3); x == 0 {
		x = 1
	}
	return x
}

// Positions of the two multipliers that are not a plane's words.
const (
	countPlane = 1 << 8  // R(n): the number of planes
	lenWord    = 1 << 31 // R(plane, len): a plane's length (no plane has 2^31 words)
)

// newPlaneHasher returns a hasher for up to planes planes of up to
// width entries. Its multipliers are made afresh: 490 per plane at
// ft3-56, microseconds against the hashing.
func newPlaneHasher(key uint64, planes, width int) *planeHasher {
	h := &planeHasher{key: key, r: make([][]uint64, planes)}
	for k := range h.r {
		h.r[k] = make([]uint64, (width+7)/8)
		for w := range h.r[k] {
			h.r[k][w] = multiplier(key, k, w)
		}
	}
	return h
}

// hasherFor returns a hasher with key for the planes of dests.
func hasherFor(key uint64, dests []plan.DestPlanes) *planeHasher {
	planes, width := 0, 0
	for _, d := range dests {
		planes = max(planes, len(d.Planes))
		for _, pl := range d.Planes {
			width = max(width, len(pl))
		}
	}
	return newPlaneHasher(key, planes, width)
}

// hash returns the hash of d's planes, which h must have multipliers for.
func (h *planeHasher) hash(d plan.DestPlanes) uint64 {
	acc := mulmod61(uint64(len(d.Planes)), multiplier(h.key, countPlane, 0))
	for k, pl := range d.Planes {
		acc = fold61(acc + mulmod61(uint64(len(pl))+1, multiplier(h.key, k, lenWord)))
		r := h.r[k]
		n := len(pl) &^ 7
		for i := 0; i < n; i += 8 {
			acc = fold61(acc + mulmod61(binary.LittleEndian.Uint64(pl[i:]), r[i>>3]))
		}
		if n < len(pl) {
			var tail [8]byte
			copy(tail[:], pl[n:])
			acc = fold61(acc + mulmod61(binary.LittleEndian.Uint64(tail[:]), r[n>>3]))
		}
	}
	return canon61(acc)
}

// edit returns hash x of a destination's planes after the entry of
// switch s in plane k went from port old to port new.
func (h *planeHasher) edit(x uint64, k, s int, old, new uint8) uint64 {
	if old == new {
		return x
	}
	coef := mulmod61(uint64(1)<<(8*(s&7)), multiplier(h.key, k, s>>3))
	if new > old {
		return canon61(x + mulmod61(uint64(new-old), canon61(coef)))
	}
	return canon61(x + mersenne61 - canon61(mulmod61(uint64(old-new), canon61(coef))))
}

// destHashes returns the planeHasher hash (key planeKey) of every
// destination's planes, spread over GOMAXPROCS goroutines (187 M entries
// at the edge of the LID space).
func destHashes(dests []plan.DestPlanes) []uint64 {
	return plan.HashDests(dests, hasherFor(planeKey, dests).hash)
}
