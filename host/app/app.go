// Package app assembles a running SM from a validated configuration: the
// fabric transport, the plugin processes, the pipeline with its cache and
// verifier, and the sweep loop. The ibsm command and the integration tests
// both build their SM here, so they exercise the same wiring.
package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/mkey"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/pluginhost"
	"github.com/ibsm/ibsm/host/rollout"
	"github.com/ibsm/ibsm/host/sa"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/statedir"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/umad"
)

// App is one configured subnet manager.
type App struct {
	Config  *conf.Config
	SM      *sm.SM
	T       transport.Transport
	Plugins *pluginhost.Manager
	// Sim is the embedded fabric when transport = "sim" (tests drive its
	// fault API), nil otherwise.
	Sim *sim.Fabric
	// IBSim is the ibsim attachment when transport = "ibsim" (its
	// Attachment names the SM's port), nil otherwise.
	IBSim *ibsim.Conn
	// Keys is the M_Key ring when sm.m_key or sm.m_key_secret is set (or
	// a previous run left keys in the state directory), nil otherwise.
	Keys *mkey.Ring
	Log  hclog.Logger

	stateDir *statedir.Dir // locked for our lifetime
	readOnly bool          // NewReadOnly: no lock, nothing written
	// candPlugins runs the candidate {} pipeline's plugins (rollout.go).
	candPlugins *pluginhost.Manager
	disp        *transport.Dispatcher
	// Hooks hear MADs and plugin calls (metrics); see runtime.go.
	Hooks *Hooks
	// selfGUID is the SM's own port; saved the last run's SA state until
	// New restored it; saKeeper writes it (sastate.go).
	selfGUID uint64
	saved    *saState
	groupsOK bool // the saved groups all came back (or there were none)
	saKeeper *saKeeper
	// mu guards Config and Plugins where Reload replaces them while the
	// control socket's handlers read them (Current, Plugin).
	mu sync.RWMutex
}

// Current is the configuration in force (Reload replaces it).
func (a *App) Current() *conf.Config {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.Config
}

// New builds everything the config names. On error nothing is left
// running.
func New(ctx context.Context, cfg *conf.Config, log hclog.Logger) (_ *App, err error) {
	return newApp(ctx, cfg, log, nil, nil, false)
}

// NewOnFabric is New with transport = "sim" on an embedded fabric that
// already exists instead of one loaded from the topology file: the fabric
// outlives an SM as a real one does (tests restart ibsm over the state a
// previous App left in the ports, e.g. their M_Keys).
func NewOnFabric(ctx context.Context, cfg *conf.Config, log hclog.Logger, f *sim.Fabric) (*App, error) {
	if cfg.Fabric.Transport != conf.TransportSim || f == nil {
		return nil, fmt.Errorf("NewOnFabric needs transport = \"sim\" and a fabric")
	}
	return newApp(ctx, cfg, log, f, nil, false)
}

// NewReadOnly is New for commands that look and never program (ibsm plan
// diff): the state directory is not locked (a daemon may hold it) and
// nothing is written into it (the plan cache is read, not written; no
// LIDs, keys or records are saved), and an ibsim attachment does not
// register as an SM.
func NewReadOnly(ctx context.Context, cfg *conf.Config, log hclog.Logger) (*App, error) {
	return newApp(ctx, cfg, log, nil, nil, true)
}

func newApp(ctx context.Context, cfg *conf.Config, log hclog.Logger, fab *sim.Fabric, hooks *Hooks, readOnly bool) (_ *App, err error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	a := &App{Config: cfg, Log: log, Sim: fab, Hooks: hooks, readOnly: readOnly}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if readOnly {
		// Nothing to lock or create.
	} else if err := os.MkdirAll(cfg.SM.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w (set sm.state_dir to a writable path)", err)
	} else if a.stateDir, err = statedir.Lock(cfg.SM.StateDir); err != nil {
		return nil, err
	}
	if a.stateDir != nil && a.stateDir.ReadOnly {
		log.Warn("the state directory is read-only: LIDs and plans are not persisted, routing goes on", "dir", cfg.SM.StateDir)
	}
	if err := a.openFabric(ctx); err != nil {
		return nil, err
	}
	a.Plugins, err = pluginhost.New(pluginhost.Options{Logger: log.Named("plugin")})
	if err != nil {
		return nil, err
	}
	runner, err := a.pipeline(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.SM = sm.New(a.T, runner, sm.Options{
		LMC:            cfg.SM.LMC,
		SweepInterval:  cfg.SM.SweepInterval,
		LIDFile:        filepath.Join(cfg.SM.StateDir, "guid2lid"),
		ProgrammedFile: a.programmedFile(cfg),
		AuditSMPs:      cfg.SM.AuditSMPs,
		ArmAhead:       cfg.SM.ArmAhead,
		Election:       election(cfg),
	}, log.Named("sm"))
	if hooks != nil && hooks.Progress != nil {
		a.SM.SetProgress(hooks.Progress)
	}
	// Only umad's kernel agent segments RMPP; ibsim and the embedded fabric
	// carry single MADs, so their SA answers must fit in one.
	a.SM.SetPartitions(cfg.Partitions)
	a.SM.Agent = sa.New(a.SM, a.Hooks.saTransport(a.T), sa.Options{
		RMPP:     cfg.Fabric.Transport == conf.TransportUMAD,
		Priority: cfg.SM.Priority,
		SMKey:    cfg.SM.SMKey,
	}, log.Named("sa"))
	if err := a.setCandidate(ctx, cfg); err != nil {
		return nil, err
	}
	statePath := saStatePath(cfg.SM.StateDir)
	a.groupsOK = true
	if !a.noWrites() {
		a.saved = a.loadSAState(statePath, a.selfGUID)
	}
	if err := a.setMulticast(ctx, cfg); err != nil {
		return nil, err
	}
	if !a.noWrites() {
		a.restoreSA(statePath, a.selfGUID, a.saved, a.groupsOK)
		a.saved = nil
	}
	return a, nil
}

// noWrites reports whether nothing may be written into the state
// directory (NewReadOnly, or a read-only directory).
func (a *App) noWrites() bool {
	return a.readOnly || (a.stateDir != nil && a.stateDir.ReadOnly)
}

// programmedFile is where the SM records what it programmed, for ibsm
// plan diff ("" when nothing may be written).
func (a *App) programmedFile(cfg *conf.Config) string {
	if a.noWrites() {
		return ""
	}
	return filepath.Join(cfg.SM.StateDir, rollout.ProgrammedFile)
}

// cache is the plan cache in the state directory (read-only for
// NewReadOnly).
func (a *App) cache(cfg *conf.Config) *pipeline.Cache {
	dir := filepath.Join(cfg.SM.StateDir, "cache")
	if a.readOnly {
		return pipeline.NewReadOnlyCache(dir)
	}
	return pipeline.NewCache(dir)
}

// election is the SM's part in the SMInfo protocol as configured.
func election(cfg *conf.Config) sm.ElectionOptions {
	return sm.ElectionOptions{
		Priority:      cfg.SM.Priority,
		SMKey:         cfg.SM.SMKey,
		PollInterval:  cfg.SM.PollingInterval,
		PollRetries:   cfg.SM.PollingRetries,
		HonorPriority: cfg.SM.HonorPriority,
	}
}

func (a *App) openFabric(ctx context.Context) error {
	cfg := a.Config
	var conn transport.Conn
	var selfGUID uint64 // the SM's own port: its M_Key guards SMPs to itself
	switch cfg.Fabric.Transport {
	case conf.TransportSim:
		f, err := a.Sim, error(nil) // a.Sim: NewOnFabric's
		if f == nil {
			if f, err = sim.Load(cfg.Fabric.Topology, sim.Options{}); err != nil {
				return err
			}
			a.Sim = f
		}
		guid, port := cfg.Fabric.SMNode, cfg.Fabric.SMPort
		if guid == 0 {
			guid, port = f.DefaultSMPort()
		}
		conn, err = f.Attach(guid, port)
		if err != nil {
			return fmt.Errorf("attaching the SM to the embedded fabric: %w", err)
		}
		selfGUID, _ = f.PortGUID(guid, port)
	case conf.TransportIBSim:
		// ibsim picks the node by name (attach); sm_node/sm_port, when
		// given, are checked against where it put us.
		var want *ibsim.Expect
		if cfg.Fabric.SMNode != 0 {
			want = &ibsim.Expect{NodeGUID: cfg.Fabric.SMNode, Port: cfg.Fabric.SMPort}
		}
		c, err := ibsim.Dial(ctx, ibsim.Options{
			SockName: cfg.Fabric.Socket,
			Attach:   cfg.Fabric.Attach,
			IsSM:     !a.readOnly,
			Expect:   want,
			Logger:   a.Log.Named("ibsim"),
		})
		if err != nil {
			return fmt.Errorf("%s: attaching the SM to ibsim: %w", cfg.Fabric.DeclRange, err)
		}
		a.IBSim, conn = c, c
		selfGUID = c.Attachment().PortGUID
	case conf.TransportUMAD:
		c, info, err := umad.Open(cfg.Fabric.Device, int(cfg.Fabric.Port), umad.Options{
			Timeout: cfg.SM.MADTimeout,
			Logger:  a.Log.Named("umad"),
		})
		if err != nil {
			return fmt.Errorf("%s: opening the InfiniBand port: %w", cfg.Fabric.DeclRange, err)
		}
		a.Log.Info("attached to HCA port", "port_guid", fmt.Sprintf("%#016x", info.PortGUID), "lid", info.LID, "state", info.State)
		conn, selfGUID = c, info.PortGUID
	default:
		return fmt.Errorf("transport %q is not available in this build; use transport = \"sim\", \"ibsim\" or \"umad\"", cfg.Fabric.Transport)
	}
	a.T = transport.New(conn, transport.Options{
		Window:  cfg.SM.MADWindow,
		Timeout: cfg.SM.MADTimeout,
		Retries: cfg.SM.MADRetries,
		Logger:  a.Log.Named("transport"),
		OnMAD:   a.Hooks.onMAD(),
	})
	a.disp, _ = a.T.(*transport.Dispatcher)
	a.selfGUID = selfGUID
	return a.openKeys(selfGUID)
}

// mkeyPolicy is the M_Key policy the config asks for.
func mkeyPolicy(cfg *conf.Config) mkey.Policy {
	return mkey.Policy{Key: cfg.SM.MKey, Secret: cfg.SM.MKeySecret, Protect: cfg.SM.MKeyProtectBits, Lease: cfg.SM.MKeyLeasePeriod}
}

// openKeys opens the M_Key ring (state_dir/mkey: guid2mkey, neighbors)
// when keys are configured or a previous run left some, and makes every
// SMP carry its destination's key. self is the SM's own port GUID.
func (a *App) openKeys(self uint64) error {
	cfg := a.Config
	dir := filepath.Join(cfg.SM.StateDir, "mkey")
	_, err := os.Stat(filepath.Join(dir, mkey.KeysFile))
	if !cfg.SM.MKeysEnabled() && err != nil {
		return nil
	}
	a.Keys, err = mkey.Open(mkey.Options{Policy: mkeyPolicy(cfg), Dir: dir, Self: self, Log: a.Log.Named("mkey"), ReadOnly: a.noWrites()})
	if err != nil {
		return fmt.Errorf("%w: fix or remove the file (ibsm then uses the configured keys)", err)
	}
	if !cfg.SM.MKeysEnabled() {
		a.Log.Warn("M_Keys are not configured but the state directory holds keys from a previous run: ibsm uses them to reach the ports and sets their M_Key to 0", "dir", dir)
	}
	a.T = mad.WithKeys(a.T, a.Keys)
	return nil
}

// checkLock reads the lock file beside the configuration, if there is
// one, and checks every declared plugin binary against it before any
// plugin runs (conf.CheckLock). Without a lock file it returns nil: only
// sha256 pins in the configuration are then enforced.
func (a *App) checkLock(cfg *conf.Config) (*conf.Lock, error) {
	lock, diags := cfg.ReadLockFile()
	if lock != nil {
		diags = append(diags, cfg.CheckLock(lock)...)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("plugin lock check failed, no plugin was started:\n%s", conf.FormatDiagnostics(diags))
	}
	for _, d := range diags {
		a.Log.Warn("plugin lock", "warning", strings.TrimSpace(conf.FormatDiagnostics(hcl.Diagnostics{d})))
	}
	return lock, nil
}

// launch starts, checks and configures one plugin and returns its cache
// identity. With a lock file the binary is pinned to its lock entry (the
// plugin manager verifies the sha256 again at exec) and what it reports
// must match the entry.
func (a *App) launch(ctx context.Context, p *conf.Plugin, lock *conf.Lock) (*pluginhost.Plugin, pipeline.Identity, error) {
	var id pipeline.Identity
	pin, pinSource := p.SHA256, ""
	entry := lock.Find(p)
	if entry != nil {
		pin, pinSource = entry.SHA256, "the lock entry at "+entry.DeclRange.String()
	}
	pl, err := a.Plugins.Launch(ctx, pluginhost.Config{
		Name:        p.Name,
		Kind:        p.Kind,
		Path:        p.Path,
		SHA256:      pin,
		PinSource:   pinSource,
		CallTimeout: a.Config.SM.PluginTimeout,
	})
	if err != nil {
		return nil, id, fmt.Errorf("%s: plugin %q: %w", p.DeclRange, p.Name, err)
	}
	if entry != nil {
		if err := entry.CheckReported(pl.Info(), pl.Protocol()); err != nil {
			return nil, id, fmt.Errorf("%s: plugin %q: %w", p.DeclRange, p.Name, err)
		}
	}
	// File-valued attributes are read here, relative to the config file:
	// v carries their contents, so HashValue(v) changes with them.
	v, diags := p.DecodeConfig(pl.Schema())
	if diags.HasErrors() {
		return nil, id, fmt.Errorf("%s", conf.FormatDiagnostics(diags))
	}
	if err := pl.ConfigureContext(ctx, v); err != nil {
		return nil, id, fmt.Errorf("%s: plugin %q rejected its config: %w", p.ConfigRange, p.Name, err)
	}
	sum := pin // verified when the binary was exec'd
	if sum == "" {
		if sum, err = conf.FileSHA256(p.Path); err != nil {
			return nil, id, err
		}
	}
	id = pipeline.Identity{Name: p.Name, SHA256: sum, Version: pl.Info().Version, ConfigHash: conf.HashValue(v)}
	return pl, id, nil
}

// CheckCompat refuses plugin pairs whose declared capabilities cannot work
// together (pluginhost.Pipeline.Check), before any plugin is asked for a
// plan. launched holds the routing pipeline's plugins (engines, fallbacks,
// LID and VL assigner), started.
func CheckCompat(cfg *conf.Config, launched map[*conf.Plugin]*pluginhost.Plugin) error {
	m := func(role string, p *conf.Plugin) pluginhost.Member {
		return pluginhost.Member{Role: role, Name: p.Name, Where: p.DeclRange.String(), Info: launched[p].Info()}
	}
	pl := pluginhost.Pipeline{LID: m("routing.lid_assigner", cfg.LIDAssigner()), VL: m("routing.vl_assigner", cfg.VLAssigner()), LMC: cfg.SM.LMC}
	for i, p := range cfg.Engines() {
		role := "routing.engine"
		if i > 0 {
			role = "routing.fallback"
		}
		pl.Engines = append(pl.Engines, m(role, p))
	}
	if err := pl.Check(); err != nil {
		return fmt.Errorf("%s: the configured plugins cannot work together, nothing was routed:\n%w", cfg.Routing.DeclRange, err)
	}
	return nil
}

func (a *App) pipeline(ctx context.Context, cfg *conf.Config) (*pipeline.Runner, error) {
	policy := check.SwitchPolicy(cfg.Routing.SwitchToSwitch)
	checker := func(opt check.Options) pipeline.Checker {
		opt.SwitchToSwitch = policy
		return func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) ([]string, error) {
			if !opt.RoutesOnly {
				a.Hooks.phase("verification", "")
			}
			vd, err := check.Check(check.Plan{Topo: t, Routes: rt, LIDs: l, VLs: v, Realized: rz}, opt)
			if err != nil || vd == nil {
				return nil, err
			}
			return vd.Warnings, nil
		}
	}
	routesOnly := checker(check.Options{RoutesOnly: true})
	r := &pipeline.Runner{
		Cache: a.cache(cfg),
		Check: checker(check.Options{}),
		CheckRoutes: func(t *topology.Topology, rt *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
			_, err := routesOnly(t, rt, l, v, rz)
			return err
		},
		Delta:        &check.Delta{},
		VerifyPolicy: "switch_to_switch=" + string(policy) + ";rules=" + check.Rules,
		Log:          a.Log.Named("pipeline"),
	}
	lock, err := a.checkLock(cfg)
	if err != nil {
		return nil, err
	}
	launched := map[*conf.Plugin]*pluginhost.Plugin{}
	for _, p := range cfg.Engines() {
		pl, id, err := a.launch(ctx, p, lock)
		if err != nil {
			return nil, err
		}
		launched[p] = pl
		impl, err := pl.RoutingEngine()
		if err != nil {
			return nil, err
		}
		r.Engines = append(r.Engines, pipeline.Engine{Identity: id, Impl: a.Hooks.routing(p.Name, impl)})
	}
	pl, id, err := a.launch(ctx, cfg.LIDAssigner(), lock)
	if err != nil {
		return nil, err
	}
	launched[cfg.LIDAssigner()] = pl
	lid, err := pl.LIDAssigner()
	if err != nil {
		return nil, err
	}
	r.LID = pipeline.LIDStage{Identity: id, Impl: a.Hooks.lids(cfg.LIDAssigner().Name, lid),
		RoutesUnread: pl.Info().HasCapability(sdk.CapRoutesUnread), EndpointsOnly: pl.Info().HasCapability(sdk.CapEndpointsOnly)}
	pl, id, err = a.launch(ctx, cfg.VLAssigner(), lock)
	if err != nil {
		return nil, err
	}
	launched[cfg.VLAssigner()] = pl
	vl, err := pl.VLAssigner()
	if err != nil {
		return nil, err
	}
	r.VL = pipeline.VLStage{Identity: id, Impl: a.Hooks.vls(cfg.VLAssigner().Name, vl), Remote: true,
		OneVL: pl.Info().HasCapability(sdk.CapOneVL)}
	if err := CheckCompat(cfg, launched); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload applies a new configuration: new plugin processes and pipeline
// replace the old ones only if every plugin launches and accepts its config.
// Fabric settings (transport, topology, SM port) need a restart and are
// reported, not applied.
func (a *App) Reload(ctx context.Context, cfg *conf.Config) error {
	old := a.Config
	if cfg.Fabric.Transport != old.Fabric.Transport || cfg.Fabric.Topology != old.Fabric.Topology ||
		cfg.Fabric.SMNode != old.Fabric.SMNode || cfg.Fabric.SMPort != old.Fabric.SMPort ||
		cfg.Fabric.Socket != old.Fabric.Socket || cfg.Fabric.Attach != old.Fabric.Attach {
		a.Log.Warn("fabric settings changed; they take effect at the next restart")
	}
	if cfg.SM.StateDir != old.SM.StateDir {
		a.Log.Warn("sm.state_dir changed; it takes effect at the next restart")
		cfg.SM.StateDir = old.SM.StateDir
	}
	mgr, err := pluginhost.New(pluginhost.Options{Logger: a.Log.Named("plugin")})
	if err != nil {
		return err
	}
	prev := a.Plugins
	a.swap(mgr, cfg)
	runner, err := a.pipeline(ctx, cfg)
	if err != nil {
		mgr.Close()
		a.swap(prev, old)
		return err
	}
	a.SM.Reconfigure(runner, cfg.SM.LMC)
	if err := a.setCandidate(ctx, cfg); err != nil {
		a.Log.Error("reload: the candidate {} block was not applied; the active configuration is", "error", err)
	}
	a.SM.SetElection(election(cfg))
	a.SM.SetPartitions(cfg.Partitions) // the next sweep sends the P_Key blocks that differ
	if err := a.setMulticast(ctx, cfg); err != nil {
		a.Log.Error("reload: the multicast router was not replaced; the previous one stays", "error", err)
	}
	switch {
	case a.Keys != nil:
		a.Keys.SetPolicy(mkeyPolicy(cfg)) // ports are re-keyed by the next Apply and the audit
	case cfg.SM.MKeysEnabled():
		a.Log.Warn("M_Keys were configured while ibsm ran without them; they take effect at the next restart")
	}
	if ag, ok := a.SM.Agent.(*sa.Agent); ok {
		ag.SetSMKey(cfg.SM.SMKey)
	}
	prev.Close()
	return nil
}

func (a *App) swap(mgr *pluginhost.Manager, cfg *conf.Config) {
	a.mu.Lock()
	a.Plugins, a.Config = mgr, cfg
	a.mu.Unlock()
}

// Plugin returns the running plugin of kind and name.
func (a *App) Plugin(kind sdk.Kind, name string) (*pluginhost.Plugin, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.Plugins.Plugin(kind, name)
}

// Close stops plugins and the transport, then unlocks the state directory.
func (a *App) Close() {
	if a.SM != nil {
		// The record of the last programming is written behind the
		// sweep; cut short, it leaves its stale mark and the next start
		// reads every table back instead of restoring it.
		a.SM.WaitRecorded()
	}
	if a.Plugins != nil {
		a.Plugins.Close()
	}
	a.closeCandidate(nil)
	if a.saKeeper != nil {
		a.saKeeper.close()
		a.saKeeper = nil // Close may be called again
	}
	if a.T != nil {
		a.T.Close()
	}
	if a.Keys != nil {
		a.Keys.Close() // writes what is pending
	}
	a.stateDir.Close()
}
