package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// serve starts a server in dir with an "echo" and a "fail" command.
func serve(t *testing.T, dir string) *Server {
	t.Helper()
	s, err := Listen(SocketPath(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("echo", func(_ context.Context, args json.RawMessage) (any, error) {
		var a struct{ Text string }
		if err := Decode(args, &a); err != nil {
			return nil, err
		}
		return map[string]string{"text": a.Text}, nil
	})
	s.Handle("fail", func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("it failed; do this next")
	})
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

func TestCalls(t *testing.T) {
	s := serve(t, t.TempDir())
	ctx := context.Background()
	c, err := Dial(ctx, s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		cmd     string
		args    any
		want    string
		wantErr string
	}{
		{cmd: "echo", args: map[string]string{"Text": "hi"}, want: "hi"},
		{cmd: "echo", want: ""},
		{cmd: "echo", args: map[string]string{"Txt": "typo"}, wantErr: `unknown field "Txt"`},
		{cmd: "fail", wantErr: "it failed; do this next"},
		{cmd: "nope", wantErr: `unknown command "nope"; this daemon serves [echo fail]`},
	}
	for _, tc := range tests { // one connection carries them all in turn
		var out struct{ Text string }
		err := c.Call(ctx, tc.cmd, tc.args, &out)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s %v: error %v, want %q", tc.cmd, tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || out.Text != tc.want {
			t.Errorf("%s %v: %+v, %v; want %q", tc.cmd, tc.args, out, err, tc.want)
		}
	}
}

func TestRawProtocol(t *testing.T) {
	s := serve(t, t.TempDir())
	tests := []struct{ in, want string }{
		{`{"cmd":"echo","args":{"Text":"x"}}` + "\n", `{"ok":true,"result":{"text":"x"}}`},
		{"not json\n", `"error":"request is not JSON`},
		{`{"cmd":"echo"}`, `request not terminated by a newline`}, // then EOF
	}
	for _, tc := range tests {
		c, err := net.Dial("unix", s.Path())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, tc.in)
		c.(*net.UnixConn).CloseWrite()
		b, _ := io.ReadAll(c)
		c.Close()
		if !strings.Contains(string(b), tc.want) {
			t.Errorf("%q → %s; want it to contain %s", tc.in, b, tc.want)
		}
	}
}

func TestSocketFile(t *testing.T) {
	dir := t.TempDir()
	s := serve(t, dir)
	fi, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	s.Close()
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file left after Close: %v", err)
	}
	if _, err := Dial(context.Background(), s.Path()); err == nil || !strings.Contains(err.Error(), "no ibsm daemon listens") {
		t.Errorf("Dial without a daemon: %v", err)
	}
}

func TestListenRefuses(t *testing.T) {
	dir := t.TempDir()
	notSock := filepath.Join(dir, SocketName)
	os.WriteFile(notSock, []byte("x"), 0o644)
	if _, err := Listen(notSock, Options{}); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("Listen over a regular file: %v", err)
	}
	long := filepath.Join(dir, strings.Repeat("d", 120), SocketName)
	if _, err := Listen(long, Options{}); err == nil || !strings.Contains(err.Error(), "shorter sm.state_dir") {
		t.Errorf("Listen on a too long path: %v", err)
	}
}

func TestStaleSocketReplaced(t *testing.T) {
	dir := t.TempDir()
	p := SocketPath(dir)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // a socket file nobody listens on: a daemon that died
	s := serve(t, dir)
	if err := Call(context.Background(), s.Path(), "echo", nil, nil); err != nil {
		t.Errorf("after replacing a stale socket: %v", err)
	}
}

func TestDuplicateHandlerPanics(t *testing.T) {
	s := serve(t, t.TempDir())
	defer func() {
		if recover() == nil {
			t.Error("registering echo twice did not panic")
		}
	}()
	s.Handle("echo", nil)
}

// TestOtherUserRefused connects as uid 65534 from a child process (the
// tests run as root). With the socket's 0600 mode the kernel refuses the
// connect; with the mode opened up the server's SO_PEERCRED check refuses
// the request.
func TestOtherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a child as another uid")
	}
	dir, err := os.MkdirTemp("", "ibsm-control-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // the other uid must reach the socket and the binary
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "control.test")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir)
	asNobody := func() string {
		cmd := exec.Command(bin, "-test.run=^TestHelperClient$")
		cmd.Env = append(os.Environ(), "IBSM_CONTROL_HELPER="+s.Path())
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := asNobody(); !strings.Contains(out, "CLIENT: ") || !strings.Contains(out, "permission denied: run as root or as the daemon's user") {
		t.Errorf("uid 65534 on the 0600 socket: %s", out)
	}
	os.Chmod(s.Path(), 0o666)
	if out := asNobody(); !strings.Contains(out, "permission denied: uid 65534 may not use this control socket") {
		t.Errorf("uid 65534 on an opened-up socket: %s", out)
	}
	// root still may.
	if err := Call(context.Background(), s.Path(), "echo", nil, nil); err != nil {
		t.Errorf("root: %v", err)
	}
}

// TestHelperClient is the child of TestOtherUserRefused.
func TestHelperClient(t *testing.T) {
	path := os.Getenv("IBSM_CONTROL_HELPER")
	if path == "" {
		t.Skip("helper process only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := Call(ctx, path, "echo", map[string]string{"Text": "x"}, nil)
	fmt.Printf("CLIENT: uid %d: %v\n", os.Getuid(), err)
}

// FuzzRequest feeds arbitrary bytes to the server's request decoding:
// every line gets one JSON response, nothing panics.
func FuzzRequest(f *testing.F) {
	f.Add([]byte(`{"cmd":"echo","args":{"Text":"x"}}` + "\n"))
	f.Add([]byte("{}\n\n[]\n"))
	f.Add([]byte(`{"cmd":"echo","args":"str"}` + "\n"))
	s := &Server{handlers: map[string]Handler{}, ctx: context.Background(), opts: Options{RequestTimeout: time.Second}, log: nil}
	s.log = hclog.NewNullLogger()
	s.handlers["echo"] = func(_ context.Context, args json.RawMessage) (any, error) {
		var a struct{ Text string }
		return a, Decode(args, &a)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, line := range strings.SplitAfter(string(in), "\n") {
			if !strings.HasSuffix(line, "\n") {
				continue
			}
			r := s.dispatch([]byte(line), 0, 0)
			if _, err := json.Marshal(r); err != nil {
				t.Fatalf("response not encodable: %v", err)
			}
			if r.OK == (r.Error != "") {
				t.Fatalf("response %+v: ok and error disagree", r)
			}
		}
	})
}
