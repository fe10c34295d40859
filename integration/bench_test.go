package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/integration/benchutil"
)

// benchFabric is one fabric of BenchmarkBringUp and the engines run on it.
type benchFabric struct {
	name    string
	topo    []string // ibsm topo arguments
	engines []benchEngine
}

type benchEngine struct {
	name string
	// opensm runs OpenSM with the same -R engine on the same fabric.
	opensm bool
}

var benchFabrics = []benchFabric{
	{"ft2-36", []string{"fat-tree", "--radix", "36", "--levels", "2"}, []benchEngine{{"updn", true}, {"minhop", true}}},
	// minhop on the 3-level tree is run for its verdict only: the single-VL
	// assigner rejects it (switch-to-switch paths make the CDG cyclic), so
	// there is nothing to compare with OpenSM, which would install it.
	{"ft3-36", []string{"fat-tree", "--radix", "36", "--levels", "3"}, []benchEngine{{"updn", true}, {"minhop", false}}},
}

// benchProcTimeout bounds each process the benchmark starts (OpenSM needs
// about a minute for ft3-36 on a loaded 2-core machine).
const benchProcTimeout = 10 * time.Minute

// BenchmarkBringUp brings each fabric up from cold with `ibsm run --once`
// (a subprocess, so peak RSS is its own), again on the same state dir (the
// restart case: plans come from the cache, no plugin call), and with
// OpenSM `-o` on ibsim on the same .net file, and reports per-phase times,
// SMP counts, peak RSS and the ibsm/OpenSM ratios. Metrics are medians
// over b.N iterations; ns/op is the wall time of the first ibsm process,
// plugin launch included. Run it with
//
//	go test -run '^$' -bench BringUp -benchtime 1x ./integration/
//
// The two SMs do not run on the same simulator: ibsm uses its embedded
// fabric, OpenSM ibsim through libumad2sim. IBSM_BENCH_OPENSM=0 skips
// OpenSM.
func BenchmarkBringUp(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("needs Linux (/proc and wait4 rusage for peak RSS, ibsim for OpenSM)")
	}
	// The go command that runs the benchmark exports its GOROOT; PATH's go otherwise.
	goTool := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goTool); os.Getenv("GOROOT") == "" || err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			b.Skip("no go tool to build ibsm and its plugins with")
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	bin := b.TempDir()
	if err := benchutil.Build(goTool, root, bin); err != nil {
		b.Fatal(err)
	}
	var osm *benchOpenSM
	if os.Getenv("IBSM_BENCH_OPENSM") == "0" {
		b.Log("IBSM_BENCH_OPENSM=0: OpenSM comparison skipped")
	} else if ibsim, opensm, preload, err := benchutil.OpenSMTools(); err != nil {
		b.Logf("OpenSM comparison skipped: %v", err)
	} else {
		osm = &benchOpenSM{ibsim: ibsim, opensm: opensm, preload: preload}
	}

	for _, fab := range benchFabrics {
		b.Run(fab.name, func(b *testing.B) {
			net := filepath.Join(b.TempDir(), fab.name+".net")
			if err := benchWriteTopo(net, fab.topo); err != nil {
				b.Fatal(err)
			}
			for _, eng := range fab.engines {
				b.Run(eng.name, func(b *testing.B) {
					var o *benchOpenSM
					if eng.opensm {
						o = osm
					}
					benchBringUp(b, bin, net, eng.name, o)
				})
			}
		})
	}
}

type benchOpenSM struct{ ibsim, opensm, preload string }

func benchWriteTopo(path string, args []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := topogen.Write(args, f); err != nil {
		f.Close()
		return fmt.Errorf("ibsm topo %s: %w", strings.Join(args, " "), err)
	}
	return f.Close()
}

// benchSamples collects one value per iteration per metric.
type benchSamples map[string][]float64

func (s benchSamples) add(k string, v float64) { s[k] = append(s[k], v) }

func (s benchSamples) median(k string) (float64, bool) {
	v, ok := s[k]
	return benchutil.Median(v), ok
}

func benchBringUp(b *testing.B, bin, net, engine string, osm *benchOpenSM) {
	ctx := context.Background()
	s := benchSamples{}
	rejected := false
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		state := filepath.Join(dir, "state")
		cfg := filepath.Join(dir, "ibsm.hcl")
		if err := benchutil.WriteConfig(cfg, net, state, bin, engine); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		first, res := benchRunIBSM(ctx, b, bin, cfg)
		b.StopTimer()
		if first == nil {
			// The verifier (or the single-VL assigner) refused the plan:
			// a property of engine and fabric, not a benchmark failure.
			rejected = true
			b.Logf("FINDING: %s on %s rejected, nothing programmed, after %.2fs:\n%s", engine, filepath.Base(net), res.Wall.Seconds(), benchFirstLines(res.Stderr, "every routing engine failed", 2))
			s.add("rejected", 1)
			s.add("process_wall_s", res.Wall.Seconds())
			b.StartTimer()
			continue
		}
		benchAddIBSM(s, "", first, res)
		b.Logf("ibsm %s: SUBNET UP %.3fs (discovery %.3fs, routing %.3fs [route %.3fs, LIDs %.3fs, VLs %.3fs, verify %.3fs], distribution %.3fs), %d Get %d Set, own peak RSS %d MiB, plugins %v KiB",
			engine, first.SubnetUp.Seconds(), first.Discovery.Seconds(), first.Routing.Seconds(), first.Route.Seconds(), first.LIDs.Seconds(), first.VLs.Seconds(), first.Verify.Seconds(),
			first.Distribution.Seconds(), first.DiscoveryGets+first.DistributionGets, first.DiscoverySets+first.DistributionSets, first.PeakRSSKiB>>10, benchPluginHWM(res))

		// Restart: same state dir, so every stage's plan is a cache hit.
		again, res2 := benchRunIBSM(ctx, b, bin, cfg)
		if again == nil {
			b.Fatalf("restart on the state dir of a successful run failed:\n%s", res2.Stderr)
		}
		benchAddIBSM(s, "restart_", again, res2)
		if again.PluginCalls != 0 {
			b.Logf("FINDING: restart made %d plugin calls; the plan cache should have made it 0", again.PluginCalls)
		}
		b.Logf("ibsm %s restart: SUBNET UP %.3fs, routing %.3fs with %d plugin calls (verify %.3fs)", engine, again.SubnetUp.Seconds(), again.Routing.Seconds(), again.PluginCalls, again.Verify.Seconds())

		if osm != nil {
			benchRunOpenSM(ctx, b, osm, net, engine, s)
		}
		b.StartTimer()
	}
	b.StopTimer()
	benchReport(b, s, rejected)
}

// benchRunIBSM runs `ibsm run --once`; a nil summary means every engine was
// rejected (the result still says how long that took).
func benchRunIBSM(ctx context.Context, b *testing.B, bin, cfg string) (*benchutil.Summary, *benchutil.Result) {
	ctx, cancel := context.WithTimeout(ctx, benchProcTimeout)
	defer cancel()
	cmd := exec.Command(filepath.Join(bin, "ibsm"), "run", "--once", "--config", cfg)
	res, err := benchutil.Run(ctx, cmd, benchutil.RunOptions{SampleEvery: 20 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	if res.ExitCode != 0 {
		if strings.Contains(res.Stderr, "every routing engine failed") {
			return nil, res
		}
		b.Fatalf("ibsm run --once exited %d:\n%s", res.ExitCode, res.Stderr)
	}
	sum, err := benchutil.ParseSummary(res.Stdout)
	if err != nil {
		b.Fatalf("%v\nstdout:\n%s", err, res.Stdout)
	}
	return sum, res
}

func benchAddIBSM(s benchSamples, prefix string, m *benchutil.Summary, res *benchutil.Result) {
	const mib = 1024.0
	s.add(prefix+"discovery_s", m.Discovery.Seconds())
	s.add(prefix+"routing_s", m.Routing.Seconds())
	s.add(prefix+"route_call_s", m.Route.Seconds())
	s.add(prefix+"lids_s", m.LIDs.Seconds())
	s.add(prefix+"vls_s", m.VLs.Seconds())
	s.add(prefix+"verify_s", m.Verify.Seconds())
	s.add(prefix+"distribution_s", m.Distribution.Seconds())
	s.add(prefix+"subnet_up_s", m.SubnetUp.Seconds())
	s.add(prefix+"process_wall_s", res.Wall.Seconds())
	s.add(prefix+"plugin_calls", float64(m.PluginCalls))
	s.add(prefix+"gets", float64(m.DiscoveryGets+m.DistributionGets))
	s.add(prefix+"sets", float64(m.DiscoverySets+m.DistributionSets))
	s.add(prefix+"lft_blocks", float64(m.LFTBlocksSent))
	s.add(prefix+"peak_rss_MB", float64(m.PeakRSSKiB)/mib)
	s.add(prefix+"tree_maxrss_MB", float64(res.MaxRSSKiB)/mib)
	if prefix != "" {
		return
	}
	var plugins float64
	for p, kib := range benchPluginHWM(res) {
		s.add("plugin_"+p+"_rss_MB", float64(kib)/mib)
		plugins += float64(kib) / mib
	}
	// Upper bound on the processes' combined peak (each HWM may fall at a
	// different moment).
	s.add("total_rss_MB", float64(m.PeakRSSKiB)/mib+plugins)
}

// benchPluginHWM keeps the plugin processes of a sampled process tree.
// Other names are go's fork-exec windows, where the vforked child still
// shows the parent's memory.
func benchPluginHWM(res *benchutil.Result) map[string]int64 {
	out := map[string]int64{}
	for name, kib := range res.DescendantHWMKiB {
		if p, ok := strings.CutPrefix(name, "ibsm-plugin-"); ok {
			out[p] = kib
		}
	}
	return out
}

// benchRunOpenSM brings the same fabric up with OpenSM on a fresh ibsim (a
// reused one would keep the previous run's LIDs and tables).
func benchRunOpenSM(ctx context.Context, b *testing.B, o *benchOpenSM, net, engine string, s benchSamples) {
	ctx, cancel := context.WithTimeout(ctx, benchProcTimeout)
	defer cancel()
	dir := b.TempDir()
	sim, err := benchutil.StartIBSim(ctx, o.ibsim, net, dir, 5*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Stop()
	run, err := benchutil.RunOpenSM(ctx, o.opensm, o.preload, sim, engine, dir)
	if err != nil {
		b.Fatal(err)
	}
	if run.Phases.Engine != engine {
		b.Logf("FINDING: OpenSM -R %s fell back to %s (it does not verify deadlock freedom)", engine, run.Phases.Engine)
	}
	p := run.Phases
	s.add("osm_discovery_s", p.Discovery.Seconds())
	s.add("osm_routing_s", p.Routing.Seconds())
	s.add("osm_distribution_s", p.Distribution.Seconds())
	s.add("osm_subnet_up_s", p.SubnetUp.Seconds())
	s.add("osm_process_wall_s", run.Result.Wall.Seconds())
	s.add("osm_peak_rss_MB", float64(run.Result.MaxRSSKiB)/1024)
	b.Logf("opensm -R %s on ibsim: SUBNET UP %.3fs (discovery %.3fs, MASTER→tables configured %.3fs, →SUBNET UP %.3fs), process %.3fs, peak RSS %d MiB",
		engine, p.SubnetUp.Seconds(), p.Discovery.Seconds(), p.Routing.Seconds(), p.Distribution.Seconds(), run.Result.Wall.Seconds(), run.Result.MaxRSSKiB>>10)
}

// benchReport reports every metric's median and the ibsm/OpenSM ratios of
// the medians.
func benchReport(b *testing.B, s benchSamples, rejected bool) {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, _ := s.median(k)
		b.ReportMetric(v, k)
	}
	if rejected {
		return
	}
	for _, r := range []struct{ name, ibsm, osm string }{
		{"discovery", "discovery_s", "osm_discovery_s"},
		{"routing", "routing_s", "osm_routing_s"},
		{"distribution", "distribution_s", "osm_distribution_s"},
		{"subnet_up", "subnet_up_s", "osm_subnet_up_s"},
		{"process_wall", "process_wall_s", "osm_process_wall_s"},
		{"peak_rss", "total_rss_MB", "osm_peak_rss_MB"},
	} {
		i, ok1 := s.median(r.ibsm)
		o, ok2 := s.median(r.osm)
		if ok1 && ok2 && o > 0 {
			b.ReportMetric(i/o, "ratio_"+r.name)
		}
	}
}

// benchFirstLines returns up to n lines of s starting at the first that
// contains marker, each cut to 300 bytes (cycle listings are long).
func benchFirstLines(s, marker string, n int) string {
	i := strings.Index(s, marker)
	if i < 0 {
		i = 0
	}
	lines := strings.SplitN(s[i:], "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	for j, l := range lines {
		if len(l) > 300 {
			lines[j] = l[:300] + "…"
		}
	}
	return strings.Join(lines, "\n")
}
