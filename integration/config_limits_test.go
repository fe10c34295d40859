package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/conf"
)

// TestConfigLimitsSIGHUP is issue 9's crash: a running daemon is sent
// SIGHUP after its configuration was replaced by a 200 KB file with
// 100,000 nested "[" in a plugin config block. HCL's parser would overflow
// the stack, which kills the process; ibsm refuses the file before parsing
// it, logs where, keeps the running configuration and applies the next
// good one.
func TestConfigLimitsSIGHUP(t *testing.T) {
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

	// updn gets a config block whose root_guids nests 100,000 "[".
	good, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const header = `plugin "routing_engine" "updn" {`
	const attr = "    root_guids = "
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	bad := strings.Replace(string(good), header, header+"\n  config {\n"+attr+deep+"\n  }", 1)
	if bad == string(good) {
		t.Fatalf("config has no %q block:\n%s", header, good)
	}
	if err := os.WriteFile(cfg, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	// The plugin and config blocks take two levels, so the refused "[",
	// the one that opens level MaxNesting+1, is the (MaxNesting-1)th.
	line := strings.Count(bad[:strings.Index(bad, attr)], "\n") + 1
	col := len(attr) + conf.MaxNesting - 1
	where := fmt.Sprintf("%s:%d,%d-", cfg, line, col)

	sent := time.Now()
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, log, "reload failed", 1, 10*time.Second)
	t.Logf("%d-byte config refused %v after SIGHUP", len(bad), time.Since(sent).Round(time.Millisecond))
	out := log.String()
	for _, want := range []string{where, "Nested too deeply", "the running configuration stays in force"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, tail(out, 3000))
		}
	}
	if strings.Contains(out, "stack overflow") || strings.Contains(out, "reloading configuration") {
		t.Fatalf("the bad config reached the parser or was applied:\n%s", tail(out, 3000))
	}
	if len(out) > 64<<10 {
		t.Errorf("log holds %d bytes after one refusal: values are echoed", len(out))
	}

	// Still alive and sweeping: a good config with a new updn root is
	// applied and re-routes.
	select {
	case err := <-done:
		t.Fatalf("ibsm exited after the refused reload: %v\n%s", err, tail(log.String(), 3000))
	default:
	}
	writeConfig(t, dir, setup{net: ring6Net, engine: "updn", sweep: "200ms", updnRoot: "0x0002c90000000004"})
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, log, "reloading configuration", 1, 10*time.Second)
	waitFor(t, log, "SUBNET UP", 2, 10*time.Second)

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ibsm exited with %v:\n%s", err, tail(log.String(), 3000))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("ibsm did not stop on SIGTERM")
	}
}
