package benchutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

var reIBSimFlags = regexp.MustCompile(`(?m)^# ibsim [^:]*: ibsim (.*) <file>$`)

// IBSimFlags returns the flags `ibsm topo` recorded in the header of a
// generated .net file for loading it into ibsim (table sizes, -L 49152),
// without -s (added by StartIBSim). Files without that header get ibsim's
// defaults.
func IBSimFlags(netFile string) ([]string, error) {
	f, err := os.Open(netFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	m := reIBSimFlags.FindSubmatch(head[:n])
	if m == nil {
		return nil, nil
	}
	var out []string
	for _, a := range strings.Fields(string(m[1])) {
		if a != "-s" {
			out = append(out, a)
		}
	}
	return out, nil
}

// IBSimOptions configure StartIBSimWith.
type IBSimOptions struct {
	// Path is the ibsim binary; NetFile the topology; Dir receives
	// ibsim.log (its stdout and stderr) and is ibsim's working directory.
	Path, NetFile, Dir string
	// Ready bounds the wait for "Network simulator ready" (default 1m).
	Ready time.Duration
	// Flags are added after those IBSimFlags(NetFile) finds.
	Flags []string
	// SockName is the IBSIM_SOCKNAME to use; "" picks one no other
	// simulator on this machine uses.
	SockName string
	// NoConsole starts ibsim with -n; Console then fails.
	NoConsole bool
}

// IBSim is a running ibsim with a private socket name and, unless started
// with NoConsole, its stdin console (see Console).
type IBSim struct {
	Sockname string
	// LogPath is the file holding ibsim's stdout and stderr.
	LogPath string

	cmd    *exec.Cmd
	waited chan struct{}
	log    *os.File
	stdin  io.WriteCloser // nil with NoConsole
	stop   sync.Once

	cmdMu sync.Mutex // one console command at a time
	seq   int

	outMu  sync.Mutex
	out    []byte        // stdout not yet consumed by a command
	outEOF bool          // stdout closed: ibsim exited
	outSig chan struct{} // closed and replaced whenever out grows
}

// StartIBSim starts ibsim (with its console) on netFile under a socket
// name no other simulator on this machine uses, and returns once it
// reports that it is ready. Its output goes to dir/ibsim.log. Call Stop,
// also on failure paths.
func StartIBSim(ctx context.Context, ibsimPath, netFile, dir string, ready time.Duration) (*IBSim, error) {
	return StartIBSimWith(ctx, IBSimOptions{Path: ibsimPath, NetFile: netFile, Dir: dir, Ready: ready})
}

// StartIBSimWith starts ibsim as o says; see StartIBSim.
func StartIBSimWith(ctx context.Context, o IBSimOptions) (*IBSim, error) {
	if o.Ready <= 0 {
		o.Ready = time.Minute
	}
	flags, err := IBSimFlags(o.NetFile)
	if err != nil {
		return nil, err
	}
	sock := o.SockName
	if sock == "" {
		// Abstract socket names are per network namespace; pid+time makes
		// them unique among concurrent runs.
		sock = fmt.Sprintf("ibsmbench%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	}
	logPath := filepath.Join(o.Dir, "ibsim.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"-s"}
	if o.NoConsole {
		args = append(args, "-n")
	}
	args = append(append(append(args, flags...), o.Flags...), o.NetFile)
	cmd := exec.Command(o.Path, args...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+sock)
	cmd.Stderr = lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s := &IBSim{Sockname: sock, LogPath: logPath, cmd: cmd, waited: make(chan struct{}), log: lf, outSig: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		lf.Close()
		return nil, err
	}
	if !o.NoConsole {
		// Held open until Stop: at EOF on stdin ibsim's console spins at
		// 100% CPU.
		if s.stdin, err = cmd.StdinPipe(); err != nil {
			lf.Close()
			return nil, err
		}
	}
	if err := StartPinned(cmd, s.waited); err != nil {
		lf.Close()
		return nil, fmt.Errorf("starting ibsim: %w", err)
	}
	// ibsim blocks the whole fabric once its output pipe fills: always
	// read it, copying it to the log.
	copied := make(chan struct{})
	go func() { defer close(copied); s.copyOut(stdout) }()
	go func() { <-copied; cmd.Wait(); close(s.waited) }()

	ctx, cancel := context.WithTimeout(ctx, o.Ready)
	defer cancel()
	if err := s.waitReady(ctx, !o.NoConsole); err != nil {
		s.Stop()
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("ibsim not ready (%v); its output:\n%s", err, TailLines(string(b), 20))
	}
	return s, nil
}

// waitReady waits until ibsim serves its sockets. It prints its banner
// before it creates them, so the banner is not enough: with the console a
// command round trip proves the main loop runs; without, the control
// socket must show up in /proc/net/unix.
func (s *IBSim) waitReady(ctx context.Context, console bool) error {
	end, err := s.waitOut(ctx, []byte("Network simulator ready"))
	if err != nil {
		return err
	}
	if console {
		s.outMu.Lock()
		s.out = s.out[end:]
		s.outMu.Unlock()
		_, err := s.ConsoleOutput(ctx, "# ibsm: ready?")
		return err
	}
	name := []byte("@" + s.Sockname + ":ctl@")
	for {
		b, err := os.ReadFile("/proc/net/unix")
		if err != nil {
			return err
		}
		if bytes.Contains(b, name) {
			return nil
		}
		select {
		case <-s.waited:
			return errors.New("ibsim exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *IBSim) copyOut(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.log.Write(buf[:n])
			s.outMu.Lock()
			s.out = append(s.out, buf[:n]...)
			close(s.outSig)
			s.outSig = make(chan struct{})
			s.outMu.Unlock()
		}
		if err != nil {
			s.outMu.Lock()
			s.outEOF = true
			close(s.outSig)
			s.outSig = make(chan struct{})
			s.outMu.Unlock()
			return
		}
	}
}

// waitOut waits until unconsumed stdout contains pat and returns the index
// just past it.
func (s *IBSim) waitOut(ctx context.Context, pat []byte) (int, error) {
	for {
		s.outMu.Lock()
		i := bytes.Index(s.out, pat)
		eof, sig := s.outEOF, s.outSig
		s.outMu.Unlock()
		if i >= 0 {
			return i + len(pat), nil
		}
		if eof {
			return 0, errors.New("ibsim exited")
		}
		select {
		case <-sig:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Stop kills ibsim's process group and waits for it. Safe to call twice.
func (s *IBSim) Stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	s.stop.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.waited
		if s.stdin != nil {
			s.stdin.Close()
		}
		s.log.Close()
	})
}

// Exited is closed when ibsim has exited.
func (s *IBSim) Exited() <-chan struct{} { return s.waited }

// consoleSilent are the commands that print nothing when they succeed, so
// any output is ibsim's complaint.
var consoleSilent = map[string]bool{
	"link": true, "unlink": true, "relink": true, "clear": true, "error": true,
	"baselid": true, "guid": true, "performanceset": true, "x": true, "wait": true, "start": true,
}

// ConsoleError is a console command ibsim did not carry out.
type ConsoleError struct {
	Command, Output string
}

func (e *ConsoleError) Error() string {
	return fmt.Sprintf("ibsim console %q: %s", e.Command, strings.TrimSpace(e.Output))
}

// Console runs one console command (Link, Unlink, ReLink, Clear, Error,
// Baselid, Guid, PerformanceSet, X, Wait, ...) and returns once ibsim has
// carried it out: commands run atomically between MADs, so every MAD sent
// after Console returns sees the change. A command ibsim rejects or does
// not know is a *ConsoleError. Waits at most 30s plus any Wait time.
func (s *IBSim) Console(cmd string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second+waitTime(cmd))
	defer cancel()
	_, err := s.ConsoleOutput(ctx, cmd)
	return err
}

// waitTime is the freeze a Wait command asks for.
func waitTime(cmd string) time.Duration {
	f := strings.Fields(cmd)
	var sec int
	if len(f) == 2 && strings.EqualFold(f[0], "wait") {
		fmt.Sscanf(f[1], "%d", &sec)
	}
	return time.Duration(sec) * time.Second
}

// ConsoleOutput runs one console command and returns what it printed
// (Dump, Route, Attached print; the fault commands are silent on success).
func (s *IBSim) ConsoleOutput(ctx context.Context, cmd string) (string, error) {
	if s.stdin == nil {
		return "", errors.New("ibsim was started with NoConsole; start it with its console to send commands")
	}
	// ibsim reads lines into a 128-byte buffer; a longer line would run as
	// two commands.
	if len(cmd) > 120 || strings.ContainsAny(cmd, "\r\n") {
		return "", fmt.Errorf("ibsim console command %q: must be one line of at most 120 bytes", cmd)
	}
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	s.seq++
	// A comment is echoed without its newline and followed by the prompt,
	// which no other output looks like: it marks the end of cmd's output.
	marker := fmt.Sprintf("# ibsm-console-done %d", s.seq)
	if _, err := io.WriteString(s.stdin, cmd+"\n"+marker+"\n"); err != nil {
		return "", fmt.Errorf("ibsim console: %w (has ibsim exited? see %s)", err, s.LogPath)
	}
	end, err := s.waitOut(ctx, []byte(marker+"sim> "))
	if err != nil {
		return "", fmt.Errorf("ibsim console %q: %w; see %s", cmd, err, s.LogPath)
	}
	s.outMu.Lock()
	out := string(s.out[:end-len(marker)-len("sim> ")])
	s.out = s.out[end:]
	s.outMu.Unlock()
	// Drop the prompts around the output: the one before the command
	// (left over from start-up or from a Wait) and the one after it.
	out = strings.TrimPrefix(out, "sim> ")
	out = strings.TrimSuffix(out, "sim> ")
	if strings.Contains(out, "unknown - skipped") {
		return out, &ConsoleError{Command: cmd, Output: out}
	}
	if f := strings.Fields(cmd); len(f) > 0 && consoleSilent[strings.ToLower(f[0])] && strings.TrimSpace(out) != "" {
		return out, &ConsoleError{Command: cmd, Output: out}
	}
	return out, nil
}

// PortRef names a node (its topology node id, not its description) and,
// if Port > 0, one port.
func PortRef(node string, port int) string {
	if port > 0 {
		return fmt.Sprintf("%q[%d]", node, port)
	}
	return fmt.Sprintf("%q", node)
}

// Unlink disconnects one port of node (port 0: all its ports). Switch ends
// send trap 128.
func (s *IBSim) Unlink(node string, port int) error {
	return s.Console("Unlink " + PortRef(node, port))
}

// ReLink restores the links Unlink removed (port 0: all ports of node).
func (s *IBSim) ReLink(node string, port int) error {
	return s.Console("ReLink " + PortRef(node, port))
}

// SetErrorRate makes port (0: every port) of node drop percent of the MADs
// passing it; attr, if non-zero, limits that to one attribute ID.
func (s *IBSim) SetErrorRate(node string, port, percent int, attr uint16) error {
	cmd := fmt.Sprintf("Error %s %d", PortRef(node, port), percent)
	if attr != 0 {
		cmd += fmt.Sprintf(" %d", attr)
	}
	return s.Console(cmd)
}

// Dump returns ibsim's dump of node ("" = every node).
func (s *IBSim) Dump(ctx context.Context, node string) (string, error) {
	cmd := "Dump"
	if node != "" {
		cmd += " " + PortRef(node, 0)
	}
	out, err := s.ConsoleOutput(ctx, cmd)
	if err == nil && node != "" && strings.Contains(out, fmt.Sprintf("# nodeid %q not found", node)) {
		err = &ConsoleError{Command: cmd, Output: out}
	}
	return out, err
}

// Attached returns ibsim's list of connected clients, one line each.
func (s *IBSim) Attached(ctx context.Context) ([]string, error) {
	out, err := s.ConsoleOutput(ctx, "Attached")
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Client ") {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// StartPinned starts cmd from an OS thread that stays alive until done is
// closed. Pdeathsig fires when the thread that forked the child exits, not
// the process, and Go retires threads: a goroutine that ends while locked
// to its thread (the plugin manager's spawner does, on a reload) takes the
// thread with it, and a child forked there would be killed mid-test.
func StartPinned(cmd *exec.Cmd, done <-chan struct{}) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-done
		}
		runtime.UnlockOSThread()
	}()
	return <-started
}
