// Command linkdown measures issue 16's row "one link down → reprogrammed":
// it brings a full 3-level fat tree up on the embedded fabric through the
// host's own code (host/app, the real plugin binaries), then takes one
// cable down and times what the sweep loop does about it — the light sweep
// that notices, the incremental sweep that re-discovers, re-routes and
// re-programs — and the same when the cable comes back. See README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/sim"
)

type options struct {
	bin, out, engine, via, log, cpuProfile string
	engineConfig                           []string
	radixes                                []int
	runs                                   int
	profile                                *profile // set by run when -cpuprofile is
	// cables: the cable kinds to take down ("kind/first" or "kind/last");
	// nil: all four.
	cables map[string]bool
}

func main() {
	var o options
	radixes := flag.String("radix", "24,36", "switch radixes of the full 3-level fat trees")
	flag.StringVar(&o.bin, "bin", "bin", "directory of the ibsm-plugin-<name> binaries (make build)")
	flag.StringVar(&o.out, "out", filepath.Join(os.TempDir(), "linkdown"), "work directory")
	flag.StringVar(&o.engine, "engine", "sftree", "routing engine")
	flag.StringVar(&o.log, "log", "error", "the host's log level (to stderr): trace, debug, info, warn, error")
	flag.IntVar(&o.runs, "runs", 3, "down/up cycles per cable kind (medians are printed)")
	flag.Func("engine-config", `an attribute line of the engine's plugin block, e.g. 'subtree_root = "0x0002c90000000002"' (repeatable)`, func(v string) error {
		o.engineConfig = append(o.engineConfig, v)
		return nil
	})
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the host process for each event (from the cable's change to the end of the sweep that answers it) to this path with .1, .2 ... appended")
	cables := flag.String("cables", "", `the cables to take down, comma-separated, from leaf-aggregation/first, leaf-aggregation/last, aggregation-core/first, aggregation-core/last (default all)`)
	flag.StringVar(&o.via, "via", "trap", `how the SM learns of the change: "trap" (the switches' trap 128 reaches the running sweep loop) or "poll" (traps lost: the next light sweep finds it)`)
	flag.Parse()
	if o.via != "trap" && o.via != "poll" {
		fmt.Fprintf(os.Stderr, "linkdown: -via %q: want trap or poll\n", o.via)
		os.Exit(2)
	}
	if *cables != "" {
		o.cables = map[string]bool{}
		for _, c := range strings.Split(*cables, ",") {
			c = strings.TrimSpace(c)
			if !knownCables[c] {
				fmt.Fprintf(os.Stderr, "linkdown: -cables: unknown cable %q: want leaf-aggregation/first, leaf-aggregation/last, aggregation-core/first or aggregation-core/last\n", c)
				os.Exit(2)
			}
			o.cables[c] = true
		}
	}
	for _, s := range strings.Split(*radixes, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || r < 4 || r%2 != 0 {
			fmt.Fprintf(os.Stderr, "linkdown: -radix %q: want even radixes of at least 4, e.g. 24,36\n", *radixes)
			os.Exit(2)
		}
		o.radixes = append(o.radixes, r)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "linkdown:", err)
		os.Exit(1)
	}
}

var knownCables = map[string]bool{"leaf-aggregation/first": true, "leaf-aggregation/last": true, "aggregation-core/first": true, "aggregation-core/last": true}

// sample is one reaction to one cable going down or up.
type sample struct {
	// total runs from the change to the end of the sweep that answered
	// it; sweep is that sweep's own time (the rest came before it: the
	// trap's delivery and coalescing, or the light sweep).
	total, sweep, light, disc, route, dist, parts time.Duration
	// stages: the routing phase's route call, LID call, VL call and the
	// check after it (pipeline.Timings).
	stages       pipeline.Timings
	sent, blocks int64
	incremental  bool
	fallback     string
	traps        int // the traps the sweep answered (0: a light sweep found the change)
	start        time.Time
	// lights: the periodic light sweeps that ran between the change and
	// the sweep that answered it (the loop answers traps between them),
	// lightTime their time.
	lights    int
	lightTime time.Duration
	audited   uint64 // audit reads from the change to the end of the sweep
	// trapsSent, trapsLost: the embedded fabric's traps delivered to the
	// SM and lost (no route, the SM's queue full) meanwhile.
	trapsSent, trapsLost uint64
	// failed counts the sweeps after the change that failed before one
	// succeeded (the loop retries them).
	failed int
}

func run(o options) error {
	bin, err := benchutil.PluginDir(o.bin, "-bin", o.engine, "sequential", "single")
	if err != nil {
		return err
	}
	o.bin = bin
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	fmt.Printf("Via %s. Times are medians; \"reprogrammed\" runs from the cable's change to the end of the sweep that re-programmed the fabric.\n\n", o.via)
	fmt.Println("| fabric | cable | event | runs | reprogrammed s | before the sweep s | light sweep s | re-discovery s | routing s (route / LIDs / VLs / check after) | distribution s | partitions s | rest of the sweep s | LFT blocks sent | of | share | incremental | failed sweeps first | load |")
	fmt.Println("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
	if o.cpuProfile != "" {
		o.profile = &profile{prefix: o.cpuProfile}
	}
	for _, r := range o.radixes {
		if err := fabric(o, r); err != nil {
			return fmt.Errorf("ft3-%d: %w", r, err)
		}
	}
	return nil
}

func fabric(o options, radix int) error {
	name := fmt.Sprintf("ft3-%d", radix)
	net, err := benchutil.WriteFatTree(o.out, radix)
	if err != nil {
		return err
	}
	state := filepath.Join(o.out, "state-"+name)
	if err := os.RemoveAll(state); err != nil {
		return err
	}
	defer os.RemoveAll(state)
	cfg := benchutil.Config{Topology: net, StateDir: state, BinDir: o.bin, Engine: o.engine, EngineConfig: o.engineConfig, PluginTimeout: "600s"}
	loaded, err := cfg.Load(filepath.Join(o.out, name+".hcl"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	a, err := app.New(ctx, loaded, hclog.New(&hclog.LoggerOptions{Name: "linkdown", Level: hclog.LevelFromString(o.log), Output: os.Stderr}))
	if err != nil {
		return err
	}
	defer a.Close()
	up := time.Now()
	react := func(fault func() error) (sample, error) { return poll(ctx, a.SM, fault) }
	if o.via == "trap" {
		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		reports := make(chan sweep, 16)
		lights := &lightLog{}
		a.SM.Observer = lights
		go a.SM.Run(runCtx, nil, func(rep *sm.Report, err error) { reports <- sweep{rep, err, time.Now()} })
		if sw := <-reports; sw.err != nil {
			return fmt.Errorf("bring-up: %w", sw.err)
		}
		react = func(fault func() error) (sample, error) {
			var audited uint64
			var st0 sim.Stats
			s, err := trapped(reports, func() error {
				audited, st0 = a.SM.AuditStats().Reads, a.Sim.Stats()
				return fault()
			})
			st := a.Sim.Stats()
			s.lights, s.lightTime = lights.between(s.start, s.start.Add(s.total-s.sweep))
			s.audited = a.SM.AuditStats().Reads - audited
			s.trapsSent, s.trapsLost = st.Traps-st0.Traps, st.TrapsLost-st0.TrapsLost
			return s, err
		}
	} else if _, err := a.SM.HeavySweep(ctx); err != nil {
		return fmt.Errorf("bring-up: %w", err)
	}
	fmt.Fprintf(os.Stderr, "%s up in %.1f s\n", name, time.Since(up).Seconds())
	topo, err := a.SM.Fabric().Topology()
	if err != nil {
		return err
	}
	// The first pod holds the leaf sftree's Algorithm 1 picks as the root
	// of the switch-to-switch routes; a cable there can move that root.
	for _, c := range []struct {
		kind string
		last bool
	}{{"leaf-aggregation", false}, {"leaf-aggregation", true}, {"aggregation-core", false}, {"aggregation-core", true}} {
		kind, where, flagName := c.kind, "first pod", c.kind+"/first"
		if c.last {
			where, flagName = "last pod", c.kind+"/last"
		}
		if o.cables != nil && !o.cables[flagName] {
			continue
		}
		var downs, ups []sample
		for i := 0; i < o.runs; i++ {
			// Another cable each run: every "down" is a fabric not seen
			// before (one seen before has its whole answer filed).
			guid, port, err := cable(topo, kind, i, c.last)
			if err != nil {
				return err
			}
			s, err := react(func() error { o.profile.start(); return a.Sim.LinkDown(guid, port) })
			o.profile.pause()
			if err != nil {
				return fmt.Errorf("%s cable down in the %s: %w", kind, where, err)
			}
			downs = append(downs, s)
			s.log(name, kind, where, "down")
			s, err = react(func() error { o.profile.start(); return a.Sim.LinkUp(guid, port) })
			o.profile.pause()
			if err != nil {
				return fmt.Errorf("%s cable up in the %s: %w", kind, where, err)
			}
			ups = append(ups, s)
			s.log(name, kind, where, "up")
		}
		row(o.via, name, kind+", "+where, "down", downs)
		row(o.via, name, kind+", "+where, "up", ups)
	}
	return nil
}

// cable picks the skip+1st cable of kind: a leaf's uplink, or an
// aggregation switch's uplink (to a switch with no CAs and no leaf below
// it), each from a different switch, counting from the first switch of the
// topology (the first pod) or, with last, from the last.
func cable(topo *topology.Topology, kind string, skip int, last bool) (uint64, uint8, error) {
	leaf := func(n int32) bool {
		for _, p := range topo.Nodes[n].Ports {
			if p.Peer.Connected() && topo.Nodes[p.Peer.Node].Type != topology.Switch {
				return true
			}
		}
		return false
	}
	sw := topo.Switches()
	for k := range sw {
		n := sw[k]
		if last {
			n = sw[len(sw)-1-k]
		}
		isLeaf := leaf(n)
		for p, port := range topo.Nodes[n].Ports {
			if p == 0 || !port.Peer.Connected() || topo.Nodes[port.Peer.Node].Type != topology.Switch {
				continue
			}
			peer := port.Peer.Node
			if (kind == "leaf-aggregation" && isLeaf) || (kind == "aggregation-core" && !isLeaf && !leaf(peer) && hasLeafBelow(topo, n, leaf)) {
				if skip == 0 {
					return topo.Nodes[n].GUID, uint8(p), nil
				}
				skip--
				break // the next cable from the next switch
			}
		}
	}
	return 0, 0, fmt.Errorf("no %s cable in this fabric", kind)
}

func hasLeafBelow(topo *topology.Topology, n int32, leaf func(int32) bool) bool {
	for _, p := range topo.Nodes[n].Ports {
		if p.Peer.Connected() && topo.Nodes[p.Peer.Node].Type == topology.Switch && leaf(p.Peer.Node) {
			return true
		}
	}
	return false
}

type sweep struct {
	rep *sm.Report
	err error
	at  time.Time // when the loop reported it
}

// trapped applies fault while the sweep loop runs and waits for the sweep
// that answers it (the switches trap; the loop coalesces the traps and
// sweeps incrementally). Sweeps that began before the fault (a periodic
// one still running) do not count; one that began after it and failed (a
// Set down the cable that just changed) is retried by the loop, and the
// time runs on to the sweep that succeeds.
func trapped(reports <-chan sweep, fault func() error) (sample, error) {
	// Cable events seconds apart, as an operator's are: wait until the
	// loop has been quiet for 1.5 s (it sweeps for traps at most every
	// TrapMinInterval, 0.5 s by default).
	for quiet := time.NewTimer(1500 * time.Millisecond); ; {
		select {
		case <-reports:
			quiet.Reset(1500 * time.Millisecond)
			continue
		case <-quiet.C:
		}
		break
	}
	start := time.Now()
	if err := fault(); err != nil {
		return sample{}, err
	}
	failed := 0
	deadline := time.After(10 * time.Minute)
	for {
		select {
		case sw := <-reports:
			if sw.rep != nil && sw.at.Add(-sw.rep.Total).Before(start) {
				continue // began before the fault
			}
			if sw.err != nil {
				if failed++; failed > 3 {
					return sample{}, fmt.Errorf("%d sweeps after the change failed, the last: %w", failed, sw.err)
				}
				continue
			}
			out := measured(sw.rep, sw.at.Sub(start))
			out.failed, out.start = failed, start
			return out, nil
		case <-deadline:
			return sample{}, fmt.Errorf("no sweep within 10 minutes")
		}
	}
}

// poll applies fault and runs what the sweep loop runs on its next tick
// when no trap arrived (sm.periodic): the light sweep, then the
// incremental sweep it calls for (or a heavy one where it asks for full
// re-discovery).
func poll(ctx context.Context, s *sm.SM, fault func() error) (sample, error) {
	if err := fault(); err != nil {
		return sample{}, err
	}
	start := time.Now()
	ch, full, err := s.LightSweepChanges(ctx)
	if err != nil {
		return sample{}, fmt.Errorf("light sweep: %w", err)
	}
	light := time.Since(start)
	var rep *sm.Report
	switch {
	case full != "":
		rep, err = s.HeavySweep(ctx)
		if rep != nil {
			rep.Fallback = full
		}
	case ch.Empty():
		return sample{}, fmt.Errorf("the light sweep saw no change")
	default:
		rep, err = s.IncrementalSweep(ctx, ch)
	}
	if err != nil {
		return sample{}, err
	}
	out := measured(rep, time.Since(start))
	out.light = light
	return out, nil
}

func measured(rep *sm.Report, total time.Duration) sample {
	return sample{
		total: total, sweep: rep.Total, disc: rep.Discovery.Time, route: rep.Routing.Time, dist: rep.Distribution.Time, parts: rep.Partitions.Time, stages: rep.Stages,
		sent: rep.Program.LFTBlocksSent, blocks: rep.Program.LFTBlocksTotal,
		incremental: rep.Incremental, fallback: rep.Fallback, traps: rep.Traps,
	}
}

// log writes one sample to stderr, for what the medians hide.
func (s sample) log(name, kind, where, event string) {
	fmt.Fprintf(os.Stderr, "%s %s, %s, %s: %.3f s (%.3f before the sweep, %d traps answered, %d delivered, %d lost, %d light sweeps %.3f s, %d audit reads), re-discovery %.3f, routing %.3f, distribution %.3f, partitions %.3f, rest %.3f\n",
		name, kind, where, event, s.total.Seconds(), (s.total - s.sweep - s.light).Seconds(), s.traps, s.trapsSent, s.trapsLost, s.lights, s.lightTime.Seconds(), s.audited, s.disc.Seconds(), s.route.Seconds(), s.dist.Seconds(), s.parts.Seconds(),
		(s.sweep - s.disc - s.route - s.dist - s.parts).Seconds())
}

func row(via, name, kind, event string, ss []sample) {
	med := func(get func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = get(s)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	sec := func(get func(sample) time.Duration) string {
		return fmt.Sprintf("%.3f", med(func(s sample) float64 { return get(s).Seconds() }))
	}
	light := sec(func(s sample) time.Duration { return s.light })
	if via == "trap" {
		light = "—"
	}
	sent := med(func(s sample) float64 { return float64(s.sent) })
	blocks := med(func(s sample) float64 { return float64(s.blocks) })
	failed := 0
	for _, s := range ss {
		failed += s.failed
	}
	inc := "yes"
	for _, s := range ss {
		if !s.incremental || s.fallback != "" {
			inc = "no: " + s.fallback
			break
		}
	}
	stages := fmt.Sprintf("%s (%s / %s / %s / %s)", sec(func(s sample) time.Duration { return s.route }),
		sec(func(s sample) time.Duration { return s.stages.Routing }), sec(func(s sample) time.Duration { return s.stages.LIDs }),
		sec(func(s sample) time.Duration { return s.stages.VLs }), sec(func(s sample) time.Duration { return s.stages.Verify }))
	fmt.Printf("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f | %.2f %% | %s | %d | %.1f |\n",
		name, kind, event, len(ss),
		sec(func(s sample) time.Duration { return s.total }), sec(func(s sample) time.Duration { return s.total - s.sweep - s.light }), light,
		sec(func(s sample) time.Duration { return s.disc }), stages,
		sec(func(s sample) time.Duration { return s.dist }), sec(func(s sample) time.Duration { return s.parts }),
		sec(func(s sample) time.Duration { return s.sweep - s.disc - s.route - s.dist - s.parts }), sent, blocks, 100*sent/max(blocks, 1), inc, failed, benchutil.LoadAvg())
}

// profile writes a CPU profile of each event to its own file (prefix.1,
// prefix.2 ...; go tool pprof merges the files it is given): Go cannot
// pause a profile, and the waits between events would only add the light
// sweeps. A nil profile does nothing.
type profile struct {
	prefix string
	n      int
	f      *os.File
}

func (p *profile) start() {
	if p == nil {
		return
	}
	p.n++
	f, err := os.Create(fmt.Sprintf("%s.%d", p.prefix, p.n))
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "linkdown: CPU profile:", err)
		return
	}
	p.f = f
}

func (p *profile) pause() {
	if p == nil || p.f == nil {
		return
	}
	pprof.StopCPUProfile()
	if err := p.f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "linkdown: CPU profile:", err)
	}
	p.f = nil
}

// lightLog is the sweep loop's observer: when each light sweep ended and
// what it took.
type lightLog struct {
	mu   sync.Mutex
	ends []time.Time
	took []time.Duration
}

func (l *lightLog) LightSweep(took time.Duration, _ uint64, _ error) {
	l.mu.Lock()
	l.ends, l.took = append(l.ends, time.Now()), append(l.took, took)
	l.mu.Unlock()
}

func (l *lightLog) Trap(uint16, uint16) {}

// between counts the light sweeps that overlapped [from, to] and their
// time within it.
func (l *lightLog) between(from, to time.Time) (n int, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, end := range l.ends {
		begin := end.Add(-l.took[i])
		if end.Before(from) || begin.After(to) {
			continue
		}
		n++
		if end.After(to) {
			end = to
		}
		if begin.Before(from) {
			begin = from
		}
		d += end.Sub(begin)
	}
	return n, d
}
