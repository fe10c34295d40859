package integration

import (
	"os"
	"os/exec"
	"path/filepath"
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

	example := "/usr/share/ibsm/examples/ft2-648.hcl"
	ns := listenNotify(t)
	cmd := exec.Command("/usr/sbin/ibsm", "run", "--config", example)
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
}
