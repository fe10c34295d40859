// Package metrics keeps what the daemon has done (sweeps, traps, errors)
// for `ibsm status` and exports it, with the state of the App, as
// Prometheus metrics. Both read the one Recorder, so the control socket
// and the scrape endpoint never disagree.
package metrics

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/transport"
)

// RecentTraps is how many traps the Recorder keeps for status.
const RecentTraps = 32

// Sweep is one heavy or incremental sweep as status shows it.
type Sweep struct {
	At     time.Time  `json:"at"`
	Kind   string     `json:"kind"` // "heavy" or "incremental"
	Report *sm.Report `json:"report,omitempty"`
	Error  string     `json:"error,omitempty"`
}

// Light is the last light sweep.
type Light struct {
	At    time.Time     `json:"at"`
	Took  time.Duration `json:"took_ns"`
	SMPs  uint64        `json:"smps"`
	Error string        `json:"error,omitempty"`
}

// Trap is one trap the SM received.
type Trap struct {
	At      time.Time `json:"at"`
	Number  uint16    `json:"number"`
	FromLID uint16    `json:"from_lid"`
}

// Counts are the Recorder's counters since the daemon started.
type Counts struct {
	HeavySweeps, HeavyFailures             uint64
	IncrementalSweeps, IncrementalFailures uint64
	LightSweeps, LightFailures             uint64
	Reroutes                               uint64
	Traps                                  map[uint16]uint64
	PluginFailures                         map[string]uint64
}

// Recorder hears the sweep loop (sm.Observer, and Sweep for Run's
// onSweep) and keeps what status and metrics report. Safe for concurrent
// use.
type Recorder struct {
	mu          sync.Mutex
	heavy, incr *Sweep
	light       *Light
	traps       []Trap // ring, newest at (next-1) mod len
	next        int
	counts      Counts
	prom        *promSet      // nil until Register
	swept       chan struct{} // closed and replaced at every sweep
}

var _ sm.Observer = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{counts: Counts{Traps: map[uint16]uint64{}, PluginFailures: map[string]uint64{}}, swept: make(chan struct{})}
}

// Sweep records a heavy or incremental sweep's outcome (Run's onSweep).
func (r *Recorder) Sweep(rep *sm.Report, err error) {
	now := time.Now()
	s := &Sweep{At: now, Kind: "heavy", Report: rep}
	if rep != nil && rep.Incremental {
		s.Kind = "incremental"
	}
	if err != nil {
		s.Error = err.Error()
	}
	r.mu.Lock()
	switch s.Kind {
	case "heavy":
		r.heavy = s
		r.counts.HeavySweeps++
		if err != nil {
			r.counts.HeavyFailures++
		}
	default:
		r.incr = s
		r.counts.IncrementalSweeps++
		if err != nil {
			r.counts.IncrementalFailures++
		}
	}
	if rep != nil && rep.Rerouted && err == nil {
		r.counts.Reroutes++
	}
	close(r.swept)
	r.swept = make(chan struct{})
	p := r.prom
	r.mu.Unlock()
	if p != nil {
		p.sweep(s)
	}
}

// LightSweep implements sm.Observer.
func (r *Recorder) LightSweep(took time.Duration, smps uint64, err error) {
	l := &Light{At: time.Now(), Took: took, SMPs: smps}
	if err != nil {
		l.Error = err.Error()
	}
	r.mu.Lock()
	r.light = l
	r.counts.LightSweeps++
	if err != nil {
		r.counts.LightFailures++
	}
	p := r.prom
	r.mu.Unlock()
	if p != nil {
		p.lightSweep(took, err)
	}
}

// Trap implements sm.Observer.
func (r *Recorder) Trap(number, fromLID uint16) {
	t := Trap{At: time.Now(), Number: number, FromLID: fromLID}
	r.mu.Lock()
	if len(r.traps) < RecentTraps {
		r.traps = append(r.traps, t)
	} else {
		r.traps[r.next] = t
	}
	r.next = (r.next + 1) % RecentTraps
	r.counts.Traps[number]++
	p := r.prom
	r.mu.Unlock()
	if p != nil {
		p.trap(number)
	}
}

// Started is when a sweep began (its end less its duration).
func (s *Sweep) Started() time.Time {
	if s.Report == nil {
		return s.At
	}
	return s.At.Add(-s.Report.Total)
}

// WaitHeavy waits for a heavy sweep that started at or after since.
func (r *Recorder) WaitHeavy(ctx context.Context, since time.Time) (*Sweep, error) {
	for {
		r.mu.Lock()
		h, ch := r.heavy, r.swept
		r.mu.Unlock()
		if h != nil && !h.Started().Before(since) {
			return h, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// Last returns the last heavy and incremental sweeps and the last light
// sweep (nil where there was none).
func (r *Recorder) Last() (heavy, incremental *Sweep, light *Light) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.heavy, r.incr, r.light
}

// Traps returns the recent traps, oldest first.
func (r *Recorder) Traps() []Trap {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Trap, 0, len(r.traps))
	if len(r.traps) < RecentTraps {
		return append(out, r.traps...)
	}
	out = append(out, r.traps[r.next:]...)
	return append(out, r.traps[:r.next]...)
}

// Counts returns a copy of the counters.
func (r *Recorder) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.counts
	c.Traps = maps.Clone(r.counts.Traps)
	c.PluginFailures = maps.Clone(r.counts.PluginFailures)
	return c
}

// PluginFailures is how many calls to the named plugin failed.
func (r *Recorder) PluginFailures(name string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts.PluginFailures[name]
}

// PluginCall records one plugin call (app.Hooks.PluginCall).
func (r *Recorder) PluginCall(plugin, method string, took time.Duration, err error) {
	r.mu.Lock()
	if err != nil {
		r.counts.PluginFailures[plugin]++
	}
	p := r.prom
	r.mu.Unlock()
	if p != nil {
		p.pluginCall(plugin, method, took, err)
	}
}

// MAD records one MAD event (app.Hooks.MAD).
func (r *Recorder) MAD(ev transport.MADEvent, class uint8, attr uint16) {
	r.mu.Lock()
	p := r.prom
	r.mu.Unlock()
	if p != nil {
		p.mad(ev, class, attr)
	}
}

// Hooks are the App hooks that feed this Recorder.
func (r *Recorder) Hooks() *app.Hooks {
	return &app.Hooks{MAD: r.MAD, PluginCall: r.PluginCall, SAQuery: r.SAQuery}
}

// SAQuery records one SA answer (app.Hooks.SAQuery).
func (r *Recorder) SAQuery(attr uint16, method uint8, status uint16) {
	r.mu.Lock()
	p := r.prom
	r.mu.Unlock()
	if p != nil {
		p.saQuery(attr, status)
	}
}
