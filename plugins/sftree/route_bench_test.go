package main

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// timedEngine times the engine's own Route inside each route call, in
// wall time and in process CPU time.
type timedEngine struct {
	*engine
	took, cpu time.Duration
}

func (t *timedEngine) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	start, cpu := time.Now(), testfab.CPUTime()
	r, err := t.engine.Route(ctx, req)
	t.took, t.cpu = time.Since(start), testfab.CPUTime()-cpu
	return r, err
}

// benchRouteCall times a route call over gRPC (in process, as the host
// makes it: the topology as a patch of the last one, the answer as the
// destinations changed since the last) for one cable going down on
// ft3-k with incremental = true, next to the engine's own part of it; the
// rest is the SDK's, both ends (receiving the patch, hashing the answer
// and sending its changed entries, the host decoding them). Each iteration takes the cable down
// and brings it back; the up call's times are reported too.
func benchRouteCall(b *testing.B, k int) {
	ctx := context.Background()
	e := &timedEngine{engine: &engine{log: hclog.NewNullLogger()}}
	c := sdktest.InProcess(b, e, sdk.KindRouting)
	if _, err := c.GetInfo(ctx); err != nil { // as the host: it says the SDK takes patches
		b.Fatal(err)
	}
	m := e.Schema().Defaults().AsValueMap()
	m["incremental"] = cty.True
	if err := c.Configure(ctx, cty.ObjectVal(m)); err != nil {
		b.Fatal(err)
	}
	full, err := sdktest.FatTree3(k)
	if err != nil {
		b.Fatal(err)
	}
	last, err := c.Route(ctx, sdk.RouteRequest{Topo: full})
	if err != nil {
		b.Fatal(err)
	}
	g := route.NewGraph(full)
	root := full.SwitchIndex(full.NodeByGUID(e.last.Root()))
	h := int32(k / 2)
	// Switch indices of sdktest.FatTree3: h*h cores, then per pod h
	// aggregations and h leaves; up ports are h+1..2h on both levels.
	upPort := func(s int32) uint8 {
		for _, l := range g.Links(s) {
			if l.Port > uint8(h) {
				return l.Port
			}
		}
		b.Fatalf("switch %d has no up cable", s)
		return 0
	}
	lastLeaf := int32(g.N) - 1
	lastAgg := lastLeaf - h
	for _, tc := range []struct {
		name string
		s    int32
	}{
		{"leaf-agg-last-pod", lastLeaf},
		{"agg-core-last-pod", lastAgg},
		{"root-uplink", root},
	} {
		b.Run(tc.name, func(b *testing.B) {
			down, err := sdktest.FatTree3(k)
			if err != nil {
				b.Fatal(err)
			}
			testfab.SetLinkState(down, tc.s, upPort(tc.s), topology.StateDown)
			var callDown, engDown, callUp, engUp time.Duration
			changed, edits := 0, 0
			call := func(topo *topology.Topology, wall, eng *time.Duration) {
				start := time.Now()
				r, err := c.Route(ctx, sdk.RouteRequest{Topo: topo, Since: last.Token, Edits: true})
				if err != nil {
					b.Fatal(err)
				}
				*wall += time.Since(start)
				*eng += e.took
				if r.Base != last.Token {
					b.Fatalf("answer is not the changes since the last one")
				}
				if topo == down {
					changed, edits = len(r.Changed), len(r.Edits)
				}
				last = r
			}
			testfab.Bench(b, func() error {
				call(down, &callDown, &engDown)
				call(full, &callUp, &engUp)
				return nil
			})
			n := float64(b.N)
			b.ReportMetric(float64(callDown.Microseconds())/n/1000, "down-call-ms")
			b.ReportMetric(float64(engDown.Microseconds())/n/1000, "down-engine-ms")
			b.ReportMetric(float64(callUp.Microseconds())/n/1000, "up-call-ms")
			b.ReportMetric(float64(engUp.Microseconds())/n/1000, "up-engine-ms")
			b.ReportMetric(float64(changed), "changed-dests")
			b.ReportMetric(float64(edits), "changed-entries")
		})
	}
}

func BenchmarkRouteCall56(b *testing.B)    { benchRouteCall(b, 56) }
func BenchmarkRouteCallSmall(b *testing.B) { benchRouteCall(b, 12) }
