package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/ibsm/ibsm/host/control"
	"github.com/ibsm/ibsm/host/rollout"
)

// Control socket commands of the staged rollout.
const (
	CmdRolloutStatus  = "rollout.status"
	CmdRolloutPromote = "rollout.promote"
	CmdRolloutAbort   = "rollout.abort"
	// CmdPlanDiff answers ibsm plan diff: args {"candidate": bool}.
	CmdPlanDiff = "plan.diff"
)

// PlanDiffArgs are CmdPlanDiff's arguments.
type PlanDiffArgs struct {
	Candidate bool `json:"candidate"`
}

// planDiffLimit keeps the answer within the control socket's line (1 MiB).
const planDiffLimit = 900 << 10

// RegisterRollout adds the rollout commands to the daemon's control
// socket: rollout.status answers the SM's live status (the same record
// state_dir/rollout/status.json holds), rollout.promote and rollout.abort
// leave the request the sweep loop takes at its next light sweep, exactly
// as `ibsm rollout promote` does without a socket, and plan.diff compares
// the plan in force (or the candidate's) with the fabric read back now.
func (a *App) RegisterRollout(srv *control.Server) {
	srv.Handle(CmdRolloutStatus, func(context.Context, json.RawMessage) (any, error) {
		st := a.SM.RolloutStatus()
		if st == nil {
			return nil, errors.New("the daemon's configuration has no candidate {} block")
		}
		return st, nil
	})
	request := func(r rollout.Request) control.Handler {
		return func(context.Context, json.RawMessage) (any, error) {
			if a.SM.RolloutStatus() == nil {
				return nil, errors.New("the daemon's configuration has no candidate {} block")
			}
			return map[string]string{"request": string(r)}, rollout.WriteRequest(rollout.Dir(a.Current().SM.StateDir), r)
		}
	}
	srv.Handle(CmdRolloutPromote, request(rollout.RequestPromote))
	srv.Handle(CmdRolloutAbort, request(rollout.RequestAbort))
	// plan.diff: the plan in force (or the candidate's) against what the
	// daemon reads back from its fabric now.
	srv.Handle(CmdPlanDiff, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var args PlanDiffArgs
		if err := control.Decode(raw, &args); err != nil {
			return nil, err
		}
		pd, err := a.SM.PlanDiff(ctx, args.Candidate)
		if err != nil {
			return nil, err
		}
		pd.Source = rollout.SourceDaemon
		pd.From = fmt.Sprintf("the fabric as the daemon (pid %d, transport %s) read it back now", os.Getpid(), a.Current().Fabric.Transport)
		pd.Fit(planDiffLimit)
		return pd, nil
	})
}
