package sim

import (
	"testing"

	"github.com/ibsm/ibsm/transport/smp"
)

func TestBlockPoolShares(t *testing.T) {
	var p blockPool
	blk := func(b byte) *smp.LFTBlock {
		var x smp.LFTBlock
		for i := range x {
			x[i] = b + byte(i%3)
		}
		return &x
	}
	a1, a2, b1 := p.get(blk(1)), p.get(blk(1)), p.get(blk(2))
	if a1 != a2 {
		t.Errorf("equal blocks are not shared")
	}
	if a1 == b1 || *b1 != *blk(2) || *a1 != *blk(1) {
		t.Errorf("different blocks mixed up: %v %v", a1[:4], b1[:4])
	}
	in := blk(3)
	if s := p.get(in); s == in {
		t.Errorf("the pool keeps the caller's block, which the caller may change")
	}
	if len(p.m) != 3 {
		t.Errorf("pool holds %d blocks, want 3", len(p.m))
	}
}
