// Package sm is the subnet manager's sweep loop: heavy sweeps (discover,
// plan, program), light sweeps (poll switches for port state changes) and
// trap handling, with the phase times and SMP counts reported at SUBNET UP.
package sm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/lidstore"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// Options configure an SM.
type Options struct {
	LMC           uint8
	SweepInterval time.Duration
	// LIDFile is where port GUID → LID persists ("" = not persisted).
	LIDFile string
	// Parallel bounds SMP-issuing goroutines in discovery and programming.
	Parallel int
}

// Agent answers the requests other nodes address to the SM (SA queries,
// SMInfo). Handle runs on its own goroutine, concurrently with sweeps.
type Agent interface {
	// Handle answers p if it is a request for the agent and reports whether
	// it was one.
	Handle(ctx context.Context, p transport.Packet) bool
}

// SM drives one subnet.
type SM struct {
	T    transport.Transport
	Pipe *pipeline.Runner
	Opts Options
	Log  hclog.Logger
	// Agent, when set, answers SA and SMInfo requests while Run sweeps.
	Agent Agent

	client *mad.Client
	disc   *discovery.Discoverer
	prog   *program.Programmer

	mu      sync.Mutex
	fabric  *discovery.Fabric
	applied *Applied
}

// Applied is the plan currently programmed.
type Applied struct {
	Topo   *topology.Topology
	Result *pipeline.Result
	At     time.Time
}

// Phase is the time and SMPs one phase took.
type Phase struct {
	Time time.Duration
	Gets uint64
	Sets uint64
}

// Report describes one heavy sweep.
type Report struct {
	Discovery, Routing, Distribution Phase
	Total                            time.Duration
	Nodes, Switches, CAs, Links      int
	// Rerouted is false when the fabric and config were unchanged and the
	// plan in force was kept (no plugin call, no Set).
	Rerouted    bool
	Engine      string
	PluginCalls int
	// Stages splits the routing phase (cached stages take ~0).
	Stages   pipeline.Timings
	Program  program.Stats
	Warnings []string
	Retries  uint64
	Timeouts uint64
	Attempts []pipeline.Attempt
}

// New wires an SM.
func New(t transport.Transport, pipe *pipeline.Runner, opts Options, log hclog.Logger) *SM {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := &mad.Client{T: t}
	return &SM{
		T: t, Pipe: pipe, Opts: opts, Log: log,
		client: c,
		disc:   &discovery.Discoverer{C: c, Log: log.Named("discovery"), Parallel: opts.Parallel},
		prog:   &program.Programmer{C: c, Log: log.Named("program"), Parallel: opts.Parallel},
	}
}

// Reconfigure swaps in a new pipeline and LMC; the next heavy sweep uses
// them. Stage results of unchanged plugins stay cached.
func (s *SM) Reconfigure(p *pipeline.Runner, lmc uint8) {
	s.mu.Lock()
	s.Pipe, s.Opts.LMC = p, lmc
	s.mu.Unlock()
}

func (s *SM) pipe() (*pipeline.Runner, uint8) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Pipe, s.Opts.LMC
}

// Applied returns the plan in force (nil before the first SUBNET UP).
func (s *SM) Applied() *Applied {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// Fabric returns the last discovered fabric.
func (s *SM) Fabric() *discovery.Fabric {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fabric
}

func delta(a, b transport.Stats) (gets, sets uint64) { return b.Gets - a.Gets, b.Sets - a.Sets }

// Plan discovers the fabric and computes a verified plan without
// programming anything (ibsm verify / dump).
func (s *SM) Plan(ctx context.Context) (*discovery.Fabric, *topology.Topology, *pipeline.Result, error) {
	fab, topo, err := s.discover(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	res, _, err := s.plan(ctx, topo)
	return fab, topo, res, err
}

// discover walks the fabric and cuts its snapshot.
func (s *SM) discover(ctx context.Context) (*discovery.Fabric, *topology.Topology, error) {
	fab, err := s.disc.Run(ctx)
	if err != nil {
		return nil, nil, err
	}
	topo, err := fab.Topology()
	if err != nil {
		return nil, nil, fmt.Errorf("discovered fabric is inconsistent: %w", err)
	}
	return fab, topo, nil
}

// plan runs the pipeline on topo with the persisted LIDs; it also returns
// how many plugin calls that took.
func (s *SM) plan(ctx context.Context, topo *topology.Topology) (*pipeline.Result, int, error) {
	prev, err := s.previousLIDs()
	if err != nil {
		return nil, 0, err
	}
	pipe, lmc := s.pipe()
	calls0 := pipe.Calls()
	res, err := pipe.Run(ctx, pipeline.Input{Topo: topo, LMC: lmc, Previous: prev})
	return res, int(pipe.Calls() - calls0), err
}

func (s *SM) previousLIDs() (map[uint64]uint16, error) {
	if s.Opts.LIDFile == "" {
		return nil, nil
	}
	m, err := lidstore.Load(s.Opts.LIDFile)
	if err != nil {
		return nil, fmt.Errorf("LID file: %w (fix or remove it; ports without an entry get new LIDs)", err)
	}
	prev := make(map[uint64]uint16, len(m))
	for g, r := range m {
		prev[g] = r.Min
	}
	return prev, nil
}

// HeavySweep discovers the fabric and, if it or the plan inputs changed,
// computes, verifies and programs a new plan. On any planning error the
// plan in force stays programmed and the error is returned.
func (s *SM) HeavySweep(ctx context.Context) (*Report, error) {
	rep := &Report{}
	start := time.Now()
	st0 := s.T.Stats()
	fab, topo, err := s.discover(ctx)
	if err != nil {
		return nil, err
	}
	st1 := s.T.Stats()
	rep.Discovery = Phase{Time: time.Since(start)}
	rep.Discovery.Gets, rep.Discovery.Sets = delta(st0, st1)
	rep.Warnings = fab.Warnings
	countTopo(rep, topo)
	s.mu.Lock()
	s.fabric = fab
	cur := s.applied
	s.mu.Unlock()

	t1 := time.Now()
	res, calls, err := s.plan(ctx, topo)
	rep.Routing = Phase{Time: time.Since(t1)}
	rep.PluginCalls = calls
	if err != nil {
		var pe *pipeline.PlanError
		if errors.As(err, &pe) {
			rep.Attempts = pe.Attempts
		}
		return rep, err
	}
	rep.Engine = res.Engine
	rep.Attempts = res.Attempts
	rep.Stages = res.Timings
	if cur != nil && cur.Result.Key == res.Key && !needsStateChange(fab) {
		// Unchanged plan (its key covers the topology hash): nothing to send.
		rep.Total = time.Since(start)
		s.finishStats(rep, st0)
		return rep, nil
	}
	rep.Rerouted = true
	t2 := time.Now()
	st2 := s.T.Stats()
	pst, err := s.prog.Apply(ctx, fab, topo, res.Realized, res.VLs)
	rep.Program = pst
	if err == nil {
		err = s.clearPortStateChange(ctx, fab)
	}
	st3 := s.T.Stats()
	rep.Distribution = Phase{Time: time.Since(t2)}
	rep.Distribution.Gets, rep.Distribution.Sets = delta(st2, st3)
	if err != nil {
		return rep, fmt.Errorf("programming the fabric: %w (the next sweep retries)", err)
	}
	if err := s.saveLIDs(topo, res); err != nil {
		s.Log.Error("could not persist LIDs", "file", s.Opts.LIDFile, "error", err)
	}
	s.mu.Lock()
	s.applied = &Applied{Topo: topo, Result: res, At: time.Now()}
	s.mu.Unlock()
	rep.Total = time.Since(start)
	s.finishStats(rep, st0)
	return rep, nil
}

func (s *SM) finishStats(rep *Report, st0 transport.Stats) {
	st := s.T.Stats()
	rep.Retries, rep.Timeouts = st.Retries-st0.Retries, st.Timeouts-st0.Timeouts
}

func countTopo(rep *Report, t *topology.Topology) {
	rep.Nodes = len(t.Nodes)
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if n.Type == topology.Switch {
			rep.Switches++
		} else {
			rep.CAs++
		}
		for p := 1; p < len(n.Ports); p++ {
			if pr := n.Ports[p].Peer; pr.Connected() && (pr.Node > int32(i) || (pr.Node == int32(i) && pr.Port > uint8(p))) {
				rep.Links++
			}
		}
	}
}

// needsStateChange reports whether some live link has a port not yet Active.
func needsStateChange(f *discovery.Fabric) bool {
	for _, n := range f.Nodes {
		for p := 1; p < len(n.Ports); p++ {
			pt := &n.Ports[p]
			if pt.Valid && pt.PeerGUID != 0 && pt.Info.PortState >= smp.PortStateInit && pt.Info.PortState < smp.PortStateActive {
				return true
			}
		}
	}
	return false
}

func (s *SM) saveLIDs(t *topology.Topology, res *pipeline.Result) error {
	if s.Opts.LIDFile == "" {
		return nil
	}
	m := map[uint64]lidstore.Range{}
	for i, ep := range t.Endpoints() {
		pl := res.LIDs.Ports[i]
		m[t.Port(ep).GUID] = lidstore.Range{Min: pl.Base, Max: pl.Base + uint16(pl.Count()) - 1}
	}
	return lidstore.Save(s.Opts.LIDFile, m)
}

// clearPortStateChange reads every switch's SwitchInfo and clears a set
// PortStateChange bit (write 1 to clear), so that the next light sweep sees
// only changes that happened after this sweep (our own port activations
// set the bit too).
func (s *SM) clearPortStateChange(ctx context.Context, fab *discovery.Fabric) error {
	_, err := s.pollSwitches(ctx, fab, true)
	return err
}

// pollSwitches Gets SwitchInfo of every switch; it reports whether any had
// PortStateChange set (or did not answer) and clears the bit if asked.
func (s *SM) pollSwitches(ctx context.Context, fab *discovery.Fabric, clear bool) (bool, error) {
	var changed atomic.Bool
	g := fanout.New(s.Opts.Parallel)
	for guid, n := range fab.Nodes {
		if n.Info.NodeType != smp.NodeTypeSwitch {
			continue
		}
		g.Go(func() error {
			var si smp.SwitchInfo
			if err := s.client.Get(ctx, n.Path, smp.AttrSwitchInfo, 0, &si); err != nil {
				changed.Store(true)
				return fmt.Errorf("switch 0x%016x: %w", guid, err)
			}
			if !si.PortStateChange {
				return nil
			}
			changed.Store(true)
			if !clear {
				return nil
			}
			if err := s.client.Set(ctx, n.Path, smp.AttrSwitchInfo, 0, &si, nil); err != nil {
				return fmt.Errorf("switch 0x%016x: clearing PortStateChange: %w", guid, err)
			}
			return nil
		})
	}
	err := g.Wait("polling SwitchInfo")
	return changed.Load(), err
}

// LightSweep polls every switch for port state changes. It reports whether
// a heavy sweep is needed.
func (s *SM) LightSweep(ctx context.Context) (bool, error) {
	fab := s.Fabric()
	if fab == nil || s.Applied() == nil {
		return true, nil
	}
	changed, err := s.pollSwitches(ctx, fab, false)
	if err != nil {
		s.Log.Info("light sweep: a switch did not answer; re-discovering", "error", err)
		return true, nil
	}
	return changed, nil
}

// Run sweeps until ctx is done: a heavy sweep first, then light sweeps every
// SweepInterval; a change, a trap or Trigger() starts a heavy sweep. Heavy
// sweep failures are logged and retried at the next interval.
func (s *SM) Run(ctx context.Context, trigger <-chan struct{}, onSweep func(*Report, error)) error {
	interval := s.Opts.SweepInterval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	heavy := true
	tick := time.NewTicker(interval)
	defer tick.Stop()
	traps := s.demux(ctx)
	for {
		if heavy {
			rep, err := s.HeavySweep(ctx)
			if onSweep != nil {
				onSweep(rep, err)
			}
			heavy = err != nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
			heavy = true
		case pkt, ok := <-traps:
			if !ok {
				traps = nil // transport closed: stop selecting on it
				continue
			}
			heavy = s.handleUnsolicited(pkt) || heavy
		case <-tick.C:
			if !heavy {
				changed, err := s.LightSweep(ctx)
				if err != nil {
					s.Log.Warn("light sweep failed", "error", err)
				}
				heavy = changed
			}
		}
	}
}

// demux reads unsolicited MADs: traps go to the sweep loop, everything else
// to the Agent, so SA queries are answered while a heavy sweep runs.
func (s *SM) demux(ctx context.Context) <-chan transport.Packet {
	traps := make(chan transport.Packet, 64)
	in := s.T.Unsolicited()
	go func() {
		defer close(traps)
		for {
			select {
			case <-ctx.Done():
				return
			case p, ok := <-in:
				if !ok {
					return
				}
				if len(p.MAD) >= smp.MADLen && smp.PeekMethod(p.MAD) == smp.MethodTrap {
					select {
					case traps <- p:
					case <-ctx.Done():
						return
					}
					continue
				}
				if s.Agent == nil || !s.Agent.Handle(ctx, p) {
					s.Log.Debug("unsolicited MAD ignored", "slid", p.SLID, "len", len(p.MAD))
				}
			}
		}
	}()
	return traps
}

// handleUnsolicited answers traps with TrapRepress and reports whether the
// trap calls for a heavy sweep.
func (s *SM) handleUnsolicited(p transport.Packet) bool {
	if len(p.MAD) < smp.MADLen || smp.PeekMethod(p.MAD) != smp.MethodTrap {
		return false
	}
	var req smp.SMP
	if err := req.Decode(p.MAD); err != nil {
		s.Log.Warn("malformed trap ignored", "error", err)
		return false
	}
	rep := req
	rep.Method = smp.MethodTrapRepress
	buf := make([]byte, smp.MADLen)
	if err := rep.EncodeTo(buf); err == nil {
		if err := s.T.Send(transport.Packet{DLID: p.SLID, MAD: buf}); err != nil {
			s.Log.Warn("TrapRepress not sent", "error", err)
		}
	}
	s.Log.Info("trap received; re-sweeping", "from_lid", p.SLID, "attr", fmt.Sprintf("%#04x", req.AttrID))
	return true
}
