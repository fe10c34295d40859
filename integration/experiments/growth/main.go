// Command growth measures bring-up on full 3-level fat trees of growing
// radix (ft3-24, ft3-36, ft3-48, ft3-56: 3,456 to 43,904 CAs) as a growth
// curve: per size and run, `ibsm run --once` (cold state directory) with
// one routing engine on the embedded fabric, optionally on ibsim, and
// OpenSM on ibsim for the sizes asked. It records the phases (discovery,
// each plugin call, verify, distribution), SMPs by kind next to the counts
// the subnet-management model of Vishnu et al. predicts for an m-port
// n-tree (paper 002, eqs. 4, 6 and 7), host and plugin peak RSS and the
// plan cache on disk, prints a Markdown table with medians and the fitted
// growth exponent of each phase against the forwarding-table size
// (LIDs × switches), and writes every measurement to -out/results.json for
// plot.py.
//
//	make build
//	go run ./integration/experiments/growth -radix 24,36 -runs 3 -opensm 24,36
//	python3 integration/experiments/growth/plot.py /tmp/growth/results.json growth.png
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
)

// Run is one bring-up.
type Run struct {
	SM     string `json:"sm"`     // "ibsm" or "opensm"
	Fabric string `json:"fabric"` // "embedded" or "ibsim"
	Radix  int    `json:"radix"`
	CAs    int    `json:"cas"`
	Switch int    `json:"switches"`
	LIDs   int    `json:"lids"`
	// Seconds per phase; ibsm's routing parts too.
	SubnetUp, Discovery, Routing, Distribution float64
	Route, LIDAssign, VLAssign, Verify         float64
	// Partitions is the P_Key programming after distribution (ibsm).
	Partitions         float64
	PKeyGets, PKeySets int64
	// SMPs by kind (ibsm).
	Gets, Sets, PortInfoSets, PortStateSets, LFTSets, SwitchInfoSets int64
	HostRSSKiB, PluginRSSKiB                                         int64
	CacheBytes                                                       int64
	Wall                                                             float64
	// Floor is ibsim's SMP rate for a client that does nothing else,
	// measured on a fresh ibsim right after this bring-up (ibsm on ibsim).
	Floor float64 `json:"floor,omitempty"`
}

// SMPs is every SMP of the bring-up, P_Key programming included.
func (r Run) SMPs() int64 { return r.Gets + r.Sets + r.PKeyGets + r.PKeySets }

// Model is the subnet-management model's SMP counts for an m-port n-tree.
type Model struct {
	Gets, PortInfoSets, LFTSets int64
}

// model evaluates eqs. 4, 6 and 7 of Vishnu et al. An LFT Set carries 64
// entries (IBA 14.2.5.10), so S, the Sets per switch, is the number of
// 64-LID blocks up to the top LID, where the paper packs an MTU of 3-byte
// entries.
func model(m, n, lids int) Model {
	h := math.Pow(float64(m)/2, float64(n-1))
	switches := float64(2*n-1) * h
	cas := 2 * math.Pow(float64(m)/2, float64(n))
	s := math.Ceil(float64(lids+1) / 64)
	return Model{
		Gets:         int64(float64(4*n-2)*h*float64(m) + 2*cas),
		PortInfoSets: int64(cas),
		LFTSets:      int64(switches * s),
	}
}

var reKinds = regexp.MustCompile(`PortInfo (\d+), port state (\d+), SwitchInfo (\d+)`)

func main() {
	radixes := flag.String("radix", "24,36,48,56", "switch radixes of the full 3-level fat trees")
	runs := flag.Int("runs", 3, "bring-ups per size and SM (medians are printed)")
	engine := flag.String("engine", "sftree", "ibsm routing engine")
	osmEngine := flag.String("opensm-engine", "ftree", "OpenSM routing engine (-R)")
	opensm := flag.String("opensm", "", "radixes to also bring up with OpenSM on ibsim (e.g. 24,36; empty: none)")
	ibsimRadix := flag.String("ibsim", "", "radixes to also bring up with ibsm on ibsim")
	bin := flag.String("bin", "bin", "directory of the built ibsm and plugin binaries (make build)")
	out := flag.String("out", filepath.Join(os.TempDir(), "growth"), "work and results directory")
	limit := flag.Duration("timeout", 20*time.Minute, "bound on each process")
	fl := floorOpts{}
	embedded := flag.Bool("embedded", true, "bring each size up on the embedded fabric too")
	flag.IntVar(&fl.n, "floor", 200000, "SMPs of ibsim's floor measured after each ibsm bring-up on ibsim (0: none)")
	flag.IntVar(&fl.window, "floor-window", 128, "SMPs in flight when measuring the floor (ibsim's best window, BENCHMARKS.md)")
	flag.IntVar(&fl.hops, "floor-hops", 4, "deepest directed route of the floor's Gets (4 as integration/race; a 3-level tree's bring-up reaches 6); 0: every node, as often as a bring-up addresses it")
	flag.Parse()
	if err := run(*radixes, *opensm, *ibsimRadix, *runs, *engine, *osmEngine, *bin, *out, *limit, fl, *embedded); err != nil {
		fmt.Fprintln(os.Stderr, "growth:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 4 || n%2 != 0 {
			return nil, fmt.Errorf("radix %q: want an even number of ports of at least 4", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// floorOpts say how to measure ibsim's floor (floorRate).
type floorOpts struct{ n, window, hops int }

func run(radixList, osmList, ibsimList string, runs int, engine, osmEngine, bin, out string, limit time.Duration, fl floorOpts, embedded bool) error {
	rs, err := ints(radixList)
	if err != nil {
		return err
	}
	osmRs, err := ints(osmList)
	if err != nil {
		return err
	}
	simRs, err := ints(ibsimList)
	if err != nil {
		return err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(bin, "ibsm")); err != nil {
		return fmt.Errorf("%w: run make build first, or point -bin at the binaries", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var all []Run
	for _, r := range rs {
		net := filepath.Join(out, fmt.Sprintf("ft3-%d.net", r))
		gen := exec.Command(filepath.Join(bin, "ibsm"), "topo", "fat-tree", "--radix", strconv.Itoa(r), "--levels", "3")
		b, err := gen.Output()
		if err != nil {
			return fmt.Errorf("ibsm topo ft3-%d: %w", r, err)
		}
		if err := os.WriteFile(net, b, 0o644); err != nil {
			return err
		}
		for i := 0; i < runs && embedded; i++ {
			x, err := ibsmRun(bin, net, out, engine, r, i, "", limit)
			if err != nil {
				return err
			}
			all = append(all, *x)
			progress(x)
		}
		if contains(simRs, r) || contains(osmRs, r) {
			ibsimPath, opensmPath, preload, err := benchutil.OpenSMTools()
			if err != nil {
				return err
			}
			for i := 0; i < runs; i++ {
				if contains(simRs, r) {
					x, err := onIBSim(ibsimPath, net, out, r, i, limit, func(dir string, sim *benchutil.IBSim) (*Run, error) {
						return ibsmRun(bin, net, dir, engine, r, i, sim.Sockname, limit)
					})
					if err != nil {
						return err
					}
					if fl.n > 0 {
						if _, err := onIBSim(ibsimPath, net, out, r, i, limit, func(_ string, sim *benchutil.IBSim) (*Run, error) {
							ctx, cancel := context.WithTimeout(context.Background(), limit)
							defer cancel()
							x.Floor, err = floorRate(ctx, sim.Sockname, fl)
							return nil, err
						}); err != nil {
							return err
						}
					}
					all = append(all, *x)
					progress(x)
				}
				if contains(osmRs, r) {
					x, err := onIBSim(ibsimPath, net, out, r, i, limit, func(dir string, sim *benchutil.IBSim) (*Run, error) {
						ctx, cancel := context.WithTimeout(context.Background(), limit)
						defer cancel()
						o, err := benchutil.RunOpenSM(ctx, opensmPath, preload, sim, osmEngine, dir)
						if err != nil {
							return nil, err
						}
						return &Run{SM: "opensm", Fabric: "ibsim", Radix: r, SubnetUp: o.Phases.SubnetUp.Seconds(),
							Discovery: o.Phases.Discovery.Seconds(), Routing: o.Phases.Routing.Seconds(),
							Distribution: o.Phases.Distribution.Seconds(), HostRSSKiB: o.Result.MaxRSSKiB, Wall: o.Result.Wall.Seconds()}, nil
					})
					if err != nil {
						return err
					}
					all = append(all, *x)
					progress(x)
				}
			}
		}
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.json"), b, 0o644); err != nil {
		return err
	}
	table(os.Stdout, all)
	return nil
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func progress(x *Run) {
	fmt.Fprintf(os.Stderr, "ft3-%d %s on %s: SUBNET UP %.2fs", x.Radix, x.SM, x.Fabric, x.SubnetUp)
	if x.Floor > 0 {
		fmt.Fprintf(os.Stderr, " (routing %.2fs); %d SMPs, ibsim's floor %.0f SMPs/s: %.2fx the at-floor time; load %.2f",
			x.Routing, x.SMPs(), x.Floor, atFloor(*x), benchutil.LoadAvg())
	}
	fmt.Fprintln(os.Stderr)
}

// atFloor is SUBNET UP over the time r's SMPs take at ibsim's floor rate.
func atFloor(r Run) float64 { return r.SubnetUp / (float64(r.SMPs()) / r.Floor) }

// onIBSim starts a fresh ibsim with net for one run of f.
func onIBSim(ibsimPath, net, out string, r, i int, limit time.Duration, f func(dir string, sim *benchutil.IBSim) (*Run, error)) (*Run, error) {
	dir, err := os.MkdirTemp(out, fmt.Sprintf("ibsim-ft3-%d-%d-", r, i))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sim, err := benchutil.StartIBSimWith(ctx, benchutil.IBSimOptions{Path: ibsimPath, NetFile: net, Dir: dir, Ready: limit})
	if err != nil {
		return nil, err
	}
	defer sim.Stop()
	return f(dir, sim)
}

// ibsmRun brings net up once with ibsm from a cold state directory, on
// the embedded fabric or (sock set) on the ibsim behind sock.
func ibsmRun(bin, net, out, engine string, r, i int, sock string, limit time.Duration) (*Run, error) {
	fabric := "embedded"
	dir, err := os.MkdirTemp(out, fmt.Sprintf("ibsm-ft3-%d-%d-", r, i))
	if err != nil {
		return nil, err
	}
	cfg, state := filepath.Join(dir, "ibsm.hcl"), filepath.Join(dir, "state")
	if sock == "" {
		err = benchutil.WriteConfig(cfg, net, state, bin, engine)
	} else {
		fabric = "ibsim"
		err = benchutil.WriteIBSimConfig(cfg, sock, state, bin, engine)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := benchutil.Run(ctx, exec.Command(filepath.Join(bin, "ibsm"), "run", "--once", "--config", cfg), benchutil.RunOptions{SampleEvery: 200 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("ibsm on ft3-%d exited %d:\n%s", r, res.ExitCode, benchutil.TailLines(res.Stdout+res.Stderr, 20))
	}
	s, err := benchutil.ParseSummary(res.Stdout)
	if err != nil {
		return nil, err
	}
	x := &Run{SM: "ibsm", Fabric: fabric, Radix: r, CAs: s.CAs, Switch: s.Switches, LIDs: s.CAs + s.Switches,
		SubnetUp: s.SubnetUp.Seconds(), Discovery: s.Discovery.Seconds(), Routing: s.Routing.Seconds(), Distribution: s.Distribution.Seconds(),
		Route: s.Route.Seconds(), LIDAssign: s.LIDs.Seconds(), VLAssign: s.VLs.Seconds(), Verify: s.Verify.Seconds(),
		Gets: s.DiscoveryGets + s.DistributionGets, Sets: s.DiscoverySets + s.DistributionSets, LFTSets: s.LFTBlocksSent,
		Partitions: s.Partitions.Seconds(), PKeyGets: s.PartitionGets, PKeySets: s.PartitionSets,
		HostRSSKiB: s.PeakRSSKiB, Wall: res.Wall.Seconds()}
	if m := reKinds.FindStringSubmatch(res.Stdout); m != nil {
		x.PortInfoSets, _ = strconv.ParseInt(m[1], 10, 64)
		x.PortStateSets, _ = strconv.ParseInt(m[2], 10, 64)
		x.SwitchInfoSets, _ = strconv.ParseInt(m[3], 10, 64)
	}
	for name, kib := range res.DescendantHWMKiB {
		if strings.HasPrefix(name, "ibsm-plugin-") && kib > x.PluginRSSKiB {
			x.PluginRSSKiB = kib
		}
	}
	_ = filepath.WalkDir(filepath.Join(state, "cache"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				x.CacheBytes += fi.Size()
			}
		}
		return nil
	})
	return x, nil
}

func median(xs []float64) float64 { return benchutil.Median(xs) }

// table prints medians per size and SM, the model's SMP counts and the
// fitted exponents.
func table(w *os.File, all []Run) {
	type key struct {
		sm, fabric string
		radix      int
	}
	groups := map[key][]Run{}
	var keys []key
	for _, r := range all {
		k := key{r.SM, r.Fabric, r.Radix}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].sm != keys[j].sm || keys[i].fabric != keys[j].fabric {
			return keys[i].sm+keys[i].fabric < keys[j].sm+keys[j].fabric
		}
		return keys[i].radix < keys[j].radix
	})
	med := func(rs []Run, f func(Run) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		return median(xs)
	}
	fmt.Fprintln(w, "| fabric | SM on | runs | CAs | switches | LIDs×switches | SUBNET UP s | discovery s | routing s (route / LIDs / VLs / verify) | distribution s | partitions s (P_Key Gets / Sets) | Gets (model) | PortInfo Sets (model) | port-state Sets | SwitchInfo Sets | LFT Sets (model) | host RSS MiB | plugin RSS MiB | cache MiB |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---|---|---|---:|---:|---|---:|---:|---:|")
	for _, k := range keys {
		rs := groups[k]
		r0 := rs[0]
		up := med(rs, func(r Run) float64 { return r.SubnetUp })
		if k.sm == "opensm" {
			fmt.Fprintf(w, "| ft3-%d | OpenSM %s | %d | | | | %.2f | %.2f | %.2f (not split) | %.2f | | | | | | | %.0f | | |\n", k.radix, k.fabric, len(rs), up,
				med(rs, func(r Run) float64 { return r.Discovery }), med(rs, func(r Run) float64 { return r.Routing }),
				med(rs, func(r Run) float64 { return r.Distribution }), med(rs, func(r Run) float64 { return float64(r.HostRSSKiB) })/1024)
			continue
		}
		mo := model(k.radix, 3, r0.LIDs)
		fmt.Fprintf(w, "| ft3-%d | ibsm %s | %d | %d | %d | %d | %.2f | %.2f | %.2f (%.2f / %.2f / %.2f / %.2f) | %.2f | %.2f (%d / %d) | %d (%d) | %d (%d) | %d | %d | %d (%d) | %.0f | %.0f | %.1f |\n",
			k.radix, k.fabric, len(rs), r0.CAs, r0.Switch, r0.LIDs*r0.Switch, up,
			med(rs, func(r Run) float64 { return r.Discovery }), med(rs, func(r Run) float64 { return r.Routing }),
			med(rs, func(r Run) float64 { return r.Route }), med(rs, func(r Run) float64 { return r.LIDAssign }),
			med(rs, func(r Run) float64 { return r.VLAssign }), med(rs, func(r Run) float64 { return r.Verify }),
			med(rs, func(r Run) float64 { return r.Distribution }),
			med(rs, func(r Run) float64 { return r.Partitions }), r0.PKeyGets, r0.PKeySets,
			r0.Gets, mo.Gets, r0.PortInfoSets, mo.PortInfoSets, r0.PortStateSets, r0.SwitchInfoSets, r0.LFTSets, mo.LFTSets,
			med(rs, func(r Run) float64 { return float64(r.HostRSSKiB) })/1024, med(rs, func(r Run) float64 { return float64(r.PluginRSSKiB) })/1024,
			med(rs, func(r Run) float64 { return float64(r.CacheBytes) })/(1<<20))
	}
	floors(w, keys, groups)
	// Growth exponents of ibsm's embedded phases against LIDs × switches.
	phases := []struct {
		name string
		f    func(Run) float64
	}{
		{"discovery", func(r Run) float64 { return r.Discovery }},
		{"route call", func(r Run) float64 { return r.Route }},
		{"LID call", func(r Run) float64 { return r.LIDAssign }},
		{"VL call", func(r Run) float64 { return r.VLAssign }},
		{"verify", func(r Run) float64 { return r.Verify }},
		{"routing phase", func(r Run) float64 { return r.Routing }},
		{"distribution", func(r Run) float64 { return r.Distribution }},
		{"SUBNET UP", func(r Run) float64 { return r.SubnetUp }},
		{"host RSS", func(r Run) float64 { return float64(r.HostRSSKiB) }},
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| ibsm on the embedded fabric | growth exponent vs LIDs × switches |")
	fmt.Fprintln(w, "|---|---:|")
	for _, p := range phases {
		var xs, ys []float64
		for _, k := range keys {
			if k.sm != "ibsm" || k.fabric != "embedded" {
				continue
			}
			rs := groups[k]
			y := med(rs, p.f)
			if y <= 0 {
				continue
			}
			xs = append(xs, math.Log(float64(rs[0].LIDs*rs[0].Switch)))
			ys = append(ys, math.Log(y))
		}
		if len(xs) < 2 {
			continue
		}
		fmt.Fprintf(w, "| %s | %.2f |\n", p.name, slope(xs, ys))
	}
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	return num / den
}

// floors prints, per size brought up on ibsim with the floor measured,
// SUBNET UP against the time its SMPs take at ibsim's floor (issue 16's
// ≤ 1.3×), each run's ratio against the floor measured right after it.
func floors[K comparable](w *os.File, keys []K, groups map[K][]Run) {
	header := false
	for _, k := range keys {
		rs := groups[k]
		if rs[0].Floor == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| fabric | SM on | SMPs | SUBNET UP s (runs) | routing s | ibsim floor SMPs/s (runs) | at-floor s | SUBNET UP / at-floor (runs) |")
			fmt.Fprintln(w, "|---|---|---:|---|---:|---|---:|---|")
			header = true
		}
		var ups, routing, fls, ratios []float64
		for _, r := range rs {
			ups, routing, fls, ratios = append(ups, r.SubnetUp), append(routing, r.Routing), append(fls, r.Floor), append(ratios, atFloor(r))
		}
		list := func(xs []float64, f string) string {
			s := make([]string, len(xs))
			for i, x := range xs {
				s[i] = fmt.Sprintf(f, x)
			}
			return strings.Join(s, ", ")
		}
		fmt.Fprintf(w, "| ft3-%d | ibsm %s | %d | %.2f (%s) | %.2f | %.0f (%s) | %.2f | **%.2f×** (%s) |\n", rs[0].Radix, rs[0].Fabric, rs[0].SMPs(),
			median(ups), list(ups, "%.2f"), median(routing), median(fls), list(fls, "%.0f"), float64(rs[0].SMPs())/median(fls),
			median(ratios), list(ratios, "%.2f"))
	}
}
