package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/integration/diags"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// These tests run ibsm (and, to validate the harness, OpenSM) against a
// real ibsim and check what they programmed with the stock tools under
// libumad2sim: ibnetdiscover (LIDs), dump_fts + smpdump (LFTs), ibtracert
// (paths), saquery (PathRecord) and sminfo (master SM). The tools are
// nobody's code here, so agreement with the SM's own plan means the plan
// reached the fabric.

// rig is one ibsim with the tools pointed at it.
type rig struct {
	dir  string
	net  *netfile.File // the topology ibsim loaded (node ids for the console)
	sim  *benchutil.IBSim
	env  *diags.Env
	file string
}

// startRig starts ibsim on netFile under a socket name of its own, with the
// tools attached at toolHost. At test end it checks that ibsim is alive
// and answers its console and a MAD (nothing the SM did stalled or killed
// it), then stops it.
// leafClient attaches a plain (non-SM) client to ibsim at CA ca and returns
// it with the directed route out of the CA's port 1, checked to reach a
// switch, and that switch's NodeInfo. The client closes when the test ends.
func (r *rig) leafClient(t *testing.T, ctx context.Context, ca string) (*mad.Client, mad.Path, smp.NodeInfo) {
	t.Helper()
	conn, err := ibsim.Dial(ctx, ibsim.Options{SockName: r.env.Sockname, Attach: ca})
	if err != nil {
		t.Fatalf("attaching a second client to ibsim at %s: %v", ca, err)
	}
	tr := transport.New(conn, transport.Options{Timeout: 500 * time.Millisecond, Retries: 3, Window: 4})
	t.Cleanup(func() { tr.Close() })
	c := &mad.Client{T: tr}
	leaf := mad.Path{1}
	var ni smp.NodeInfo
	if err := c.Get(ctx, leaf, smp.AttrNodeInfo, 0, &ni); err != nil || ni.NodeType != smp.NodeTypeSwitch {
		t.Fatalf("DR %s from %s reaches node %#x of type %d (%v); want a switch", leaf, ca, ni.NodeGUID, ni.NodeType, err)
	}
	return c, leaf, ni
}

func startRig(t *testing.T, netFile, toolHost string) *rig {
	t.Helper()
	preload, paths, err := diags.FindTools()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	netFile, err = filepath.Abs(netFile) // ibsim runs in dir
	if err != nil {
		t.Fatal(err)
	}
	nf, err := netfile.ParseFile(netFile)
	if err != nil {
		t.Fatal(err)
	}
	sock := fmt.Sprintf("ibsmdiag%d_%s", os.Getpid(), regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_"))
	sim, err := benchutil.StartIBSimWith(context.Background(), benchutil.IBSimOptions{
		Path: paths["ibsim"], NetFile: netFile, Dir: dir, SockName: sock, Ready: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{dir: dir, net: nf, sim: sim, file: netFile,
		env: &diags.Env{Preload: preload, Paths: paths, Sockname: sock, Host: toolHost, Dir: dir, Timeout: 60 * time.Second}}
	t.Cleanup(func() {
		defer sim.Stop()
		select {
		case <-sim.Exited():
			t.Errorf("ibsim exited during the test; see %s:\n%s", sim.LogPath, readTail(sim.LogPath, 2000))
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := sim.Attached(ctx); err != nil {
			t.Errorf("ibsim's console does not answer at test end (stalled?): %v", err)
		}
		if _, err := r.env.Run(ctx, "smpquery", "-D", "nodeinfo", "0"); err != nil {
			t.Errorf("ibsim does not answer a directed-route NodeInfo at test end: %v", err)
		}
	})
	return r
}

func readTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	return tail(string(b), n)
}

// daemon is `ibsm run` in its own process group (its plugins inherit it).
type daemon struct {
	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan error
}

// startIBSM runs `ibsm run --config cfg` plus any extra flags. At test end
// it stops ibsm with SIGTERM and fails the test if ibsm does not exit
// cleanly or anything in its process group (a plugin) survives it.
func startIBSM(t *testing.T, cfg string, extra ...string) *daemon {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "ibsm"), append([]string{"run", "--config", cfg}, extra...)...)
	cmd.Dir = filepath.Dir(cfg)
	d := &daemon{cmd: cmd, log: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = d.log, d.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- cmd.Wait() }()
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		defer syscall.Kill(-pgid, syscall.SIGKILL) // whatever is left, even on failure
		// Plugins run in process groups of their own: remember them by
		// parentage while ibsm lives.
		plugins := children(pgid)
		defer func() {
			for _, p := range plugins {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}()
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-d.done:
				if err != nil {
					t.Errorf("ibsm exited with %v on SIGTERM:\n%s", err, tail(d.log.String(), 3000))
				}
			case <-time.After(15 * time.Second):
				t.Errorf("ibsm did not stop within 15s of SIGTERM")
				return
			}
		}
		// Plugins see their parent go (parent-death signal, watchdog);
		// give them a moment, then nothing may be left.
		var left []int
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			left, _ = diags.GroupMembers(pgid)
			for _, p := range plugins {
				if syscall.Kill(p, 0) == nil && !zombie(p) {
					left = append(left, p)
				}
			}
			if len(left) == 0 {
				return
			}
		}
		t.Errorf("processes of ibsm (group %d, or its plugins) outlived it: %v", pgid, left)
	})
	return d
}

var reRetries = regexp.MustCompile(`SUBNET UP: .*\bretries=(\d+)`)

// waitUp waits for the n-th SUBNET UP line and returns the MAD retries it
// reports.
func (d *daemon) waitUp(t *testing.T, n int, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if m := reRetries.FindAllStringSubmatch(d.log.String(), -1); len(m) >= n {
			r, _ := strconv.Atoi(m[n-1][1])
			return r
		}
		select {
		case err := <-d.done:
			t.Fatalf("ibsm exited (%v) before SUBNET UP #%d:\n%s", err, n, tail(d.log.String(), 4000))
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("no SUBNET UP #%d within %s:\n%s", n, within, tail(d.log.String(), 4000))
	return 0
}

// engine is the routing engine a test config names, with the attribute
// lines of its plugin block.
type engine struct{ name, attrs string }

// ibsimConfig writes an ibsm config driving the ibsim behind r, the SM
// attached at smNode, into dir/name, routing with updn.
func ibsimConfig(t *testing.T, dir, name, transport string, r *rig, smNode, stateDir string, retries int) string {
	t.Helper()
	return ibsimConfigWith(t, dir, name, transport, r, smNode, stateDir, retries, engine{name: "updn"})
}

// ibsimConfigWith is ibsimConfig routing with eng.
func ibsimConfigWith(t *testing.T, dir, name, transport string, r *rig, smNode, stateDir string, retries int, eng engine) string {
	t.Helper()
	var b strings.Builder
	switch transport {
	case "ibsim":
		fmt.Fprintf(&b, "fabric {\n  transport = \"ibsim\"\n  socket = %q\n  attach = %q\n}\n", r.env.Sockname, smNode)
	case "sim":
		// The embedded fabric from the same file, with the SM at the same
		// node: `ibsm dump` there computes the plan ibsm makes for this
		// fabric from the LIDs the daemon persisted.
		n := r.net.Node(smNode)
		if n == nil {
			t.Fatalf("no node %q in %s", smNode, r.file)
		}
		fmt.Fprintf(&b, "fabric {\n  transport = \"sim\"\n  topology = %q\n  sm_node = \"%#016x\"\n  sm_port = 1\n}\n", r.file, n.GUID)
	}
	fmt.Fprintf(&b, "sm {\n  state_dir = %q\n  mad_timeout = \"200ms\"\n  mad_retries = %d\n  sweep_interval = \"500ms\"\n  plugin_timeout = \"60s\"\n  priority = 14\n}\n", stateDir, retries)
	for _, p := range []struct{ kind, name, attrs string }{{"routing_engine", eng.name, eng.attrs}, {"lid_assigner", "sequential", ""}, {"vl_assigner", "single", ""}} {
		fmt.Fprintf(&b, "plugin %q %q {\n  path = %q\n%s}\n", p.kind, p.name, filepath.Join(binDir, "ibsm-plugin-"+p.name), p.attrs)
	}
	fmt.Fprintf(&b, "routing {\n  engine = %q\n  lid_assigner = \"sequential\"\n  vl_assigner = \"single\"\n}\n", eng.name)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ibsmPlan is ibsm's plan for the fabric the daemon brought up: `ibsm dump`
// on the embedded fabric loaded from the same file, seeded with a copy of
// the daemon's guid2lid, writes the OpenSM-format LFT dump.
func ibsmPlan(t *testing.T, r *rig, smNode, stateDir string, eng engine) *diags.Plan {
	t.Helper()
	g2l := filepath.Join(stateDir, "guid2lid")
	src, err := os.ReadFile(g2l)
	if err != nil {
		t.Fatalf("ibsm left no guid2lid: %v", err)
	}
	planDir := filepath.Join(r.dir, "plan")
	if err := os.MkdirAll(filepath.Join(planDir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(planDir, "state", "guid2lid"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := ibsimConfigWith(t, planDir, "dump.hcl", "sim", r, smNode, filepath.Join(planDir, "state"), 3, eng)
	cmd := exec.Command(filepath.Join(binDir, "ibsm"), "dump", "--config", cfg, "--out", planDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ibsm dump: %v\n%s", err, out)
	}
	p, err := diags.LoadPlan(g2l, filepath.Join(planDir, "opensm-lfts.dump"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// caPorts lists the connected CA port GUIDs of a discovery, sorted.
func caPorts(d *diags.Discovery) []uint64 {
	var out []uint64
	for _, n := range d.File.Nodes {
		if n.Type == topology.CA {
			for p := 1; p <= n.NumPorts(); p++ {
				if n.Ports[p].Peer != nil {
					out = append(out, n.Ports[p].GUID)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// samplePairs picks n (source, destination) CA port pairs spread over the
// fabric, deterministically, plus one pair to a switch (dst is then the
// switch's node GUID).
func samplePairs(d *diags.Discovery, n int) [][2]uint64 {
	cas := caPorts(d)
	var out [][2]uint64
	for i := 0; i < n && len(cas) > 1; i++ {
		a := cas[(i*7919)%len(cas)]
		b := cas[(i*104729+len(cas)/2)%len(cas)]
		if a == b {
			b = cas[(i*104729+len(cas)/2+1)%len(cas)]
		}
		out = append(out, [2]uint64{a, b})
	}
	var sw uint64
	for _, nd := range d.File.Nodes {
		if nd.Type == topology.Switch {
			sw = nd.GUID // the last switch listed
		}
	}
	if sw != 0 && len(cas) > 0 {
		out = append(out, [2]uint64{cas[0], sw})
	}
	return out
}

// checkFabric runs every tool and compares what it reads with plan. smPort
// is the SM's port GUID. It returns the discovery for later steps.
func checkFabric(t *testing.T, ctx context.Context, r *rig, plan *diags.Plan, smPort uint64, wantSL uint8) (*diags.Discovery, map[uint64]*diags.LFT) {
	t.Helper()
	start := time.Now()
	d, _, err := r.env.Discover(ctx)
	if err != nil {
		t.Fatalf("ibnetdiscover: %v", err)
	}
	if got, want := len(d.File.Nodes), len(r.net.Nodes); got != want {
		t.Errorf("ibnetdiscover found %d nodes, the topology has %d", got, want)
	}
	if err := diags.CheckLIDs(d, plan.LIDs); err != nil {
		t.Errorf("ibnetdiscover's LIDs differ from the plan:\n%v", err)
	}

	fts, _, err := r.env.DumpFTs(ctx)
	if err != nil {
		t.Fatalf("dump_fts: %v", err)
	}
	// dump_fts can stop short of LinearFDBTop: read the block holding the
	// top LID of every switch with smpdump and fold it in.
	maxLID := plan.MaxLID()
	added := 0
	for g, l := range fts {
		lid := d.LIDs[g]
		data, err := r.env.LFTBlock(ctx, lid, int(maxLID/64))
		if err != nil {
			t.Fatalf("smpdump of switch %#016x (LID %d) LFT block %d: %v", g, lid, maxLID/64, err)
		}
		a, err := diags.MergeBlock(l, int(maxLID/64), data, maxLID)
		if err != nil {
			t.Error(err)
		}
		added += len(a)
	}
	if added > 0 {
		t.Logf("smpdump supplied %d LFT entries dump_fts did not print", added)
	}
	if err := diags.CheckLFTs(fts, plan.LFTs, maxLID); err != nil {
		t.Errorf("dump_fts differs from the plan:\n%v", err)
	}

	pairs := samplePairs(d, 6)
	for _, p := range pairs {
		src, dst := d.LIDs[p[0]], d.LIDs[p[1]]
		tr, err := r.env.Trace(ctx, src, dst)
		if err != nil {
			t.Errorf("ibtracert %d %d: %v", src, dst, err)
			continue
		}
		want, err := diags.Walk(d, plan.LFTs, p[0], dst)
		if err != nil {
			t.Errorf("the plan's own path %d → %d: %v", src, dst, err)
			continue
		}
		if err := diags.CompareSteps(tr.Steps(), want); err != nil {
			t.Errorf("ibtracert %d → %d does not follow the plan: %v", src, dst, err)
		}
	}

	for _, p := range pairs[:3] {
		src, dst := d.LIDs[p[0]], d.LIDs[p[1]]
		prs, err := r.env.PathRecords(ctx, src, dst)
		if err != nil {
			t.Errorf("saquery PathRecord %d → %d: %v", src, dst, err)
			continue
		}
		if len(prs) == 0 {
			t.Errorf("saquery PathRecord %d → %d: no record", src, dst)
		}
		for _, pr := range prs {
			if pr.DLID != plan.LIDs[p[1]] || pr.SLID != src || pr.SL != wantSL {
				t.Errorf("saquery PathRecord %d → %d: dlid %d slid %d sl %d, plan dlid %d sl %d", src, dst, pr.DLID, pr.SLID, pr.SL, plan.LIDs[p[1]], wantSL)
			}
		}
	}

	si, err := r.env.SMInfo(ctx)
	if err != nil {
		t.Errorf("sminfo: %v", err)
	} else if si.State != diags.SMStateMaster || si.GUID != smPort || si.LID != plan.LIDs[smPort] {
		t.Errorf("sminfo: %+v; want master, guid %#x, lid %d", si, smPort, plan.LIDs[smPort])
	}
	t.Logf("tools: %d nodes, %d switches' LFTs, %d traces, 3 PathRecords, sminfo in %s", len(d.File.Nodes), len(fts), len(pairs), time.Since(start).Round(time.Millisecond))
	return d, fts
}

// nthCA is the n-th CA in the topology file.
func nthCA(t *testing.T, f *netfile.File, n int) *netfile.Node {
	t.Helper()
	i := 0
	for _, nd := range f.Nodes {
		if nd.Type == topology.CA {
			if i == n {
				return nd
			}
			i++
		}
	}
	t.Fatalf("topology has fewer than %d CAs", n+1)
	return nil
}

// TestIBSimOpenSMHarness validates the harness: OpenSM (real, not ours)
// brings the fabric up, and the same checks compare the tools' view with
// the LIDs and LFTs OpenSM dumped. They pass there; a LID changed behind
// the SM's back (console Baselid) makes the LID check fail.
func TestIBSimOpenSMHarness(t *testing.T) {
	net := "diags/testdata/random-6sw-8ca-seed3.net"
	nf, err := netfile.ParseFile(net)
	if err != nil {
		t.Fatal(err)
	}
	last := nthCA(t, nf, 7)
	r := startRig(t, net, last.Name)
	osmDir := filepath.Join(r.dir, "osm")
	if err := os.MkdirAll(osmDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// OpenSM as a daemon (not -o) so it answers sminfo and saquery; it
	// attaches at ibsim's default port, the first CA.
	cmd := exec.Command(r.env.Paths["opensm"], "-d", "2", "-D", "0x43", "-f", filepath.Join(osmDir, "osm.log"), "--dump_files_dir", osmDir, "-s", "0", "-R", "updn")
	cmd.Dir = osmDir // umad2sim's sys-<pid> tree goes there
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+r.env.Preload, "IBSIM_SOCKNAME="+r.env.Sockname, "OSM_CACHE_DIR="+osmDir, "OSM_TMP_DIR="+osmDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	lfts := filepath.Join(osmDir, "opensm-lfts.dump")
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(osmDir, "osm.log"))
		if _, err := os.Stat(lfts); err == nil && strings.Contains(string(b), "SUBNET UP") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("OpenSM not up within 30s:\n%s\n%s", out.String(), tail(string(b), 3000))
		}
	}
	time.Sleep(200 * time.Millisecond) // the dump is written while the log says SUBNET UP
	plan, err := diags.LoadPlan(filepath.Join(osmDir, "guid2lid"), lfts)
	if err != nil {
		t.Fatal(err)
	}
	first := nthCA(t, nf, 0)
	ctx := context.Background()
	d, _ := checkFabric(t, ctx, r, plan, first.Ports[1].GUID, 0)
	if t.Failed() {
		return
	}

	// Negative control: move a CA's LID behind the SM's back.
	victim := nthCA(t, nf, 3)
	if err := r.sim.Console(fmt.Sprintf("Baselid %q[1] 77", victim.Name)); err != nil {
		t.Fatal(err)
	}
	d2, _, err := r.env.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = diags.CheckLIDs(d2, plan.LIDs)
	if want := fmt.Sprintf("port %#016x: ibnetdiscover shows LID 77, plan %d", victim.Ports[1].GUID, d.LIDs[victim.Ports[1].GUID]); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("LID check after Baselid: got %v, want %q", err, want)
	}
}

// TestIBSimFatTree brings up the 2-level fat tree (648 CAs) with ibsm over
// transport "ibsim", checks the tools see ibsm's plan, then takes a leaf
// uplink down with the console: ibsm must re-route and the traced paths
// and every LFT must avoid the dead link.
func TestIBSimFatTree(t *testing.T) {
	testIBSimIBSM(t, ft2Net, true, 0, engine{name: "updn"})
}

// TestIBSimFatTreeEntries is TestIBSimFatTree with sftree repairing its
// routes incrementally: its answer to the unlink names only the changed
// entries (plan.Routes.Edits), which the host realises into the tables
// dump_fts and ibtracert read back.
func TestIBSimFatTreeEntries(t *testing.T) {
	testIBSimIBSM(t, ft2Net, true, 0, engine{name: "sftree", attrs: "  config {\n    incremental = true\n  }\n"})
}

// TestIBSimRandomLossy brings up a seeded random irregular fabric with ibsm
// while ibsim drops 10% of the MADs crossing one inter-switch port: ibsm
// must still reach SUBNET UP with the plan the tools confirm, and report
// how many MADs it retried. Then a link on a traced path goes down, as on
// the fat tree.
func TestIBSimRandomLossy(t *testing.T) {
	net, _ := randomFabric(t)
	testIBSimIBSM(t, net, true, 10, engine{name: "updn"})
}

// randomFabric writes the seeded random irregular fabric the ibsim tests
// share (24 switches of degree 4, 96 CAs, seed 11) and parses it.
func randomFabric(t *testing.T) (string, *netfile.File) {
	t.Helper()
	net := filepath.Join(t.TempDir(), "random.net")
	out, err := exec.Command(filepath.Join(binDir, "ibsm"), "topo", "random", "--switches", "24", "--degree", "4", "--cas", "96", "--seed", "11").Output()
	if err != nil {
		t.Fatalf("ibsm topo random: %v", err)
	}
	if err := os.WriteFile(net, out, 0o644); err != nil {
		t.Fatal(err)
	}
	nf, err := netfile.ParseFile(net)
	if err != nil {
		t.Fatal(err)
	}
	return net, nf
}

func testIBSimIBSM(t *testing.T, net string, unlink bool, lossPercent int, eng engine) {
	nf, err := netfile.ParseFile(net)
	if err != nil {
		t.Fatal(err)
	}
	smNode := nthCA(t, nf, 0)
	r := startRig(t, net, nthCA(t, nf, len(caNodes(nf))-1).Name)
	ctx := context.Background()

	var lossy string
	if lossPercent > 0 {
		// One inter-switch port of the SM's own switch: most discovery
		// and programming MADs cross it.
		sw := smNode.Ports[1].Peer
		p := firstSwitchPort(sw)
		if p == 0 {
			t.Fatalf("switch %s has no inter-switch port", sw.Name)
		}
		lossy = benchutil.PortRef(sw.Name, p)
		if err := r.sim.SetErrorRate(sw.Name, p, lossPercent, 0); err != nil {
			t.Fatal(err)
		}
	}

	stateDir := filepath.Join(r.dir, "state")
	cfg := ibsimConfigWith(t, r.dir, "ibsm.hcl", "ibsim", r, smNode.Name, stateDir, 5, eng)
	var flags []string
	if eng.name != "updn" {
		flags = []string{"--log-level", "debug"} // the route calls' answers below
	}
	sm := startIBSM(t, cfg, flags...)
	start := time.Now()
	retries := sm.waitUp(t, 1, 60*time.Second)
	t.Logf("ibsm SUBNET UP after %s, %d MAD retries", time.Since(start).Round(time.Millisecond), retries)
	if lossPercent > 0 {
		if retries == 0 {
			t.Errorf("ibsim dropped %d%% of the MADs at %s but ibsm reports 0 retries", lossPercent, lossy)
		}
		// The tools do not retry much: check the plan on a clean fabric.
		if err := r.sim.Console(fmt.Sprintf("Error %s 0", lossy)); err != nil {
			t.Fatal(err)
		}
	}

	plan := ibsmPlan(t, r, smNode.Name, stateDir, eng)
	d, fts := checkFabric(t, ctx, r, plan, smNode.Ports[1].GUID, 0)
	if !unlink || t.Failed() {
		return
	}

	// Take down the first inter-switch link on the path of a sampled pair
	// whose loss keeps the switches connected (a leaf uplink on the fat
	// tree; on a random graph a link that is not a bridge).
	pair := samplePairs(d, 1)[0]
	src, dst := d.LIDs[pair[0]], d.LIDs[pair[1]]
	before, err := diags.Walk(d, fts, pair[0], dst)
	if err != nil {
		t.Fatalf("path %d → %d before the unlink: %v", src, dst, err)
	}
	var leaf, spine *netfile.Node
	var port, spinePort int
	for _, st := range before {
		n := r.net.NodeByGUID(st.Switch)
		if st.Out == 0 || n.Ports[st.Out].Peer == nil || n.Ports[st.Out].Peer.Type != topology.Switch {
			continue
		}
		if switchesConnectedWithout(r.net, n, st.Out) {
			leaf, port = n, st.Out
			spine, spinePort = n.Ports[port].Peer, n.Ports[port].PeerPort
			break
		}
	}
	if leaf == nil {
		t.Fatalf("the path %d → %d (%v) has no inter-switch link that is not a bridge; pick another seed", src, dst, before)
	}
	if err := r.sim.Unlink(leaf.Name, port); err != nil {
		t.Fatal(err)
	}
	t.Logf("unlinked %s[%d] – %s[%d] on the path %d → %d", leaf.Name, port, spine.Name, spinePort, src, dst)
	start = time.Now()
	sm.waitUp(t, 2, 30*time.Second)
	t.Logf("ibsm re-routed %s after the unlink", time.Since(start).Round(time.Millisecond))
	// The re-route's plan was checked by its changes (check.Delta), not in
	// full: what dump_fts and ibtracert read back below is that plan.
	if !strings.Contains(sm.log.String(), "plan verified by its changes") {
		t.Errorf("the re-route after the unlink was not verified by its changes:\n%s", tail(sm.log.String(), 3000))
	}
	if eng.name == "sftree" && !regexp.MustCompile(`route call answered the destinations changed since its last answer.* entries=[1-9]`).MatchString(sm.log.String()) {
		t.Errorf("sftree's answer to the unlink did not name changed entries:\n%s", tail(sm.log.String(), 3000))
	}

	tr, err := r.env.Trace(ctx, src, dst)
	if err != nil {
		t.Fatalf("ibtracert %d %d after the unlink: %v", src, dst, err)
	}
	if tr.To.LID != dst {
		t.Errorf("ibtracert %d → %d after the unlink ends at LID %d", src, dst, tr.To.LID)
	}
	for _, s := range tr.Steps() {
		if (s.Switch == leaf.GUID && s.Out == port) || (s.Switch == spine.GUID && s.In == spinePort) {
			t.Errorf("ibtracert %d → %d still crosses the dead link: %v", src, dst, tr.Steps())
		}
	}
	fts2, _, err := r.env.DumpFTs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d2, _, err := r.env.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	maxLID := plan.MaxLID()
	// Negative control on real data: the tables changed, and the LFT check
	// notices that they no longer match the plan from before the unlink.
	if err := diags.CheckLFTs(fts2, plan.LFTs, maxLID); err == nil {
		t.Errorf("dump_fts after the unlink still equals the plan from before it: nothing was re-programmed")
	}
	for lid := uint16(1); lid <= maxLID; lid++ {
		if fts2[leaf.GUID].Port(lid) == uint8(port) || fts2[spine.GUID].Port(lid) == uint8(spinePort) {
			t.Errorf("after the unlink an LFT still sends LID %d over the dead link", lid)
			break
		}
	}
	// Every sampled pair still arrives over the new tables, and ibtracert
	// agrees with them.
	for _, p := range samplePairs(d2, 6) {
		want, err := diags.Walk(d2, fts2, p[0], d2.LIDs[p[1]])
		if err != nil {
			t.Errorf("after the unlink: %v", err)
			continue
		}
		tr, err := r.env.Trace(ctx, d2.LIDs[p[0]], d2.LIDs[p[1]])
		if err != nil {
			t.Errorf("ibtracert after the unlink: %v", err)
			continue
		}
		if err := diags.CompareSteps(tr.Steps(), want); err != nil {
			t.Errorf("ibtracert %d → %d vs dump_fts after the unlink: %v", d2.LIDs[p[0]], d2.LIDs[p[1]], err)
		}
	}
}

func caNodes(f *netfile.File) []*netfile.Node {
	var out []*netfile.Node
	for _, n := range f.Nodes {
		if n.Type == topology.CA {
			out = append(out, n)
		}
	}
	return out
}

// firstSwitchPort is sw's lowest port cabled to another switch.
func firstSwitchPort(sw *netfile.Node) int {
	for p := 1; p <= sw.NumPorts(); p++ {
		if pe := sw.Ports[p].Peer; pe != nil && pe.Type == topology.Switch {
			return p
		}
	}
	return 0
}

// switchesConnectedWithout reports whether every switch still reaches every
// other over switch-to-switch links once port p of sw is cut.
func switchesConnectedWithout(f *netfile.File, sw *netfile.Node, p int) bool {
	peer, pp := sw.Ports[p].Peer, sw.Ports[p].PeerPort
	cut := func(n *netfile.Node, q int) bool {
		return (n == sw && q == p) || (n == peer && q == pp)
	}
	var start *netfile.Node
	total := 0
	for _, n := range f.Nodes {
		if n.Type == topology.Switch {
			total++
			if start == nil {
				start = n
			}
		}
	}
	seen := map[*netfile.Node]bool{start: true}
	queue := []*netfile.Node{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for q := 1; q <= n.NumPorts(); q++ {
			m := n.Ports[q].Peer
			if m == nil || m.Type != topology.Switch || seen[m] || cut(n, q) {
				continue
			}
			seen[m] = true
			queue = append(queue, m)
		}
	}
	return len(seen) == total
}

// zombie reports whether pid is a zombie (exited, not yet reaped by its
// new parent).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}
