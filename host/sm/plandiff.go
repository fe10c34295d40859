package sm

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/rollout"
)

// Reader reads back over fab's directed routes with the SM's MAD client
// (its M_Keys included).
func (s *SM) Reader(fab *discovery.Fabric) rollout.Reader {
	return rollout.Reader{C: s.client, Fab: fab, Parallel: s.Opts.Parallel}
}

// PlanDiff compares the plan in force (candidate: the candidate's latest
// shadow plan, computed now if the shadow has none for the fabric in
// force) with what the fabric holds, read back now: every switch's LFT
// and SL2VL tables and every endpoint's PortInfo (LID, LMC).
func (s *SM) PlanDiff(ctx context.Context, candidate bool) (*rollout.PlanDiff, error) {
	a, fab := s.Applied(), s.Fabric()
	if a == nil || fab == nil {
		return nil, errors.New("the daemon has no plan in force yet (no SUBNET UP); try again after its first sweep")
	}
	res := a.Result
	if candidate {
		c := s.candidate()
		if c == nil {
			return nil, errors.New("the daemon's configuration has no candidate {} block (add one and reload: ibsm reload)")
		}
		// The shadow computation's plan, for the plan in force; one
		// running is waited for (not started alongside: the candidate's
		// plugins serve one computation at a time).
		if err := s.WaitShadow(ctx); err != nil {
			return nil, err
		}
		c.mu.Lock()
		sp := c.latest
		c.mu.Unlock()
		switch {
		case sp == nil || sp.active.Key != a.Result.Key || sp.topo.Hash() != a.Topo.Hash():
			return nil, errors.New("the candidate's shadow plan for the plan in force is not computed yet; try again after the next sweep (ibsm rollout status shows it)")
		case sp.err != nil:
			return nil, fmt.Errorf("the candidate has no acceptable plan: %w", sp.err)
		}
		res = sp.res
	}
	return s.DiffFabric(ctx, fab, res, candidate)
}

// DiffFabric reads back from fab what res programs and compares: what
// could not be read counts as changed (PlanDiff.Unread says what).
func (s *SM) DiffFabric(ctx context.Context, fab *discovery.Fabric, res *pipeline.Result, candidate bool) (*rollout.PlanDiff, error) {
	want := rollout.TablesOf(planOf(res))
	held, err := s.Reader(fab).Held(ctx, want)
	pd := &rollout.PlanDiff{Engine: res.Engine, Key: res.Key.String(), Candidate: candidate, Diff: rollout.Compare(held, want)}
	var re *rollout.ReadError
	switch {
	case errors.As(err, &re):
		pd.Unread = re.Error()
	case err != nil:
		return nil, err
	}
	return pd, nil
}

func newRecorder(path string, log hclog.Logger) *rollout.Recorder {
	if path == "" {
		return nil
	}
	return &rollout.Recorder{Path: path, Log: log}
}

// record keeps what was just programmed for ibsm plan diff, in the
// background (Options.ProgrammedFile).
func (s *SM) record(p rollout.Plan, engine, key, note string) {
	if s.rec != nil {
		s.rec.RecordPlan(p, engine, key, note)
	}
}

// WaitRecorded returns once the record of what was last programmed is
// written.
func (s *SM) WaitRecorded() {
	if s.rec != nil {
		s.rec.Wait()
	}
}
