package integration

import (
	"path/filepath"
	"testing"

	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestShippedAssignersConform runs the SDK's conformance kit on the built
// LID and VL assigner binaries the way a vendor runs it on theirs: launched
// through the host's handshake (RunLIDAssigner, RunVLAssigner), so the
// binaries' own Serve, flags and wire encoding are checked, not only the
// in-process implementations the plugins' unit tests cover.
func TestShippedAssignersConform(t *testing.T) {
	bin := func(name string) string { return filepath.Join(binDir, "ibsm-plugin-"+name) }
	for _, lmc := range []uint8{0, 3} {
		t.Run("sequential", func(t *testing.T) {
			sdktest.RunLIDAssigner(t, bin("sequential"), sdktest.Options{LMC: lmc})
		})
	}
	for _, name := range []string{"layered", "dfsssp"} {
		t.Run(name, func(t *testing.T) { sdktest.RunVLAssigner(t, bin(name), sdktest.Options{}) })
	}
	// single proves one VL enough, which the kit's minimum-hop routes are
	// only on a cycle-free fabric.
	line, err := testfab.Line(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("single", func(t *testing.T) {
		sdktest.RunVLAssigner(t, bin("single"), sdktest.Options{Fabrics: map[string]*topology.Topology{"line": line}})
	})
}
