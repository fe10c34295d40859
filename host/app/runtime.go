package app

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/sa"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Hooks let the daemon observe the App without the App knowing who
// listens (metrics). Every field is optional; calls must not block.
type Hooks struct {
	// MAD hears every SMP/GMP request, re-send and timeout.
	MAD func(ev transport.MADEvent, class uint8, attr uint16)
	// PluginCall hears every call to a plugin's kind method (Route,
	// AssignLIDs, AssignVLs), cached stages aside.
	PluginCall func(plugin, method string, took time.Duration, err error)
	// SAQuery hears every SA request the agent answered.
	SAQuery func(attr uint16, method uint8, status uint16)
	// Progress hears the sweep's phases, the plugin called and the
	// verification (ibsm verify, dump and run --once on a terminal).
	Progress sm.Progress
}

// phase tells h.Progress, if any, that a phase starts.
func (h *Hooks) phase(name, detail string) {
	if h != nil && h.Progress != nil {
		h.Progress.Phase(name, detail)
	}
}

// NewWithHooks is New with hooks in place from the start.
func NewWithHooks(ctx context.Context, cfg *conf.Config, log hclog.Logger, h *Hooks) (*App, error) {
	return newApp(ctx, cfg, log, nil, h, false)
}

func (h *Hooks) onMAD() func(transport.MADEvent, uint8, uint16) {
	if h == nil {
		return nil
	}
	return h.MAD
}

// timed runs one plugin call and reports its latency and outcome.
func timed[T any](h *Hooks, plugin, method string, call func() (T, error)) (T, error) {
	h.phase("routing", "plugin "+plugin+": "+method)
	t0 := time.Now()
	r, err := call()
	if h.PluginCall != nil {
		h.PluginCall(plugin, method, time.Since(t0), err)
	}
	return r, err
}

type timedRouting struct {
	sdk.RoutingEngine
	name string
	h    *Hooks
}

func (t timedRouting) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	return timed(t.h, t.name, "Route", func() (*plan.Routes, error) { return t.RoutingEngine.Route(ctx, req) })
}

type timedLIDs struct {
	sdk.LIDAssigner
	name string
	h    *Hooks
}

func (t timedLIDs) AssignLIDs(ctx context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	return timed(t.h, t.name, "AssignLIDs", func() (*plan.LIDPlan, error) { return t.LIDAssigner.AssignLIDs(ctx, req) })
}

type timedVLs struct {
	sdk.VLAssigner
	name string
	h    *Hooks
}

func (t timedVLs) AssignVLs(ctx context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	return timed(t.h, t.name, "AssignVLs", func() (*plan.VLPlan, error) { return t.VLAssigner.AssignVLs(ctx, req) })
}

func (h *Hooks) routing(name string, e sdk.RoutingEngine) sdk.RoutingEngine {
	if h == nil || (h.PluginCall == nil && h.Progress == nil) {
		return e
	}
	return timedRouting{e, name, h}
}

func (h *Hooks) lids(name string, e sdk.LIDAssigner) sdk.LIDAssigner {
	if h == nil || (h.PluginCall == nil && h.Progress == nil) {
		return e
	}
	return timedLIDs{e, name, h}
}

func (h *Hooks) vls(name string, e sdk.VLAssigner) sdk.VLAssigner {
	if h == nil || (h.PluginCall == nil && h.Progress == nil) {
		return e
	}
	return timedVLs{e, name, h}
}

// Settings is what ApplySettings did.
type Settings struct {
	// Applied names the run-time settings that changed and now hold.
	Applied []string `json:"applied,omitempty"`
	// Restart names the settings that changed but take effect only at
	// the next restart.
	Restart []string `json:"restart,omitempty"`
}

// ApplySettings puts the run-time settings of cfg in force after a
// Reload from old (which already swapped the pipeline, the election
// settings and the keys): the sweep interval, the MAD window, timeout and
// retries, and the SA agent's SM_Key. It reports what changed and which
// changes wait for a restart.
func (a *App) ApplySettings(old, cfg *conf.Config) Settings {
	var s Settings
	o, n := old.SM, cfg.SM
	changed := func(name string, was, is any) bool {
		if was == is {
			return false
		}
		s.Applied = append(s.Applied, fmt.Sprintf("%s %v → %v", name, was, is))
		return true
	}
	changed("priority", o.Priority, n.Priority)
	changed("sm_key", o.SMKey != 0, n.SMKey != 0) // says whether one is set, never the key
	changed("polling_interval", o.PollingInterval, n.PollingInterval)
	changed("polling_retries", o.PollingRetries, n.PollingRetries)
	changed("honor_priority", o.HonorPriority, n.HonorPriority)
	changed("lmc", o.LMC, n.LMC)
	changed("plugin_timeout", o.PluginTimeout, n.PluginTimeout)
	if changed("sweep_interval", o.SweepInterval, n.SweepInterval) {
		a.SM.SetSweepInterval(n.SweepInterval)
	}
	w := changed("mad_window", o.MADWindow, n.MADWindow)
	w = changed("mad_timeout", o.MADTimeout, n.MADTimeout) || w
	w = changed("mad_retries", o.MADRetries, n.MADRetries) || w
	if w {
		if a.disp != nil {
			a.disp.SetLimits(n.MADWindow, n.MADTimeout, n.MADRetries)
		} else {
			s.Restart = append(s.Restart, "mad_window/mad_timeout/mad_retries (this transport cannot change them while it runs)")
		}
	}
	if changed("audit_smps", o.AuditSMPs, n.AuditSMPs) {
		s.Applied = s.Applied[:len(s.Applied)-1]
		s.Restart = append(s.Restart, fmt.Sprintf("audit_smps %d → %d", o.AuditSMPs, n.AuditSMPs))
	}
	if changed("arm_ahead", o.ArmAhead, n.ArmAhead) {
		s.Applied = s.Applied[:len(s.Applied)-1]
		s.Restart = append(s.Restart, fmt.Sprintf("arm_ahead %v → %v", o.ArmAhead, n.ArmAhead))
	}
	f0, f1 := old.Fabric, cfg.Fabric
	for _, c := range []struct {
		name     string
		was, now any
	}{
		{"fabric.transport", f0.Transport, f1.Transport}, {"fabric.topology", f0.Topology, f1.Topology},
		{"fabric.sm_node", f0.SMNode, f1.SMNode}, {"fabric.sm_port", f0.SMPort, f1.SMPort},
		{"fabric.socket", f0.Socket, f1.Socket}, {"fabric.attach", f0.Attach, f1.Attach},
		{"fabric.device", f0.Device, f1.Device}, {"fabric.port", f0.Port, f1.Port},
	} {
		if c.was != c.now {
			s.Restart = append(s.Restart, fmt.Sprintf("%s %v → %v", c.name, c.was, c.now))
		}
	}
	if ag, ok := a.SM.Agent.(*sa.Agent); ok && o.SMKey != n.SMKey {
		ag.SetSMKey(n.SMKey)
	}
	return s
}

// MADLimits are the window, timeout and retries new MADs get.
func (a *App) MADLimits() (int, time.Duration, int, bool) {
	if a.disp == nil {
		return 0, 0, 0, false
	}
	w, t, r := a.disp.Limits()
	return w, t, r, true
}

// MADWindowNow is the adaptive MAD window in force (see transport.Dispatcher.Window).
func (a *App) MADWindowNow() (int, bool) {
	if a.disp == nil {
		return 0, false
	}
	return a.disp.Window(), true
}

// saTransport is t, telling Hooks.SAQuery of every SA answer the agent
// sends (one per request answered): its attribute, method and status.
func (h *Hooks) saTransport(t transport.Transport) transport.Transport {
	if h == nil || h.SAQuery == nil {
		return t
	}
	return saCounting{t, h.SAQuery}
}

type saCounting struct {
	transport.Transport
	hear func(attr uint16, method uint8, status uint16)
}

// Send implements transport.Transport. The MAD header (IBA 13.4.2):
// MgmtClass at byte 1, Method at 3, Status at 4..5, AttributeID at 16..17.
func (s saCounting) Send(p transport.Packet) error {
	if m := p.MAD; len(m) >= 24 && m[1] == smp.ClassSA && m[3]&0x80 != 0 {
		s.hear(binary.BigEndian.Uint16(m[16:]), m[3], binary.BigEndian.Uint16(m[4:]))
	}
	return s.Transport.Send(p)
}
