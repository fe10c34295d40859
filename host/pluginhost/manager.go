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
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk"
)

// Defaults for Config fields left zero.
const (
	DefaultCallTimeout  = 60 * time.Second
	DefaultStartTimeout = 15 * time.Second
	// stopGrace bounds the Stop RPC sent before a plugin is killed.
	stopGrace = 2 * time.Second
)

// maxSocketDir keeps $dir/pluginNNNNNNNNNN under the 108-byte sun_path limit
// (104 on macOS) with room to spare.
const maxSocketDir = 80

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
	case sdk.KindRouting, sdk.KindLIDAssign, sdk.KindVLAssign:
	default:
		return nil, fmt.Errorf("plugin %s: unknown kind %q (want %s, %s or %s)", cfg.Name, cfg.Kind, sdk.KindRouting, sdk.KindLIDAssign, sdk.KindVLAssign)
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
	p := &Plugin{m: m, cfg: cfg, log: m.log.Named(string(cfg.Kind) + "." + cfg.Name)}
	m.plugins[pluginKey(cfg.Kind, cfg.Name)] = p
	m.mu.Unlock()

	inst, err := p.start(ctx)
	if err != nil {
		m.mu.Lock()
		delete(m.plugins, pluginKey(cfg.Kind, cfg.Name))
		m.mu.Unlock()
		return nil, err
	}
	p.mu.Lock()
	p.inst = inst
	p.mu.Unlock()
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

// Close stops and kills every plugin and removes the socket directory.
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

// instance is one running process of a plugin.
type instance struct {
	client *plugin.Client
	rpc    *sdk.RemoteClient
	pid    int
	stderr *tail
}

// alive reports whether the process is still there.
func (i *instance) alive() bool {
	if i.client.Exited() {
		return false
	}
	select {
	case <-i.rpc.Gone():
		return false
	default:
		return true
	}
}

// kill sends Stop (bounded) and then kills the process; go-plugin waits for
// it to exit and SIGKILLs it after 2 s.
func (i *instance) kill(graceful bool) {
	if graceful && i.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		_ = i.rpc.Stop(ctx)
		cancel()
	}
	i.client.Kill()
}

// start launches a new process on the spawner thread and checks it.
func (p *Plugin) start(ctx context.Context) (*instance, error) {
	cfg := p.cfg
	cmd := exec.Command(cfg.Path, cfg.Args...)
	cmd.Env = append([]string{
		plugin.EnvUnixSocketDir + "=" + p.m.socketDir,
		sdk.LogLevelEnv + "=" + levelName(p.log),
	}, cfg.Env...)
	setParentDeath(cmd)
	errTail := &tail{max: 4 << 10}
	cc := &plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		VersionedPlugins: sdk.HostPluginSets(),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           p.log,
		Stderr:           errTail,
		SyncStdout:       &lineLogger{log: p.log, stream: "stdout"},
		SyncStderr:       &lineLogger{log: p.log, stream: "stderr"},
		StartTimeout:     cfg.StartTimeout,
		GRPCDialOptions:  sdk.GRPCDialOptions(),
	}
	if cfg.SHA256 != "" {
		sum, _ := hex.DecodeString(cfg.SHA256)
		cc.SecureConfig = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}
	var (
		client *plugin.Client
		raw    any
		err    error
	)
	p.m.spawn.run(func() {
		client = plugin.NewClient(cc)
		var proto plugin.ClientProtocol
		if proto, err = client.Client(); err == nil {
			raw, err = proto.Dispense(string(cfg.Kind))
		}
	})
	if err != nil {
		client.Kill() // go-plugin kills only on errors inside Start (nomad#28286)
		if errors.Is(err, plugin.ErrChecksumsDoNotMatch) {
			return nil, fmt.Errorf("plugin %s: refusing to run %s: its sha256 is %s, the pin says %s; reinstall the plugin or update the pin", cfg.Name, cfg.Path, fileSHA256(cfg.Path), cfg.SHA256)
		}
		return nil, fmt.Errorf("plugin %s (%s): start failed: %w%s", cfg.Name, cfg.Path, err, stderrNote(errTail))
	}
	inst := &instance{client: client, rpc: raw.(*sdk.RemoteClient), stderr: errTail}
	if rc := client.ReattachConfig(); rc != nil {
		inst.pid = rc.Pid
	}
	fail := func(err error) (*instance, error) {
		inst.kill(false)
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	info, err := inst.rpc.GetInfo(cctx)
	if err != nil {
		return fail(fmt.Errorf("plugin %s (%s): GetInfo: %w%s", cfg.Name, cfg.Path, err, stderrNote(errTail)))
	}
	if info.Kind != cfg.Kind {
		return fail(fmt.Errorf("plugin %s: %s is a %q plugin (%s %s), but it is configured as %q; fix the plugin block's kind or path", cfg.Name, cfg.Path, info.Kind, info.Name, info.Version, cfg.Kind))
	}
	sch, err := inst.rpc.GetSchema(cctx)
	if err != nil {
		return fail(fmt.Errorf("plugin %s (%s): GetSchema: %w", cfg.Name, cfg.Path, err))
	}
	p.mu.Lock()
	p.info, p.schema = info, sch
	p.mu.Unlock()
	p.log.Debug("plugin started", "pid", inst.pid, "name", info.Name, "version", info.Version)
	return inst, nil
}

func fileSHA256(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unreadable (" + err.Error() + ")"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable (" + err.Error() + ")"
	}
	return hex.EncodeToString(h.Sum(nil))
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
