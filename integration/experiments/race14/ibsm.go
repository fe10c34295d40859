package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/plugins/lib/sssp"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// ibsmRun is one cold plan of a fabric through the host (as `ibsm run
// --once` plans it): wall seconds of the routing phase and its stages, CPU
// seconds (user+sys, host and plugins) of the phase.
type ibsmRun struct {
	phase, route, lids, vls, verify float64
	cpu                             float64
	planKey                         string
	load                            float64
}

// quality is what `ibsm verify --bisections 100 --seed 1` prints, or the
// same analysis of another SM's read-back tables.
type quality struct {
	deadlockFree     string
	minimal          float64 // percent of CA pairs on a shortest path
	ebb              float64
	a2aMax           int64
	a2aNorm          float64
	worstShift       int64
	sls, vls         int
	unreachable      int64 // CA→CA pairs that do not arrive
	loops            int
	caPairsReachable float64
}

// measureIBSM plans net once with c and a fresh state directory; with
// score it also analyses the plan as `ibsm verify` does.
func measureIBSM(ctx context.Context, bin, work, net string, c ibsmCfg, analyse bool) (ibsmRun, *quality, error) {
	var r ibsmRun
	state, err := os.MkdirTemp(work, "state-")
	if err != nil {
		return r, nil, err
	}
	defer os.RemoveAll(state)
	cfg := benchutil.Config{Topology: net, StateDir: state, BinDir: bin, Engine: c.engine, VLAssigner: c.vl,
		EngineConfig: c.engineCfg, VLConfig: c.vlCfg, PluginTimeout: "30m"}
	loaded, err := cfg.Load(filepath.Join(state, "ibsm.hcl"))
	if err != nil {
		return r, nil, err
	}
	a, err := app.New(ctx, loaded, hclog.New(&hclog.LoggerOptions{Name: "race14", Level: hclog.Error, Output: os.Stderr}))
	if err != nil {
		return r, nil, err
	}
	defer a.Close()
	r.load = benchutil.LoadAvg()
	_, res, phase, err := benchutil.PlanTimed(ctx, a.SM, "")
	if err != nil {
		return r, nil, err
	}
	r.cpu = (phase.After.Total() - phase.Before.Total()).Seconds()
	tm := res.Timings
	r.route, r.lids, r.vls, r.verify = tm.Routing.Seconds(), tm.LIDs.Seconds(), tm.VLs.Seconds(), tm.Verify.Seconds()
	r.phase = phase.Wall().Seconds()
	r.planKey = fmt.Sprintf("%x", res.Key)
	if !analyse {
		return r, nil, nil
	}
	q, err := score(res.Realized, res.VLs)
	if err != nil {
		return r, nil, err
	}
	return r, q, nil
}

// score analyses a realised plan with the figures of `ibsm verify
// --bisections 100 --seed 1`. vl nil: every route on one VL (OpenSM's
// single-VL engines, or tables whose SLs were not read).
func score(rz *plan.Realized, vl *plan.VLPlan) (*quality, error) {
	rep, err := analysis.Analyse(rz, vl, analysis.Options{Shifts: analysis.ShiftsAuto, Bisections: analysis.DefaultBisections, Seed: 1})
	if err != nil {
		return nil, err
	}
	m := analysis.Minimal(rz)
	q := &quality{minimal: m.Percent(), a2aMax: rep.Load.Max, a2aNorm: rep.Load.MaxNormalized,
		sls: len(rep.SLsUsed), vls: len(rep.VLsUsed), loops: rep.LoopLIDs,
		unreachable: rep.CAPairs.Total - rep.CAPairs.Reachable, caPairsReachable: rep.CAPairs.Percent()}
	q.deadlockFree = "no"
	if rep.DeadlockFree {
		q.deadlockFree = "yes"
	}
	if rep.Shift != nil {
		q.worstShift = rep.Shift.Worst
	}
	if rep.EBB != nil {
		q.ebb = rep.EBB.EBB
	}
	return q, nil
}

// ssspAlone scores sssp's routes with no VL assignment: the balance
// reference the issue compares against (the host refuses to program it
// where its dependency graph is cyclic).
func ssspAlone(ctx context.Context, topo *topology.Topology) (*quality, error) {
	dp, _, err := sssp.Route(ctx, topo, 0)
	if err != nil {
		return nil, err
	}
	eps := topo.Endpoints()
	lids := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps))}
	for e := range eps {
		lids.Ports[e] = plan.PortLID{Base: uint16(e + 1)}
	}
	rz, err := plan.Realize(topo, &plan.Routes{Planes: dp}, lids)
	if err != nil {
		return nil, err
	}
	return score(rz, nil)
}
