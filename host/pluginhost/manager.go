// Package pluginhost is the host's plugin manager: it launches plugin
// binaries (sha256-pinned), negotiates the SDK's plugin protocol (sdk.ProtocolVersion), checks that each binary is
// the kind it was configured as, configures it, and hands the pipeline
// clients that implement the same sdk interfaces as an in-process plugin.
// It restarts plugins that died, kills plugins that hang past a deadline and
// never leaves plugin processes behind.
package pluginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/schema"
)

// Defaults for Config fields left zero.
const (
	DefaultCallTimeout  = 60 * time.Second
	DefaultStartTimeout = 15 * time.Second
	// stopGrace bounds the Stop RPC sent before a plugin is closed.
	stopGrace = 2 * time.Second
	// exitGrace bounds go-plugin's graceful Kill (Shutdown RPC, wait for
	// exit) after a successful Stop, before the host SIGKILLs the plugin.
	exitGrace = 3 * time.Second
	// reapWait bounds the wait for a SIGKILLed plugin to be reaped.
	reapWait = 2 * time.Second
)

// maxSocketDir keeps $dir/plugin-dirNNNNNNNNNN/pluginNNNNNNNNNN (go-plugin
// makes one directory per process) under the 108-byte sun_path limit (104
// on macOS).
const maxSocketDir = 64

// Config describes one plugin to run.
type Config struct {
	// Name is the operator's label (plugin "<kind>" "<name>"), used in logs
	// and errors.
	Name string
	Kind sdk.Kind
	// Path is the plugin executable.
	Path string
	Args []string
	// SHA256 pins the binary (hex); when set, it is verified before every
	// launch and a mismatch refuses to start the plugin.
	SHA256 string
	// PinSource says where the pin comes from in errors (e.g. "the lock
	// entry at plugins.lock.hcl:3,1-33"); default "the pin".
	PinSource string
	// Env is passed to the plugin in addition to the variables go-plugin
	// and the manager set; the host's own environment is not inherited.
	Env []string
	// CallTimeout bounds every call; a plugin that does not answer in time
	// is killed (restarted on next use). Default DefaultCallTimeout.
	CallTimeout time.Duration
	// StartTimeout bounds launch and handshake. Default DefaultStartTimeout.
	StartTimeout time.Duration
}

// Options configure a Manager.
type Options struct {
	Logger hclog.Logger
	// SocketDir holds the plugins' unix sockets (PLUGIN_UNIX_SOCKET_DIR). It
	// must be short; default: a fresh 0700 directory under /tmp, removed on
	// Close.
	SocketDir string
}

// Manager owns every plugin process it launched.
type Manager struct {
	log       hclog.Logger
	socketDir string
	ownDir    bool
	spawn     *spawner

	mu      sync.Mutex
	plugins map[string]*Plugin
	closed  bool
}

// New creates a Manager.
func New(opts Options) (*Manager, error) {
	m := &Manager{log: opts.Logger, socketDir: opts.SocketDir, plugins: map[string]*Plugin{}}
	if m.log == nil {
		m.log = hclog.NewNullLogger()
	}
	if m.socketDir == "" {
		d, err := os.MkdirTemp("/tmp", "ibsm-p")
		if err != nil {
			return nil, fmt.Errorf("plugin socket directory: %w", err)
		}
		m.socketDir, m.ownDir = d, true
	} else if err := os.MkdirAll(m.socketDir, 0o700); err != nil {
		return nil, fmt.Errorf("plugin socket directory: %w", err)
	}
	if len(m.socketDir) > maxSocketDir {
		m.cleanDir()
		return nil, fmt.Errorf("plugin socket directory %q is %d bytes long; unix socket paths are limited to 108 bytes, use a directory of at most %d bytes (e.g. /run/ibsm/p)", m.socketDir, len(m.socketDir), maxSocketDir)
	}
	m.spawn = newSpawner()
	return m, nil
}

func (m *Manager) cleanDir() {
	if m.ownDir {
		os.RemoveAll(m.socketDir)
	}
}

// Launch starts a plugin, checks its kind and fetches its schema. The plugin
// is not configured yet: call Configure before any kind call.
func (m *Manager) Launch(ctx context.Context, cfg Config) (*Plugin, error) {
	if cfg.Name == "" || cfg.Path == "" {
		return nil, errors.New("plugin config needs a name and a path")
	}
	switch cfg.Kind {
	case sdk.KindRouting, sdk.KindLIDAssign, sdk.KindVLAssign, sdk.KindMulticast:
	default:
		return nil, fmt.Errorf("plugin %s: unknown kind %q (want %s, %s, %s or %s)", cfg.Name, cfg.Kind, sdk.KindRouting, sdk.KindLIDAssign, sdk.KindVLAssign, sdk.KindMulticast)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.SHA256 != "" {
		if b, err := hex.DecodeString(cfg.SHA256); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("plugin %s: sha256 pin %q is not 64 hex digits", cfg.Name, cfg.SHA256)
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("plugin manager is closed")
	}
	if _, dup := m.plugins[pluginKey(cfg.Kind, cfg.Name)]; dup {
		m.mu.Unlock()
		return nil, fmt.Errorf("plugin %s is already running; close it first", cfg.Name)
	}
	p := &Plugin{m: m, cfg: cfg, log: m.log.Named(string(cfg.Kind) + "." + cfg.Name), startSem: make(chan struct{}, 1)}
	m.plugins[pluginKey(cfg.Kind, cfg.Name)] = p
	m.mu.Unlock()

	inst, err := p.start(ctx)
	if err != nil {
		m.forget(p)
		return nil, err
	}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.inst = inst
	}
	p.mu.Unlock()
	if closed { // the Manager was closed while the plugin started
		inst.kill(false)
		return nil, errors.New("plugin manager is closed")
	}
	return p, nil
}

// Plugin returns a launched plugin by kind and name.
func (m *Manager) Plugin(kind sdk.Kind, name string) (*Plugin, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.plugins[pluginKey(kind, name)]
	return p, ok
}

// pluginKey: the operator may give plugins of different kinds one name.
func pluginKey(k sdk.Kind, name string) string { return string(k) + "." + name }

// Close stops and kills every plugin and removes the socket directory. It
// returns within a few seconds even if plugins hang or are stopped.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	ps := make([]*Plugin, 0, len(m.plugins))
	for _, p := range m.plugins {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.Close() }()
	}
	wg.Wait()
	m.spawn.close()
	m.cleanDir()
	return nil
}

func (m *Manager) forget(p *Plugin) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.plugins[pluginKey(p.cfg.Kind, p.cfg.Name)] == p {
		delete(m.plugins, pluginKey(p.cfg.Kind, p.cfg.Name))
	}
}

// instance is one process of a plugin. Nothing here waits on the plugin
// or on go-plugin without a deadline: a plugin that is stopped (SIGSTOP),
// hung or has closed its stdio must not wedge the host.
type instance struct {
	log    hclog.Logger
	client *plugin.Client
	proc   *procRunner
	rpc    *sdk.RemoteClient // set when the launch succeeded
	pid    int               // set when the launch succeeded
	stderr *tail

	launched chan struct{} // closed when the launch goroutine returned
	dead     chan struct{} // closed by kill: the instance is never used again
	cleaned  chan struct{} // closed when go-plugin's Kill returned after the process ended
	once     sync.Once
}

func newInstance(log hclog.Logger, proc *procRunner, errTail *tail) *instance {
	return &instance{log: log, proc: proc, stderr: errTail,
		launched: make(chan struct{}), dead: make(chan struct{}), cleaned: make(chan struct{})}
}

// alive reports whether the process is still there and not condemned. It
// takes no go-plugin lock: a launch stuck in go-plugin holds its client's.
func (i *instance) alive() bool {
	select {
	case <-i.dead:
		return false
	case <-i.proc.exited:
		return false
	case <-i.rpc.Gone():
		return false
	default:
		return true
	}
}

// kill ends the process and returns within a bounded time whatever the
// plugin does (reapWait, plus stopGrace and exitGrace when graceful):
//
//   - graceful: the Stop RPC (bounded by stopGrace), then go-plugin's Kill
//     (its Shutdown RPC and wait for exit) for at most exitGrace;
//   - then, or at once when not graceful, SIGKILL to the plugin's process
//     group (SIGKILL ends a stopped process too; go-plugin's Kill on its own
//     would wait forever for a stopped plugin to answer Shutdown), and
//     go-plugin's Kill to reap it and clean up.
//
// Whatever has not finished by then goes on in the background. kill marks
// the instance dead at once, so the next call starts a new process.
func (i *instance) kill(graceful bool) {
	i.once.Do(func() {
		close(i.dead)
		go i.teardown(graceful)
	})
	bound := reapWait
	if graceful {
		bound += stopGrace + exitGrace
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-i.cleaned:
	case <-t.C:
		i.log.Warn("plugin process not cleaned up in time; finishing in the background", "pid", i.proc.pid(), "waited", bound)
	}
}

func (i *instance) teardown(graceful bool) {
	defer close(i.cleaned)
	var killed chan struct{}
	goKill := func() {
		killed = make(chan struct{})
		go func() {
			defer close(killed)
			<-i.launched // go-plugin's Kill needs its Start to have returned
			i.client.Kill()
		}()
	}
	if graceful && i.rpc != nil && !exited(i.proc) {
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		_, err := within(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, i.rpc.Stop(ctx) })
		cancel()
		if err == nil {
			goKill()
			t := time.NewTimer(exitGrace)
			select {
			case <-killed:
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
	if err := i.proc.kill(); err != nil {
		i.log.Warn("killing plugin process", "pid", i.proc.pid(), "error", err)
	}
	if killed == nil {
		goKill()
	}
	<-killed
}

func exited(r *procRunner) bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// start launches a new process and checks it, all within StartTimeout (or
// until ctx is done): exec (on the spawner thread), handshake, Dispense,
// GetInfo and GetSchema run in a goroutine of their own, and a plugin that
// does not get through them in time is killed and abandoned.
func (p *Plugin) start(ctx context.Context) (*instance, error) {
	cfg := p.cfg
	var pin []byte
	if cfg.SHA256 != "" {
		pin, _ = hex.DecodeString(cfg.SHA256)
	}
	env := append([]string{sdk.LogLevelEnv + "=" + levelName(p.log)}, cfg.Env...)
	proc := newProcRunner(cfg.Path, cfg.Args, env, pin, p.m.spawn)
	errTail := &tail{max: 4 << 10}
	inst := newInstance(p.log, proc, errTail)
	inst.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		VersionedPlugins: sdk.HostPluginSets(),
		RunnerFunc:       proc.attach,
		// go-plugin makes a directory per process in here for its socket
		// (PLUGIN_UNIX_SOCKET_DIR) and removes it in Kill.
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: p.m.socketDir},
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           p.log,
		Stderr:           errTail,
		SyncStdout:       &lineLogger{log: p.log, stream: "stdout"},
		SyncStderr:       &lineLogger{log: p.log, stream: "stderr"},
		// go-plugin's own handshake timeout must never beat the host's
		// deadline below, which kills the process and says so.
		StartTimeout:    cfg.StartTimeout + time.Second,
		GRPCDialOptions: sdk.GRPCDialOptions(),
	})
	sctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	type launch struct {
		rpc   *sdk.RemoteClient
		info  sdk.Info
		sch   schema.Block
		proto int
		stage string
		err   error
	}
	ch := make(chan launch, 1)
	go func() {
		defer close(inst.launched)
		var l launch
		defer func() { ch <- l }()
		proto, err := inst.client.Client()
		if err == nil {
			l.proto = inst.client.NegotiatedVersion()
			var raw any
			if raw, err = proto.Dispense(string(cfg.Kind)); err == nil {
				l.rpc = raw.(*sdk.RemoteClient)
			}
		}
		if err != nil {
			l.stage, l.err = "start failed", err
			return
		}
		if l.info, err = l.rpc.GetInfo(sctx); err != nil {
			l.stage, l.err = "GetInfo", err
			return
		}
		if l.info.Kind != cfg.Kind {
			return // reported below
		}
		if l.sch, err = l.rpc.GetSchema(sctx); err != nil {
			l.stage, l.err = "GetSchema", err
		}
	}()
	var l launch
	select {
	case l = <-ch:
	case <-sctx.Done():
		select {
		case l = <-ch: // finished just in time
		default:
			inst.kill(false)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("plugin %s (%s): launch abandoned, caller gave up: %w", cfg.Name, cfg.Path, context.Cause(ctx))
			}
			return nil, fmt.Errorf("plugin %s (%s) did not start within %v (handshake, GetInfo, GetSchema); killed%s", cfg.Name, cfg.Path, cfg.StartTimeout, stderrNote(errTail))
		}
	}
	if l.err != nil {
		inst.kill(false)
		if errors.Is(l.err, errPinMismatch) {
			if cfg.PinSource != "" {
				return nil, fmt.Errorf("plugin %s: refusing to run %s: its sha256 is %s, %s records %s; reinstall the plugin, or run \"ibsm plugins lock\" if it was upgraded on purpose", cfg.Name, cfg.Path, fileSHA256(cfg.Path), cfg.PinSource, cfg.SHA256)
			}
			return nil, fmt.Errorf("plugin %s: refusing to run %s: its sha256 is %s, the pin says %s; reinstall the plugin or update the pin", cfg.Name, cfg.Path, fileSHA256(cfg.Path), cfg.SHA256)
		}
		return nil, fmt.Errorf("plugin %s (%s): %s: %w%s", cfg.Name, cfg.Path, l.stage, l.err, stderrNote(errTail))
	}
	inst.rpc, inst.pid = l.rpc, proc.pid()
	if info := l.info; info.Kind != cfg.Kind {
		inst.kill(false)
		return nil, fmt.Errorf("plugin %s: %s is a %q plugin (%s %s), but it is configured as %q; fix the plugin block's kind or path", cfg.Name, cfg.Path, info.Kind, info.Name, info.Version, cfg.Kind)
	}
	p.mu.Lock()
	p.info, p.schema, p.protocol = l.info, l.sch, l.proto
	p.mu.Unlock()
	p.log.Debug("plugin started", "pid", inst.pid, "name", l.info.Name, "version", l.info.Version)
	return inst, nil
}

type result[T any] struct {
	v   T
	err error
}

// within runs f in a goroutine of its own and returns its result, or ctx's
// error as soon as ctx is done without waiting for f: the host does not
// trust a call into a plugin (or go-plugin) to honour its context. An
// abandoned f finishes on its own; it must hold no lock the caller needs.
func within[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	ch := make(chan result[T], 1)
	go func() {
		v, err := f(ctx)
		ch <- result[T]{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-ch: // answered as the deadline passed: take it
			return r.v, r.err
		default:
			var zero T
			return zero, ctx.Err()
		}
	}
}

// fileSHA256 is conf.FileSHA256 for an error message.
func fileSHA256(path string) string {
	sum, err := conf.FileSHA256(path)
	if err != nil {
		return "unreadable (" + err.Error() + ")"
	}
	return sum
}

func stderrNote(t *tail) string {
	if s := t.String(); s != "" {
		return "; plugin stderr: " + s
	}
	return ""
}

func levelName(l hclog.Logger) string {
	switch {
	case l.IsTrace():
		return "trace"
	case l.IsDebug():
		return "debug"
	case l.IsInfo():
		return "info"
	case l.IsWarn():
		return "warn"
	}
	return "error"
}
