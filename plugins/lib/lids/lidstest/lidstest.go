// Package lidstest checks a path LID assigner through the wire protocol on
// paths-form routes, which the SDK's conformance kit (planes only) does not
// send. Only tests import it.
package lidstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/plugins/lib/lids"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// Conformance is the whole test of one first-party LID assigner binary:
// the plugin for h passes the SDK's conformance kit (planes, with and
// without an LMC floor) and serves paths-form routes over the wire.
func Conformance(t *testing.T, h lids.Heuristic) {
	for _, lmc := range []uint8{0, 3} {
		t.Run(fmt.Sprintf("kit/lmc=%d", lmc), func(t *testing.T) {
			sdktest.LIDAssigner(t, lids.NewPlugin(h, hclog.NewNullLogger()), sdktest.Options{LMC: lmc})
		})
	}
	for _, lmc := range []uint8{0, 1} {
		t.Run(fmt.Sprintf("paths/lmc=%d", lmc), func(t *testing.T) {
			Paths(t, lids.NewPlugin(h, hclog.NewNullLogger()), lmc)
		})
	}
}

// Paths serves impl over a real gRPC connection, sends it random shortest
// path routings of a few random fabrics, and checks that the plan it
// returns is valid and realises every path hop for hop. It returns the
// total LIDs per fabric seed so callers can compare heuristics.
func Paths(t *testing.T, impl sdk.LIDAssigner, lmc uint8) map[uint64]int {
	t.Helper()
	c := sdktest.InProcess(t, impl, sdk.KindLIDAssign)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sch, err := c.GetSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Configure(ctx, sch.Defaults()); err != nil {
		t.Fatal(err)
	}
	totals := map[uint64]int{}
	for seed := uint64(1); seed <= 2; seed++ {
		topo, err := sdktest.Random(seed, 10, 10, 3)
		if err != nil {
			t.Fatal(err)
		}
		r := &plan.Routes{Paths: lids.RandomShortest(topo, seed)}
		lp, err := c.AssignLIDs(ctx, sdk.LIDRequest{Topo: topo, Routes: r, LMC: lmc})
		if err != nil {
			t.Fatalf("seed %d: AssignLIDs: %v", seed, err)
		}
		if err := sdktest.CheckLIDs(topo, r, lp, 7); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := lids.CheckRealises(topo, r.Paths, lp); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for e, p := range lp.Ports {
			if topo.SwitchIndex(topo.Endpoints()[e].Node) < 0 && p.LMC < lmc {
				t.Fatalf("seed %d: CA endpoint %d has LMC %d, below the SM's lmc %d", seed, e, p.LMC, lmc)
			}
			totals[seed] += p.Count()
		}
	}
	return totals
}
