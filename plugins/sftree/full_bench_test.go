package main

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// benchRouteFull times the bring-up route call on ft3-k: a fresh engine
// (default configuration, nothing kept) answering the full topology over
// gRPC in process, as the host's first call after discovery; and the same
// with two cables down (the last leaf's first uplink, the last pod's
// first aggregation uplink), as a fabric seldom comes up whole. It reports
// the call's wall time and, inside it, the engine's own Route in wall and
// process CPU time (the rest is the SDK's: receiving the topology, hashing
// and sending the planes, decoding them).
func benchRouteFull(b *testing.B, k int) {
	for _, down := range []int{0, 2} {
		b.Run(map[int]string{0: "full", 2: "two-cables-down"}[down], func(b *testing.B) {
			topo, err := sdktest.FatTree3(k)
			if err != nil {
				b.Fatal(err)
			}
			if down > 0 {
				// Switch indices of sdktest.FatTree3: the last switch is
				// the last pod's last leaf, k/2 before it its last
				// aggregation switch; up ports are k/2+1..k on both.
				last := int32(len(topo.Switches()) - 1)
				testfab.SetLinkState(topo, last, uint8(k/2+1), topology.StateDown)
				testfab.SetLinkState(topo, last-int32(k/2), uint8(k/2+1), topology.StateDown)
			}
			benchRouteCallFull(b, topo)
		})
	}
}

// benchRouteCallFull is benchRouteFull on one topology.
func benchRouteCallFull(b *testing.B, topo *topology.Topology) {
	ctx := context.Background()
	var call, eng, engCPU time.Duration
	testfab.Bench(b, func() error {
		e := &timedEngine{engine: &engine{log: hclog.NewNullLogger()}}
		c := sdktest.InProcess(b, e, sdk.KindRouting)
		if _, err := c.GetInfo(ctx); err != nil {
			return err
		}
		if err := c.Configure(ctx, e.Schema().Defaults()); err != nil {
			return err
		}
		start := time.Now()
		if _, err := c.Route(ctx, sdk.RouteRequest{Topo: topo}); err != nil {
			return err
		}
		call += time.Since(start)
		eng += e.took
		engCPU += e.cpu
		return nil
	})
	n := float64(b.N)
	b.ReportMetric(float64(call.Microseconds())/n/1000, "call-ms")
	b.ReportMetric(float64(eng.Microseconds())/n/1000, "engine-ms")
	b.ReportMetric(float64(engCPU.Microseconds())/n/1000, "engine-cpu-ms")
}

// BenchmarkRouteFull56 is ft3-56 (3,920 switches, 43,904 CAs): ~1 GB and
// seconds per call, for measurements rather than CI.
func BenchmarkRouteFull56(b *testing.B) { benchRouteFull(b, 56) }

// BenchmarkRouteFull24 is ft3-24 (720 switches, 3,456 CAs).
func BenchmarkRouteFull24(b *testing.B) { benchRouteFull(b, 24) }
