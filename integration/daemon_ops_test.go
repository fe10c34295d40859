package integration

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// notifySocket is a fake systemd: it collects what ibsm sends on
// $NOTIFY_SOCKET.
type notifySocket struct {
	path string
	mu   sync.Mutex
	msgs []string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	n := &notifySocket{path: filepath.Join(t.TempDir(), "notify")}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.msgs = append(n.msgs, string(buf[:k]))
			n.mu.Unlock()
		}
	}()
	return n
}

// wait returns once a message containing want arrived (n times).
func (n *notifySocket) wait(t *testing.T, want string, times int, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		n.mu.Lock()
		c := 0
		for _, m := range n.msgs {
			if strings.Contains(m, want) {
				c++
			}
		}
		all := strings.Join(n.msgs, " | ")
		n.mu.Unlock()
		if c >= times {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no %q (x%d) on NOTIFY_SOCKET within %v; got: %s", want, times, d, all)
		}
	}
}

// TestDaemonOperations: --version, --pid-file, --log-file reopened on
// SIGUSR1 (logrotate), and systemd's notification protocol (READY at
// SUBNET UP, RELOADING/READY around SIGHUP, WATCHDOG pings, STOPPING).
func TestDaemonOperations(t *testing.T) {
	out, err := exec.Command(filepath.Join(binDir, "ibsm"), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ibsm ") || !strings.Contains(string(out), "plugin SDK") {
		t.Fatalf("ibsm --version: %v %q", err, out)
	}

	dir := t.TempDir()
	cfg := writeConfig(t, dir, setup{net: ring6Net, engine: "updn", sweep: "200ms"})
	logPath, pidPath := filepath.Join(dir, "ibsm.log"), filepath.Join(dir, "ibsm.pid")
	ns := listenNotify(t)
	cmd := exec.Command(filepath.Join(binDir, "ibsm"), "run", "--config", cfg, "--log-file", logPath, "--pid-file", pidPath)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+ns.path, "WATCHDOG_USEC=400000")
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	ns.wait(t, "READY=1", 1, 30*time.Second)
	ns.wait(t, "STATUS=SUBNET UP: master", 1, time.Second)
	ns.wait(t, "WATCHDOG=1", 2, 5*time.Second)

	b, err := os.ReadFile(pidPath)
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || pid != cmd.Process.Pid {
		t.Fatalf("pid file holds %q (%v), ibsm is %d", b, err, cmd.Process.Pid)
	}
	if l, _ := os.ReadFile(logPath); !strings.Contains(string(l), "SUBNET UP") {
		t.Fatalf("log file lacks SUBNET UP:\n%s\nstderr:\n%s", l, stderr)
	}

	// logrotate: move the file away, SIGUSR1, the next lines go to a new file.
	rotated := logPath + ".1"
	if err := os.Rename(logPath, rotated); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGUSR1)
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(logPath); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("SIGUSR1 did not reopen the log file")
		}
	}
	cmd.Process.Signal(syscall.SIGHUP)
	ns.wait(t, "RELOADING=1", 1, 10*time.Second)
	ns.wait(t, "READY=1", 2, 10*time.Second)
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l, _ := os.ReadFile(logPath); strings.Contains(string(l), "reloading configuration") {
			break
		}
		if time.Now().After(end) {
			l, _ := os.ReadFile(logPath)
			t.Fatalf("the reopened log file lacks the reload:\n%s", l)
		}
	}

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ibsm exited with %v:\n%s", err, stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ibsm did not stop on SIGTERM")
	}
	ns.wait(t, "STOPPING=1", 1, time.Second)
	if _, err := os.Stat(pidPath); !os.IsNotExist(err) {
		t.Fatalf("pid file left behind: %v", err)
	}
}
