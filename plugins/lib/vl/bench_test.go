package vl_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ibsm/ibsm/plugins/lib/sssp"
	"github.com/ibsm/ibsm/plugins/lib/vl"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/testfab/gen"
)

// TestBench512 is the target from the issue: sssp plus a VL assigner on a
// 512-switch random 12-regular fabric with 4 CAs per switch within 8 VLs
// ('ibsm topo paper --set rrg512 --seed 1').
// It measures (prints) and is opt-in: IBSM_VL_BENCH=1 runs acro,
// IBSM_VL_BENCH=all the three assigners; IBSM_VL_CHECK=1 also runs the
// exact checker on the plans (slow: every endpoint toward every LID).
func TestBench512(t *testing.T) {
	which := os.Getenv("IBSM_VL_BENCH")
	if which == "" {
		t.Skip("set IBSM_VL_BENCH=1 (acro) or =all to run the 512-switch measurement")
	}
	real, routing := rrg512(t, 1)
	for _, a := range algos {
		if a.name != "acro" && which != "all" {
			continue
		}
		t1 := time.Now()
		f, err := vl.NewFabric(real)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := f.BuildTrees()
		if err != nil {
			t.Fatal(err)
		}
		ly, err := a.run(context.Background(), f, tr, 8)
		if err != nil {
			t.Logf("%s: %v (after %v)", a.name, err, time.Since(t1))
			continue
		}
		lay := time.Since(t1)
		v := &plan.VLPlan{}
		var st vl.Stats
		if ly.PerHop {
			v, st, err = vl.HopPlan(f, ly, tr, 8)
		} else {
			v, st, err = vl.PairPlan(f, ly)
		}
		vlTime := time.Since(t1)
		t.Logf("%s: routing %v, layering %v, total VL %v, routing+VL %v, layers %d, VLs %d, stats %+v, plan err %v", a.name, routing, lay, vlTime, routing+vlTime, ly.N, v.VLs, st, err)
		if err == nil && os.Getenv("IBSM_VL_CHECK") != "" {
			t.Logf("%s: exact check: %v", a.name, vl.Check(f, v))
		}
	}
}

// rrg512 is the fabric ('ibsm topo rrg --switches 512 --ports 12
// --cas 4 --seed N') routed by sssp and realised with sequential LIDs, and
// how long routing and realising took.
func rrg512(t *testing.T, seed int64) (*plan.Realized, time.Duration) {
	t.Helper()
	topo, err := gen.Topology(gen.RRG{Switches: 512, NetPorts: 12, CAsPerSwitch: 4, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	planes, _, err := sssp.Route(context.Background(), topo, 0)
	if err != nil {
		t.Fatal(err)
	}
	real, err := plan.Realize(topo, &plan.Routes{Planes: planes}, testfab.SequentialLIDs(topo, 0))
	if err != nil {
		t.Fatal(err)
	}
	return real, time.Since(t0)
}
