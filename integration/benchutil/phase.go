package benchutil

import (
	"context"
	"errors"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk/topology"
)

// CPUSample is the user+sys CPU time so far of this process (a host run
// in-process) and of its live children by executable base name (its
// plugins).
type CPUSample struct {
	Self     time.Duration
	Children map[string]time.Duration
}

// SampleCPU samples this process and its children now.
func SampleCPU() CPUSample {
	s := CPUSample{Children: ChildrenCPU(os.Getpid())}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.Self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s
}

// Plugin is the CPU time of the children running ibsm-plugin-<name>.
func (s CPUSample) Plugin(name string) time.Duration { return s.Children["ibsm-plugin-"+name] }

// Total is this process plus every ibsm-plugin-* child.
func (s CPUSample) Total() time.Duration {
	t := s.Self
	for exe, c := range s.Children {
		if strings.HasPrefix(exe, "ibsm-plugin-") {
			t += c
		}
	}
	return t
}

// RoutingPhase is the routing phase of one plan as `ibsm run --once`
// reports it: from the SM's "routing" progress mark (route, LIDs, VLs,
// the host's verify and what the host does between them) to the plan's
// return, with the CPU sampled at both ends.
type RoutingPhase struct {
	Began, Ended  time.Time
	Before, After CPUSample
}

// Wall is the phase's wall time.
func (p RoutingPhase) Wall() time.Duration { return p.Ended.Sub(p.Began) }

// PlanTimed plans s's fabric once (discovery, then the pipeline, as `ibsm
// run --once` plans it) and times its routing phase. With profile set it
// writes a CPU profile of this process (the host's side; the plugins are
// not in it) over the phase to that file. topo is set when discovery
// worked, even if planning then failed.
func PlanTimed(ctx context.Context, s *sm.SM, profile string) (*topology.Topology, *pipeline.Result, RoutingPhase, error) {
	m := &phaseMark{profile: profile}
	s.SetProgress(m)
	_, topo, res, err := s.Plan(ctx)
	var p RoutingPhase
	p.Ended = time.Now()
	p.After = SampleCPU()
	if perr := m.stopProfile(); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return topo, res, p, err
	}
	m.mu.Lock()
	set := m.set
	p.Began, p.Before = m.began, m.at
	m.mu.Unlock()
	if !set {
		return topo, res, p, errors.New("the SM never announced its routing phase (did host/sm's progress phases change?)")
	}
	return topo, res, p, nil
}

// phaseMark notes the time and samples CPU when the routing phase starts,
// and starts the CPU profile there when profile names a file.
type phaseMark struct {
	mu      sync.Mutex
	at      CPUSample
	began   time.Time
	set     bool
	profile string
	prof    *os.File
	profErr error
}

func (m *phaseMark) Phase(name, _ string) {
	if name != "routing" {
		return
	}
	m.mu.Lock()
	if m.profile != "" && m.prof == nil {
		m.prof, m.profErr = os.Create(m.profile)
		if m.profErr == nil {
			if m.profErr = pprof.StartCPUProfile(m.prof); m.profErr != nil {
				m.prof.Close()
				m.prof = nil
			}
		}
	}
	m.mu.Unlock()
	began := time.Now()
	s := SampleCPU()
	m.mu.Lock()
	m.at, m.began, m.set = s, began, true
	m.mu.Unlock()
}

func (m *phaseMark) Count(string, int64, int64) {}

// stopProfile ends the phase's CPU profile, if one was started.
func (m *phaseMark) stopProfile() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prof == nil {
		return m.profErr
	}
	pprof.StopCPUProfile()
	err := m.prof.Close()
	m.prof = nil
	if err != nil {
		return err
	}
	return m.profErr
}

// LoadAvg is the 1-minute load average, -1 if /proc/loadavg cannot be
// read.
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
