package benchutil

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// UMAD2SimPaths are where Debian's libumad2sim0 puts the preload library
// that sends OpenSM's umad traffic to ibsim.
var UMAD2SimPaths = []string{
	"/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so",
	"/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so",
	"/usr/lib/umad2sim/libumad2sim.so",
}

// UMAD2Sim returns the first of UMAD2SimPaths that exists, or "" when
// libumad2sim0 is not installed (callers say what is missing).
func UMAD2Sim() string {
	for _, p := range UMAD2SimPaths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
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
	if preload = UMAD2Sim(); preload == "" {
		missing = append(missing, "libumad2sim.so (Debian package libumad2sim0)")
	}
	if len(missing) > 0 {
		return "", "", "", fmt.Errorf("missing %s; run integration/setup.sh as root", strings.Join(missing, ", "))
	}
	return ibsim, opensm, preload, nil
}

// OpenSMRun is one `opensm --once` bring-up and what its log says.
type OpenSMRun struct {
	Result *Result
	Phases OpenSMPhases
	// RouteCPU is OpenSM's user+sys CPU time between the log's routing
	// marks (see OpenSMOptions.CPUEvery); 0 when not sampled.
	RouteCPU time.Duration
	// Log is the path of OpenSM's log.
	Log string
}

// OpenSMOptions configure RunOpenSMWith.
type OpenSMOptions struct {
	// Engine is -R (routing engines, comma-separated fallbacks allowed).
	Engine string
	// Args follow -R Engine: -Q, --nue_max_num_vls N, --torus_config F ...
	Args []string
	// LogLevel is -D (default 0x03: ERROR|INFO; 0x07 adds VERBOSE, whose
	// "building routing with" line starts Phases.Build).
	LogLevel string
	// CPUEvery > 0 watches the log while OpenSM runs and samples its CPU
	// time when the routing starts ("building routing with" when logged,
	// else "Entering MASTER state") and when the tables are configured,
	// giving RouteCPU to within one interval of CPU. It adds -d 2: OpenSM
	// buffers its log, and a mark read late would count later work.
	CPUEvery time.Duration
}

// RunOpenSM brings the fabric behind sim up once with `opensm -o` and the
// given routing engine, keeping every file it writes (guid2lid cache, log,
// dumps) in dir: OSM_CACHE_DIR and OSM_TMP_DIR point there, so it never
// reads another run's cached LIDs. The flags are those of the experiments
// in the OpenSM reference notes, with log level ERROR|INFO only (no routing
// dumps, which would add file writing to the measured time).
func RunOpenSM(ctx context.Context, opensmPath, preload string, sim *IBSim, engine, dir string) (*OpenSMRun, error) {
	return RunOpenSMWith(ctx, opensmPath, preload, sim, dir, OpenSMOptions{Engine: engine})
}

// RunOpenSMWith is RunOpenSM with engine options and CPU sampling.
func RunOpenSMWith(ctx context.Context, opensmPath, preload string, sim *IBSim, dir string, o OpenSMOptions) (*OpenSMRun, error) {
	if o.LogLevel == "" {
		o.LogLevel = "0x03"
	}
	logPath := filepath.Join(dir, "osm.log")
	args := []string{"-o", "-D", o.LogLevel, "-f", logPath, "--dump_files_dir", dir, "-s", "0", "-R", o.Engine}
	if o.CPUEvery > 0 {
		args = append(args, "-d", "2")
	}
	args = append(args, o.Args...)
	cmd := exec.Command(opensmPath, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"LD_PRELOAD="+preload,
		"IBSIM_SOCKNAME="+sim.Sockname,
		"OSM_CACHE_DIR="+dir,
		"OSM_TMP_DIR="+dir,
	)
	var w *routeCPUWatch
	var ro RunOptions
	if o.CPUEvery > 0 {
		w = &routeCPUWatch{log: logPath, every: o.CPUEvery, done: make(chan struct{}), stopped: make(chan struct{})}
		ro.Started = func(pid int) { go w.run(pid) }
	}
	res, err := Run(ctx, cmd, ro)
	var routeCPU time.Duration
	if w != nil {
		routeCPU = w.stop()
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("opensm wrote no log (exit %d): %w\n%s", res.ExitCode, err, TailLines(res.Stdout+res.Stderr, 20))
	}
	defer f.Close()
	ph, err := ParseOpenSMLog(f)
	if err != nil {
		return nil, fmt.Errorf("opensm log %s: %w", logPath, err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("opensm exited %d after SUBNET UP; see %s", res.ExitCode, logPath)
	}
	return &OpenSMRun{Result: res, Phases: ph, RouteCPU: routeCPU, Log: logPath}, nil
}

// routeCPUWatch follows a growing OpenSM log and samples the process's CPU
// time when the routing marks appear.
type routeCPUWatch struct {
	log           string
	every         time.Duration
	done, stopped chan struct{}
	start, end    time.Duration
	seen          int // marks seen: 0, 1 (start) or 2 (end)
}

func (w *routeCPUWatch) run(pid int) {
	defer close(w.stopped)
	var off int64
	var pending []byte
	t := time.NewTicker(w.every)
	defer t.Stop()
	for w.seen < 2 {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		f, err := os.Open(w.log)
		if err != nil {
			continue
		}
		buf, _ := io.ReadAll(io.NewSectionReader(f, off, 1<<40))
		f.Close()
		off += int64(len(buf))
		pending = append(pending, buf...)
		cut := bytes.LastIndexByte(pending, '\n') + 1
		if cut == 0 {
			continue
		}
		cpu, _, _, err := ProcessCPU(pid)
		if err != nil {
			return // exited
		}
		w.scan(pending[:cut], cpu)
		pending = append(pending[:0], pending[cut:]...)
	}
}

// scan moves the watch along the marks in lines (whole log lines read by
// one poll, when the process had used cpu).
func (w *routeCPUWatch) scan(lines []byte, cpu time.Duration) {
	for _, l := range bytes.Split(lines, []byte("\n")) {
		switch {
		case w.seen >= 2:
			return
		case bytes.Contains(l, []byte("tables configured on all switches")) && w.seen == 1:
			w.end, w.seen = cpu, 2
		// A VERBOSE log has both start marks; the later one counts.
		case bytes.Contains(l, []byte("Entering MASTER state")), bytes.Contains(l, []byte("building routing with")):
			w.start, w.seen = cpu, 1
		}
	}
}

// stop ends the watch and returns the routing CPU time (0 if either mark
// was missed).
func (w *routeCPUWatch) stop() time.Duration {
	close(w.done)
	<-w.stopped
	if w.seen < 2 {
		return 0
	}
	return w.end - w.start
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
	// Build: "building routing with" (a VERBOSE line, -D 0x07) to the
	// tables configured, the notes' route_s; 0 when not logged.
	Build time.Duration
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
	var disc, master, build, tables, up time.Time
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
		case tables.IsZero() && strings.Contains(msg, "building routing with"):
			build = t
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
	if !build.IsZero() {
		ph.Build = tables.Sub(build)
	}
	ph.Distribution = up.Sub(tables)
	ph.SubnetUp = up.Sub(disc)
	return ph, nil
}

// TailLines returns the last n lines of s (all of it when shorter), for
// error messages quoting a tool's output.
func TailLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
