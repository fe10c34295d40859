package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/sdk/analysis"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

func TestParseMADCounts(t *testing.T) {
	for _, tc := range []struct {
		name, in        string
		wantErr         string
		gets, sets, tot uint64
		lftSets         uint64
		spanNS          int64
	}{
		{name: "counts", in: "span 1000 5000\nmad 81 1 11 10\nmad 81 2 19 7\nmad 1 1 15 3\nmad 81 81 11 2\nmad 3 81 101 4\n",
			gets: 13, sets: 7, tot: 26, lftSets: 7, spanNS: 4000},
		{name: "repeated key adds", in: "span 0 0\nmad 81 2 19 1\nmad 81 2 19 2\n", sets: 3, tot: 3, lftSets: 3},
		{name: "no span", in: "mad 81 1 11 10\n", wantErr: "no span line"},
		{name: "span backwards", in: "span 5 4\n", wantErr: "increasing"},
		{name: "bad hex", in: "span 0 1\nmad zz 1 11 1\n", wantErr: "hex class"},
		{name: "class too wide", in: "span 0 1\nmad 181 1 11 1\n", wantErr: "hex class"},
		{name: "unknown record", in: "span 0 1\nfoo\n", wantErr: "unknown record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMADCounts(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g, s, n := m.SMPs(methodGet), m.SMPs(methodSet), m.Total(); g != tc.gets || s != tc.sets || n != tc.tot {
				t.Errorf("gets/sets/total = %d/%d/%d, want %d/%d/%d", g, s, n, tc.gets, tc.sets, tc.tot)
			}
			if got := m.ByKey[MADKey{0x81, methodSet, 0x19}]; got != tc.lftSets {
				t.Errorf("LFT Sets = %d, want %d", got, tc.lftSets)
			}
			if got := m.Last.Sub(m.First).Nanoseconds(); got != tc.spanNS {
				t.Errorf("span = %dns, want %d", got, tc.spanNS)
			}
		})
	}
}

func FuzzParseMADCounts(f *testing.F) {
	f.Add("span 1 2\nmad 81 1 11 10\n")
	f.Add("span 0 0\nmad 3 81 101 4\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMADCounts(strings.NewReader(s))
		if err != nil {
			return
		}
		if m.Last.Before(m.First) {
			t.Fatalf("span runs backwards: %v..%v", m.First, m.Last)
		}
		_ = m.AttrSummary()
	})
}

// writeTopo generates a fabric with `ibsm topo` arguments.
func writeTopo(t testing.TB, args ...string) string {
	path := filepath.Join(t.TempDir(), "fabric.net")
	var b bytes.Buffer
	if _, err := topogen.Write(args, &b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// shortestPlanes routes every endpoint along a BFS tree of the switch graph
// (the test's own routing, independent of the plugins).
func shortestPlanes(t *topology.Topology) *plan.Routes {
	sw := t.Switches()
	eps := t.Endpoints()
	r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
	for e, ep := range eps {
		dst, last := ep.Node, uint8(0)
		if t.SwitchIndex(ep.Node) < 0 {
			peer := t.Port(ep).Peer
			dst, last = peer.Node, peer.Port
		}
		pl := make(plan.Plane, len(sw))
		for i := range pl {
			pl[i] = plan.NoPort
		}
		pl[t.SwitchIndex(dst)] = last
		seen := map[int32]bool{dst: true}
		queue := []int32{dst}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			for p := 1; p < len(t.Nodes[cur].Ports); p++ {
				peer := t.Nodes[cur].Ports[p].Peer
				if !peer.Connected() || seen[peer.Node] || t.SwitchIndex(peer.Node) < 0 {
					continue
				}
				seen[peer.Node] = true
				pl[t.SwitchIndex(peer.Node)] = peer.Port
				queue = append(queue, peer.Node)
			}
		}
		r.Planes[e] = plan.DestPlanes{Planes: []plan.Plane{pl}}
	}
	return r
}

// programmed brings the embedded fabric at net up with the test's routing
// and returns the fabric, a transport on it and the plan programmed.
func programmed(t *testing.T, net string) (*sim.Fabric, transport.Transport, *plan.Realized) {
	ctx := context.Background()
	f, err := sim.Load(net, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := f.Attach(f.DefaultSMPort())
	if err != nil {
		t.Fatal(err)
	}
	tp := transport.New(conn, transport.Options{Window: 8})
	t.Cleanup(func() { tp.Close() })
	c := &mad.Client{T: tp}
	fab, err := (&discovery.Discoverer{C: c, Log: hclog.NewNullLogger()}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := fab.Topology()
	if err != nil {
		t.Fatal(err)
	}
	lids := &plan.LIDPlan{Ports: make([]plan.PortLID, len(topo.Endpoints()))}
	for i := range lids.Ports {
		lids.Ports[i] = plan.PortLID{Base: uint16(i + 1)}
	}
	rz, err := plan.Realize(topo, shortestPlanes(topo), lids)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&program.Programmer{C: c, Log: hclog.NewNullLogger(), Parallel: 8}).Apply(ctx, fab, topo, rz, nil); err != nil {
		t.Fatal(err)
	}
	return f, tp, rz
}

// TestReadBackMatchesFabric programs a fabric with a known plan and checks
// that the read-back holds exactly what the simulator holds, and that its
// metrics are those of the plan itself.
func TestReadBackMatchesFabric(t *testing.T) {
	ctx := context.Background()
	f, tp, rz := programmed(t, writeTopo(t, "fat-tree", "--arity", "4", "--levels", "2"))
	p, err := ReadBack(ctx, tp, 8)
	if err != nil {
		t.Fatal(err)
	}
	topo := p.Topo
	if p.RZ.TopLID != rz.TopLID {
		t.Fatalf("read-back TopLID %d, programmed %d", p.RZ.TopLID, rz.TopLID)
	}
	for e, ep := range topo.Endpoints() {
		snap, err := f.PortInfo(topo.Nodes[ep.Node].GUID, ep.Port)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.RZ.LIDs.Ports[e]; got.Base != snap.LID || got.LMC != snap.LMC {
			t.Errorf("%s: read back LID %d/%d, fabric holds %d/%d", epName(topo, ep), got.Base, got.LMC, snap.LID, snap.LMC)
		}
	}
	for s, node := range topo.Switches() {
		want, err := f.LFT(topo.Nodes[node].GUID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p.RZ.LFT[s], want[:len(p.RZ.LFT[s])]) {
			t.Errorf("switch 0x%016x: read-back LFT %v, fabric holds %v", topo.Nodes[node].GUID, p.RZ.LFT[s], want)
		}
	}
	if p.NotActive != 0 || p.Unassigned != 0 || p.Duplicate != 0 {
		t.Errorf("not active %d, unassigned %d, duplicate %d; want none", p.NotActive, p.Unassigned, p.Duplicate)
	}
	opt := QualityOptions(3)
	q, _, err := Measure(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	want, err := analysis.Analyse(rz, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if q.A2AMax != want.Load.Max || q.ShiftWorst != want.Shift.Worst || q.EBB != want.EBB.EBB || q.CAPairs != want.CAPairs || q.SwitchPairs != want.SwitchPairs {
		t.Errorf("read-back quality %+v differs from the programmed plan's (a2a %d, shift %d, eBB %v, CA %v, SW %v)",
			q, want.Load.Max, want.Shift.Worst, want.EBB.EBB, want.CAPairs, want.SwitchPairs)
	}
	if q.Unreachable != 0 {
		t.Errorf("%d unreachable pairs on a complete routing", q.Unreachable)
	}
}

// TestReadBackSeesDamage breaks one LFT entry behind the read-back's back
// and checks that the metrics report the lost routes.
func TestReadBackSeesDamage(t *testing.T) {
	ctx := context.Background()
	f, tp, rz := programmed(t, writeTopo(t, "fat-tree", "--arity", "4", "--levels", "2"))
	topo := rz.Topo
	// The first CA's LID, on the switch that delivers it.
	var ca topology.PortRef
	var e int
	for i, ep := range topo.Endpoints() {
		if topo.SwitchIndex(ep.Node) < 0 {
			ca, e = ep, i
			break
		}
	}
	leaf := topo.Port(ca).Peer.Node
	lid := rz.LIDs.Ports[e].Base
	var blk smp.LFTBlock
	copy(blk[:], rz.LFT[topo.SwitchIndex(leaf)][int(lid)/64*64:])
	blk[int(lid)%64] = plan.NoPort
	c := &mad.Client{T: tp}
	fab, err := (&discovery.Discoverer{C: c, Log: hclog.NewNullLogger()}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, fab.Nodes[topo.Nodes[leaf].GUID].Path, smp.AttrLinearForwardingTable, smp.LFTBlockMod(lid), &blk, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.LFT(topo.Nodes[leaf].GUID); got[lid] != plan.NoPort {
		t.Fatalf("the damaging Set did not land: entry %d is %d", lid, got[lid])
	}
	p, err := ReadBack(ctx, tp, 8)
	if err != nil {
		t.Fatal(err)
	}
	q, _, err := Measure(p, QualityOptions(3))
	if err != nil {
		t.Fatal(err)
	}
	// Every other CA loses its route to that CA (switch→CA pairs are not
	// counted).
	cas := 0
	for _, ep := range topo.Endpoints() {
		if topo.SwitchIndex(ep.Node) < 0 {
			cas++
		}
	}
	if want := int64(cas - 1); q.Unreachable != want {
		t.Errorf("unreachable pairs %d after removing one CA's last hop, want %d", q.Unreachable, want)
	}
}

func TestMarkdownRatiosAndVerdict(t *testing.T) {
	floor := &Floor{Best: FloorPoint{Window: 4, MADs: 100, Rate: 100000}, Points: []FloorPoint{{4, 100, 100000}}, Hops: []int{1, 2}}
	osm := &SMResult{SM: "OpenSM", Samples: []Sample{{Up: 30, Gets: 1000000, Sets: 500000, RSSMiB: 800, MADSpan: 29}, {Up: 34, Gets: 1000000, Sets: 500000, RSSMiB: 820, MADSpan: 33}, {Up: 20, Gets: 1000000, Sets: 500000, RSSMiB: 790, MADSpan: 19}},
		Quality: &Quality{A2AMax: 10, ShiftWorst: 2, EBB: 0.5, Acyclic: true}}
	ib := &SMResult{SM: "ibsm", Samples: []Sample{{Up: 12, Gets: 700000, Sets: 300000, RSSMiB: 200, MADSpan: 10}}, Quality: &Quality{A2AMax: 9, ShiftWorst: 1, EBB: 0.7, Acyclic: false}}
	slow := &SMResult{SM: "ibsm", Samples: []Sample{{Up: 16, Gets: 1, Sets: 1, RSSMiB: 1, MADSpan: 1}}}
	rej := &SMResult{SM: "ibsm", Rejected: "every routing engine failed: CDG cycle"}
	rep := &Report{Command: "x", Topos: []*TopoResult{{Name: "ft3-36", Args: "fat-tree", Floor: floor, Engines: []*EngineResult{
		{Engine: engineSpec{"updn", "updn"}, OSM: osm, IBSM: ib},
		{Engine: engineSpec{"ftree", "sftree"}, OSM: osm, IBSM: slow},
		{Engine: engineSpec{"minhop", "minhop"}, OSM: osm, IBSM: rej},
	}}}}
	var b strings.Builder
	rep.Markdown(&b)
	out := b.String()
	for _, want := range []string{
		"| ft3-36 | updn | OpenSM | 3 | 30.000 |", // median of 30, 34, 20
		"| 50000 (50%) | 15.000 |",                // 1.5M SMPs in 30 s; 15 s at 100k/s
		"**0.40×** time, 0.25× RSS",               // 12/30, 200/800
		"**no** (CDG cycle)",                      // ibsm's quality row
		"ratio 0.40, target ≤ 0.50 MET",           // updn verdict
		"ratio 0.53, target ≤ 0.50 NOT MET",       // ftree/sftree
		"| ft3-36 | ftree/sftree | ibsm |",        // paired engine name
		"rejected by ibsm's verifier/VL assigner, nothing programmed: every routing engine failed: CDG cycle",
		"ibsim floor: **100000 MAD/s** at window 4",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestParseEngines(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"updn", "sftree"} {
		os.MkdirAll(filepath.Join(root, "plugins", p), 0o755)
		os.WriteFile(filepath.Join(root, "plugins", p, "main.go"), nil, 0o644)
	}
	got, notes, err := parseEngines("updn, ftree:sftree,minhop,file:", root)
	if err != nil {
		t.Fatal(err)
	}
	want := []engineSpec{{"updn", "updn"}, {"ftree", "sftree"}, {"minhop", ""}, {"file", ""}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("engines %v, want %v", got, want)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `no plugin "minhop"`) {
		t.Errorf("notes %q, want one about minhop", notes)
	}
	if _, _, err := parseEngines(":updn", root); err == nil {
		t.Error("empty OpenSM engine accepted")
	}
}

// TestOpenSMShimAndFloor runs OpenSM with the counting shim on a small
// ibsim fabric and measures the floor there. It needs cc, ibsim, opensm
// and libumad2sim (integration/setup.sh installs them).
func TestOpenSMShimAndFloor(t *testing.T) {
	ibsimPath, opensmPath, preload, err := benchutil.OpenSMTools()
	if err != nil {
		t.Skip(err)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler for the shim")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	shim, err := BuildCountMAD(cc, dir)
	if err != nil {
		t.Fatal(err)
	}
	net := writeTopo(t, "fat-tree", "--arity", "4", "--levels", "2")
	start := func() *benchutil.IBSim {
		d := t.TempDir()
		s, err := benchutil.StartIBSimWith(ctx, benchutil.IBSimOptions{Path: ibsimPath, NetFile: net, Dir: d, NoConsole: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		return s
	}
	s := start()
	r, err := RunOpenSM(ctx, opensmPath, preload, shim, s, "updn", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := dial(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	tp := transport.New(c, transport.Options{Window: 8, Timeout: time.Second})
	defer tp.Close()
	p, err := ReadBack(ctx, tp, 8)
	if err != nil {
		t.Fatal(err)
	}
	nodes := len(p.Topo.Nodes)
	sws := len(p.Topo.Switches())
	blocks := uint64(sws) * uint64(int(p.RZ.TopLID)/64+1)
	// OpenSM reads every node's NodeInfo at least once and writes every
	// LFT block of every switch on a fresh fabric.
	if got := r.MADs.ByKey[MADKey{0x81, methodGet, 0x11}]; got < uint64(nodes) {
		t.Errorf("shim counted %d NodeInfo Gets for %d nodes", got, nodes)
	}
	if got := r.MADs.ByKey[MADKey{0x81, methodSet, 0x19}]; got != blocks {
		t.Errorf("shim counted %d LFT Sets, the fabric holds %d blocks", got, blocks)
	}
	if r.MADs.SMPs(methodSet) == 0 || r.MADs.Last.Before(r.MADs.First) {
		t.Errorf("implausible counts %+v", r.MADs)
	}
	q, _, err := Measure(p, QualityOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	// OpenSM's updn leaves some root-to-root switch pairs unrouted (a
	// path between two roots would have to go down, then up); CA pairs
	// must all arrive.
	if !q.CAPairs.Complete() || p.NotActive != 0 {
		t.Errorf("OpenSM updn: CA pairs %+v, %d inactive ports", q.CAPairs, p.NotActive)
	}

	s2 := start()
	c2, err := dial(ctx, s2)
	if err != nil {
		t.Fatal(err)
	}
	tp2 := transport.New(c2, transport.Options{Window: 8, Timeout: time.Second})
	paths, hops, err := floorPaths(ctx, tp2, 8)
	tp2.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(hops) == 0 || hops[0] != 1 {
		t.Errorf("hops %v, want them to start at 1", hops)
	}
	raw, err := dial(ctx, s2)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	pts, err := MeasureFloor(ctx, raw, paths, []int{1, 4}, 500)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || Best(pts).Rate <= 0 {
		t.Errorf("floor points %+v", pts)
	}
}
