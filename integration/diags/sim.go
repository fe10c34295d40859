package diags

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sim is a running ibsim with its console on a pipe we hold open (ibsim
// busy-loops if its console reaches EOF) and its output drained into a
// buffer and a log file (a full pipe would block the simulator).
type Sim struct {
	Sockname string
	Pid      int // also the process group id
	LogPath  string

	mu     sync.Mutex
	out    bytes.Buffer
	stdin  io.WriteCloser
	cmd    *exec.Cmd
	waited chan struct{}
	log    *os.File
	conMu  sync.Mutex // one console command at a time
}

// prompt is what ibsim prints, without a newline, when a console command
// (or start-up) has finished.
const prompt = "sim> "

// StartSim starts ibsim on netFile with -s and the extra flags, socket
// name sockname, in its own process group (killed by Stop, and by the
// kernel if the test binary dies), and waits for its first prompt.
func StartSim(ibsimPath, netFile, dir, sockname string, flags []string, ready time.Duration) (*Sim, error) {
	logPath := filepath.Join(dir, "ibsim-"+sockname+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append(append([]string{"-s"}, flags...), netFile)
	cmd := exec.Command(ibsimPath, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+sockname)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		lf.Close()
		return nil, err
	}
	s := &Sim{Sockname: sockname, LogPath: logPath, stdin: stdin, cmd: cmd, waited: make(chan struct{}), log: lf}
	w := &simWriter{s: s}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("starting ibsim: %w", err)
	}
	s.Pid = cmd.Process.Pid
	go func() { cmd.Wait(); close(s.waited) }()
	deadline := time.Now().Add(ready)
	for !strings.Contains(s.Output(), prompt) {
		select {
		case <-s.waited:
			s.Stop()
			return nil, fmt.Errorf("ibsim exited before it was ready:\n%s", tail(s.Output(), 2000))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("ibsim not ready after %s:\n%s", ready, tail(s.Output(), 2000))
		}
	}
	return s, nil
}

type simWriter struct{ s *Sim }

func (w *simWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.out.Write(p)
	w.s.log.Write(p)
	return len(p), nil
}

// Output is everything ibsim printed so far.
func (s *Sim) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Exited reports whether ibsim is gone.
func (s *Sim) Exited() bool {
	select {
	case <-s.waited:
		return true
	default:
		return false
	}
}

// Console runs one console command (e.g. `Unlink "S1"[3]`, `Error "S1" 10`)
// and returns what ibsim printed for it. ibsim answers a finished command
// with a new prompt; no prompt within d means ibsim is stalled.
func (s *Sim) Console(cmd string, d time.Duration) (string, error) {
	if strings.ContainsAny(cmd, "\n\r") {
		return "", fmt.Errorf("console command %q spans lines", cmd)
	}
	s.conMu.Lock()
	defer s.conMu.Unlock()
	if s.Exited() {
		return "", fmt.Errorf("ibsim has exited; its output:\n%s", tail(s.Output(), 2000))
	}
	before := s.Output()
	n := strings.Count(before, prompt)
	if _, err := io.WriteString(s.stdin, cmd+"\n"); err != nil {
		return "", fmt.Errorf("writing to ibsim's console: %w", err)
	}
	deadline := time.Now().Add(d)
	for {
		out := s.Output()
		if strings.Count(out, prompt) > n {
			reply := out[len(before):]
			return strings.TrimSuffix(strings.TrimSpace(reply), strings.TrimSpace(prompt)), nil
		}
		if s.Exited() {
			return "", fmt.Errorf("ibsim exited running %q:\n%s", cmd, tail(out, 2000))
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("ibsim did not finish console command %q within %s (stalled?)", cmd, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills ibsim's process group and waits for ibsim. Safe to call twice.
func (s *Sim) Stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.Pid, syscall.SIGKILL)
	<-s.waited
	s.stdin.Close()
	s.mu.Lock()
	s.log.Close()
	s.mu.Unlock()
}

// GroupMembers lists the live (non-zombie) processes in process group
// pgid, by scanning /proc. It lets a test prove that nothing it started
// (an SM, its plugins, a tool) survives.
func GroupMembers(pgid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		st, err := parseStat(string(b))
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		if st.pgrp == pgid && st.state != "Z" && st.state != "X" {
			out = append(out, pid)
		}
	}
	return out, nil
}

type procStat struct {
	state      string
	ppid, pgrp int
}

// parseStat reads state, ppid and pgrp from /proc/<pid>/stat; the command
// name in parentheses may itself contain spaces and parentheses.
func parseStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("no ')' after the command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return procStat{}, errors.New("too few fields")
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, err
	}
	return procStat{state: f[0], ppid: ppid, pgrp: pgrp}, nil
}
