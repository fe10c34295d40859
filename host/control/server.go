package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Handler answers one command. args are the request's raw arguments
// (Decode them); the result is marshalled into the response.
type Handler func(ctx context.Context, args json.RawMessage) (any, error)

// Options configure a Server.
type Options struct {
	Log hclog.Logger
	// RequestTimeout bounds one handler call (default 5 minutes: a
	// reload launches plugin processes).
	RequestTimeout time.Duration
	// MaxConns bounds connections served at once (default 16); more wait
	// in the kernel's backlog.
	MaxConns int
}

// Server is the control socket. Create it with Listen, register handlers
// with Handle, then Serve.
type Server struct {
	path string
	ln   *net.UnixListener
	opts Options
	log  hclog.Logger
	uid  uint32 // the daemon's uid: it and root may connect

	mu       sync.Mutex
	handlers map[string]Handler

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	close  sync.Once
}

// Listen creates the socket at path with mode 0600. A socket file left
// by a daemon that died is replaced (the caller holds the state
// directory's lock, so no live daemon owns it); any other file there is
// an error.
func Listen(path string, opts Options) (*Server, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 5 * time.Minute
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 16
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("control socket: %s exists and is not a socket; move it away", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("control socket: removing the stale %s: %w", path, err)
		}
	}
	// The umask makes the socket owner-only from the moment it exists
	// (a chmod after bind would leave a window).
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w (check that sm.state_dir is writable)", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{path: path, ln: ln, opts: opts, log: opts.Log, uid: uint32(os.Getuid()),
		handlers: map[string]Handler{}, ctx: ctx, cancel: cancel}, nil
}

// Path is the socket's file name.
func (s *Server) Path() string { return s.path }

// Handle registers h for name. Registering a name twice panics: two
// parts of the daemon claiming one command is a programming error.
func (s *Server) Handle(name string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.handlers[name]; dup {
		panic(fmt.Sprintf("control: command %q registered twice", name))
	}
	s.handlers[name] = h
}

// Commands lists the registered command names, sorted.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.handlers))
	for n := range s.handlers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Serve accepts connections until Close. It returns nil after Close.
func (s *Server) Serve() error {
	sem := make(chan struct{}, s.opts.MaxConns)
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("control socket: %w", err)
		}
		select {
		case sem <- struct{}{}:
		case <-s.ctx.Done():
			c.Close()
			return nil
		}
		s.wg.Add(1)
		go func() {
			defer func() { <-sem; s.wg.Done() }()
			s.serveConn(c)
		}()
	}
}

// Close stops accepting, ends handlers' contexts, waits for open
// connections to finish and removes the socket file.
func (s *Server) Close() error {
	s.close.Do(func() {
		s.cancel()
		s.ln.Close() // net removes the socket file it bound
		s.wg.Wait()
	})
	return nil
}

// peerUID is the uid of the process at the other end of c (SO_PEERCRED,
// taken by the kernel at connect time: the peer cannot forge it).
func peerUID(c *net.UnixConn) (uint32, int32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if cerr != nil {
		return 0, 0, cerr
	}
	return cred.Uid, cred.Pid, nil
}

// idle is how long a connection may sit between requests.
const idle = 30 * time.Second

func (s *Server) serveConn(c *net.UnixConn) {
	defer c.Close()
	uid, pid, err := peerUID(c)
	if err != nil {
		s.log.Warn("control connection refused: peer credentials unreadable", "error", err)
		return
	}
	w := bufio.NewWriter(c)
	reply := func(r Response) bool {
		b, err := json.Marshal(r)
		if err != nil {
			b, _ = json.Marshal(Response{Error: "response not encodable: " + err.Error()})
		}
		_ = c.SetWriteDeadline(time.Now().Add(idle))
		_, err = w.Write(append(b, '\n'))
		return err == nil && w.Flush() == nil
	}
	if uid != 0 && uid != s.uid {
		s.log.Warn("control connection refused: another user", "uid", uid, "pid", pid)
		reply(Response{Error: fmt.Sprintf("permission denied: uid %d may not use this control socket (only root and the daemon's uid %d may)", uid, s.uid)})
		return
	}
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		_ = c.SetReadDeadline(time.Now().Add(idle))
		line, err := readLine(r)
		if err != nil {
			if !errors.Is(err, errEOF) {
				reply(Response{Error: err.Error()})
			}
			return
		}
		if !reply(s.dispatch(line, uid, pid)) {
			return
		}
	}
}

func (s *Server) dispatch(line []byte, uid uint32, pid int32) Response {
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return Response{Error: fmt.Sprintf("request is not JSON {\"cmd\":…,\"args\":…}: %v", err)}
	}
	s.mu.Lock()
	h, ok := s.handlers[req.Cmd]
	s.mu.Unlock()
	if !ok {
		return Response{Error: fmt.Sprintf("unknown command %q; this daemon serves %v", req.Cmd, s.Commands())}
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	s.log.Debug("control request", "cmd", req.Cmd, "uid", uid, "pid", pid)
	res, err := h(ctx, req.Args)
	if err != nil {
		return Response{Error: err.Error()}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return Response{Error: fmt.Sprintf("command %q: result not encodable: %v", req.Cmd, err)}
	}
	return Response{OK: true, Result: b}
}

var errEOF = errors.New("end of requests")

// readLine reads one newline-terminated line of at most maxLine bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("request longer than %d bytes", maxLine)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) == 0:
			return nil, errEOF
		default:
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, errEOF
			}
			return nil, fmt.Errorf("request not terminated by a newline: %w", err)
		}
	}
}
