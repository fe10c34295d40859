package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDebPackage builds the .deb as `make deb` does, installs it with
// dpkg -i, and runs the packaged binary as systemd would (a fake
// NOTIFY_SOCKET) on a packaged example: the embedded fabric comes up,
// READY=1 arrives, `ibsm status` answers, SIGTERM stops it cleanly. The
// default /etc/ibsm/ibsm.hcl enables no fabric. The package is removed
// afterwards unless it was installed before the test.
func TestDebPackage(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("installing a package needs root")
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("no dpkg on this machine")
	}
	dist := t.TempDir()
	out, err := exec.Command("go", "run", "../host/cmd/ibsm-deb", "--bin", binDir, "--out", dist, "--root", "..").CombinedOutput()
	if err != nil {
		t.Fatalf("ibsm-deb: %v\n%s", err, out)
	}
	deb := strings.TrimSpace(string(out))
	if filepath.Dir(deb) != dist || !strings.HasSuffix(deb, ".deb") {
		t.Fatalf("ibsm-deb printed %q, want the .deb it wrote", out)
	}
	before := exec.Command("dpkg", "-s", "ibsm").Run() == nil
	if out, err := exec.Command("dpkg", "-i", deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		os.RemoveAll("/var/lib/ibsm/examples/ft2-648")
		if !before {
			if out, err := exec.Command("dpkg", "--purge", "ibsm").CombinedOutput(); err != nil {
				t.Errorf("dpkg --purge: %v\n%s", err, out)
			}
		}
	})
	for _, f := range []string{"/usr/sbin/ibsm", "/usr/lib/ibsm/plugins/ibsm-plugin-updn", "/etc/ibsm/ibsm.hcl",
		"/lib/systemd/system/ibsm.service", "/usr/share/man/man8/ibsm.8.gz", "/usr/share/ibsm/examples/ft2-648.net"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("the package did not install %s: %v", f, err)
		}
	}
	if fi, err := os.Stat("/var/lib/ibsm"); err != nil || !fi.IsDir() {
		t.Errorf("/var/lib/ibsm: %v", err)
	}
	// The default configuration names no fabric: it must be edited first.
	o, err := exec.Command("/usr/sbin/ibsm", "verify", "--config", "/etc/ibsm/ibsm.hcl").CombinedOutput()
	if err == nil || !strings.Contains(string(o), "Missing fabric block") {
		t.Errorf("the default config runs without a fabric chosen: %v\n%s", err, o)
	}
	// Its two commented fabric blocks work once uncommented: the embedded
	// fabric comes up with the packaged plugins; umad (no HCA here) fails
	// with an error that says which port it could not open.
	def := string(mustRead(t, "/etc/ibsm/ibsm.hcl"))
	for _, c := range []struct {
		transport, want string
		ok              bool
	}{
		{"sim", "engine: updn", true},
		{"umad", "opening the InfiniBand port", false},
	} {
		cfg := filepath.Join(t.TempDir(), "ibsm.hcl")
		os.WriteFile(cfg, []byte(uncommentFabric(t, def, c.transport, filepath.Dir(cfg))), 0o644)
		o, err := exec.Command("/usr/sbin/ibsm", "verify", "--config", cfg, "--shifts", "0", "--bisections", "0").CombinedOutput()
		if (err == nil) != c.ok || !strings.Contains(string(o), c.want) {
			t.Errorf("default config with the %s block uncommented: %v, want ok=%v and %q\n%s", c.transport, err, c.ok, c.want, tail(string(o), 2000))
		}
	}
	// The man page is installed where man finds it and carries every
	// command's help.
	if _, err := exec.LookPath("man"); err == nil {
		cmd := exec.Command("man", "-P", "cat", "8", "ibsm")
		cmd.Env = append(os.Environ(), "MANWIDTH=120")
		o, err := cmd.CombinedOutput()
		for _, want := range []string{"IBSM(8)", "SYNOPSIS", "COMMANDS", "Usage of report", "-candidate", "usage: ibsm plan diff", "/var/lib/ibsm"} {
			if err != nil || !strings.Contains(string(o), want) {
				t.Errorf("man 8 ibsm: %v; lacks %q\n%s", err, want, tail(string(o), 1500))
				break
			}
		}
	}

	// The daemon runs as the packaged unit starts it (its ExecStart: log
	// file and pidfile), on the packaged example instead of the default
	// configuration.
	example := "/usr/share/ibsm/examples/ft2-648.hcl"
	const logFile, pidFile = "/var/log/ibsm.log", "/run/ibsm.pid"
	for _, f := range []string{logFile, pidFile} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("%s exists: another ibsm runs on this machine; the test would take its files", f)
		}
	}
	t.Cleanup(func() {
		old, _ := filepath.Glob(logFile + ".*")
		for _, f := range append(old, logFile) {
			os.Remove(f)
		}
	})
	argv := execStart(t, "/lib/systemd/system/ibsm.service")
	if strings.Join(argv, " ") != "/usr/sbin/ibsm run --config /etc/ibsm/ibsm.hcl --log-file "+logFile+" --pid-file "+pidFile {
		t.Fatalf("the unit's ExecStart is %q; this test (and /etc/logrotate.d/ibsm) expect the log in %s and the pidfile in %s", argv, logFile, pidFile)
	}
	argv[3] = example
	ns := listenNotify(t)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+ns.path)
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	}()
	ns.wait(t, "READY=1", 1, 60*time.Second)
	ns.wait(t, "STATUS=SUBNET UP: master, 54 switches, 648 CAs", 1, time.Second)
	o, err = exec.Command("/usr/sbin/ibsm", "status", "--config", example).CombinedOutput()
	if err != nil || !strings.Contains(string(o), "master, priority") || !strings.Contains(string(o), "54 switches, 648 CAs") {
		t.Errorf("packaged ibsm status: %v\n%s", err, o)
	}
	if pid := strings.TrimSpace(string(mustRead(t, pidFile))); pid != fmt.Sprint(cmd.Process.Pid) {
		t.Errorf("%s holds %q, the daemon is %d", pidFile, pid, cmd.Process.Pid)
	}
	if !strings.Contains(string(mustRead(t, logFile)), "SUBNET UP") {
		t.Errorf("%s lacks SUBNET UP:\n%s", logFile, tail(string(mustRead(t, logFile)), 1500))
	}
	rotateLog(t, logFile, example)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("packaged ibsm exited with %v:\n%s", err, tail(log.String(), 2000))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("packaged ibsm did not stop on SIGTERM")
	}
	ns.wait(t, "STOPPING=1", 1, time.Second)
	if _, err := os.Stat(pidFile); err == nil {
		t.Errorf("%s is left after the daemon stopped", pidFile)
	}
}

// execStart is the command line of a unit file's ExecStart.
func execStart(t *testing.T, unit string) []string {
	t.Helper()
	for _, l := range strings.Split(string(mustRead(t, unit)), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			return strings.Fields(v)
		}
	}
	t.Fatalf("%s has no ExecStart", unit)
	return nil
}

// rotateLog rotates the running daemon's log with the packaged
// /etc/logrotate.d/ibsm (forced: it is not a week old) and checks the
// daemon goes on writing into the new file (postrotate sends SIGUSR1,
// the daemon reopens): an `ibsm reload` afterwards is logged there.
func rotateLog(t *testing.T, logFile, config string) {
	t.Helper()
	lr, err := exec.LookPath("logrotate")
	if err != nil {
		t.Log("logrotate is not installed (integration/setup.sh installs it): /etc/logrotate.d/ibsm is not exercised")
		return
	}
	state := filepath.Join(t.TempDir(), "logrotate.status")
	if out, err := exec.Command(lr, "-f", "-s", state, "/etc/logrotate.d/ibsm").CombinedOutput(); err != nil {
		t.Fatalf("logrotate -f /etc/logrotate.d/ibsm: %v\n%s", err, out)
	}
	if !strings.Contains(string(mustRead(t, logFile+".1")), "SUBNET UP") {
		t.Errorf("%s.1 does not hold the log before the rotation", logFile)
	}
	if out, err := exec.Command("/usr/sbin/ibsm", "reload", "--config", config).CombinedOutput(); err != nil {
		t.Fatalf("ibsm reload: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(logFile)
		if strings.Contains(string(b), "reload") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after logrotate the daemon's reload is not in the new %s (it kept the rotated file?):\n%s", logFile, tail(string(b), 1500))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(string(mustRead(t, logFile+".1")), "reload") {
		t.Errorf("the reload was logged into the rotated %s.1", logFile)
	}
}

// uncommentFabric returns the default configuration with its commented
// fabric block for transport uncommented and the state kept in stateDir.
func uncommentFabric(t *testing.T, def, transport, stateDir string) string {
	t.Helper()
	lines := strings.Split(def, "\n")
	for i, l := range lines {
		if l != "# fabric {" || i+1 >= len(lines) || !strings.Contains(lines[i+1], `transport = "`+transport+`"`) {
			continue
		}
		for j := i; j < len(lines); j++ {
			lines[j] = strings.TrimPrefix(strings.TrimPrefix(lines[j], "# "), "#")
			if lines[j] == "}" {
				out := strings.Join(lines, "\n")
				re := regexp.MustCompile(`(?m)^(\s*state_dir\s*=\s*)"/var/lib/ibsm"`)
				if !re.MatchString(out) {
					t.Fatal("/etc/ibsm/ibsm.hcl does not set state_dir = \"/var/lib/ibsm\"")
				}
				return re.ReplaceAllString(out, fmt.Sprintf("${1}%q", stateDir))
			}
		}
	}
	t.Fatalf("/etc/ibsm/ibsm.hcl has no commented fabric block for transport %q", transport)
	return ""
}
