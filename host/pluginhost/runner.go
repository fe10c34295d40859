package pluginhost

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
	"github.com/ibsm/ibsm/conf"
)

// errPinMismatch: the binary's sha256 is not the pinned one.
var errPinMismatch = errors.New("plugin binary does not match its sha256 pin")

// errAbandoned: the launch was given up before the process was started.
var errAbandoned = errors.New("plugin launch abandoned")

// procRunner is go-plugin's runner for one plugin process (ClientConfig's
// RunnerFunc). It differs from go-plugin's own command runner in what the
// host needs to stay live when a plugin does not: only the fork/exec runs
// on the spawner thread (the handshake is waited for elsewhere), the pid is
// known as soon as the process exists, kill SIGKILLs the plugin's process
// group without waiting for anything, and exited reports the process was
// reaped without taking go-plugin's client lock.
type procRunner struct {
	path  string
	args  []string
	env   []string
	pin   []byte // sha256, nil if not pinned
	spawn *spawner

	// Set by attach (go-plugin's RunnerFunc, before Start).
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser

	mu        sync.Mutex
	proc      *os.Process // set once started
	reaped    bool
	abandoned bool          // killed before or while starting
	exited    chan struct{} // closed when the process was reaped
}

var _ runner.Runner = (*procRunner)(nil)

func newProcRunner(path string, args, env []string, pin []byte, spawn *spawner) *procRunner {
	return &procRunner{path: path, args: args, env: env, pin: pin, spawn: spawn, exited: make(chan struct{})}
}

// attach is the ClientConfig.RunnerFunc: spec carries go-plugin's
// environment (cookie, protocol versions, socket directory) and stdin.
func (r *procRunner) attach(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
	cmd := exec.Command(r.path, r.args...)
	cmd.Env = append(append([]string(nil), r.env...), spec.Env...)
	cmd.Stdin = spec.Stdin
	setProcAttrs(cmd)
	var err error
	if r.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if r.stderr, err = cmd.StderrPipe(); err != nil {
		return nil, err
	}
	r.cmd = cmd
	return r, nil
}

// Start verifies the pin and execs the plugin on the spawner thread.
func (r *procRunner) Start(context.Context) error {
	if r.pin != nil {
		if err := checkPin(r.path, r.pin); err != nil {
			return err
		}
	}
	r.mu.Lock()
	gone := r.abandoned
	r.mu.Unlock()
	if gone {
		return errAbandoned
	}
	var err error
	if serr := r.spawn.run(func() { err = r.cmd.Start() }); serr != nil {
		return serr
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.proc = r.cmd.Process
	if r.abandoned {
		killGroup(r.proc)
		return errAbandoned
	}
	return nil
}

func checkPin(path string, pin []byte) error {
	sum, err := conf.FileSHA256(path)
	if err != nil {
		return err
	}
	got, err := hex.DecodeString(sum)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(got, pin) != 1 {
		return errPinMismatch
	}
	return nil
}

// Wait reaps the process (go-plugin calls it once, after stdout and stderr
// reached EOF).
func (r *procRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	r.mu.Lock()
	r.reaped = true
	r.mu.Unlock()
	close(r.exited)
	return err
}

// Kill is go-plugin's kill; see kill.
func (r *procRunner) Kill(context.Context) error { return r.kill() }

// kill SIGKILLs the plugin's process group, or makes sure it is never
// started; it does not wait.
func (r *procRunner) kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abandoned = true
	if r.proc == nil || r.reaped {
		return nil
	}
	return killGroup(r.proc)
}

// pid is the process id, 0 before the process was started.
func (r *procRunner) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return 0
	}
	return r.proc.Pid
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.path }

func (r *procRunner) ID() string {
	if p := r.pid(); p != 0 {
		return strconv.Itoa(p)
	}
	return ""
}

func (r *procRunner) Diagnose(context.Context) string {
	return fmt.Sprintf("%s did not print a go-plugin handshake line: is it an ibsm plugin built with sdk.Serve for this architecture, and does it print nothing on stdout before Serve?", r.path)
}

func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
