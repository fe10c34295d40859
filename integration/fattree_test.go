package integration

// The fat-tree engines end to end on ft2-648 (36 leaves, 18 spines, 648
// CAs): sftree installs with every switch->switch pair routed and ibdmchk
// finds no credit loop over all paths; ftree, which leaves the spine->spine
// pairs unrouted by design, is rejected under the default
// routing.switch_to_switch = "required" and installed under "best_effort"
// with the same CA routes as sftree; ftree with LMC 1 spreads each CA's two
// LIDs over different spines, and SA offers both.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/topology"
)

// ft2 facts the assertions rest on: 54 switches, so 54*53 switch pairs;
// ftree cannot route spine->spine (18*17 pairs).
const (
	ft2Switches     = 54
	ft2CAs          = 648
	ft2SpinePairs   = 18 * 17
	ft2SwitchPairs  = ft2Switches * (ft2Switches - 1)
	ft2AllPaths     = (ft2Switches + ft2CAs) * (ft2Switches + ft2CAs - 1)
	ft2CAPairs      = ft2CAs * (ft2CAs - 1)
	ftreeBestEffort = "best_effort"
)

// ftSetup is one fat-tree routing configuration on ft2-648.
type ftSetup struct {
	engine   string // "ftree" or "sftree"
	fallback string // "" or "updn"
	policy   string // routing.switch_to_switch; "" leaves the default
	lmc      int
}

// writeFTConfig writes the config for s into dir (state in dir/state) and
// returns its path. The topology is read in place.
func writeFTConfig(t *testing.T, dir string, s ftSetup) string {
	t.Helper()
	net, err := filepath.Abs(ft2Net)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fabric {\n  transport = \"sim\"\n  topology = %q\n}\n", net)
	fmt.Fprintf(&b, "sm {\n  state_dir = \"state\"\n  lmc = %d\n  plugin_timeout = \"30s\"\n  mad_timeout = \"100ms\"\n  sweep_interval = \"1h\"\n}\n", s.lmc)
	plugins := [][2]string{{"routing_engine", s.engine}, {"lid_assigner", "sequential"}, {"vl_assigner", "single"}}
	if s.fallback != "" {
		plugins = append(plugins, [2]string{"routing_engine", s.fallback})
	}
	for _, p := range plugins {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n}\n", p[0], p[1], filepath.Join(binDir, "ibsm-plugin-"+p[1]))
	}
	fmt.Fprintf(&b, "routing {\n  engine = %q\n  lid_assigner = \"sequential\"\n  vl_assigner = \"single\"\n", s.engine)
	if s.fallback != "" {
		fmt.Fprintf(&b, "  fallback = [%q]\n", s.fallback)
	}
	if s.policy != "" {
		fmt.Fprintf(&b, "  switch_to_switch = %q\n", s.policy)
	}
	b.WriteString("}\n")
	path := filepath.Join(dir, "ibsm.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ibdmchk runs ibdmchk -a (every CA and switch pair: -a adds SW-CA and
// SW-SW paths to the connectivity and credit-loop checks) on the dumps in
// dir and returns its output. ibdmchk 1.5.7 segfaults on exit after
// printing its verdict, so the exit status means nothing: callers judge the
// printed verdict.
func ibdmchk(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("ibdmchk"); err != nil {
		t.Skip("ibdmchk (Debian ibutils) not installed; make test installs it")
	}
	cmd := exec.Command("ibdmchk", "-a", "-s", "opensm-subnet.lst", "-f", "opensm.fdbs", "-m", "opensm.mcfdbs")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func dumpTo(t *testing.T, cfg, dir string) {
	t.Helper()
	if out, err := ibsmCmd(t, "dump", "--config", cfg, "--out", dir); err != nil {
		t.Fatalf("ibsm dump: %v\n%s", err, out)
	}
}

func verifyJSON(t *testing.T, cfg string) (string, *analysis.Report) {
	t.Helper()
	out, err := ibsmCmd(t, "verify", "--json", "--shifts", "0", "--bisections", "0", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rep analysis.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, out)
	}
	return out, &rep
}

func TestFatTreeEngines(t *testing.T) {
	sftreeDump := t.TempDir()

	t.Run("sftree installed with every switch pair, no credit loop", func(t *testing.T) {
		dir := t.TempDir()
		cfg := writeFTConfig(t, dir, ftSetup{engine: "sftree", fallback: "updn"})
		out, err := ibsmCmd(t, "run", "--once", "--config", cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "engine sftree") || strings.Contains(out, "rejected") || strings.Contains(out, "plan warning") {
			t.Fatalf("sftree not installed cleanly:\n%s", out)
		}
		_, rep := verifyJSON(t, cfg)
		if rep.SwitchPairs.Total != ft2SwitchPairs || !rep.SwitchPairs.Complete() || rep.CAPairs.Total != ft2CAPairs || !rep.CAPairs.Complete() {
			t.Errorf("sftree pairs: switch %+v CA %+v", rep.SwitchPairs, rep.CAPairs)
		}
		dumpTo(t, cfg, sftreeDump)
		chk := ibdmchk(t, sftreeDump)
		for _, want := range []string{fmt.Sprintf("-I- Scanned:%d paths", ft2AllPaths), "-I- no credit loops found"} {
			if !strings.Contains(chk, want) {
				t.Errorf("ibdmchk -a did not print %q:\n%s", want, tail(chk, 3000))
			}
		}
		for _, bad := range []string{"missing paths", "Found credit loop", "Fail to find a path"} {
			if strings.Contains(chk, bad) {
				t.Errorf("ibdmchk -a reports %q:\n%s", bad, tail(chk, 3000))
			}
		}
	})

	t.Run("ftree rejected when required, installed when best_effort", func(t *testing.T) {
		dir := t.TempDir()
		// Default policy: ftree's plan is rejected for its switch pairs
		// and the fallback is installed.
		cfg := writeFTConfig(t, dir, ftSetup{engine: "ftree", fallback: "updn"})
		out, err := ibsmCmd(t, "run", "--once", "--config", cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("unreachable: 0 of %d CA->CA and %d of %d switch->switch", ft2CAPairs, ft2SpinePairs, ft2SwitchPairs)
		if !strings.Contains(out, "engine updn") || !strings.Contains(out, "engine ftree rejected") || !strings.Contains(out, want) {
			t.Fatalf("want ftree rejected (%q) and updn installed:\n%s", want, out)
		}
		// Same state directory, best_effort: the cached ftree plan is
		// verified again under the new policy (no plugin call) and
		// installed, with the unreachable pairs as a warning.
		cfg = writeFTConfig(t, dir, ftSetup{engine: "ftree", fallback: "updn", policy: ftreeBestEffort})
		out, err = ibsmCmd(t, "run", "--once", "--config", cfg)
		if err != nil {
			t.Fatal(err)
		}
		warn := fmt.Sprintf("plan warning: %d of %d switch->switch (source, DLID) pairs unreachable", ft2SpinePairs, ft2SwitchPairs)
		if !strings.Contains(out, "engine ftree") || strings.Contains(out, "rejected") || !strings.Contains(out, warn) ||
			!regexp.MustCompile(`\s0 plugin calls`).MatchString(out) {
			t.Fatalf("want ftree installed from the cache with %q:\n%s", warn, out)
		}
		text, err := ibsmCmd(t, "verify", "--shifts", "0", "--bisections", "0", "--config", cfg)
		if err != nil || !strings.Contains(text, "engine: ftree") || !strings.Contains(text, warn) {
			t.Fatalf("verify text lacks the engine or the warning: %v\n%s", err, tail(text, 2000))
		}

		ftreeDump := filepath.Join(dir, "dump")
		dumpTo(t, cfg, ftreeDump)
		// ibdmchk agrees on what is missing: exactly the spine pairs.
		chk := ibdmchk(t, ftreeDump)
		if want := fmt.Sprintf("-E- Found %d missing paths out of:%d paths", ft2SpinePairs, ft2AllPaths); !strings.Contains(chk, want) {
			t.Errorf("ibdmchk -a on ftree did not print %q:\n%s", want, tail(chk, 1500))
		}
		// sftree is ftree plus switch-to-switch routes: every CA
		// destination's entries match on every switch.
		if _, err := os.Stat(filepath.Join(sftreeDump, "opensm.fdbs")); err != nil {
			t.Skip("the sftree subtest did not dump")
		}
		cas := caLIDs(t, filepath.Join(ftreeDump, "opensm-lfts.dump"))
		if len(cas) != ft2CAs {
			t.Fatalf("%d CA LIDs in the ftree dump, want %d", len(cas), ft2CAs)
		}
		f, s := fdbs(t, filepath.Join(ftreeDump, "opensm.fdbs")), fdbs(t, filepath.Join(sftreeDump, "opensm.fdbs"))
		if len(f) != ft2Switches || len(s) != ft2Switches {
			t.Fatalf("fdbs hold %d and %d switches, want %d", len(f), len(s), ft2Switches)
		}
		diff, same := 0, 0
		for sw, rows := range f {
			for lid := range cas {
				if rows[lid] == "" || rows[lid] != s[sw][lid] {
					if diff++; diff <= 5 {
						t.Errorf("switch %s LID %#04x: ftree %q, sftree %q", sw, lid, rows[lid], s[sw][lid])
					}
				} else {
					same++
				}
			}
		}
		if diff > 0 || same != ft2Switches*ft2CAs {
			t.Errorf("%d CA entries differ, %d equal (want %d)", diff, same, ft2Switches*ft2CAs)
		}
	})

	t.Run("ftree LMC 1: two LIDs per CA over different spines, SA offers both", func(t *testing.T) {
		dir := t.TempDir()
		cfg := writeFTConfig(t, dir, ftSetup{engine: "ftree", policy: ftreeBestEffort, lmc: 1})
		dump := filepath.Join(dir, "dump")
		dumpTo(t, cfg, dump)

		a := start(t, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		up := make(chan error, 1)
		go func() {
			defer close(done)
			a.SM.Run(ctx, nil, func(_ *sm.Report, err error) {
				select {
				case up <- err:
				default:
				}
			})
		}()
		t.Cleanup(func() { cancel(); <-done })
		select {
		case err := <-up:
			if err != nil {
				t.Fatalf("first sweep: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no SUBNET UP within 10 s")
		}
		ap := a.SM.Applied()
		topo, lids := ap.Topo, ap.Result.LIDs
		if ap.Result.Engine != "ftree" || len(ap.Result.Warnings) != 1 {
			t.Fatalf("engine %s warnings %q", ap.Result.Engine, ap.Result.Warnings)
		}

		// The dumped tables are the ones the switches hold.
		lft := dumpedLFTs(t, filepath.Join(dump, "opensm-lfts.dump"))
		for _, sw := range topo.Switches() {
			g := topo.Nodes[sw].GUID
			held, err := a.Sim.LFT(g)
			if err != nil {
				t.Fatal(err)
			}
			d := lft[g]
			if len(d) == 0 || len(held) < len(d) || string(held[:len(d)]) != string(d) {
				t.Fatalf("switch %#x: dumped LFT (%d entries) differs from the programmed one (%d)", g, len(d), len(held))
			}
		}

		// Walk both LIDs of every CA from every other leaf: the paths must
		// turn at different spines.
		leafOf := map[int32]int32{} // CA endpoint -> leaf switch node
		for e, ref := range topo.Endpoints() {
			if topo.Nodes[ref.Node].Type == topology.CA {
				leafOf[int32(e)] = topo.Port(ref).Peer.Node
			}
		}
		leaves := map[int32]bool{}
		for _, l := range leafOf {
			leaves[l] = true
		}
		walk := func(from int32, dlid uint16) (spines []uint64, arrived int32) {
			cur := from
			for hops := 0; hops < 8; hops++ {
				row := lft[topo.Nodes[cur].GUID]
				if int(dlid) >= len(row) || row[dlid] == 0 || row[dlid] == 0xFF {
					return spines, -1
				}
				peer := topo.Nodes[cur].Ports[row[dlid]].Peer
				if topo.Nodes[peer.Node].Type == topology.CA {
					return spines, peer.Node
				}
				if !leaves[peer.Node] {
					spines = append(spines, topo.Nodes[peer.Node].GUID)
				}
				cur = peer.Node
			}
			return spines, -1
		}
		var pairs, sameSpine int
		for e, dstLeaf := range leafOf {
			pl := lids.Ports[e]
			if pl.LMC != 1 {
				t.Fatalf("CA endpoint %d has LMC %d, want 1", e, pl.LMC)
			}
			for src := range leaves {
				if src == dstLeaf {
					continue
				}
				var via [2]uint64
				for k := uint16(0); k < 2; k++ {
					sp, at := walk(src, pl.Base+k)
					if at != topo.Endpoints()[e].Node || len(sp) != 1 {
						t.Fatalf("leaf %#x -> LID %d: arrives at node %d via spines %x", topo.Nodes[src].GUID, pl.Base+k, at, sp)
					}
					via[k] = sp[0]
				}
				pairs++
				if via[0] == via[1] {
					sameSpine++
				}
			}
		}
		if pairs != ft2CAs*35 || sameSpine != 0 {
			t.Errorf("%d of %d (leaf, CA) pairs use the same spine for both LIDs, want 0", sameSpine, pairs)
		}

		// SA: a client CA on another leaf asks for every path from its
		// base LID to the SM's port (by GID): one record per DLID.
		smEp := topo.EndpointIndex(topo.SM)
		var client int32 = -1
		for e, l := range leafOf {
			if l != leafOf[int32(smEp)] {
				client = e
				break
			}
		}
		recs := saPaths(t, a, client, lids.Ports[smEp].Base, lids.Ports[client].Base, topo.Port(topo.SM).GUID)
		n := len(recs)
		got := map[uint16]bool{}
		for i, pr := range recs {
			if pr.SLID != lids.Ports[client].Base {
				t.Errorf("record %d: SLID %d, asked for %d", i, pr.SLID, lids.Ports[client].Base)
			}
			got[pr.DLID] = true
		}
		base := lids.Ports[smEp].Base
		if n != 2 || !got[base] || !got[base+1] {
			t.Errorf("SA offered %d records with DLIDs %v, want both %d and %d", n, got, base, base+1)
		}
	})
}

// caLIDs reads the LIDs of channel adapters from an opensm-lfts.dump.
func caLIDs(t *testing.T, path string) map[uint16]bool {
	t.Helper()
	out := map[uint16]bool{}
	scanLines(t, path, func(l string) {
		if f := strings.Fields(l); len(f) > 3 && f[2] == "#" && f[3] == "Channel" {
			if v, err := strconv.ParseUint(f[0], 0, 16); err == nil {
				out[uint16(v)] = true
			}
		}
	})
	return out
}

// fdbs reads opensm.fdbs: switch GUID -> LID -> the entry's text
// ("port : hops : optimal" or "UNREACHABLE").
func fdbs(t *testing.T, path string) map[string]map[uint16]string {
	t.Helper()
	out := map[string]map[uint16]string{}
	var cur map[uint16]string
	scanLines(t, path, func(l string) {
		if g, ok := strings.CutPrefix(l, "dump_ucast_routes: Switch "); ok {
			cur = map[uint16]string{}
			out[strings.TrimSpace(g)] = cur
			return
		}
		lid, rest, ok := strings.Cut(l, " : ")
		if !ok || cur == nil || !strings.HasPrefix(lid, "0x") {
			return
		}
		if v, err := strconv.ParseUint(strings.TrimSpace(lid), 0, 16); err == nil {
			cur[uint16(v)] = strings.TrimSpace(rest)
		}
	})
	return out
}

var lftHeader = regexp.MustCompile(`^Unicast lids \[0-(\d+)\] of switch Lid \d+ guid (0x[0-9a-f]+)`)

// dumpedLFTs reads opensm-lfts.dump: switch GUID -> LFT (0xFF where the
// dump has no line).
func dumpedLFTs(t *testing.T, path string) map[uint64][]uint8 {
	t.Helper()
	out := map[uint64][]uint8{}
	var cur []uint8
	scanLines(t, path, func(l string) {
		if m := lftHeader.FindStringSubmatch(l); m != nil {
			top, _ := strconv.Atoi(m[1])
			g, _ := strconv.ParseUint(m[2], 0, 64)
			cur = make([]uint8, top+1)
			for i := range cur {
				cur[i] = 0xFF
			}
			out[g] = cur
			return
		}
		f := strings.Fields(l)
		if cur == nil || len(f) < 2 || !strings.HasPrefix(f[0], "0x") {
			return
		}
		lid, err1 := strconv.ParseUint(f[0], 0, 16)
		port, err2 := strconv.ParseUint(f[1], 10, 8)
		if err1 == nil && err2 == nil && int(lid) < len(cur) {
			cur[lid] = uint8(port)
		}
	})
	return out
}

func scanLines(t *testing.T, path string, f func(string)) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		f(sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
