package paths

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// yen finds k-shortest loopless legal paths (Yen, Management Science 1971)
// on the legal-turn graph of one UpDown. Loopless means no switch twice.
type yen struct {
	u      *UpDown
	dist   []uint16
	queue  []int32
	banned []bool
	walker *dagWalker
}

func newYen(u *UpDown) *yen {
	n := u.F.N
	return &yen{u: u, dist: make([]uint16, 2*n), queue: make([]int32, 2*n), banned: make([]bool, n), walker: newDAGWalker(u)}
}

type yenCand struct {
	chans []int32
	tie   uint64
}

func pathKey(chans []int32) string {
	var b strings.Builder
	for _, c := range chans {
		b.WriteString(strconv.Itoa(int(c)))
		b.WriteByte(',')
	}
	return b.String()
}

// KShortest returns up to k distinct loopless legal paths from switch a to
// switch b (channel sequences) in nondecreasing length. row is the
// unrestricted DistTo(b) row. Among paths of equal length the order is
// random (seeded): which of many equally short paths make the cut is not
// biased toward low port numbers. a == b gives the one empty path.
//
// stretch bounds the extra hops over the pair's shortest legal length
// (negative: unbounded, Yen proper).
func (y *yen) KShortest(a, b int32, k, stretch int, row []uint16, rng *rand.Rand) [][]int32 {
	u, f := y.u, y.u.F
	first, ok := y.walker.pick(a, row, nil, rng, nil)
	if !ok {
		return nil
	}
	A := [][]int32{first}
	if a == b {
		return A
	}
	limit := len(first) + stretch
	if stretch < 0 {
		limit = int(^uint(0) >> 1)
	}
	seen := map[string]bool{pathKey(first): true}
	var B []yenCand
	states := make([]int32, 0, 16)
	for len(A) < k {
		prev := A[len(A)-1]
		states = states[:0]
		x := Start(a)
		states = append(states, x)
		for _, c := range prev {
			x = u.Next(x, c)
			states = append(states, x)
		}
		for i := 0; i < len(prev); i++ {
			spur := states[i]
			s := spur >> 1
			root := prev[:i]
			if i+int(row[spur]) > limit {
				// Even unrestricted, the detour from here is too long.
				continue
			}
			clear(y.banned)
			for _, st := range states[:i] {
				y.banned[st>>1] = true
			}
			// The spur switch is left only once: ban it for the rest.
			y.banned[s] = true
			u.DistTo(b, y.dist, y.banned, y.queue)
			// First channels already taken by a kept path with this root.
			bestLen, choices := Unreachable, 0
			var pickC int32 = -1
			for c := f.Off[s]; c < f.Off[s+1]; c++ {
				nx := u.Next(spur, c)
				if nx < 0 || y.dist[nx] == Unreachable || usedAfter(A, root, c) {
					continue
				}
				switch d := y.dist[nx]; {
				case d < bestLen:
					bestLen, choices, pickC = d, 1, c
				case d == bestLen:
					choices++
					if rng.IntN(choices) == 0 {
						pickC = c
					}
				}
			}
			if pickC < 0 || i+1+int(bestLen) > limit {
				continue
			}
			cand := append(append(make([]int32, 0, i+1+int(bestLen)), root...), pickC)
			for nx := u.Next(spur, pickC); y.dist[nx] > 0; {
				var via, to int32 = -1, -1
				n := 0
				for c := f.Off[nx>>1]; c < f.Off[nx>>1+1]; c++ {
					z := u.Next(nx, c)
					if z >= 0 && y.dist[z] == y.dist[nx]-1 {
						n++
						if rng.IntN(n) == 0 {
							via, to = c, z
						}
					}
				}
				cand = append(cand, via)
				nx = to
			}
			key := pathKey(cand)
			if seen[key] {
				continue
			}
			seen[key] = true
			B = append(B, yenCand{chans: cand, tie: rng.Uint64()})
		}
		if len(B) == 0 {
			break
		}
		best := 0
		for j := 1; j < len(B); j++ {
			if len(B[j].chans) < len(B[best].chans) || (len(B[j].chans) == len(B[best].chans) && B[j].tie < B[best].tie) {
				best = j
			}
		}
		A = append(A, B[best].chans)
		B[best] = B[len(B)-1]
		B = B[:len(B)-1]
	}
	return A
}

// usedAfter reports whether some path of A starts with root and continues
// with channel c.
func usedAfter(A [][]int32, root []int32, c int32) bool {
next:
	for _, p := range A {
		if len(p) <= len(root) || p[len(root)] != c {
			continue
		}
		for j, r := range root {
			if p[j] != r {
				continue next
			}
		}
		return true
	}
	return false
}
