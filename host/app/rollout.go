package app

import (
	"context"
	"fmt"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/pluginhost"
	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/host/sm"
)

// setCandidate builds the shadow pipeline of cfg's candidate {} block and
// hands it to the SM (nil without the block). The candidate's plugins run
// in processes of their own, so a shadow computation never queues behind
// the active pipeline's calls (a plugin both use runs twice), and share
// the active pipeline's cache: what both compute alike is computed once.
func (a *App) setCandidate(ctx context.Context, cfg *conf.Config) error {
	cc := cfg.CandidateConfig()
	if cc == nil {
		if err := a.SM.SetCandidate(nil); err != nil {
			return err
		}
		a.closeCandidate(nil)
		return nil
	}
	mgr, err := pluginhost.New(pluginhost.Options{Logger: a.Log.Named("candidate.plugin")})
	if err != nil {
		return err
	}
	sub := &App{Config: cc, Log: a.Log.Named("candidate"), Plugins: mgr, readOnly: a.readOnly}
	runner, err := sub.pipeline(ctx, cc)
	if err != nil {
		mgr.Close()
		return fmt.Errorf("%s: candidate: %w", cfg.Candidate.DeclRange, err)
	}
	runner.Cache = a.SM.Pipe.Cache
	err = a.SM.SetCandidate(&sm.Candidate{Pipe: runner, Rules: *cfg.Candidate, Dir: rollout.Dir(cfg.SM.StateDir)})
	if err != nil {
		mgr.Close()
		return fmt.Errorf("%w (remove %s to start without the rollout's history)", err, rollout.Dir(cfg.SM.StateDir))
	}
	a.closeCandidate(mgr)
	return nil
}

// closeCandidate stops the candidate's plugin processes and keeps next.
func (a *App) closeCandidate(next *pluginhost.Manager) {
	if a.candPlugins != nil {
		a.candPlugins.Close()
	}
	a.candPlugins = next
}
