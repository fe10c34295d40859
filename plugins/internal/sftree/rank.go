package sftree

import (
	"github.com/ibsm/ibsm/plugins/internal/route"
)

// heightTree ranks switches by their hop distance above the CA-carrying
// switches: leaves (switches with a CA) are the deepest rank, the switches
// farthest from any leaf rank 0. It is the ranking of a fat tree whose
// leaves are exactly the switches carrying CAs, for tests and for callers
// without a fat-tree recogniser; switches no leaf reaches stay unranked.
type heightTree struct {
	rank   []int
	leaves []int32
}

// HeightTree ranks g's switches by height above the CA-carrying switches.
func HeightTree(g *route.Graph) Tree {
	h := &heightTree{rank: make([]int, g.N)}
	for s := int32(0); s < int32(g.N); s++ {
		if len(g.Group(s)) > 1 { // more than its own port 0
			h.leaves = append(h.leaves, s)
		}
	}
	row := make([]uint8, g.N)
	if len(h.leaves) == 0 || g.BFS(h.leaves, row, make([]int32, g.N)) != nil {
		for i := range h.rank {
			h.rank[i] = -1
		}
		return h
	}
	top := 0
	for _, d := range row {
		if d != route.Unreachable && int(d) > top {
			top = int(d)
		}
	}
	for s, d := range row {
		h.rank[s] = -1
		if d != route.Unreachable {
			h.rank[s] = top - int(d)
		}
	}
	return h
}

func (h *heightTree) Rank(s int32) int { return h.rank[s] }
func (h *heightTree) Leaves() []int32  { return h.leaves }
