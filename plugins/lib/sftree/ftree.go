package sftree

import "github.com/ibsm/ibsm/plugins/lib/ftree"

// ftreeRanks adapts ftree's recognised tree: its levels are the ranks and
// its canonical leaf order is the order Algorithm 1 scans.
type ftreeRanks struct{ t *ftree.Tree }

// FromFtree returns t as a Tree.
func FromFtree(t *ftree.Tree) Tree { return ftreeRanks{t} }

func (r ftreeRanks) Rank(s int32) int { return int(r.t.Level[s]) }
func (r ftreeRanks) Leaves() []int32  { return r.t.Leaves }
