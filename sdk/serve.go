package sdk

import (
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// LogLevelEnv names the environment variable the host sets to the level the
// plugin should log at (trace, debug, info, warn, error); default info.
const LogLevelEnv = "IBSM_PLUGIN_LOG_LEVEL"

// Serve runs a plugin binary: it registers the gRPC services matching the
// kind interface p implements and blocks until the host stops it. Call it
// from main and do nothing else there: anything printed on stdout before
// Serve breaks the handshake. Serve exits the process on setup errors, when
// the host kills it, and when the host process dies.
func Serve(p Plugin) {
	name := "plugin"
	// The logger must exist before plugin.Serve swaps os.Stderr for a pipe:
	// JSON lines on the real stderr are parsed and re-logged by the host
	// under the plugin's name.
	logger := newLogger(name, os.Stderr)
	log.SetFlags(0)
	log.SetOutput(logger.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}))
	if ls, ok := p.(LoggerSetter); ok {
		ls.SetLogger(logger)
	}

	set, err := ServerPluginSet(p, logger)
	if err != nil {
		logger.Error("cannot serve plugin", "error", err.Error())
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go watchParent(logger, os.Getppid(), time.Second)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake(),
		VersionedPlugins: map[int]plugin.PluginSet{ProtocolVersion: set},
		GRPCServer:       newGRPCServer,
		Logger:           logger,
	})
}

// LoggerSetter is implemented by plugins that log: Serve calls SetLogger
// once, before the host's first call, with its logger (JSON lines on
// stderr at the host's level, see Logger).
type LoggerSetter interface {
	SetLogger(hclog.Logger)
}

// Logger returns a logger a plugin binary can write through: JSON lines on
// stderr, which go-plugin forwards into the host's log under the plugin's
// name, at the level the host runs at (LogLevelEnv), so a plugin's debug
// lines cost nothing unless the operator asked for them. Create it before
// Serve (Serve swaps os.Stderr for a pipe) or implement LoggerSetter.
func Logger(name string) hclog.Logger { return newLogger(name, os.Stderr) }

func newLogger(name string, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Output:     w,
		JSONFormat: true,
		Level:      hclog.LevelFromString(levelFromEnv()),
	})
}

func levelFromEnv() string {
	if l := strings.TrimSpace(os.Getenv(LogLevelEnv)); l != "" {
		return l
	}
	return "info"
}

// watchParent exits the plugin when its parent (the host) dies and the
// process is re-parented, so a crashed host never leaves orphans behind even
// where the host could not set a parent-death signal.
func watchParent(logger hclog.Logger, ppid int, every time.Duration) {
	if ppid <= 1 {
		return // started by init or a reaper: nothing to watch
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != ppid {
			logger.Warn("host process is gone; exiting", "host_pid", ppid)
			os.Exit(3)
		}
	}
}
