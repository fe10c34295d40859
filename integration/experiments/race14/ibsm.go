package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/conf"
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

const config = `fabric {
  transport = "sim"
  topology  = %q
}
sm {
  lmc            = 0
  state_dir      = %q
  plugin_timeout = "30m"
}
plugin "routing_engine" %q {
  path = %q
%s}
plugin "lid_assigner" "sequential" {
  path = %q
}
plugin "vl_assigner" %q {
  path = %q
%s}
routing {
  engine       = %q
  lid_assigner = "sequential"
  vl_assigner  = %q
}
`

func cfgBlock(attrs string) string {
	if attrs == "" {
		return ""
	}
	return "  config {\n    " + attrs + "\n  }\n"
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
	pl := func(p string) string { return filepath.Join(bin, "ibsm-plugin-"+p) }
	src := fmt.Sprintf(config, net, state, c.engine, pl(c.engine), cfgBlock(c.engineCfg), pl("sequential"),
		c.vl, pl(c.vl), cfgBlock(c.vlCfg), c.engine, c.vl)
	cfgPath := filepath.Join(state, "ibsm.hcl")
	if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
		return r, nil, err
	}
	cfg, diags := conf.Load(cfgPath)
	if diags.HasErrors() {
		return r, nil, fmt.Errorf("%s", conf.FormatDiagnostics(diags))
	}
	a, err := app.New(ctx, cfg, hclog.New(&hclog.LoggerOptions{Name: "race14", Level: hclog.Error, Output: os.Stderr}))
	if err != nil {
		return r, nil, err
	}
	defer a.Close()
	r.load = loadavg()
	mark := &phaseMark{}
	a.SM.SetProgress(mark)
	_, _, res, err := a.SM.Plan(ctx)
	end := time.Now()
	after := cpuNow()
	if err != nil {
		return r, nil, err
	}
	before, began, ok := mark.get()
	if !ok {
		return r, nil, fmt.Errorf("the SM never announced its routing phase")
	}
	r.cpu = (after - before).Seconds()
	tm := res.Timings
	r.route, r.lids, r.vls, r.verify = tm.Routing.Seconds(), tm.LIDs.Seconds(), tm.VLs.Seconds(), tm.Verify.Seconds()
	r.phase = end.Sub(began).Seconds()
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

// phaseMark notes the time and the CPU used so far when the routing phase
// starts.
type phaseMark struct {
	mu    sync.Mutex
	cpu   time.Duration
	began time.Time
	set   bool
}

func (m *phaseMark) Phase(name, _ string) {
	if name != "routing" {
		return
	}
	began := time.Now()
	c := cpuNow()
	m.mu.Lock()
	m.cpu, m.began, m.set = c, began, true
	m.mu.Unlock()
}

func (m *phaseMark) Count(string, int64, int64) {}

func (m *phaseMark) get() (time.Duration, time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cpu, m.began, m.set
}

// cpuNow is the user+sys CPU time of this process (the host) and of its
// live children (the plugins) so far.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	var t time.Duration
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		t = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for exe, c := range benchutil.ChildrenCPU(os.Getpid()) {
		if strings.HasPrefix(exe, "ibsm-plugin-") {
			t += c
		}
	}
	return t
}

func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	fmt.Sscanf(string(b), "%g", &l)
	return l
}
