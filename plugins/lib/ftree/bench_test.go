package ftree

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
)

// BenchmarkRoute routes the 3-level fat trees of 36-port (11,664 CAs, 1,620
// switches) and 48-port (27,648 CAs, 2,880 switches) switches, LMC 0, in
// process: recognition, the up-reachability table and every plane.
func BenchmarkRoute(b *testing.B) {
	for _, k := range []int{36, 48} {
		topo, err := sdktest.FatTree3(k)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(map[int]string{36: "ft3-36", 48: "ft3-48"}[k], func(b *testing.B) {
			testfab.Bench(b, func() error {
				_, _, err := Route(context.Background(), topo, 0, Config{})
				return err
			})
		})
	}
}
