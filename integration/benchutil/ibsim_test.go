package benchutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const consoleNet = `switchguid=0x0002c90000000100
caguid=0x0002c90000001000

Switch	4 "sw1"
[1]	"h1"[1]
[2]	"h2"[1]

Ca	1 "h1"
[1]	"sw1"[1]

Ca	1 "h2"
[1]	"sw1"[2]

`

func startConsoleSim(t *testing.T, noConsole bool) *IBSim {
	t.Helper()
	dir := t.TempDir()
	net := filepath.Join(dir, "f.net")
	if err := os.WriteFile(net, []byte(consoleNet), 0o644); err != nil {
		t.Fatal(err)
	}
	return StartIBSimTest(t, IBSimOptions{NetFile: net, Dir: dir, NoConsole: noConsole,
		SockName: fmt.Sprintf("ibsmbenchutil%d_%v", os.Getpid(), noConsole)})
}

func TestIBSimConsole(t *testing.T) {
	s := startConsoleSim(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The sockets exist once StartIBSim returns.
	if b, err := os.ReadFile("/proc/net/unix"); err == nil && !strings.Contains(string(b), "@"+s.Sockname+":ctl@") {
		t.Errorf("control socket @%s:ctl not listening after start", s.Sockname)
	}
	dump := func() string {
		out, err := s.Dump(ctx, "sw1")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := dump(); !strings.Contains(out, `"h2"[1]`) || strings.Contains(out, "sim> ") {
		t.Fatalf("Dump sw1 before Unlink:\n%s", out)
	}
	if err := s.Unlink("sw1", 2); err != nil {
		t.Fatal(err)
	}
	if out := dump(); strings.Contains(out, `"h2"[1]`) {
		t.Errorf("sw1 still linked to h2 after Unlink returned:\n%s", out)
	}
	if err := s.ReLink("sw1", 2); err != nil {
		t.Fatal(err)
	}
	if out := dump(); !strings.Contains(out, `"h2"[1]`) {
		t.Errorf("sw1 not linked to h2 after ReLink:\n%s", out)
	}
	if err := s.SetErrorRate("sw1", 0, 50, 17); err != nil {
		t.Error(err)
	}
	if l, err := s.Attached(ctx); err != nil || len(l) != 0 {
		t.Errorf("Attached = %q, %v; want no clients", l, err)
	}

	bad := []struct {
		name string
		run  func() error
		want string
	}{
		{"unknown node", func() error { return s.Unlink("nosuch", 1) }, "not found"},
		{"port not linked", func() error { return s.Unlink("sw1", 4) }, "is not linked"},
		{"bad port", func() error { return s.Unlink("sw1", 9) }, "can't unlink port 9"},
		{"error rate out of range", func() error { return s.SetErrorRate("h1", 1, 101, 0) }, "[0..100]"},
		{"unknown command", func() error { return s.Console("Frobnicate") }, "unknown - skipped"},
		{"dump unknown node", func() error { _, err := s.Dump(ctx, "nosuch"); return err }, "not found"},
	}
	for _, tc := range bad {
		var ce *ConsoleError
		if err := tc.run(); !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a ConsoleError containing %q", tc.name, err, tc.want)
		}
	}
	if err := s.Console(strings.Repeat("x", 121)); err == nil || errors.As(err, new(*ConsoleError)) {
		t.Errorf("121-byte command: err = %v, want a local rejection", err)
	}
	if err := s.Console("Dump\nQuit"); err == nil {
		t.Error("two-line command accepted")
	}

	// Wait freezes the simulator; Console returns only after it.
	start := time.Now()
	if err := s.Console("Wait 1"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("Wait 1 returned after %v", d)
	}

	if err := s.Console("Quit"); err == nil {
		t.Error("Console(Quit) returned no error although ibsim exited")
	}
	select {
	case <-s.Exited():
	case <-time.After(5 * time.Second):
		t.Error("ibsim did not exit on Quit")
	}
}

func TestIBSimNoConsole(t *testing.T) {
	s := startConsoleSim(t, true)
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Skip(err)
	}
	if !strings.Contains(string(b), "@"+s.Sockname+":ctl@") {
		t.Errorf("control socket @%s:ctl not listening after start", s.Sockname)
	}
	if err := s.Console("Dump"); err == nil || !strings.Contains(err.Error(), "NoConsole") {
		t.Errorf("Console without console: err = %v", err)
	}
}
