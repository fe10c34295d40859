package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/conf/atomicfile"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/control"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/transport/smp"
)

// commit is set at link time by `make build` (-X main.commit=…) for builds
// without Go's VCS stamping (GOFLAGS=-buildvcs=false).
var commit string

// versionString is what `ibsm --version` prints: the module version, the
// commit it was built from (when the build recorded it) and the plugin SDK
// version and protocol this host speaks.
func versionString() string {
	version, rev, dirty := "(devel)", "unknown", ""
	if commit != "" {
		rev = commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = " (modified)"
				}
			}
		}
	}
	return fmt.Sprintf("ibsm %s, commit %s%s, plugin SDK %s (protocol %d)\n", version, rev, dirty, sdk.SDKVersion, sdk.ProtocolVersion)
}

// logFile is the daemon's log when --log-file is given: appended to, and
// reopened on SIGUSR1 so logrotate can move it away (copytruncate is not
// needed).
type logFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openLogFile(path string) (*logFile, error) {
	l := &logFile{path: path}
	if err := l.reopen(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *logFile) reopen() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("log file: %w (check --log-file's directory exists and is writable)", err)
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// reopenOnUSR1 reopens l whenever SIGUSR1 arrives, until stop is closed.
func reopenOnUSR1(l *logFile, stop <-chan struct{}) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-stop:
				return
			case <-ch:
				if err := l.reopen(); err != nil {
					fmt.Fprintf(os.Stderr, "ibsm: %v\n", err)
				}
			}
		}
	}()
}

// writePIDFile writes our PID to path and returns a function that removes
// it. A file naming a live process is refused: another ibsm runs.
func writePIDFile(path string) (func(), error) {
	if b, err := os.ReadFile(path); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 && pid != os.Getpid() && syscall.Kill(pid, 0) == nil {
			return nil, fmt.Errorf("pid file %s names process %d, which is running; stop it first or choose another --pid-file", path, pid)
		}
	}
	if err := atomicfile.Write(path, []byte(strconv.Itoa(os.Getpid())+"\n")); err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	return func() { os.Remove(path) }, nil
}

// notifier speaks systemd's notification protocol (sd_notify(3)) on
// $NOTIFY_SOCKET: READY=1 at the first SUBNET UP (or when the SM settles as
// standby), RELOADING=1 around SIGHUP, STOPPING=1 at exit, STATUS= lines,
// and WATCHDOG=1 pings at half of $WATCHDOG_USEC while the sweep loop runs.
// Without $NOTIFY_SOCKET every call is a no-op.
type notifier struct {
	conn  net.Conn
	ready sync.Once
}

func newNotifier() *notifier {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return &notifier{}
	}
	if strings.HasPrefix(addr, "@") {
		addr = "\x00" + addr[1:] // abstract namespace
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "ibsm: NOTIFY_SOCKET %q: %v; systemd will not hear from ibsm\n", os.Getenv("NOTIFY_SOCKET"), err)
		return &notifier{}
	}
	return &notifier{conn: c}
}

func (n *notifier) send(state string) {
	if n.conn != nil {
		_, _ = io.WriteString(n.conn, state)
	}
}

// Ready says READY=1 once.
func (n *notifier) Ready(status string) {
	n.ready.Do(func() { n.send("READY=1\nSTATUS=" + status) })
}

// Status updates the STATUS= line.
func (n *notifier) Status(status string) { n.send("STATUS=" + status) }

// watchdog pings every half $WATCHDOG_USEC until stop is closed; alive
// reports whether the sweep loop still turns (a wedged SM gets no ping, so
// systemd restarts it).
func (n *notifier) watchdog(stop <-chan struct{}, alive func() bool) {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if n.conn == nil || err != nil || usec <= 0 {
		return
	}
	every := time.Duration(usec) * time.Microsecond / 2
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if alive() {
					n.send("WATCHDOG=1")
				}
			}
		}
	}()
}

func (n *notifier) Close() {
	if n.conn != nil {
		n.send("STOPPING=1")
		n.conn.Close()
	}
}

const (
	smpStateStandby = smp.SMStateStandby
	smpStateMaster  = smp.SMStateMaster
)

// sweeping reports whether the SM still works: its MAD counter moved within
// three of its periods (light sweeps as master, polls as standby send
// SMPs). A wedged sweep loop stops the watchdog pings.
func sweeping(a *app.App, cfg *conf.Config) func() bool {
	period := max(cfg.SM.SweepInterval, cfg.SM.PollingInterval)
	var (
		last    uint64
		changed = time.Now()
	)
	return func() bool {
		if sent := a.T.Stats().Sent; sent != last {
			last, changed = sent, time.Now()
		}
		return time.Since(changed) < 3*period
	}
}

// startControl opens the control socket in the state directory and
// registers the daemon's commands; it serves until the returned stop
// function is called. Other parts of the daemon register their commands
// on the returned server (srv.Handle("rollout.status", …)).
func startControl(d *daemonState, r *reloader, trigger chan<- struct{}) (*control.Server, func(), error) {
	srv, err := control.Listen(control.SocketPath(d.config().SM.StateDir), control.Options{Log: d.log.Named("control")})
	if err != nil {
		return nil, nil, err
	}
	srv.Handle("status", d.handleStatus)
	srv.Handle("sweep", d.handleSweep(trigger))
	srv.Handle("reload", r.handle)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(); err != nil {
			d.log.Error("control socket stopped", "error", err)
		}
	}()
	d.log.Info("control socket listening", "path", srv.Path())
	return srv, func() { srv.Close(); <-done }, nil
}
