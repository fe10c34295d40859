package sm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Candidate configures the shadow pipeline and its promotion (the
// candidate {} block).
type Candidate struct {
	Pipe  *pipeline.Runner
	Rules conf.Candidate
	// Dir is the rollout folder of the state directory.
	Dir string
}

// candidate is the SM's shadow and rollout state. Shadow computations run
// on their own goroutine, one at a time; the rollout advances on the sweep
// loop (RolloutTick), between sweeps, so it never races the programmer.
type candidate struct {
	Candidate

	mu      sync.Mutex
	running bool
	done    chan struct{} // closed when the running computation ends
	latest  *shadowPlan
	streak  int
	status  rollout.Status
	ro      *rollout.Rollout
	pair    rollout.Pair
	steps   []rollout.Step
	// disturbed is why the stage in dwell failed its health gate (a
	// re-route, traps, a changed fabric); "" while healthy.
	disturbed string
	// recovered is a rollout found in progress (or promoted) at start,
	// handled before the first plan is programmed.
	recovered *rollout.Rollout
	// refusedKey is the candidate plan last refused, not retried by an
	// automatic promotion.
	refusedKey pipeline.Key
	promoted   bool
}

// shadowPlan is a candidate plan beside the active plan it was compared
// with.
type shadowPlan struct {
	topo      *topology.Topology
	active    *pipeline.Result
	res       *pipeline.Result
	err       error
	stageable error
}

// SetCandidate installs (or, with nil, removes) the candidate pipeline. A
// rollout the state directory shows in progress is rolled back before
// the first plan is programmed; one it shows promoted makes the
// candidate's pipeline the active one, if it still computes the promoted
// plan.
func (s *SM) SetCandidate(c *Candidate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c == nil {
		s.cand = nil
		return nil
	}
	ro, err := rollout.LoadRollout(c.Dir)
	if err != nil {
		return fmt.Errorf("rollout state: %w", err)
	}
	old := s.cand
	s.cand = &candidate{Candidate: *c, status: rollout.Status{Promote: string(c.Rules.Promote), Need: c.Rules.ConsecutiveSweeps}}
	for _, r := range c.Rules.Require {
		s.cand.status.Require = append(s.cand.status.Require, string(r))
	}
	switch {
	case old != nil && old.ro.InProgress():
		s.cand.ro, s.cand.pair, s.cand.steps = old.ro, old.pair, old.steps // a reload does not forget a rollout
	case old != nil && old.promoted:
		// A reload after a promotion keeps the promoted pipeline routing
		// (the reload's routing block would otherwise re-program the old
		// engine at once, unstaged) until the configuration makes the
		// candidate its routing block and drops the candidate block.
		s.Pipe, s.cand.promoted, s.cand.ro = c.Pipe, true, old.ro
		s.Log.Warn("rollout: the candidate was promoted; it keeps routing after this reload: make it the routing block")
	case ro != nil && (ro.InProgress() || ro.Phase == rollout.PhasePromoted) && s.applied == nil:
		s.cand.recovered = ro
	}
	s.cand.status.Rollout = ro
	return nil
}

func (s *SM) candidate() *candidate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cand
}

// RolloutStatus returns the last status (nil without a candidate).
func (s *SM) RolloutStatus() *rollout.Status {
	c := s.candidate()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.status
	return &st
}

// WaitShadow waits for the running shadow computation, if any.
func (s *SM) WaitShadow(ctx context.Context) error {
	c := s.candidate()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// afterSweep is called by the sweep loop after every sweep that routed
// and after every periodic tick: it notes what a stage in dwell must not
// see (a re-route, traps) and starts the shadow computation for the plan
// now in force, unless one is running (the active sweep never waits: the
// next tick starts another).
func (s *SM) afterSweep(rep *Report, err error) {
	c := s.candidate()
	a := s.Applied()
	if c == nil || a == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ro.InProgress() && c.disturbed == "" && rep != nil {
		switch {
		case rep.Rerouted:
			c.disturbed = fmt.Sprintf("the fabric changed (%d nodes, %d links now) and was re-routed", rep.Nodes, rep.Links)
		case rep.Traps > 0:
			c.disturbed = fmt.Sprintf("%d traps arrived", rep.Traps)
		case err != nil:
			c.disturbed = "a sweep failed: " + err.Error()
		}
	}
	if c.running || c.promoted {
		return
	}
	c.running = true
	c.done = make(chan struct{})
	_, lmc := s.pipe()
	go s.shadow(c, a.Topo, a.Result, lmc)
}

// disturb fails the health gate of a rollout in progress (the first
// disturbance is the one recorded).
func (s *SM) disturb(why string) {
	if c := s.candidate(); c != nil {
		c.mu.Lock()
		if c.ro.InProgress() && c.disturbed == "" {
			c.disturbed = why
		}
		c.mu.Unlock()
	}
}

// rolloutTick is the sweep loop's periodic hook: shadow, then RolloutTick.
func (s *SM) rolloutTick(ctx context.Context) {
	if s.candidate() == nil {
		return
	}
	s.afterSweep(nil, nil)
	if err := s.RolloutTick(ctx); err != nil {
		s.Log.Warn("rollout", "error", err)
	}
}

// shadow computes and verifies the candidate on topo with the active
// plan's LIDs, measures both plans and writes the status. Nothing is
// programmed.
func (s *SM) shadow(c *candidate, topo *topology.Topology, active *pipeline.Result, lmc uint8) {
	defer func() {
		c.mu.Lock()
		c.running = false
		close(c.done)
		c.mu.Unlock()
	}()
	start, cpu0 := time.Now(), cpuTime()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	res, err := c.Pipe.Run(ctx, pipeline.Input{Topo: topo, LMC: lmc, Previous: lidsOf(topo, active)})
	sp := &shadowPlan{topo: topo, active: active, res: res, err: err}
	st := rollout.Status{Updated: time.Now(), Topology: fmt.Sprintf("%016x", topo.Hash())}
	am, aerr := rollout.Measure(planOf(active), active.Engine, active.Key.String(), 1)
	if aerr != nil {
		s.Log.Error("rollout: measuring the active plan", "error", aerr)
	}
	st.Active = am
	if err == nil {
		sp.stageable = sp.pair().Stageable()
		st.Candidate, err = rollout.Measure(planOf(res), res.Engine, res.Key.String(), 1)
		st.Changes = rollout.Compare(rollout.TablesOf(planOf(active)), rollout.TablesOf(planOf(res)))
		st.Changes.Switches, st.Changes.LIDs = nil, nil
		if sp.stageable != nil {
			st.Stageable = sp.stageable.Error()
		}
	}
	if err != nil {
		st.Error = err.Error()
		s.Log.Warn("rollout: the candidate has no acceptable plan", "error", err)
	}
	st.ShadowMillis = float64(time.Since(start).Microseconds()) / 1000
	st.ShadowCPUMillis = float64((cpuTime() - cpu0).Microseconds()) / 1000

	c.mu.Lock()
	c.latest = sp
	unmet := unmetCriteria(c.Rules.Require, st.Active, st.Candidate, err)
	if len(unmet) == 0 && err == nil {
		c.streak++
	} else {
		c.streak = 0
	}
	st.Promote, st.Require, st.Need = c.status.Promote, c.status.Require, c.status.Need
	st.Unmet, st.Streak, st.Rollout = unmet, c.streak, c.ro
	if st.Rollout == nil {
		st.Rollout = c.status.Rollout
	}
	c.status = st
	c.mu.Unlock()
	if err := rollout.WriteStatus(c.Dir, &st); err != nil {
		s.Log.Warn("rollout: cannot write the status", "dir", c.Dir, "error", err)
	}
	s.Log.Debug("rollout: shadow computed", "ms", st.ShadowMillis, "cpu_ms", st.ShadowCPUMillis, "streak", c.streak)
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func planOf(r *pipeline.Result) rollout.Plan { return rollout.Plan{Rz: r.Realized, VLs: r.VLs} }

func (sp *shadowPlan) pair() rollout.Pair {
	return rollout.Pair{Old: planOf(sp.active), New: planOf(sp.res)}
}

// unmetCriteria lists the require criteria the candidate misses.
func unmetCriteria(req []conf.Criterion, a, c *rollout.Metrics, err error) []string {
	var out []string
	for _, r := range req {
		ok := err == nil && c != nil
		if ok {
			switch r {
			case conf.RequireDeadlockFree:
				ok = c.DeadlockFree
			case conf.RequireAllPairs:
				ok = c.CAPairs.Complete() && c.SwitchPairs.Complete()
			case conf.RequireMaxLoadLEActive:
				ok = a != nil && c.MaxLoad <= a.MaxLoad
			case conf.RequireNoWorseHops:
				ok = a != nil && c.MaxHops <= a.MaxHops
			}
		}
		if !ok {
			out = append(out, string(r))
		}
	}
	return out
}

// RolloutTick advances the rollout: it takes an operator's request
// (state_dir/rollout/request), starts a promotion (requested, or due by
// the automatic rule), enters the next verified step once the stage in
// dwell passed its health gate, finishes, or rolls back. The sweep loop
// calls it after each periodic light sweep; it returns what went wrong.
func (s *SM) RolloutTick(ctx context.Context) error {
	c := s.candidate()
	if c == nil || !s.mayProgram() {
		return nil
	}
	req, rerr := rollout.TakeRequest(c.Dir)
	if rerr != nil {
		s.Log.Warn("rollout: ignoring a malformed request", "error", rerr)
	}
	c.mu.Lock()
	ro := c.ro
	auto := c.Rules.Promote == conf.PromoteAuto && c.streak >= c.Rules.ConsecutiveSweeps &&
		c.latest != nil && c.latest.res != nil && c.latest.res.Key != c.refusedKey
	c.mu.Unlock()
	switch {
	case ro.InProgress() && req == rollout.RequestAbort:
		return s.rollBack(ctx, c, "aborted by the operator (ibsm rollout abort)")
	case ro.InProgress():
		return s.advance(ctx, c)
	case req == rollout.RequestAbort:
		s.Log.Info("rollout: abort requested, but no rollout is in progress")
		return nil
	case req == rollout.RequestPromote || auto:
		why := "requested by the operator (ibsm rollout promote)"
		if req != rollout.RequestPromote {
			why = fmt.Sprintf("automatic: %v held for %d sweeps", c.Rules.Require, c.Rules.ConsecutiveSweeps)
		}
		return s.startRollout(ctx, c, why)
	}
	return nil
}

// MaxRolloutPlanning bounds the search for a verified order of the steps
// (it holds the sweep loop); what is not ordered by then is refused.
const MaxRolloutPlanning = 30 * time.Second

// startRollout plans the steps of a promotion of the latest candidate
// plan and enters the first stage.
func (s *SM) startRollout(ctx context.Context, c *candidate, why string) error {
	a := s.Applied()
	c.mu.Lock()
	sp := c.latest
	c.mu.Unlock()
	fail := func(err error) error {
		s.Log.Error("rollout: promotion refused", "reason", err)
		r := &rollout.Rollout{ID: newID(), Phase: rollout.PhaseRefused, Started: time.Now(), Updated: time.Now(), Entering: -1, Reason: err.Error()}
		if sp != nil && sp.res != nil {
			r.CandidateKey, r.Engine = sp.res.Key.String(), sp.res.Engine
			c.mu.Lock()
			c.refusedKey = sp.res.Key
			c.mu.Unlock()
		}
		s.finish(c, r, "refused", err.Error())
		return err
	}
	switch {
	case a == nil:
		return fail(errors.New("no plan is in force yet"))
	case sp == nil || sp.err != nil:
		return fail(fmt.Errorf("the candidate has no verified plan yet: %v", errOrPending(sp)))
	case sp.active.Key != a.Result.Key || sp.topo.Hash() != a.Topo.Hash():
		return fail(errors.New("the candidate was computed for another fabric or active plan; wait for the next sweep's shadow computation"))
	case sp.stageable != nil:
		return fail(sp.stageable)
	}
	pair := sp.pair()
	chk, err := rollout.NewChecker(pair, 0)
	if err != nil {
		return fail(err)
	}
	// The search runs on the sweep loop: bound it.
	chk.Deadline = time.Now().Add(MaxRolloutPlanning)
	diff := rollout.Compare(rollout.TablesOf(pair.Old), rollout.TablesOf(pair.New))
	groups, err := rollout.Groups(sp.topo, diff.Changed(sp.topo), c.Rules.Stages)
	if err != nil {
		return fail(err)
	}
	sc, err := rollout.Build(chk, groups)
	if err != nil {
		return fail(err)
	}
	r := &rollout.Rollout{
		ID: newID(), Phase: rollout.PhaseStaging, Started: time.Now(), Updated: time.Now(),
		Topology: fmt.Sprintf("%016x", sp.topo.Hash()), ActiveKey: a.Result.Key.String(), CandidateKey: sp.res.Key.String(),
		Engine: sp.res.Engine, Steps: sc.Steps, Entering: -1, BlocksDiffer: diff.LFTBlocks,
	}
	c.mu.Lock()
	c.ro, c.pair, c.steps, c.disturbed = r, pair, sc.Steps, ""
	c.mu.Unlock()
	s.Log.Info("rollout: promotion started", "why", why, "engine", r.Engine, "steps", len(sc.Steps), "analyses", sc.Analyses, "blocks", diff.LFTBlocks, "switches", diff.SwitchesChanged)
	for _, sp := range sc.Splits {
		s.Log.Info("rollout: " + sp)
	}
	s.event(c, rollout.Event{ID: r.ID, Event: "started", Detail: fmt.Sprintf("%s; %d steps (%d analyses)", why, len(sc.Steps), sc.Analyses)}, true)
	return s.advance(ctx, c)
}

func errOrPending(sp *shadowPlan) error {
	if sp == nil {
		return errors.New("no shadow computation finished yet")
	}
	return sp.err
}

func newID() string { return time.Now().UTC().Format("20060102T150405.000Z") }

// advance checks the health gate of the stage in dwell and, once it
// passed, enters the steps of the next stage (each programmed and read
// back before the next), or finishes the promotion.
func (s *SM) advance(ctx context.Context, c *candidate) error {
	c.mu.Lock()
	r, disturbed := c.ro, c.disturbed
	c.mu.Unlock()
	a := s.Applied()
	switch {
	case disturbed != "":
		return s.rollBack(ctx, c, "health gate failed: "+disturbed)
	case a == nil || fmt.Sprintf("%016x", a.Topo.Hash()) != r.Topology || a.Result.Key.String() != r.ActiveKey:
		return s.rollBack(ctx, c, "health gate failed: the fabric or the active plan changed during the rollout")
	}
	if r.Applied > 0 {
		last := r.Steps[r.Applied-1]
		if time.Since(r.GateFrom) < last.Dwell {
			return nil // dwelling
		}
		if err := s.readBack(ctx, c, r.Applied, stageSwitches(r.Steps, r.Applied)); err != nil {
			return s.rollBack(ctx, c, fmt.Sprintf("health gate of stage %q failed: %v", last.Stage, err))
		}
		s.event(c, rollout.Event{ID: r.ID, Event: "gate passed", Stage: last.Stage, Step: r.Applied}, false)
	}
	if r.Applied == len(r.Steps) {
		return s.promote(ctx, c)
	}
	for i := r.Applied; i < len(r.Steps); i++ {
		st := r.Steps[i]
		c.mu.Lock()
		r.Entering, r.Updated = i, time.Now()
		c.mu.Unlock()
		// Written before the first block is sent: a restart finds the step.
		s.saveRollout(c)
		sent, err := s.applyState(ctx, c, rollout.StateAfter(len(c.pair.Old.Rz.LFT), r.Steps, i+1))
		c.mu.Lock()
		r.BlocksSent += sent
		c.mu.Unlock()
		if err == nil {
			err = s.readBack(ctx, c, i+1, st.Switches)
		}
		if err != nil {
			return s.rollBack(ctx, c, fmt.Sprintf("step %d of stage %q: %v", i+1, st.Stage, err))
		}
		c.mu.Lock()
		r.Applied, r.Entering, r.Updated = i+1, -1, time.Now()
		if st.Last {
			r.GateFrom = time.Now()
		}
		c.mu.Unlock()
		s.event(c, rollout.Event{ID: r.ID, Event: "step applied", Stage: st.Stage, Step: i + 1,
			Detail: fmt.Sprintf("%d switches, %d LFT blocks sent, read back", len(st.Switches), sent)}, true)
		if st.Last {
			if st.Dwell > 0 {
				return nil
			}
			return s.advance(ctx, c)
		}
	}
	return nil
}

// stageSwitches is the switches of the stage that ends with step n.
func stageSwitches(steps []rollout.Step, n int) []int32 {
	var out []int32
	for i := n - 1; i >= 0; i-- {
		if i < n-1 && steps[i].Last {
			break
		}
		out = append(out, steps[i].Switches...)
	}
	return out
}

// applyState programs state st (only what differs from what the switches
// hold is sent) and returns the LFT blocks sent.
func (s *SM) applyState(ctx context.Context, c *candidate, st rollout.State) (int64, error) {
	a, fab := s.Applied(), s.Fabric()
	if a == nil || fab == nil {
		return 0, errors.New("no plan in force")
	}
	p := c.pair.Mix(st)
	pst, err := s.prog.Apply(ctx, fab, a.Topo, p.Rz, p.VLs)
	if err == nil {
		s.record(p, c.ro.Engine, c.ro.CandidateKey, fmt.Sprintf("rollout %s: %d of %d switches on the candidate's tables, the rest on the active plan's (%s)",
			c.ro.ID, st.Count(), len(st), a.Result.Key))
	}
	return pst.LFTBlocksSent, err
}

// readBack reads the forwarding and SL2VL tables of switches ws back
// from the fabric (LinearForwardingTable and SLtoVLMappingTable Gets,
// IBA 14.2.5.10, 14.2.5.8) and checks them against state n (steps[:n]
// applied); it also checks that the state read back delivers every pair
// without a loop (sdk/analysis).
func (s *SM) readBack(ctx context.Context, c *candidate, n int, ws []int32) error {
	r := c.ro
	want := c.pair.Mix(rollout.StateAfter(len(c.pair.Old.Rz.LFT), r.Steps, n))
	got, err := s.readHeld(ctx, want, ws)
	if err != nil {
		return err
	}
	held := *want.Rz
	held.LFT = slices.Clone(want.Rz.LFT)
	for i, s := range ws {
		held.LFT[s] = got[i]
	}
	chk, err := rollout.NewChecker(rollout.Pair{Old: rollout.Plan{Rz: &held, VLs: want.VLs}, New: rollout.Plan{Rz: &held, VLs: want.VLs}}, 0)
	if err != nil {
		return err
	}
	if err := chk.State(make(rollout.State, len(held.LFT))); err != nil {
		return fmt.Errorf("read-back: %w", err)
	}
	return nil
}

// readHeld reads back the LFT and SL2VL tables of switches ws and fails
// unless they are what plan p programs; it returns the LFT rows read.
func (s *SM) readHeld(ctx context.Context, p rollout.Plan, ws []int32) ([][]uint8, error) {
	fab := s.Fabric()
	if fab == nil {
		return nil, errors.New("no fabric discovered")
	}
	rd, t := s.Reader(fab), p.Rz.Topo
	want := rollout.TablesOf(p)
	held := rollout.Tables{Topo: t, LFT: make([][]uint8, len(t.Switches()))}
	got, err := rd.LFTs(ctx, t, ws, int(p.Rz.TopLID))
	if err != nil {
		return nil, err
	}
	for i, sw := range ws {
		held.LFT[sw] = got[i]
	}
	if held.SL2VL, err = rd.SL2VL(ctx, t, ws, want.SL2VL); err != nil {
		return nil, err
	}
	if d := rollout.CompareSwitches(held, want, ws); d.SwitchesChanged > 0 {
		sw := d.Switches[0]
		return nil, fmt.Errorf("read-back: %d LFT blocks and %d SL2VL tables on %d switches differ from what was programmed, e.g. switch 0x%016x LFT blocks %v SL2VL (in,out) %v",
			d.LFTBlocks, d.SL2VLTables, d.SwitchesChanged, sw.GUID, sw.LFTBlocks, sw.SL2VL)
	}
	return got, nil
}

// CandidatePlan computes the candidate's plan for topo with the LIDs of
// active (as the shadow does); an error without a candidate {} block.
func (s *SM) CandidatePlan(ctx context.Context, topo *topology.Topology, active *pipeline.Result) (*pipeline.Result, error) {
	c := s.candidate()
	if c == nil {
		return nil, errors.New("the configuration has no candidate {} block")
	}
	_, lmc := s.pipe()
	return c.Pipe.Run(ctx, pipeline.Input{Topo: topo, LMC: lmc, Previous: lidsOf(topo, active)})
}

// lidsOf maps each port GUID to its base LID in res: the candidate keeps
// the active plan's LIDs (an assigner keeps every Previous LID that fits),
// which is what makes it stageable per switch.
func lidsOf(topo *topology.Topology, res *pipeline.Result) map[uint64]uint16 {
	prev := map[uint64]uint16{}
	for i, ep := range topo.Endpoints() {
		prev[topo.PortGUID(ep)] = res.LIDs.Ports[i].Base
	}
	return prev
}

// rollBack returns every promoted switch to the active plan, step by step
// in reverse (each reverse move crosses a transition verified on the way
// in), reads them back, and records why. When the fabric changed under
// the rollout, the sweep that re-routed it already programmed the active
// plan everywhere: only the read-back remains.
func (s *SM) rollBack(ctx context.Context, c *candidate, why string) error {
	c.mu.Lock()
	r := c.ro
	c.mu.Unlock()
	s.Log.Warn("rollout: rolling back", "reason", why, "applied", r.Applied)
	a := s.Applied()
	// The switches promoted so far, found by GUID in the fabric in force
	// (a re-route may have changed it).
	var touched []int32
	for i := range r.Steps {
		if a == nil || !(i < r.Applied || i == r.Entering) {
			continue
		}
		for _, g := range r.Steps[i].GUIDs {
			if n := a.Topo.NodeByGUID(g); n >= 0 && a.Topo.SwitchIndex(n) >= 0 {
				touched = append(touched, int32(a.Topo.SwitchIndex(n)))
			}
		}
	}
	var err error
	if a != nil && fmt.Sprintf("%016x", a.Topo.Hash()) == r.Topology && a.Result.Key.String() == r.ActiveKey {
		from := r.Applied
		if r.Entering >= 0 {
			from = r.Entering + 1
		}
		for n := from - 1; n >= 0 && err == nil; n-- {
			c.mu.Lock()
			r.Entering = n
			c.mu.Unlock()
			s.saveRollout(c)
			_, err = s.applyState(ctx, c, rollout.StateAfter(len(c.pair.Old.Rz.LFT), r.Steps, n))
		}
	}
	check := "read-back equals the active plan"
	if a != nil && len(touched) > 0 && err == nil {
		_, err = s.readHeld(ctx, planOf(a.Result), touched)
	}
	if err != nil {
		check = "rollback incomplete: " + err.Error() + " (the next sweep's programming and audit repair it)"
		s.Log.Error("rollout: "+check, "error", err)
	}
	c.mu.Lock()
	r.Phase, r.Applied, r.Entering, r.Reason, r.Updated = rollout.PhaseRolledBack, 0, -1, why+"; "+check, time.Now()
	c.disturbed = ""
	c.mu.Unlock()
	s.finish(c, r, "rolled back", r.Reason)
	return fmt.Errorf("rollout rolled back: %s", why)
}

// promote makes the candidate the plan in force and its pipeline the
// active one.
func (s *SM) promote(ctx context.Context, c *candidate) error {
	c.mu.Lock()
	r, sp := c.ro, c.latest
	c.mu.Unlock()
	if sp == nil || sp.res.Key.String() != r.CandidateKey {
		return s.rollBack(ctx, c, "the candidate plan changed during the rollout")
	}
	s.mu.Lock()
	s.Pipe = c.Pipe
	s.applied = &Applied{Topo: sp.topo, Result: sp.res, At: time.Now()}
	s.lids = nil
	s.mu.Unlock()
	if err := s.saveLIDs(sp.topo, sp.res); err != nil {
		s.Log.Error("could not persist LIDs", "file", s.Opts.LIDFile, "error", err)
	}
	c.mu.Lock()
	r.Phase, r.Updated, c.promoted = rollout.PhasePromoted, time.Now(), true
	r.Reason = "promoted; make the candidate's pipeline the routing block of the configuration"
	c.mu.Unlock()
	s.Log.Info("rollout: candidate promoted; routing now runs the candidate's pipeline", "engine", r.Engine, "blocks_sent", r.BlocksSent, "blocks_differ", r.BlocksDiffer)
	s.finish(c, r, "promoted", fmt.Sprintf("%d LFT blocks sent, %d differ", r.BlocksSent, r.BlocksDiffer))
	return nil
}

// finish records an outcome.
func (s *SM) finish(c *candidate, r *rollout.Rollout, event, detail string) {
	c.mu.Lock()
	c.ro = r
	c.status.Rollout = r
	c.mu.Unlock()
	s.event(c, rollout.Event{ID: r.ID, Event: event, Detail: detail, Outcome: r.Phase}, true)
}

// event appends e to the history (with both plans' metrics when asked)
// and saves the rollout state and status.
func (s *SM) event(c *candidate, e rollout.Event, metrics bool) {
	e.At = time.Now()
	c.mu.Lock()
	if metrics {
		e.Active, e.Cand = c.status.Active, c.status.Candidate
	}
	c.status.Rollout = c.ro
	st := c.status
	c.mu.Unlock()
	if err := rollout.AppendHistory(c.Dir, e); err != nil {
		s.Log.Warn("rollout: cannot append to the history", "file", filepath.Join(c.Dir, rollout.HistoryFile), "error", err)
	}
	s.saveRollout(c)
	if err := rollout.WriteStatus(c.Dir, &st); err != nil {
		s.Log.Warn("rollout: cannot write the status", "error", err)
	}
}

func (s *SM) saveRollout(c *candidate) {
	c.mu.Lock()
	r := *c.ro
	c.mu.Unlock()
	if err := rollout.SaveRollout(c.Dir, &r); err != nil {
		s.Log.Error("rollout: cannot save the rollout state; a restart may not find this step", "error", err)
	}
}

// recoverRollout runs before the first plan is programmed after a start.
// A rollout left in progress is rolled back step by step from what the
// fabric holds (the candidate recomputed, from the cache, must be the one
// that was being promoted); a promoted candidate stays in force if the
// candidate pipeline still computes it. It returns the plan to program.
func (s *SM) recoverRollout(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, res *pipeline.Result, cur *Applied) *pipeline.Result {
	c := s.candidate()
	if c == nil || c.recovered == nil || cur != nil {
		return res
	}
	r := c.recovered
	c.recovered = nil
	cres, err := s.CandidatePlan(ctx, topo, res)
	same := err == nil && cres.Key.String() == r.CandidateKey && fmt.Sprintf("%016x", topo.Hash()) == r.Topology
	if r.Phase == rollout.PhasePromoted {
		if !same {
			s.Log.Error("rollout: the promoted candidate no longer computes the promoted plan (changed fabric or configuration); routing runs the configured routing block", "error", err)
			return res
		}
		s.Log.Warn("rollout: the candidate was promoted before this start; routing runs the candidate's pipeline (make it the routing block)")
		s.mu.Lock()
		s.Pipe = c.Pipe
		s.mu.Unlock()
		c.mu.Lock()
		c.promoted, c.ro = true, r
		c.mu.Unlock()
		return cres
	}
	why := fmt.Sprintf("the SM restarted during the rollout (%d of %d steps applied)", r.Applied, len(r.Steps))
	if !same || res.Key.String() != r.ActiveKey || rollout.Resolve(topo, r.Steps) != nil {
		c.mu.Lock()
		c.ro = r
		c.mu.Unlock()
		r.Phase, r.Applied, r.Entering = rollout.PhaseRolledBack, 0, -1
		r.Reason = why + "; the plans cannot be recomputed as they were (fabric or configuration changed), so the active plan is programmed at once"
		s.Log.Error("rollout: " + r.Reason)
		s.finish(c, r, "rolled back", r.Reason)
		return res
	}
	c.mu.Lock()
	c.ro, c.pair, c.steps = r, rollout.Pair{Old: planOf(res), New: planOf(cres)}, r.Steps
	c.mu.Unlock()
	// The rollback below programs through the model of a plan in force.
	s.mu.Lock()
	s.fabric, s.applied = fab, &Applied{Topo: topo, Result: res, At: time.Now()}
	s.mu.Unlock()
	_ = s.rollBack(ctx, c, why)
	s.mu.Lock()
	s.applied = nil
	s.mu.Unlock()
	return res
}
