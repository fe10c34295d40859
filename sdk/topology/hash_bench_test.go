package topology_test

import (
	"testing"

	"github.com/ibsm/ibsm/sdk/testfab"
)

// BenchmarkHash hashes a 3-level fat tree of 56-port switches (47,824
// nodes, as the linkdown experiment's ft3-56).
func BenchmarkHash(b *testing.B) {
	topo, err := testfab.FatTree3(56)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		topo.Hash()
	}
}
