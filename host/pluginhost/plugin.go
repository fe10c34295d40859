package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/zclconf/go-cty/cty"
)

// Plugin is one configured plugin, backed by a process that the Plugin
// restarts when it died. *Plugin implements sdk.RoutingEngine,
// sdk.LIDAssigner and sdk.VLAssigner; use the typed accessors, which check
// the configured kind.
type Plugin struct {
	m   *Manager
	cfg Config
	log hclog.Logger

	// startSem serialises relaunches (a channel, so that a caller can give
	// up waiting).
	startSem chan struct{}
	mu       sync.Mutex
	inst     *instance // nil after a death or a kill, until the next call
	info     sdk.Info
	schema   schema.Block
	protocol int
	// config is the last accepted config, re-sent after a restart.
	config    cty.Value
	hasConfig bool
	closed    bool

	calls    atomic.Uint64
	restarts atomic.Uint64
}

var (
	_ sdk.RoutingEngine = (*Plugin)(nil)
	_ sdk.LIDAssigner   = (*Plugin)(nil)
	_ sdk.VLAssigner    = (*Plugin)(nil)
)

// Name is the operator's label.
func (p *Plugin) Name() string { return p.cfg.Name }

// Kind is the configured kind (checked against the binary's at launch).
func (p *Plugin) Kind() sdk.Kind { return p.cfg.Kind }

// Info is what the binary reported at its last start.
func (p *Plugin) Info() sdk.Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info
}

// Protocol is the plugin protocol major negotiated with the binary at its
// last start (sdk.ProtocolVersion for any binary that starts).
func (p *Plugin) Protocol() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.protocol
}

// Schema is the config schema the binary reported at its last start.
func (p *Plugin) Schema() schema.Block {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.schema
}

// Calls counts kind calls (Route, AssignLIDs, AssignVLs) made to the plugin,
// whether they succeeded or not. Configure and lifecycle RPCs do not count.
func (p *Plugin) Calls() uint64 { return p.calls.Load() }

// Restarts counts how often the plugin was relaunched after it died or was
// killed for hanging.
func (p *Plugin) Restarts() uint64 { return p.restarts.Load() }

// PID is the process id of the running plugin, 0 if none is running.
func (p *Plugin) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inst == nil {
		return 0
	}
	return p.inst.pid
}

// RoutingEngine returns the plugin as a routing engine.
func (p *Plugin) RoutingEngine() (sdk.RoutingEngine, error) { return p, p.wantKind(sdk.KindRouting) }

// LIDAssigner returns the plugin as a LID assigner.
func (p *Plugin) LIDAssigner() (sdk.LIDAssigner, error) { return p, p.wantKind(sdk.KindLIDAssign) }

// VLAssigner returns the plugin as a VL assigner.
func (p *Plugin) VLAssigner() (sdk.VLAssigner, error) { return p, p.wantKind(sdk.KindVLAssign) }

func (p *Plugin) wantKind(k sdk.Kind) error {
	if p.cfg.Kind != k {
		return fmt.Errorf("plugin %s is a %s, not a %s", p.cfg.Name, p.cfg.Kind, k)
	}
	return nil
}

// Configure sends cfg with the default call deadline; see ConfigureContext.
func (p *Plugin) Configure(cfg cty.Value) error {
	return p.ConfigureContext(context.Background(), cfg)
}

// ConfigureContext sends a decoded config block. The plugin keeps it across
// restarts: the manager re-sends the last accepted config to a new process.
func (p *Plugin) ConfigureContext(ctx context.Context, cfg cty.Value) error {
	_, err := do(p, ctx, "Configure", false, func(ctx context.Context, rpc *sdk.RemoteClient) (struct{}, error) {
		return struct{}{}, rpc.Configure(ctx, cfg)
	})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.config, p.hasConfig = cfg, true
	p.mu.Unlock()
	return nil
}

// Route implements sdk.RoutingEngine.
func (p *Plugin) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	if err := p.wantKind(sdk.KindRouting); err != nil {
		return nil, err
	}
	return do(p, ctx, "Route", true, func(ctx context.Context, rpc *sdk.RemoteClient) (*plan.Routes, error) {
		return rpc.Route(ctx, req)
	})
}

// AssignLIDs implements sdk.LIDAssigner.
func (p *Plugin) AssignLIDs(ctx context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	if err := p.wantKind(sdk.KindLIDAssign); err != nil {
		return nil, err
	}
	return do(p, ctx, "AssignLIDs", true, func(ctx context.Context, rpc *sdk.RemoteClient) (*plan.LIDPlan, error) {
		return rpc.AssignLIDs(ctx, req)
	})
}

// AssignVLs implements sdk.VLAssigner.
func (p *Plugin) AssignVLs(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	if err := p.wantKind(sdk.KindVLAssign); err != nil {
		return nil, err
	}
	return do(p, ctx, "AssignVLs", true, func(ctx context.Context, rpc *sdk.RemoteClient) (*plan.VLPlan, error) {
		return rpc.AssignVLs(ctx, req)
	})
}

// ensure returns a running instance, relaunching (and re-configuring) the
// plugin if its process died or was killed. startSem serialises relaunches
// so concurrent callers share one new process; a relaunch takes at most
// StartTimeout plus CallTimeout (the config is re-sent).
func (p *Plugin) ensure(ctx context.Context) (*instance, error) {
	select {
	case p.startSem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("plugin %s: caller gave up waiting for the plugin to restart: %w", p.cfg.Name, context.Cause(ctx))
	}
	defer func() { <-p.startSem }()
	p.mu.Lock()
	inst, closed, cfg, hasCfg := p.inst, p.closed, p.config, p.hasConfig
	p.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("plugin %s is closed", p.cfg.Name)
	}
	if inst != nil && inst.alive() {
		return inst, nil
	}
	if inst != nil {
		p.drop(inst) // reap and clean up after the dead process
	}
	inst, err := p.start(ctx)
	if err != nil {
		return nil, fmt.Errorf("restarting: %w", err)
	}
	p.restarts.Add(1)
	if hasCfg {
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
		_, err := within(cctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, inst.rpc.Configure(ctx, cfg) })
		cancel()
		if err != nil {
			inst.kill(false)
			return nil, fmt.Errorf("plugin %s: re-configuring after restart: %w", p.cfg.Name, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		inst.kill(false)
		return nil, fmt.Errorf("plugin %s is closed", p.cfg.Name)
	}
	p.log.Warn("plugin restarted", "pid", inst.pid, "restarts", p.restarts.Load())
	p.inst = inst
	return inst, nil
}

// do runs one call with the plugin's deadline and turns process death and
// hangs into clear errors, leaving the plugin ready to restart. The call
// runs in a goroutine of its own (within): when the deadline passes, do
// returns and kills the plugin whether or not the RPC has returned.
func do[T any](p *Plugin, ctx context.Context, what string, count bool, call func(context.Context, *sdk.RemoteClient) (T, error)) (T, error) {
	var zero T
	if count {
		p.calls.Add(1)
	}
	// Kind calls are pure functions of their input, so a call whose plugin
	// died (killed by an operator, OOM) is retried once on a fresh process;
	// a plugin that dies again is reported.
	for attempt := 0; ; attempt++ {
		inst, err := p.ensure(ctx)
		if err != nil {
			return zero, err
		}
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
		start := time.Now()
		out, err := within(cctx, func(ctx context.Context) (T, error) { return call(ctx, inst.rpc) })
		// Whose deadline expired: the caller's (it gave up; the plugin is
		// not at fault) or the plugin's own call timeout? gRPC may notice
		// a deadline a moment before the context does, so decide by which
		// deadline was earlier, not by which context reports it first.
		expired := errors.Is(cctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
		dl, has := ctx.Deadline()
		callerFirst := has && dl.Before(start.Add(p.cfg.CallTimeout))
		timedOut := expired && !callerFirst
		cancel()
		if err == nil {
			return out, nil
		}
		switch {
		case ctx.Err() != nil || (expired && callerFirst):
			// The caller gave up; the plugin is not at fault.
			cause := context.Cause(ctx)
			if cause == nil {
				cause = context.DeadlineExceeded // gRPC saw the caller's deadline first
			}
			return zero, fmt.Errorf("plugin %s: %s: caller gave up: %w", p.cfg.Name, what, cause)
		case timedOut:
			p.drop(inst)
			return zero, fmt.Errorf("plugin %s did not answer %s within %v; killed; will restart on next use", p.cfg.Name, what, p.cfg.CallTimeout)
		case status.Code(err) == codes.Unknown:
			// The plugin's handler returned an error: the process is alive
			// and answered; no need to wait for it to die.
			return zero, fmt.Errorf("plugin %s: %s: %w", p.cfg.Name, what, err)
		}
		if !p.died(inst) {
			return zero, fmt.Errorf("plugin %s: %s: %w", p.cfg.Name, what, err)
		}
		p.drop(inst)
		if attempt == 0 {
			p.log.Warn("plugin died during a call; restarting it and retrying once", "call", what, "pid", inst.pid, "error", err)
			continue
		}
		return zero, fmt.Errorf("plugin %s (pid %d) exited during %s after %v: %v%s; it will be restarted on the next call",
			p.cfg.Name, inst.pid, what, time.Since(start).Round(time.Millisecond), err, stderrNote(inst.stderr))
	}
}

// died waits briefly for go-plugin to notice an exit that caused err: the
// broken stream is usually seen before the process is reaped.
func (p *Plugin) died(inst *instance) bool {
	t := time.NewTimer(500 * time.Millisecond)
	defer t.Stop()
	for {
		if !inst.alive() {
			return true
		}
		select {
		case <-inst.rpc.Gone():
			return true
		case <-t.C:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// drop forgets inst, if it is still the current instance, and kills it
// (bounded, see instance.kill).
func (p *Plugin) drop(inst *instance) {
	p.mu.Lock()
	if p.inst == inst {
		p.inst = nil
	}
	p.mu.Unlock()
	inst.kill(false)
}

// Close sends Stop, kills the process and removes the plugin from its
// Manager. It returns within a few seconds even if the plugin is hung or
// stopped (see instance.kill).
func (p *Plugin) Close() error {
	p.mu.Lock()
	inst := p.inst
	p.inst, p.closed = nil, true
	p.mu.Unlock()
	if inst != nil {
		inst.kill(true)
	}
	p.m.forget(p)
	return nil
}
