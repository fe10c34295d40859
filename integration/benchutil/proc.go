// Package benchutil runs the processes the bring-up benchmark compares —
// ibsm, ibsim and OpenSM — and turns what they print into numbers: phase
// times, SMP counts and peak resident set sizes.
//
// Peak RSS comes from the kernel, not from the programs themselves: the
// wait4 rusage of the process we started (ru_maxrss, KiB on Linux) and, for
// grandchildren such as ibsm's plugins, their VmHWM sampled from /proc while
// they live.
package benchutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Result is what one finished process left behind.
type Result struct {
	Stdout, Stderr string
	Wall           time.Duration
	// MaxRSSKiB is wait4's ru_maxrss: the largest peak RSS of the process
	// and of every descendant it reaped (Linux folds those in), so for
	// ibsm it is max(ibsm, plugins), not the sum.
	MaxRSSKiB int64
	// DescendantHWMKiB maps a descendant's executable base name to the
	// largest VmHWM seen for it. A descendant that lives shorter than the
	// sampling interval may be missing.
	DescendantHWMKiB map[string]int64
	ExitCode         int
	// UserCPU and SysCPU are wait4's CPU times of the process and of the
	// descendants it reaped: what load on a shared machine inflates less
	// than Wall.
	UserCPU, SysCPU time.Duration
}

// RunOptions tunes Run.
type RunOptions struct {
	// SampleEvery > 0 samples descendants' VmHWM at this interval.
	SampleEvery time.Duration
	// Started, if set, is called with the pid once the process runs (to
	// watch it while it works).
	Started func(pid int)
}

// Run starts cmd in its own process group, waits for it and measures it.
// When ctx ends the whole group is killed, so nothing it spawned outlives
// the benchmark. A non-zero exit is reported in ExitCode, not as an error:
// the caller decides whether that is a finding or a failure.
func Run(ctx context.Context, cmd *exec.Cmd, opts RunOptions) (*Result, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	pid := cmd.Process.Pid
	if opts.Started != nil {
		opts.Started(pid)
	}

	stopSampling := make(chan struct{})
	var wg sync.WaitGroup
	hwm := map[string]int64{}
	if opts.SampleEvery > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(opts.SampleEvery)
			defer t.Stop()
			for {
				sampleDescendants(pid, hwm)
				select {
				case <-stopSampling:
					return
				case <-t.C:
				}
			}
		}()
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-waited
		close(stopSampling)
		wg.Wait()
		return nil, fmt.Errorf("%s: %w (process group %d killed)", filepath.Base(cmd.Path), ctx.Err(), pid)
	}
	wall := time.Since(start)
	close(stopSampling)
	wg.Wait()
	// Whatever the process left in its group (it should be nothing) goes too.
	_ = syscall.Kill(-pid, syscall.SIGKILL)

	res := &Result{Stdout: stdout.String(), Stderr: stderr.String(), Wall: wall, DescendantHWMKiB: hwm}
	if st := cmd.ProcessState; st != nil {
		res.ExitCode = st.ExitCode()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSSKiB = ru.Maxrss
			res.UserCPU = time.Duration(ru.Utime.Nano())
			res.SysCPU = time.Duration(ru.Stime.Nano())
		}
	}
	var exitErr *exec.ExitError
	if werr != nil && !errors.As(werr, &exitErr) {
		return res, fmt.Errorf("waiting for %s: %w", cmd.Path, werr)
	}
	return res, nil
}

// sampleDescendants records the VmHWM of every live descendant of pid.
func sampleDescendants(pid int, hwm map[string]int64) {
	for _, c := range descendants(pid) {
		name, kib, ok := procHWM(c)
		if ok && kib > hwm[name] {
			hwm[name] = kib
		}
	}
}

// descendants walks /proc/<pid>/task/*/children (Linux ≥ 3.5 with
// CONFIG_PROC_CHILDREN); it returns nothing where that is unavailable.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, s := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(s); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// procHWM reads a process's executable name (argv[0] base, which unlike
// comm is not cut at 15 bytes) and VmHWM in KiB.
func procHWM(pid int) (string, int64, bool) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return "", 0, false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", 0, false
	}
	kib, ok := ParseVmHWM(string(status))
	return filepath.Base(string(argv0)), kib, ok
}

// ParseVmHWM extracts the VmHWM line ("VmHWM:    1234 kB") of a
// /proc/<pid>/status text, in KiB.
func ParseVmHWM(status string) (int64, bool) {
	for _, l := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(l, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Median of xs (mean of the middle two for an even count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	for i := 1; i < len(s); i++ { // insertion sort: a handful of samples
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// ProcessCPU is the user+sys CPU time a live process has used so far, from
// /proc/<pid>/stat; ppid is its parent and exe its executable's base name.
func ProcessCPU(pid int) (cpu time.Duration, ppid int, exe string, err error) {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, "", err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state ppid ... utime (14th field) stime (15th).
	i := bytes.LastIndexByte(st, ')')
	if i < 0 {
		return 0, 0, "", fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(st[i+1:]))
	if len(f) < 13 {
		return 0, 0, "", fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stt, _ := strconv.ParseInt(f[12], 10, 64)
	if l, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		exe = filepath.Base(l)
	}
	return time.Duration(ut+stt) * time.Second / clockTicks, ppid, exe, nil
}

// ChildrenCPU sums ProcessCPU over the live children of pid by executable
// base name (a plugin host's plugins, say).
func ChildrenCPU(pid int) map[string]time.Duration {
	out := map[string]time.Duration{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cpu, ppid, exe, err := ProcessCPU(c); err == nil && ppid == pid {
			out[exe] += cpu
		}
	}
	return out
}
