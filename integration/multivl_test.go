package integration

// Multi-VL and path routing through the host: real plugin binaries chosen
// in HCL, `ibsm run --once`, `ibsm verify`, `ibsm dump`, the embedded fabric
// and ibdmchk on the dumps.
//
//   - sssp on a seeded random regular graph needs more than one VL: single
//     refuses it; dfsssp, layered and acro (LMC 0) and dfsssp, layered
//     (LMC 1) spread it over VLs. The host's per-VL CDG check, an exact
//     (channel, VL) check written here and ibdmchk's credit-loop check
//     (path SLs + SL2VL dump, LMC 0) agree, and the same checks find the
//     loop when every path is put on SL 0 / VL 0. The switches hold the
//     planned SL2VL tables.
//   - shortest-widest and path-selection with each of the six path LID
//     assigners: LMC per destination, DLID overrides per source, every
//     CA->CA path followed hop by hop by the tables the switches hold; SA
//     PathRecord answers an override pair with the override DLID.
//   - not enough VLs (or LIDs): a clear refusal and nothing programmed.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/dump"
	"github.com/ibsm/ibsm/host/pluginhost"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
	"github.com/zclconf/go-cty/cty"
)

// The fabrics, as committed next to their example configs; the tests
// regenerate them with `ibsm topo` to prove the files are what the seeds
// give.
const (
	rrg16Net = "../conf/examples/rrg16.net" // 16 switches, 4 network ports, 1 CA each
	rand8Net = "../conf/examples/rand8.net" // 8 switches, degree 3, 16 CAs
)

var (
	rrg16Args = []string{"topo", "rrg", "--switches", "16", "--ports", "4", "--cas", "1", "--seed", "1"}
	rand8Args = []string{"topo", "random", "--switches", "8", "--degree", "3", "--cas", "16", "--seed", "3"}
)

// mvSetup is one routing / LID / VL plugin combination on a fabric.
type mvSetup struct {
	net            string // topology file, read in place
	engine, lid, v string // plugin binaries (plugins/<name>), also their HCL names
	lidConfig      string // body of the LID assigner's config block
	lmc            int
}

// writeMVConfig writes the config for s into dir (state in dir/state) and
// returns its path.
func writeMVConfig(t *testing.T, dir string, s mvSetup) string {
	t.Helper()
	net, err := filepath.Abs(s.net)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fabric {\n  transport = \"sim\"\n  topology = %q\n}\n", net)
	fmt.Fprintf(&b, "sm {\n  state_dir = \"state\"\n  lmc = %d\n  plugin_timeout = \"30s\"\n  mad_timeout = \"100ms\"\n  sweep_interval = \"1h\"\n}\n", s.lmc)
	for _, p := range [][3]string{{"routing_engine", s.engine, ""}, {"lid_assigner", s.lid, s.lidConfig}, {"vl_assigner", s.v, ""}} {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n", p[0], p[1], filepath.Join(binDir, "ibsm-plugin-"+p[1]))
		if p[2] != "" {
			fmt.Fprintf(&b, "  config {\n    %s\n  }\n", p[2])
		}
		b.WriteString("}\n")
	}
	fmt.Fprintf(&b, "routing {\n  engine = %q\n  lid_assigner = %q\n  vl_assigner = %q\n}\n", s.engine, s.lid, s.v)
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ibsmOut runs the ibsm binary and returns stdout and stderr apart: the
// refusals the tests check are on stderr.
func ibsmOut(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "ibsm"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// checkGenerated regenerates a committed topology with `ibsm topo`.
func checkGenerated(t *testing.T, net string, args []string) {
	t.Helper()
	want, err := os.ReadFile(net)
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, err := ibsmOut(t, args...)
	if err != nil {
		t.Fatalf("ibsm %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	if got != string(want) {
		t.Fatalf("ibsm %s no longer writes %s; regenerate it (and check the tests' expectations)", strings.Join(args, " "), net)
	}
}

var sl2vlSets = regexp.MustCompile(`SL2VL (\d+)[,)]`)

// ibdmchkVL runs ibdmchk's credit-loop check with path SLs and SL2VL
// tables on the dumps in dir (CA->CA paths; ibdmchk has no SL for switch
// traffic). ibdmchk 1.5.7 segfaults on exit after printing its verdict,
// so the exit status means nothing: callers judge the printed verdict.
func ibdmchkVL(t *testing.T, dir, pathSL string) string {
	t.Helper()
	if _, err := exec.LookPath("ibdmchk"); err != nil {
		t.Skip("ibdmchk (Debian ibutils) not installed; make test installs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ibdmchk", "-s", dump.SubnetFile, "-f", dump.FDBFile, "-m", dump.MCFDBFile,
		"-c", pathSL, "-d", dump.SL2VLFile)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	s := string(out)
	if !strings.Contains(s, "Analyzing Fabric for Credit Loops") {
		t.Fatalf("ibdmchk did not get to its credit loop check:\n%s", tail(s, 3000))
	}
	return s
}

var ibdmchkUsed = regexp.MustCompile(`Analyzing Fabric for Credit Loops (\d+) SLs, (\d+) VLs used`)

// ibdmchkVerdict returns the SLs and VLs ibdmchk analysed and whether it
// found a credit loop; an output that is neither verdict fails the test.
func ibdmchkVerdict(t *testing.T, out string) (sls, vls int, loop bool) {
	t.Helper()
	m := ibdmchkUsed.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ibdmchk printed no SL/VL count:\n%s", tail(out, 3000))
	}
	sls, _ = strconv.Atoi(m[1])
	vls, _ = strconv.Atoi(m[2])
	loop = strings.Contains(out, "Found credit loop")
	if !loop && !strings.Contains(out, "-I- no credit loops found") {
		t.Fatalf("ibdmchk printed neither verdict:\n%s", tail(out, 3000))
	}
	return sls, vls, loop
}

// withAllSL0 copies the dumps in dir into a new directory with every line
// of the path-SL file moved to SL 0 and, with oneVL, every SL2VL table
// mapping every SL to VL 0: the plan on one VL, which single refuses.
func withAllSL0(t *testing.T, dir string, oneVL bool) string {
	t.Helper()
	out := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case e.Name() == dump.PathSLFile:
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			for i, l := range lines {
				f := strings.Fields(l)
				if len(f) != 3 {
					t.Fatalf("path-SL line %q: want 0x<guid> <dlid> <sl>", l)
				}
				lines[i] = f[0] + " " + f[1] + " 0"
			}
			b = []byte(strings.Join(lines, "\n") + "\n")
		case e.Name() == dump.SL2VLFile && oneVL:
			// Table rows are "<in> <out> : <16 VLs>" (switches) or
			// "<port> <port> : <16 VLs>" (CAs); headers start otherwise.
			lines := strings.Split(string(b), "\n")
			rows := 0
			for i, l := range lines {
				head, vls, ok := strings.Cut(l, ":")
				if f := strings.Fields(vls); ok && len(f) == 16 && len(strings.Fields(head)) == 2 && !strings.HasPrefix(head, "#") {
					lines[i] = head + ": " + strings.Repeat("0  ", 16)
					rows++
				}
			}
			if rows == 0 {
				t.Fatalf("no SL2VL table rows in %s", e.Name())
			}
			b = []byte(strings.Join(lines, "\n"))
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// exactCheck builds the dependency graph on (channel, VL) pairs the way
// packets hold buffers: every (source endpoint, destination endpoint) walk
// with its selected DLID (with allLIDs, every LID of the destination's
// range: SA hands out all of them for multipath planes) and its SL, each
// hop's VL from the SL2VL table of (node, in, out). It reports whether that
// graph has a cycle and how many of its dependencies change VL. It is
// independent of sdk/analysis (whose per-VL graphs it can contradict) and
// covers switch traffic too.
func exactCheck(t *testing.T, r *plan.Realized, v *plan.VLPlan, allLIDs bool) (cyclic bool, crossVL, deps int) {
	t.Helper()
	topo := r.Topo
	tables := map[[3]int32][16]uint8{}
	for _, e := range v.SL2VL {
		tables[[3]int32{e.Node, int32(e.In), int32(e.Out)}] = e.VL
	}
	vlOf := func(node int32, in, out, sl uint8) uint8 {
		if tb, ok := tables[[3]int32{node, int32(in), int32(out)}]; ok {
			return tb[sl&15]
		}
		return v.Default[sl&15]
	}
	ov := map[[2]int32]uint8{}
	for _, o := range r.LIDs.Overrides {
		ov[[2]int32{o.Src, o.Dst}] = o.Offset
	}
	type vertex struct {
		ch int64 // node<<8 | out port
		vl uint8
	}
	succ := map[vertex]map[vertex]bool{}
	eps := topo.Endpoints()
	for src, sp := range eps {
		for dst := range eps {
			if dst == src {
				continue
			}
			dlids := []uint16{r.LIDs.DLID(int32(src), int32(dst))}
			if off, ok := ov[[2]int32{int32(src), int32(dst)}]; ok {
				dlids[0] = r.LIDs.Ports[dst].Base + uint16(off)
			}
			if allLIDs {
				dlids = dlids[:0]
				for k := 0; k < r.LIDs.Ports[dst].Count(); k++ {
					dlids = append(dlids, r.LIDs.Ports[dst].Base+uint16(k))
				}
			}
			for _, dlid := range dlids {
				sl := v.SL(int32(src), dlid)
				cur, in := sp.Node, uint8(0)
				var prev vertex
				have := false
				if topo.SwitchIndex(cur) < 0 {
					prev, have = vertex{int64(cur)<<8 | int64(sp.Port), vlOf(cur, sp.Port, sp.Port, sl)}, true
					peer := topo.Port(sp).Peer
					cur, in = peer.Node, peer.Port
				}
				for hops := 0; ; hops++ {
					si := topo.SwitchIndex(cur)
					if si < 0 {
						break
					}
					if hops > 64 {
						t.Fatalf("walk from endpoint %d toward DLID %d does not end", src, dlid)
					}
					out := r.LFT[si][dlid]
					if out == 0 || out == plan.NoPort {
						break
					}
					x := vertex{int64(cur)<<8 | int64(out), vlOf(cur, in, out, sl)}
					if have {
						if succ[prev] == nil {
							succ[prev] = map[vertex]bool{}
						}
						succ[prev][x] = true
					}
					prev, have = x, true
					peer := topo.Nodes[cur].Ports[out].Peer
					cur, in = peer.Node, peer.Port
				}
			}
		}
	}
	indeg := map[vertex]int{}
	for a, bs := range succ {
		if _, ok := indeg[a]; !ok {
			indeg[a] = 0
		}
		for b := range bs {
			indeg[b]++
			deps++
			if a.vl != b.vl {
				crossVL++
			}
		}
	}
	var queue []vertex
	for x, d := range indeg {
		if d == 0 {
			queue = append(queue, x)
		}
	}
	for i := 0; i < len(queue); i++ {
		for b := range succ[queue[i]] {
			if indeg[b]--; indeg[b] == 0 {
				queue = append(queue, b)
			}
		}
	}
	return len(queue) < len(indeg), crossVL, deps
}

// checkProgrammed brings the installed plan (from the state directory's
// cache) up on a fresh embedded fabric and compares every switch SL2VL
// table it holds with the plan (its entry for (in, out) or the default);
// a difference fails the test. It returns what the fabric lacks for the
// plan's VLs to carry traffic on hardware: CA port SL2VL tables that differ
// from the plan, and ports whose PortInfo.OperationalVLs do not reach the
// highest VL the plan uses (IBA: a packet mapped to a VL beyond
// OperationalVLs is dropped).
func checkProgrammed(t *testing.T, cfg string) (gaps []string) {
	t.Helper()
	a := start(t, cfg)
	if _, err := a.SM.HeavySweep(context.Background()); err != nil {
		t.Fatalf("in-process sweep of the installed plan: %v", err)
	}
	ap := a.SM.Applied()
	topo, v := ap.Topo, ap.Result.VLs
	tables := map[[3]int32][16]uint8{}
	for _, e := range v.SL2VL {
		tables[[3]int32{e.Node, int32(e.In), int32(e.Out)}] = e.VL
	}
	want := func(node int32, in, out int) [16]uint8 {
		if tb, ok := tables[[3]int32{node, int32(in), int32(out)}]; ok {
			return tb
		}
		return v.Default
	}
	checked := 0
	var caDiff, opShort int
	var caEx, opEx string
	needVLs := uint8(v.VLs)
	for node := range topo.Nodes {
		n := &topo.Nodes[node]
		sw := n.Type == topology.Switch
		for out := 1; out < len(n.Ports); out++ {
			if !n.Ports[out].Peer.Connected() {
				continue
			}
			pi, err := a.Sim.PortInfo(n.GUID, uint8(out))
			if err != nil {
				t.Fatal(err)
			}
			if smp.DataVLs(pi.OpVLs) < needVLs {
				if opShort++; opEx == "" {
					opEx = fmt.Sprintf("%#x/%d has OperationalVLs %d (%d data VLs)", n.GUID, out, pi.OpVLs, smp.DataVLs(pi.OpVLs))
				}
			}
			if !sw {
				got, err := a.Sim.SL2VL(n.GUID, uint8(out), uint8(out))
				if err != nil {
					t.Fatal(err)
				}
				if w := want(int32(node), out, out); got != w {
					if caDiff++; caEx == "" {
						caEx = fmt.Sprintf("CA %#x/%d holds %v, plan %v", n.GUID, out, got, w)
					}
				}
				continue
			}
			for in := 0; in < len(n.Ports); in++ {
				got, err := a.Sim.SL2VL(n.GUID, uint8(in), uint8(out))
				if err != nil {
					t.Fatal(err)
				}
				if w := want(int32(node), in, out); got != w {
					t.Fatalf("switch %#x SL2VL %d->%d holds %v, the plan says %v", n.GUID, in, out, got, w)
				}
				checked++
			}
		}
	}
	t.Logf("SL2VL: %d switch tables (connected out-ports) held as planned, %d explicit plan entries", checked, len(v.SL2VL))
	if caDiff > 0 {
		gaps = append(gaps, fmt.Sprintf("%d CA port SL2VL tables are not the plan's (e.g. %s): host/program sends SL2VL to switches only", caDiff, caEx))
	}
	if opShort > 0 {
		gaps = append(gaps, fmt.Sprintf("%d linked ports keep fewer OperationalVLs than the plan's %d VLs (e.g. %s): host/program never sets PortInfo.OperationalVLs (nor VLArbitration)", opShort, needVLs, opEx))
	}
	return gaps
}

func TestMultiVLRandomRegular(t *testing.T) {
	checkGenerated(t, rrg16Net, rrg16Args)

	t.Run("single refuses: one VL is not enough", func(t *testing.T) {
		cfg := writeMVConfig(t, t.TempDir(), mvSetup{net: rrg16Net, engine: "sssp", lid: "sequential", v: "single"})
		out, stderr, err := ibsmOut(t, "run", "--once", "--config", cfg)
		if err == nil {
			t.Fatalf("single accepted sssp on rrg16; the tests below would prove nothing:\n%s", out)
		}
		for _, want := range []string{"single: the routing can deadlock on one VL", "cycle of", "0x0002c9", "every routing engine failed"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("refusal lacks %q:\n%s", want, tail(stderr, 2000))
			}
		}
		if strings.Contains(out, "SUBNET UP") {
			t.Errorf("SUBNET UP printed although the plan was refused:\n%s", out)
		}
	})

	for _, c := range []struct {
		vl  string
		lmc int
	}{{"dfsssp", 0}, {"layered", 0}, {"acro", 0}, {"dfsssp", 1}, {"layered", 1}} {
		vl := c.vl
		t.Run(fmt.Sprintf("%s lmc %d", vl, c.lmc), func(t *testing.T) {
			dir := t.TempDir()
			s := mvSetup{net: rrg16Net, engine: "sssp", lid: "sequential", v: vl, lmc: c.lmc}
			cfg := writeMVConfig(t, dir, s)
			dumps := filepath.Join(dir, "dump")
			out, stderr, err := ibsmOut(t, "run", "--once", "--config", cfg, "--dump-dir", dumps)
			if err != nil {
				if strings.Contains(stderr, "channel dependency graph is cyclic") {
					explainCDGRejection(t, s, stderr)
				}
				t.Fatalf("ibsm run --once with %s: %v\n%s", vl, err, tail(stderr, 3000))
			}
			if !strings.Contains(out, "SUBNET UP") || !strings.Contains(out, "engine sssp") || strings.Contains(out, "rejected") {
				t.Fatalf("sssp + %s not installed cleanly:\n%s", vl, out)
			}
			m := sl2vlSets.FindStringSubmatch(out)
			if m == nil || m[1] == "0" {
				t.Fatalf("no SL2VL table programmed (summary %v):\n%s", m, out)
			}
			t.Logf("summary:\n%s", out)

			// The host's report: every VL's CDG acyclic, several VLs.
			text, stderr, err := ibsmOut(t, "verify", "--shifts", "0", "--bisections", "0", "--config", cfg)
			if err != nil {
				t.Fatalf("ibsm verify: %v\n%s", err, stderr)
			}
			_, rep := verifyJSON(t, cfg)
			if !rep.DeadlockFree || len(rep.VLs) < 2 || len(rep.VLsUsed) < 2 || rep.VLProblemCount != 0 {
				t.Fatalf("verify: deadlock-free %v, VLs used %v, VL problems %d, per VL %+v", rep.DeadlockFree, rep.VLsUsed, rep.VLProblemCount, rep.VLs)
			}
			for _, s := range rep.VLs {
				if !s.Acyclic {
					t.Errorf("VL%d: CDG cyclic through %v", s.VL, s.Cycle)
				}
				if !strings.Contains(text, fmt.Sprintf("VL%d: CDG acyclic", s.VL)) {
					t.Errorf("verify text lacks %q:\n%s", fmt.Sprintf("VL%d: CDG acyclic", s.VL), text)
				}
			}
			if !rep.CAPairs.Complete() || !rep.SwitchPairs.Complete() {
				t.Errorf("pairs: CA %+v switch %+v", rep.CAPairs, rep.SwitchPairs)
			}
			if !strings.Contains(text, fmt.Sprintf("VLs used: %v", rep.VLsUsed)) || !strings.Contains(text, "deadlock-free: yes") {
				t.Errorf("verify text lacks the VLs used or the verdict:\n%s", text)
			}

			if c.lmc == 0 {
				// ibdmchk on the dumps `run --dump-dir` wrote: SLs per path
				// and SL2VL per port pair, no credit loop. (ibdmchk 1.5.7
				// traces base LIDs only and takes one -l for every port, so
				// it cannot check LMC > 0 plans; the exact check below does.)
				chk := ibdmchkVL(t, dumps, dump.PathSLFile)
				sls, vls, loop := ibdmchkVerdict(t, chk)
				if loop || vls < 2 || vls > len(rep.VLsUsed) || sls > len(rep.SLsUsed) {
					t.Errorf("ibdmchk: %d SLs, %d VLs, credit loop %v (host: SLs %v VLs %v):\n%s", sls, vls, loop, rep.SLsUsed, rep.VLsUsed, tail(chk, 2000))
				}
				if strings.Contains(chk, "-E-") {
					t.Errorf("ibdmchk reported errors:\n%s", tail(chk, 2000))
				}
				// The same check must be able to fail: every path on SL 0
				// (pair assigners: SL k is VL k, so that is one VL), and
				// every SL2VL table on VL 0 as well (acro changes VL per
				// hop, so SL 0 alone may still be deadlock-free).
				for _, oneVL := range []bool{false, true} {
					if vl == "acro" && !oneVL {
						continue
					}
					bchk := ibdmchkVL(t, withAllSL0(t, dumps, oneVL), dump.PathSLFile)
					if _, bvls, loop := ibdmchkVerdict(t, bchk); !loop {
						t.Errorf("ibdmchk found no credit loop with every path on SL 0 (all tables on VL 0: %v; %d VLs), which single refuses:\n%s", oneVL, bvls, tail(bchk, 2000))
					}
				}
			}

			// The switches hold the planned SL2VL tables, and the plan is
			// acyclic on (channel, VL) pairs as well.
			a := start(t, cfg)
			_, _, res, err := a.SM.Plan(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			cyc, cross, deps := exactCheck(t, res.Realized, res.VLs, c.lmc > 0)
			t.Logf("exact (channel, VL) graph: %d dependencies, %d change VL", deps, cross)
			if cyc {
				t.Errorf("the (channel, VL) dependency graph of the installed plan has a cycle")
			}
			// The exact check can fail: the same tables on one VL (every
			// SL 0, every SL2VL table on VL 0), which single refuses.
			if cyc, _, _ := exactCheck(t, res.Realized, &plan.VLPlan{VLs: 1}, c.lmc > 0); !cyc {
				t.Errorf("the exact check finds no cycle with every route on VL 0, which single refuses")
			}
			a.Close()
			gaps := checkProgrammed(t, cfg)
			t.Run("CA SL2VL and OperationalVLs for hardware", func(t *testing.T) {
				// Every linked port runs the plan's VLs and every CA port
				// maps SLs as the plan says: otherwise hardware drops the
				// traffic on VL 1 and up.
				if len(gaps) > 0 {
					t.Errorf("on hardware the plan's VLs would not carry traffic: %s", strings.Join(gaps, "; "))
				}
			})
		})
	}
}

// pluginPlan runs s's three plugins directly, without the host's
// verifier, on the topology the host discovers, and realises the tables
// as the host would.
func pluginPlan(t *testing.T, s mvSetup) (*plan.Realized, *plan.Routes, *plan.VLPlan) {
	t.Helper()
	a := start(t, writeMVConfig(t, t.TempDir(), s))
	ctx := context.Background()
	_, topo, _, _ := a.SM.Plan(ctx) // the host's verdict is what is being questioned
	if topo == nil {
		t.Fatal("discovery failed")
	}
	m, err := pluginhost.New(pluginhost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	launch := func(name string, k sdk.Kind) *pluginhost.Plugin {
		p, err := m.Launch(ctx, pluginhost.Config{Name: name, Kind: k, Path: filepath.Join(binDir, "ibsm-plugin-"+name)})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(cty.NullVal(cty.EmptyObject)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lmc := uint8(s.lmc)
	routes, err := launch(s.engine, sdk.KindRouting).Route(ctx, sdk.RouteRequest{Topo: topo, LMC: lmc})
	if err != nil {
		t.Fatal(err)
	}
	lids, err := launch(s.lid, sdk.KindLIDAssign).AssignLIDs(ctx, sdk.LIDRequest{Topo: topo, Routes: routes, LMC: lmc})
	if err != nil {
		t.Fatal(err)
	}
	r, err := plan.Realize(topo, routes, lids)
	if err != nil {
		t.Fatal(err)
	}
	v, err := launch(s.v, sdk.KindVLAssign).AssignVLs(ctx, sdk.VLRequest{Topo: topo, Routes: routes, LIDs: lids, Realized: r, MaxVLs: 8})
	if err != nil {
		t.Fatalf("%s refused outside the host too: %v", s.v, err)
	}
	return r, routes, v
}

// explainCDGRejection is called when the host refused s's plan for a
// cyclic per-VL CDG. It recomputes the plan without the host and says who
// is wrong: if the exact (channel, VL) graph (and, at LMC 0, ibdmchk) find
// a cycle, the VL assigner is; otherwise the host's analysis is, and the
// failure names which of its two former false positives is back:
//
//   - VL-changing dependencies (acro): a dependency filed under its
//     out-channel's VL only lands in the lower VL's graph as if its
//     in-channel were on that VL, and can close a cycle no buffer holds
//     (fixed by 1eff2a8, CDG over (channel, VL) nodes).
//   - Per-source SL overrides with LMC > 0 planes: under AllLIDs every
//     switch was made to originate DLID d on d's default SL, although
//     every source there may have an SL override for d.
func explainCDGRejection(t *testing.T, s mvSetup, stderr string) {
	t.Helper()
	r, _, v := pluginPlan(t, s)
	allLIDs := s.lmc > 0
	cyc, cross, deps := exactCheck(t, r, v, allLIDs)
	if cyc {
		t.Fatalf("%s's plan has a credit loop on (channel, VL) pairs; the host was right to refuse it:\n%s", s.v, tail(stderr, 2000))
	}
	ib := "not run (ibdmchk 1.5.7 cannot take per-port LMCs)"
	if s.lmc == 0 {
		d := t.TempDir()
		if err := dump.WriteAll(d, r, v); err != nil {
			t.Fatal(err)
		}
		_, vls, loop := ibdmchkVerdict(t, ibdmchkVL(t, d, dump.PathSLFile))
		if loop {
			t.Fatalf("ibdmchk finds a credit loop in %s's plan; the host was right to refuse it", s.v)
		}
		ib = fmt.Sprintf("no credit loop (%d VLs)", vls)
	}
	rep, err := analysis.Analyse(r, v, analysis.Options{AllLIDs: allLIDs})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DeadlockFree {
		t.Fatalf("sdk/analysis accepts %s's plan in-process but the run refused it:\n%s", s.v, tail(stderr, 2000))
	}
	var cyclic []string
	for _, st := range rep.VLs {
		if !st.Acyclic {
			cyclic = append(cyclic, fmt.Sprintf("VL%d", st.VL))
		}
	}
	var why []string
	if cross > 0 {
		why = append(why, fmt.Sprintf("%d dependencies change VL and analysis files each under its out-channel's VL only", cross))
	}
	if allLIDs && len(v.Overrides) > 0 {
		if sel, err := analysis.Analyse(r, v, analysis.Options{}); err == nil && sel.DeadlockFree {
			why = append(why, fmt.Sprintf("under AllLIDs (LMC %d planes) analysis ignores the plan's %d per-source SL overrides and puts every source on the DLID's default SL (deadlock-free without AllLIDs)", s.lmc, len(v.Overrides)))
		}
	}
	if len(why) == 0 {
		t.Fatalf("sdk/analysis and the exact check disagree for an unknown reason (cyclic %v):\n%s", cyclic, tail(stderr, 2000))
	}
	t.Fatalf("HOST FALSE POSITIVE (sdk/analysis, not %s): the plan is deadlock-free — exact (channel, VL) graph acyclic (%d dependencies), ibdmchk %s — "+
		"but the host finds %v cyclic because %s; the host refuses it", s.v, deps, ib, cyclic, strings.Join(why, "; "))
}

func TestPathRoutingThroughHost(t *testing.T) {
	checkGenerated(t, rand8Net, rand8Args)
	dir := t.TempDir()
	cfg := writeMVConfig(t, dir, mvSetup{net: rand8Net, engine: "shortest-widest", lid: "color-l", v: "single"})
	out, stderr, err := ibsmOut(t, "run", "--once", "--config", cfg)
	if err != nil {
		t.Fatalf("shortest-widest + color-l + single: %v\n%s", err, tail(stderr, 3000))
	}
	if !strings.Contains(out, "engine shortest-widest") || strings.Contains(out, "rejected") || strings.Contains(out, "LFT blocks 0 of") {
		t.Fatalf("not installed cleanly:\n%s", out)
	}
	_, rep := verifyJSON(t, cfg)
	if !rep.DeadlockFree || !rep.CAPairs.Complete() || !rep.SwitchPairs.Complete() {
		t.Fatalf("verify: deadlock-free %v CA %+v switch %+v", rep.DeadlockFree, rep.CAPairs, rep.SwitchPairs)
	}

	// In-process on the same state directory: the cached plan, programmed
	// into a fresh embedded fabric.
	// The SM runs its loop, so the SA answers queries.
	a := start(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	up := make(chan *sm.Report, 1)
	fail := make(chan error, 1)
	go func() {
		defer close(done)
		a.SM.Run(ctx, nil, func(r *sm.Report, err error) {
			if err != nil {
				select {
				case fail <- err:
				default:
				}
				return
			}
			select {
			case up <- r:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case r := <-up:
		if r.PluginCalls != 0 {
			t.Errorf("restart on the same state made %d plugin calls", r.PluginCalls)
		}
	case err := <-fail:
		t.Fatalf("first sweep: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no SUBNET UP within 10 s")
	}
	st := checkPathPlan(t, a)
	if st.overrides == 0 || st.viaOverride == 0 || st.maxCALMC == 0 {
		t.Fatalf("color-l on rand8: %d DLID overrides, %d CA->CA paths through one, max CA LMC %d; the SA check below would prove nothing", st.overrides, st.viaOverride, st.maxCALMC)
	}
	ap := a.SM.Applied()
	topo, res := ap.Topo, ap.Result
	lids, eps := res.LIDs, topo.Endpoints()
	isCA := func(e int32) bool { return topo.Nodes[eps[e].Node].Type != topology.Switch }
	selected := func(src, dst int32) uint16 {
		for _, o := range lids.Overrides {
			if o.Src == src && o.Dst == dst {
				return lids.Ports[dst].Base + uint16(o.Offset)
			}
		}
		return lids.DLID(src, dst)
	}

	// SA: a source whose DLID toward a CA is an override asks for its
	// paths; the preferred record carries that DLID.
	smEp := topo.EndpointIndex(topo.SM)
	var src, dst int32 = -1, -1
	for _, o := range lids.Overrides {
		if o.Src != smEp && isCA(o.Src) && isCA(o.Dst) && o.Offset != 0 {
			src, dst = o.Src, o.Dst
			break
		}
	}
	if src < 0 {
		t.Fatal("no CA->CA override with a non-zero offset away from the SM's port")
	}
	want := selected(src, dst)
	recs := saPaths(t, a, src, lids.Ports[smEp].Base, lids.Ports[src].Base, topo.Port(eps[dst]).GUID)
	var pref []uint16
	for _, r := range recs {
		if r.SLID != lids.Ports[src].Base || !lids.Ports[dst].Contains(r.DLID) {
			t.Errorf("record SLID %d DLID %d: not from %d to %d's range", r.SLID, r.DLID, lids.Ports[src].Base, lids.Ports[dst].Base)
		}
		if r.Preference == 0 {
			pref = append(pref, r.DLID)
		}
		if sl := res.VLs.SL(src, r.DLID); r.SL != sl {
			t.Errorf("record DLID %d: SL %d, the plan says %d", r.DLID, r.SL, sl)
		}
	}
	if len(pref) != 1 || pref[0] != want {
		t.Fatalf("SA preferred DLIDs %v for the override pair %d->%d, want exactly [%d] (base %d, LMC %d); %d records", pref, src, dst, want, lids.Ports[dst].Base, lids.Ports[dst].LMC, len(recs))
	}
	t.Logf("SA PathRecord %d->%d: preferred DLID %d (override offset %d), %d records", src, dst, want, want-lids.Ports[dst].Base, len(recs))
}

// pathStats is what checkPathPlan saw.
type pathStats struct {
	walked, viaOverride, overrides int
	maxCALMC                       uint8
}

// checkPathPlan checks the paths-form plan in force on a's fabric: every
// port holds its planned LID and LMC, each destination's LMC is the
// smallest covering the DLIDs its sources select, and every CA->CA path,
// walked through the tables the switches hold with the DLID its source
// selects (rule or override), takes exactly its hops.
func checkPathPlan(t *testing.T, a *app.App) pathStats {
	t.Helper()
	ap := a.SM.Applied()
	topo, res := ap.Topo, ap.Result
	lids := res.LIDs
	eps := topo.Endpoints()
	if res.Routes.IsPlanes() || len(res.Routes.Paths) == 0 {
		t.Fatalf("engine %s did not answer explicit paths", res.Engine)
	}
	ov := map[[2]int32]uint8{}
	for _, o := range lids.Overrides {
		ov[[2]int32{o.Src, o.Dst}] = o.Offset
	}
	selected := func(src, dst int32) uint16 {
		if off, ok := ov[[2]int32{src, dst}]; ok {
			return lids.Ports[dst].Base + uint16(off)
		}
		return lids.DLID(src, dst)
	}
	isCA := func(e int32) bool { return topo.Nodes[eps[e].Node].Type != topology.Switch }

	// LIDs per port: the fabric holds the planned base and LMC; each
	// destination's LMC is the smallest covering the DLIDs its sources use.
	maxLMC := uint8(0)
	for e, ref := range eps {
		pl := lids.Ports[e]
		held, err := a.Sim.PortInfo(topo.Nodes[ref.Node].GUID, ref.Port)
		if err != nil {
			t.Fatal(err)
		}
		if held.LID != pl.Base || held.LMC != pl.LMC {
			t.Errorf("endpoint %d holds LID %d LMC %d, planned %d/%d", e, held.LID, held.LMC, pl.Base, pl.LMC)
		}
		used := map[uint16]bool{}
		for src := range eps {
			if src != e {
				used[selected(int32(src), int32(e))] = true
			}
		}
		if len(used) > pl.Count() || (pl.LMC > 0 && len(used) <= pl.Count()/2) {
			t.Errorf("endpoint %d: sources use %d DLIDs, LMC %d gives %d", e, len(used), pl.LMC, pl.Count())
		}
		if isCA(int32(e)) {
			maxLMC = max(maxLMC, pl.LMC)
		}
	}

	// Every CA->CA path, walked through the tables the switches hold with
	// the DLID its source selects, takes exactly its hops.
	held := map[int32][]uint8{}
	for _, s := range topo.Switches() {
		l, err := a.Sim.LFT(topo.Nodes[s].GUID)
		if err != nil {
			t.Fatal(err)
		}
		held[s] = l
	}
	walked, viaOverride := 0, 0
	for _, p := range res.Routes.Paths {
		if !isCA(p.Src) || !isCA(p.Dst) {
			continue
		}
		dlid := selected(p.Src, p.Dst)
		cur, in := topo.Port(eps[p.Src]).Peer.Node, topo.Port(eps[p.Src]).Peer.Port
		for i, h := range p.Hops {
			if cur != h.Switch || in != h.In {
				t.Fatalf("path %d->%d hop %d: packet at node %d port %d, path says node %d port %d", p.Src, p.Dst, i, cur, in, h.Switch, h.In)
			}
			lft := held[cur]
			if int(dlid) >= len(lft) || lft[dlid] != h.Out {
				t.Fatalf("path %d->%d hop %d: switch %#x sends DLID %d out of port %v, path says %d", p.Src, p.Dst, i, topo.Nodes[cur].GUID, dlid, lft[min(int(dlid), len(lft)-1)], h.Out)
			}
			peer := topo.Nodes[cur].Ports[h.Out].Peer
			cur, in = peer.Node, peer.Port
		}
		if (topology.PortRef{Node: cur, Port: in}) != eps[p.Dst] {
			t.Fatalf("path %d->%d ends at node %d port %d, not at its destination", p.Src, p.Dst, cur, in)
		}
		walked++
		if _, ok := ov[[2]int32{p.Src, p.Dst}]; ok {
			viaOverride++
		}
	}
	cas := 0
	for e := range eps {
		if isCA(int32(e)) {
			cas++
		}
	}
	if walked != cas*(cas-1) {
		t.Fatalf("walked %d CA->CA paths, want %d (one per pair)", walked, cas*(cas-1))
	}
	t.Logf("%d CA->CA paths followed hop by hop, %d via DLID overrides; max CA LMC %d, %d overrides in all",
		walked, viaOverride, maxLMC, len(lids.Overrides))
	return pathStats{walked: walked, viaOverride: viaOverride, maxCALMC: maxLMC, overrides: len(lids.Overrides)}
}

// TestPathLIDAssignersThroughHost: both path routings with every path LID
// assigner (and a multi-VL assigner on path-realised tables) come up
// through the host on rand8 with their paths realised exactly.
func TestPathLIDAssignersThroughHost(t *testing.T) {
	type combo struct{ engine, lid, v string }
	var combos []combo
	for _, e := range []string{"shortest-widest", "path-selection"} {
		for _, l := range []string{"greedy", "split-merge-s", "split-merge-l", "color-s", "color-l", "renaming"} {
			combos = append(combos, combo{e, l, "single"})
		}
	}
	combos = append(combos, combo{"path-selection", "renaming", "layered"}, combo{"shortest-widest", "split-merge-l", "dfsssp"})
	for _, c := range combos {
		t.Run(c.engine+"+"+c.lid+"+"+c.v, func(t *testing.T) {
			a := start(t, writeMVConfig(t, t.TempDir(), mvSetup{net: rand8Net, engine: c.engine, lid: c.lid, v: c.v}))
			rep, err := a.SM.HeavySweep(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			calls := 3
			if c.v == "single" {
				calls = 2 // single (one-vl) is not asked: the host's check proved its plan
			}
			if rep.Engine != c.engine || rep.PluginCalls != calls || rep.Program.LFTBlocksSent == 0 {
				t.Fatalf("engine %s, %d plugin calls (want %d), %d LFT blocks sent", rep.Engine, rep.PluginCalls, calls, rep.Program.LFTBlocksSent)
			}
			checkPathPlan(t, a)
			res := a.SM.Applied().Result
			ar, err := analysis.Analyse(res.Realized, res.VLs, analysis.Options{})
			if err != nil || !ar.OK() || !ar.DeadlockFree {
				t.Fatalf("analysis of the installed plan: %v %+v", err, ar)
			}
		})
	}
}

var needsLayers = regexp.MustCompile(`needs at least (\d+) layers \(VLs\)`)

// TestNotEnoughVLsOrLIDs: a VL assigner that needs more VLs than the
// ports carry (the embedded fabric's VLCap gives 8 data VLs), or a LID
// assigner held below the LIDs its paths need, is refused with a message
// that says what was needed and what to do; the fabric gets no Set at all.
func TestNotEnoughVLsOrLIDs(t *testing.T) {
	rrg128 := filepath.Join(t.TempDir(), "rrg128.net")
	gen, stderr, err := ibsmOut(t, "topo", "rrg", "--switches", "128", "--ports", "4", "--cas", "1", "--seed", "1")
	if err != nil {
		t.Fatalf("ibsm topo: %v\n%s", err, stderr)
	}
	if err := os.WriteFile(rrg128, []byte(gen), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		s    mvSetup
		want []string
	}{
		{"dfsssp needs more than 8 VLs on a 128-switch RRG", mvSetup{net: rrg128, engine: "sssp", lid: "sequential", v: "dfsssp"},
			[]string{"dfsssp", "layers (VLs) but only 8 are available", "ports with more VLs (VLCap)", "fabric keeps its last good plan"}},
		{"color-l held to max_lmc 0", mvSetup{net: rand8Net, engine: "shortest-widest", lid: "color-l", v: "single", lidConfig: "max_lmc = 0"},
			[]string{"color-l", "needs 2 LIDs (LMC 1) with color-l, but max_lmc is 0", "raise max_lmc", "fabric keeps its last good plan"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeMVConfig(t, t.TempDir(), c.s)
			out, stderr, err := ibsmOut(t, "run", "--once", "--config", cfg)
			if err == nil {
				t.Fatalf("accepted (if the assigner improved, pick a fabric that needs more):\n%s", out)
			}
			if c.s.v == "dfsssp" {
				if m := needsLayers.FindStringSubmatch(stderr); m == nil {
					t.Errorf("refusal does not say how many layers it needs:\n%s", tail(stderr, 2000))
				} else if n, _ := strconv.Atoi(m[1]); n <= 8 {
					t.Errorf("refusal says it needs %d layers; with 8 VLs available it should need more:\n%s", n, tail(stderr, 2000))
				}
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("refusal lacks %q:\n%s", w, tail(stderr, 2000))
				}
			}
			// In-process: the same refusal, and not one Set reached the
			// fabric (no LID, no LFT block, no SL2VL table).
			a := start(t, cfg)
			_, err = a.SM.HeavySweep(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want[1]) {
				t.Fatalf("in-process sweep: want %q, got %v", c.want[1], err)
			}
			st := a.Sim.Stats()
			if st.Sets != 0 {
				t.Errorf("%d Sets reached the fabric after the refusal (by attribute %v)", st.Sets, st.ByAttr)
			}
			for guid, n := range a.SM.Fabric().Nodes {
				if n.Switch == nil {
					continue
				}
				if top, _, err := a.Sim.SwitchInfo(guid); err != nil || top != 0 {
					t.Errorf("switch %#x: LinearFDBTop %d (%v) although nothing was accepted", guid, top, err)
				}
			}
		})
	}
}
