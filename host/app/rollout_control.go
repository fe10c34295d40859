package app

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ibsm/ibsm/host/control"
	"github.com/ibsm/ibsm/host/rollout"
)

// Control socket commands of the staged rollout.
const (
	CmdRolloutStatus  = "rollout.status"
	CmdRolloutPromote = "rollout.promote"
	CmdRolloutAbort   = "rollout.abort"
)

// RegisterRollout adds the rollout commands to the daemon's control
// socket: rollout.status answers the SM's live status (the same record
// state_dir/rollout/status.json holds), rollout.promote and rollout.abort
// leave the request the sweep loop takes at its next light sweep, exactly
// as `ibsm rollout promote` does without a socket.
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
			return map[string]string{"request": string(r)}, rollout.WriteRequest(rollout.Dir(a.Config.SM.StateDir), r)
		}
	}
	srv.Handle(CmdRolloutPromote, request(rollout.RequestPromote))
	srv.Handle(CmdRolloutAbort, request(rollout.RequestAbort))
}
