package sdktest

import (
	"testing"

	"github.com/ibsm/ibsm/sdk"
)

// The reference router's trees pass the kit on the built-in fabrics.
func TestBFSMulticastConforms(t *testing.T) {
	fabrics, err := BuiltinFabrics()
	if err != nil {
		t.Fatal(err)
	}
	for name, topo := range fabrics {
		req := sdk.MulticastRequest{Topo: topo, Groups: MulticastGroups(topo, 7)}
		trees, err := BFSMulticast(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := CheckTrees(&req, trees); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
