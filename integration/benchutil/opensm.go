package benchutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// UMAD2SimPaths are where Debian's libumad2sim0 puts the preload library
// that sends OpenSM's umad traffic to ibsim.
var UMAD2SimPaths = []string{
	"/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so",
	"/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so",
	"/usr/lib/umad2sim/libumad2sim.so",
}

// OpenSMTools locates ibsim, opensm and libumad2sim.so. The error says what
// is missing and how to install it.
func OpenSMTools() (ibsim, opensm, preload string, err error) {
	var missing []string
	if ibsim, err = exec.LookPath("ibsim"); err != nil {
		missing = append(missing, "ibsim (Debian package ibsim-utils)")
	}
	if opensm, err = exec.LookPath("opensm"); err != nil {
		// Debian installs it in /usr/sbin, often not on a user's PATH.
		if _, serr := os.Stat("/usr/sbin/opensm"); serr == nil {
			opensm, err = "/usr/sbin/opensm", nil
		} else {
			missing = append(missing, "opensm (Debian package opensm)")
		}
	}
	for _, p := range UMAD2SimPaths {
		if _, serr := os.Stat(p); serr == nil {
			preload = p
			break
		}
	}
	if preload == "" {
		missing = append(missing, "libumad2sim.so (Debian package libumad2sim0)")
	}
	if len(missing) > 0 {
		return "", "", "", fmt.Errorf("missing %s; run integration/setup.sh as root", strings.Join(missing, ", "))
	}
	return ibsim, opensm, preload, nil
}

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

// IBSim is a running ibsim with a private socket name.
type IBSim struct {
	Sockname string
	cmd      *exec.Cmd
	waited   chan struct{}
	log      *os.File
}

// StartIBSim starts ibsim on netFile with a socket name no other simulator
// on this machine uses, and returns once it reports that it is ready. Its
// output goes to dir/ibsim.log. Call Stop, also on failure paths.
func StartIBSim(ctx context.Context, ibsimPath, netFile, dir string, ready time.Duration) (*IBSim, error) {
	flags, err := IBSimFlags(netFile)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "ibsim.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// Abstract socket names are per network namespace; pid+time makes them
	// unique among concurrent benchmark runs.
	sock := fmt.Sprintf("ibsmbench%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	args := append([]string{"-s", "-n"}, flags...)
	args = append(args, netFile)
	cmd := exec.Command(ibsimPath, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+sock)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("starting ibsim: %w", err)
	}
	s := &IBSim{Sockname: sock, cmd: cmd, waited: make(chan struct{}), log: lf}
	go func() { cmd.Wait(); close(s.waited) }()

	deadline := time.Now().Add(ready)
	for {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), "Network simulator ready") {
			return s, nil
		}
		select {
		case <-s.waited:
			s.Stop()
			return nil, fmt.Errorf("ibsim exited before it was ready; its output:\n%s", tailLines(string(b), 20))
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("ibsim not ready after %s; its output:\n%s", ready, tailLines(string(b), 20))
		}
	}
}

// Stop kills ibsim's process group and waits for it. Safe to call twice.
func (s *IBSim) Stop() {
	if s == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.waited
	s.log.Close()
}

// OpenSMRun is one `opensm --once` bring-up and what its log says.
type OpenSMRun struct {
	Result *Result
	Phases OpenSMPhases
}

// RunOpenSM brings the fabric behind sim up once with `opensm -o` and the
// given routing engine, keeping every file it writes (guid2lid cache, log,
// dumps) in dir: OSM_CACHE_DIR and OSM_TMP_DIR point there, so it never
// reads another run's cached LIDs. The flags are those of the experiments
// in the OpenSM reference notes, with log level ERROR|INFO only (no routing
// dumps, which would add file writing to the measured time).
func RunOpenSM(ctx context.Context, opensmPath, preload string, sim *IBSim, engine, dir string) (*OpenSMRun, error) {
	logPath := filepath.Join(dir, "osm.log")
	cmd := exec.Command(opensmPath, "-o", "-D", "0x03", "-f", logPath, "--dump_files_dir", dir, "-s", "0", "-R", engine)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"LD_PRELOAD="+preload,
		"IBSIM_SOCKNAME="+sim.Sockname,
		"OSM_CACHE_DIR="+dir,
		"OSM_TMP_DIR="+dir,
	)
	res, err := Run(ctx, cmd, RunOptions{})
	if err != nil {
		return nil, err
	}
	f, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("opensm wrote no log (exit %d): %w\n%s", res.ExitCode, err, tailLines(res.Stdout+res.Stderr, 20))
	}
	defer f.Close()
	ph, err := ParseOpenSMLog(f)
	if err != nil {
		return nil, fmt.Errorf("opensm log %s: %w", logPath, err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("opensm exited %d after SUBNET UP; see %s", res.ExitCode, logPath)
	}
	return &OpenSMRun{Result: res, Phases: ph}, nil
}

// OpenSMPhases are the times between OpenSM's state and progress log lines.
// They do not cut the work where ibsm's phases do: OpenSM assigns LIDs
// (PortInfo Sets) after MASTER and queues LFT blocks while routing, so
// Routing here includes LID programming and part of LFT distribution.
type OpenSMPhases struct {
	// Discovery: "Entering DISCOVERING state" to "Entering MASTER state".
	Discovery time.Duration
	// Routing: MASTER to "<engine> tables configured on all switches".
	Routing time.Duration
	// Distribution: tables configured to "SUBNET UP" (MAD queue drained).
	Distribution time.Duration
	// SubnetUp: DISCOVERING to SUBNET UP.
	SubnetUp time.Duration
	// Engine is the engine named in the "tables configured" line; OpenSM
	// names the engine that actually ran, so a silent fallback shows here.
	Engine string
}

var reOSMLine = regexp.MustCompile(`^(\w{3}\s+\d{1,2} \d{2}:\d{2}:\d{2}) (\d{6}) \[[0-9A-Fa-f]+\] 0x[0-9A-Fa-f]{2} -> (.*)$`)
var reOSMTables = regexp.MustCompile(`osm_ucast_mgr_process: (\S+) tables configured on all switches`)

// ParseOpenSMLog reads an OpenSM log (format "Mon DD HH:MM:SS usecs [tid]
// 0xLL -> msg") up to the first SUBNET UP.
func ParseOpenSMLog(r io.Reader) (OpenSMPhases, error) {
	var ph OpenSMPhases
	var disc, master, tables, up time.Time
	var prev time.Time
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := reOSMLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		t, err := time.Parse("Jan _2 15:04:05", strings.Join(strings.Fields(m[1]), " "))
		if err != nil {
			return ph, fmt.Errorf("timestamp %q: %w", m[1], err)
		}
		var us int
		fmt.Sscanf(m[2], "%d", &us)
		t = t.Add(time.Duration(us) * time.Microsecond)
		// The log has no year: a run across New Year wraps to Jan 1 of
		// year 0; keep time monotonic by carrying a year forward.
		for !prev.IsZero() && t.Before(prev) && prev.Sub(t) > 24*time.Hour {
			t = t.AddDate(1, 0, 0)
		}
		prev = t
		msg := m[3]
		switch {
		case disc.IsZero() && strings.Contains(msg, "Entering DISCOVERING state"):
			disc = t
		case master.IsZero() && strings.Contains(msg, "Entering MASTER state"):
			master = t
		case tables.IsZero() && reOSMTables.MatchString(msg):
			tables = t
			ph.Engine = reOSMTables.FindStringSubmatch(msg)[1]
		case up.IsZero() && strings.HasSuffix(msg, "SUBNET UP"):
			up = t
		}
		if !up.IsZero() {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return ph, err
	}
	for _, c := range []struct {
		t    time.Time
		what string
	}{{disc, "Entering DISCOVERING state"}, {master, "Entering MASTER state"}, {tables, "tables configured on all switches"}, {up, "SUBNET UP"}} {
		if c.t.IsZero() {
			return ph, fmt.Errorf("no %q line (log level must include INFO, 0x02; did OpenSM reach SUBNET UP?)", c.what)
		}
	}
	ph.Discovery = master.Sub(disc)
	ph.Routing = tables.Sub(master)
	ph.Distribution = up.Sub(tables)
	ph.SubnetUp = up.Sub(disc)
	return ph, nil
}

func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
