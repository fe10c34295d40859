package integration

import (
	"bytes"
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

// lockedBuffer collects a subprocess's log while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls the log until it contains want n times.
func waitFor(t *testing.T, log *lockedBuffer, want string, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Count(log.String(), want) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("log never showed %q %d time(s):\n%s", want, n, tail(log.String(), 4000))
}

// children lists the PIDs whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the ")" closing the command name: state ppid ...
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

func TestDaemonReloadAndStop(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, setup{net: ring6Net, engine: "updn", sweep: "200ms"})
	cmd := exec.Command(filepath.Join(binDir, "ibsm"), "run", "--config", cfg)
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
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
	waitFor(t, log, "SUBNET UP", 1, 20*time.Second)
	plugins := children(cmd.Process.Pid)
	if len(plugins) != 3 { // updn, sequential, single: declared but unused plugins are not launched
		t.Fatalf("want 3 plugin processes, found %v", plugins)
	}

	// Several light sweeps on an unchanged fabric: no re-route.
	time.Sleep(700 * time.Millisecond)
	if n := strings.Count(log.String(), "SUBNET UP"); n != 1 {
		t.Fatalf("unchanged fabric re-routed: %d SUBNET UP lines", n)
	}

	// SIGHUP with the same config: reloads, does not re-route.
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, log, "reloading configuration", 1, 10*time.Second)
	time.Sleep(700 * time.Millisecond)
	if n := strings.Count(log.String(), "SUBNET UP"); n != 1 {
		t.Fatalf("reload of an unchanged config re-routed: %d SUBNET UP lines", n)
	}

	// SIGHUP after changing updn's root: re-routes once.
	writeConfig(t, dir, setup{net: ring6Net, engine: "updn", sweep: "200ms", updnRoot: "0x0002c90000000004"})
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, log, "SUBNET UP", 2, 10*time.Second)

	// A broken config is refused and the running one stays.
	os.WriteFile(cfg, []byte("sm {\n  lmc = 99\n}\n"), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, log, "reload failed", 1, 10*time.Second)

	// SIGTERM: exits 0 and leaves no plugin behind.
	plugins = children(cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ibsm exited with %v:\n%s", err, tail(log.String(), 3000))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ibsm did not stop on SIGTERM")
	}
	time.Sleep(200 * time.Millisecond)
	for _, p := range plugins {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(p))); err == nil {
			if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat")); !strings.Contains(string(b), ") Z ") {
				t.Errorf("plugin process %d still running after ibsm stopped", p)
			}
		}
	}
}
