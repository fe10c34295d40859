package topology_test

import (
	"testing"

	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestHashGolden pins the hash: plugins built against another SDK compare
// it on every topology they receive, and plan caches are keyed by it, so
// computing it differently must not change it (values of the byte stream
// written a Write per port).
func TestHashGolden(t *testing.T) {
	plain, err := testfab.FatTree3(4)
	if err != nil {
		t.Fatal(err)
	}
	withSM, err := testfab.FatTree3(8, testfab.SMOnFirstCA())
	if err != nil {
		t.Fatal(err)
	}
	testfab.SetLinkState(withSM, withSM.Switches()[3], 2, topology.StateDown)
	for _, tc := range []struct {
		name string
		topo *topology.Topology
		want uint64
	}{
		{"ft3-4", plain, 0xe9e068ec753bbb9a},
		{"ft3-8, SM on the first CA, a port down", withSM, 0x2fc358703d93af7e},
	} {
		if got := tc.topo.Hash(); got != tc.want {
			t.Errorf("%s: hash %#x, want %#x", tc.name, got, tc.want)
		}
	}
}
