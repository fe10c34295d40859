package statedir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a second process: "try:<dir>"
// locks dir and reports the result; "hold:<dir>" locks it, says "locked"
// and waits to be killed.
const helperEnv = "IBSM_STATEDIR_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helper(h))
	}
	os.Exit(m.Run())
}

func helper(h string) int {
	mode, dir, _ := strings.Cut(h, ":")
	d, err := Lock(dir)
	if err != nil {
		fmt.Println(err)
		if errors.Is(err, ErrLocked) {
			return 3
		}
		return 1
	}
	fmt.Println("locked")
	if mode == "hold" {
		time.Sleep(time.Minute)
	}
	d.Close()
	return 0
}

func child(t *testing.T, mode, dir string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode+":"+dir)
	return cmd
}

func TestLockCloseRelock(t *testing.T) {
	dir := t.TempDir()
	d, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, FileName)); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q, want our PID %d", b, os.Getpid())
	}
	// A second Lock, even in this process, is refused (flock is per open file).
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Errorf("second Lock: err = %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var nilDir *Dir
	if err := nilDir.Close(); err != nil {
		t.Errorf("nil Close: %v", err)
	}
	d2, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after Close: %v", err)
	}
	d2.Close()
}

// TestSecondProcess: another process gets a clear error naming our PID and
// the directory, then succeeds once we release.
func TestSecondProcess(t *testing.T) {
	dir := t.TempDir()
	d, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := child(t, "try", dir).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("second process: %v, output %q; want exit 3 (ErrLocked)", err, out)
	}
	msg := string(out)
	for _, want := range []string{dir, fmt.Sprintf("locked by process %d", os.Getpid()), "sm.state_dir"} {
		if !strings.Contains(msg, want) {
			t.Errorf("second process said %q, want it to contain %q", msg, want)
		}
	}
	d.Close()
	if out, err := child(t, "try", dir).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "locked" {
		t.Errorf("after Close: %v, %q", err, out)
	}
}

// TestKilledHolderLeavesNoLock: the kernel releases the lock of a process
// killed with SIGKILL; its PID left in the file does not block us.
func TestKilledHolderLeavesNoLock(t *testing.T) {
	dir := t.TempDir()
	cmd := child(t, "hold", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("holder said %q, %v", line, err)
	}
	_, err = Lock(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", cmd.Process.Pid)) {
		t.Fatalf("while held: err = %v, want ErrLocked naming pid %d", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if b, _ := os.ReadFile(filepath.Join(dir, FileName)); strings.TrimSpace(string(b)) != strconv.Itoa(cmd.Process.Pid) {
		t.Logf("lock file after kill -9: %q", b)
	}
	d, err := Lock(dir)
	if err != nil {
		t.Fatalf("after kill -9 of the holder: %v", err)
	}
	d.Close()
}

func TestUnwritableDir(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root writes anywhere")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if _, err := Lock(dir); err == nil || errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Errorf("err = %v, want a non-ErrLocked error naming %s", err, dir)
	}
}

func TestMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	if _, err := Lock(dir); err == nil || !strings.Contains(err.Error(), "sm.state_dir") {
		t.Errorf("err = %v", err)
	}
}

// TestChildDoesNotInherit: a process we start (a plugin) must not keep the
// directory locked after we release it or die.
func TestChildDoesNotInherit(t *testing.T) {
	dir := t.TempDir()
	d, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := child(t, "hold", t.TempDir()) // runs on, locking something else
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	d.Close()
	d2, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock with a child still running: %v (the child inherited the lock)", err)
	}
	d2.Close()
}

// TestReadOnlyDir: a state directory that cannot be written is still
// locked (the directory itself), exclusively.
func TestReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		// root writes through mode bits; a read-only bind mount needs privileges this test does not take
		dir := t.TempDir()
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "--bind", "-o", "ro", ro, ro).CombinedOutput(); err != nil {
			t.Skipf("cannot make a read-only directory here: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", ro).Run() })
		testReadOnly(t, ro)
		return
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	testReadOnly(t, dir)
}

func testReadOnly(t *testing.T, dir string) {
	d, err := Lock(dir)
	if err != nil {
		t.Fatalf("read-only state dir: %v", err)
	}
	defer d.Close()
	if !d.ReadOnly {
		t.Fatal("not reported read-only")
	}
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock on a read-only dir: %v", err)
	}
}
