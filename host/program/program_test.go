package program_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rig is one simulated fabric with an SM attached at its default port.
type rig struct {
	fab *sim.Fabric
	c   *mad.Client
}

func newRig(t *testing.T, f *netfile.File) *rig {
	t.Helper()
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	g, p := fab.DefaultSMPort()
	conn, err := fab.Attach(g, p)
	must(t, err)
	tr := transport.New(conn, transport.Options{Timeout: 50 * time.Millisecond, Window: 32})
	t.Cleanup(func() { tr.Close() })
	return &rig{fab: fab, c: &mad.Client{T: tr}}
}

func (r *rig) discover(t *testing.T) (*discovery.Fabric, *topology.Topology) {
	t.Helper()
	d, err := (&discovery.Discoverer{C: r.c}).Run(context.Background())
	must(t, err)
	if len(d.Warnings) > 0 {
		t.Fatalf("discovery warnings: %q", d.Warnings)
	}
	topo, err := d.Topology()
	must(t, err)
	return d, topo
}

type fabricCase struct {
	name  string
	file  func(t *testing.T) *netfile.File
	route func(*topology.Topology) *plan.Routes
	lmc   uint8
	vls   bool // program RingVLs (SL2VL tables)
}

var cases = []fabricCase{
	{"fat tree updn", func(t *testing.T) *netfile.File {
		f, err := topogen.FatTree{Radix: 4, Levels: 2}.Generate()
		must(t, err)
		return f
	}, func(t *topology.Topology) *plan.Routes { return analysistest.UpDown(t, 0) }, 0, false},
	{"ring minhop lmc 1 two VLs", func(t *testing.T) *netfile.File {
		f, err := topogen.Ring(5, 2).Generate()
		must(t, err)
		return f
	}, analysistest.MinHop, 1, true},
}

func realize(t *testing.T, topo *topology.Topology, r *plan.Routes, lmc uint8) *plan.Realized {
	t.Helper()
	rz, err := analysistest.Realize(topo, r, lmc, plan.DLIDBase)
	must(t, err)
	return rz
}

// switchLinks counts the cabled ports of switches.
func switchLinks(topo *topology.Topology) int64 {
	n := int64(0)
	for _, node := range topo.Switches() {
		for p := 1; p < len(topo.Nodes[node].Ports); p++ {
			if topo.Nodes[node].Ports[p].Peer.Connected() {
				n++
			}
		}
	}
	return n
}

// checkFabric asserts that the simulated fabric holds exactly rz and vls.
func checkFabric(t *testing.T, r *rig, topo *topology.Topology, rz *plan.Realized, vls *plan.VLPlan) {
	t.Helper()
	for s, node := range topo.Switches() {
		guid := topo.Nodes[node].GUID
		lft, err := r.fab.LFT(guid)
		must(t, err)
		if !bytes.Equal(lft, rz.LFT[s]) {
			t.Fatalf("switch %#x LFT\n got %v\nwant %v", guid, lft, rz.LFT[s])
		}
		if vls != nil {
			n := &topo.Nodes[node]
			for in := 0; in < len(n.Ports); in++ {
				for out := 1; out < len(n.Ports); out++ {
					got, err := r.fab.SL2VL(guid, uint8(in), uint8(out))
					must(t, err)
					if got != vls.Default {
						t.Fatalf("switch %#x SL2VL %d->%d = %v, want %v", guid, in, out, got, vls.Default)
					}
				}
			}
		}
	}
	if vls != nil {
		checkVLs(t, r, topo, vls, 2) // every multi-VL case here uses VL 0-1
	}
	smLID := rz.LIDs.Ports[topo.EndpointIndex(topo.SM)].Base
	for i, ep := range topo.Endpoints() {
		guid := topo.Nodes[ep.Node].GUID
		snap, err := r.fab.PortInfo(guid, ep.Port)
		must(t, err)
		want := rz.LIDs.Ports[i]
		if snap.LID != want.Base || snap.LMC != want.LMC || snap.MasterSMLID != smLID {
			t.Fatalf("endpoint %#x/%d: LID %d LMC %d SM %d, want %d %d %d", guid, ep.Port, snap.LID, snap.LMC, snap.MasterSMLID, want.Base, want.LMC, smLID)
		}
	}
	for i := range topo.Nodes {
		n := &topo.Nodes[i]
		for p := 1; p < len(n.Ports); p++ {
			if !n.Ports[p].Peer.Connected() {
				continue
			}
			snap, err := r.fab.PortInfo(n.GUID, uint8(p))
			must(t, err)
			if snap.State != smp.PortStateActive {
				t.Fatalf("linked port %#x/%d in state %d, want Active", n.GUID, p, snap.State)
			}
		}
	}
}

func apply(t *testing.T, p *program.Programmer, r *rig, rz *plan.Realized, vls *plan.VLPlan) program.Stats {
	t.Helper()
	fab, topo := r.discover(t)
	st, err := p.Apply(context.Background(), fab, topo, rz, vls)
	must(t, err)
	return st
}

func TestApplyAndReapply(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.file(t))
			_, topo := r.discover(t)
			rz := realize(t, topo, tc.route(topo), tc.lmc)
			var vls *plan.VLPlan
			if tc.vls {
				vls = analysistest.RingVLs(rz)
			}
			p := &program.Programmer{C: r.c, Parallel: 4}
			sw := int64(len(topo.Switches()))
			blocks := int64(rz.TopLID)/64 + 1

			st := apply(t, p, r, rz, vls)
			checkFabric(t, r, topo, rz, vls)
			links := int64(0)
			for i := range topo.Nodes {
				for p := 1; p < len(topo.Nodes[i].Ports); p++ {
					if topo.Nodes[i].Ports[p].Peer.Connected() {
						links++ // each cabled port once: both ends count
					}
				}
			}
			caPorts := links - switchLinks(topo)
			wantSL2VL, wantArb := int64(0), int64(0)
			if tc.vls {
				for _, node := range topo.Switches() {
					np := int64(len(topo.Nodes[node].Ports))
					wantSL2VL += np * (np - 1)
				}
				wantSL2VL += caPorts // one table per linked CA port
				wantArb = 2 * links  // low block 1 and high block 3 (caps are 8)
			}
			want := program.Stats{
				PortInfoSets:   int64(len(topo.Endpoints())),
				SwitchInfoSets: sw,
				LFTBlocksSent:  sw * blocks,
				LFTBlocksTotal: sw * blocks,
				SL2VLSets:      wantSL2VL,
				VLArbSets:      wantArb,
				// OperationalVLs rides on the LID and Armed Sets; a CA
				// port's LID Set also arms it.
				StateSets:    2*links - caPorts, // Armed, then Active
				ArmedWithLID: caPorts,
			}
			if st != want {
				t.Fatalf("first Apply stats %+v, want %+v", st, want)
			}

			// The same plan on the re-discovered fabric: nothing to send.
			st = apply(t, p, r, rz, vls)
			if st.Sets() != 0 || st.LFTBlocksTotal != sw*blocks {
				t.Fatalf("second Apply sent %d Sets: %+v", st.Sets(), st)
			}
			checkFabric(t, r, topo, rz, vls)

			// After Forget every block and table goes out again, but
			// PortInfo (read back by discovery) still needs nothing.
			p.Forget()
			st = apply(t, p, r, rz, vls)
			if st.LFTBlocksSent != sw*blocks || st.SL2VLSets != wantSL2VL || st.VLArbSets != wantArb || st.PortInfoSets != 0 || st.OpVLsSets != 0 || st.StateSets != 0 || st.SwitchInfoSets != 0 {
				t.Fatalf("Apply after Forget: %+v", st)
			}
			checkFabric(t, r, topo, rz, vls)
		})
	}
}

// reroute returns routes equal to r except that destination e's first plane
// uses a different port on the given switches.
func reroute(t *testing.T, topo *topology.Topology, r *plan.Routes, e int, switches []int) *plan.Routes {
	t.Helper()
	out := &plan.Routes{Planes: append([]plan.DestPlanes(nil), r.Planes...)}
	pl := append(plan.Plane(nil), r.Planes[e].Planes[0]...)
	for _, s := range switches {
		n := &topo.Nodes[topo.Switches()[s]]
		for p := 1; p < len(n.Ports); p++ {
			if uint8(p) != pl[s] && n.Ports[p].Peer.Connected() {
				pl[s] = uint8(p)
				break
			}
		}
		if pl[s] == r.Planes[e].Planes[0][s] {
			t.Fatalf("switch %d has no other linked port", s)
		}
	}
	planes := append([]plan.Plane{pl}, r.Planes[e].Planes[1:]...)
	out.Planes[e] = plan.DestPlanes{Planes: planes}
	return out
}

// TestOnlyChangedBlocks: a re-route sends the blocks that differ, and so
// does the way back, whether the new tables are realised in full or from
// the last plan's (plan.RealizeChanged: the unchanged rows shared, the
// changes named by ChangedSince, and by ChangedRows when they came entry
// by entry).
func TestOnlyChangedBlocks(t *testing.T) {
	for _, tc := range cases {
		for _, changes := range []string{"none", "planes", "entries"} {
			t.Run(fmt.Sprintf("%s/changes=%s", tc.name, changes), func(t *testing.T) {
				onlyChangedBlocks(t, tc, changes)
			})
		}
	}
}

func onlyChangedBlocks(t *testing.T, tc fabricCase, changes string) {
	r := newRig(t, tc.file(t))
	_, topo := r.discover(t)
	routes := tc.route(topo)
	rz := realize(t, topo, routes, tc.lmc)
	p := &program.Programmer{C: r.c}
	apply(t, p, r, rz, nil)

	tests := []struct {
		name     string
		switches []int
	}{
		{"one switch", []int{0}},
		{"two switches", []int{1, 2}},
	}
	for _, sub := range tests {
		// The last endpoint is a CA: its LIDs sit in the last block.
		e := len(topo.Endpoints()) - 1
		moved := reroute(t, topo, routes, e, sub.switches)
		rz2 := realize(t, topo, moved, tc.lmc)
		if changes != "none" {
			delta := &plan.Routes{Base: 1, Changed: []int32{int32(e)}, Planes: moved.Planes}
			if changes == "entries" {
				if len(routes.Planes[e].Planes) != 1<<tc.lmc {
					t.Skip("changed entries need one plane per LID")
				}
				delta = &plan.Routes{Base: 1, Changed: delta.Changed, Planes: make([]plan.DestPlanes, len(moved.Planes)), Edits: []plan.Edit{}}
				for k, pl := range moved.Planes[e].Planes {
					for s, port := range pl {
						if port != routes.Planes[e].Planes[k][s] {
							delta.Edits = append(delta.Edits, plan.Edit{Dest: int32(e), Switch: int32(s), Plane: uint8(k), Port: port})
						}
					}
				}
			}
			var err error
			rz2, err = plan.RealizeChanged(rz, topo, delta, rz.LIDs)
			must(t, err)
			if _, ok := rz2.ChangedSince(rz); !ok {
				t.Fatal("RealizeChanged's tables do not name their changes")
			}
			if _, ok := rz2.ChangedRows(rz); ok != (changes == "entries") {
				t.Fatalf("ChangedRows known %v for changes as %s", ok, changes)
			}
		}
		st := apply(t, p, r, rz2, nil)
		want := program.Stats{LFTBlocksSent: int64(len(sub.switches)), LFTBlocksTotal: st.LFTBlocksTotal}
		if st != want {
			t.Fatalf("%s: stats %+v, want %+v", sub.name, st, want)
		}
		checkFabric(t, r, topo, rz2, nil)
		// And back (rz2's changed rows are its own).
		st = apply(t, p, r, rz, nil)
		if st.LFTBlocksSent != int64(len(sub.switches)) || st.Sets() != st.LFTBlocksSent {
			t.Fatalf("%s, reverting: stats %+v", sub.name, st)
		}
		checkFabric(t, r, topo, rz, nil)
	}
}

func TestSwitchLostItsLID(t *testing.T) {
	tc := cases[0]
	f := tc.file(t)
	r := newRig(t, f)
	d, topo := r.discover(t)
	rz := realize(t, topo, tc.route(topo), tc.lmc)
	p := &program.Programmer{C: r.c}
	apply(t, p, r, rz, nil)
	blocks := int64(rz.TopLID)/64 + 1

	// One switch "reboots": its port-0 LID goes back to 0 (raw Set).
	victim := topo.Nodes[topo.Switches()[2]].GUID
	n := d.Nodes[victim]
	var pi smp.PortInfo
	must(t, r.c.Get(context.Background(), n.Path, smp.AttrPortInfo, 0, &pi))
	pi.LID, pi.PortState, pi.PortPhysicalState = 0, smp.PortStateNoChange, smp.PhysStateNoChange
	pi.LinkSpeedEnabled, pi.LinkWidthEnabled, pi.LinkDownDefaultState = 0, 0, 0
	must(t, r.c.Set(context.Background(), n.Path, smp.AttrPortInfo, 0, &pi, nil))

	// Its tables survived the LID loss here (a real reboot also clears
	// them, and LinearFDBTop 0 skips the read): they are read back and,
	// found as planned, not sent again.
	st := apply(t, p, r, rz, nil)
	want := program.Stats{PortInfoSets: 1, LFTBlocksRead: blocks, LFTBlocksTotal: st.LFTBlocksTotal}
	if st != want {
		t.Fatalf("after the LID reset: stats %+v, want %+v", st, want)
	}
	checkFabric(t, r, topo, rz, nil)

	// A whole new fabric of the same topology (every switch restarted),
	// programmed by the same Programmer: everything goes out again.
	r2 := newRig(t, f)
	p.C = r2.c
	st = apply(t, p, r2, rz, nil)
	sw := int64(len(topo.Switches()))
	if st.LFTBlocksSent != sw*blocks || st.PortInfoSets != int64(len(topo.Endpoints())) || st.SwitchInfoSets != sw {
		t.Fatalf("fresh fabric: stats %+v", st)
	}
	checkFabric(t, r2, topo, rz, nil)
}

// toggle drops every LFT block Set while deaf is set: switches that
// stopped listening.
type toggle struct {
	transport.Conn
	deaf atomic.Bool
}

func (d *toggle) Send(p transport.Packet) error {
	var s smp.SMP
	if d.deaf.Load() && s.Decode(p.MAD) == nil && s.Method == smp.MethodSet && s.AttrID == smp.AttrLinearForwardingTable {
		return nil
	}
	return d.Conn.Send(p)
}

func TestFailedApplyForgets(t *testing.T) {
	tc := cases[0]
	f := tc.file(t)
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	g, port := fab.DefaultSMPort()
	conn, err := fab.Attach(g, port)
	must(t, err)
	flaky := &toggle{Conn: conn}
	tr := transport.New(flaky, transport.Options{Timeout: 100 * time.Millisecond, Retries: transport.NoRetries})
	t.Cleanup(func() { tr.Close() })
	r := &rig{fab: fab, c: &mad.Client{T: tr}}
	_, topo := r.discover(t)
	rz := realize(t, topo, tc.route(topo), tc.lmc)
	p := &program.Programmer{C: r.c}
	apply(t, p, r, rz, nil)

	// Change a route, lose the LFT Sets: Apply fails with a timeout.
	rz2 := realize(t, topo, reroute(t, topo, tc.route(topo), len(topo.Endpoints())-1, []int{0}), tc.lmc)
	flaky.deaf.Store(true)
	d, topo2 := r.discover(t)
	st, err := p.Apply(context.Background(), d, topo2, rz2, nil)
	if !errors.Is(err, transport.ErrTimeout) || st.Failed != 1 || st.LFTBlocksSent != 1 {
		t.Fatalf("err %v stats %+v; want one failed LFT block timing out", err, st)
	}
	// What the switches hold is uncertain now: the next Apply sends all.
	flaky.deaf.Store(false)
	st = apply(t, p, r, rz2, nil)
	if st.LFTBlocksSent != st.LFTBlocksTotal {
		t.Fatalf("after a failed Apply: sent %d of %d blocks", st.LFTBlocksSent, st.LFTBlocksTotal)
	}
	checkFabric(t, r, topo, rz2, nil)
}

// checkVLs asserts that every linked port runs OperationalVLs code opVLs
// with VLHighLimit-free arbitration: a low-priority table with one entry of
// weight 64 for each of its data VLs (at most the sim's cap of 8 entries)
// and an empty high-priority table; and that each linked CA port holds the
// plan's SL2VL table (its (node, port, port) entry, else the default).
func checkVLs(t *testing.T, r *rig, topo *topology.Topology, vls *plan.VLPlan, opVLs uint8) {
	t.Helper()
	entries := map[[3]int32][16]uint8{}
	for _, e := range vls.SL2VL {
		entries[[3]int32{e.Node, int32(e.In), int32(e.Out)}] = e.VL
	}
	var wantLow smp.VLArbBlock
	for vl := 0; vl < int(smp.DataVLs(opVLs)) && vl < 8; vl++ {
		wantLow[vl] = smp.VLArbEntry{VL: uint8(vl), Weight: 64}
	}
	for node := range topo.Nodes {
		n := &topo.Nodes[node]
		for q := 1; q < len(n.Ports); q++ {
			if !n.Ports[q].Peer.Connected() {
				continue
			}
			snap, err := r.fab.PortInfo(n.GUID, uint8(q))
			must(t, err)
			if snap.OpVLs != opVLs {
				t.Fatalf("port %#x/%d OperationalVLs %d, want %d", n.GUID, q, snap.OpVLs, opVLs)
			}
			low, err := r.fab.VLArb(n.GUID, uint8(q), smp.VLArbLowBlock0)
			must(t, err)
			if low != wantLow {
				t.Fatalf("port %#x/%d low VLArb %v, want %v", n.GUID, q, low[:9], wantLow[:9])
			}
			high, err := r.fab.VLArb(n.GUID, uint8(q), smp.VLArbHighBlock0)
			must(t, err)
			if high != (smp.VLArbBlock{}) {
				t.Fatalf("port %#x/%d high VLArb %v, want empty", n.GUID, q, high)
			}
			if n.Type == topology.Switch {
				continue
			}
			want, ok := entries[[3]int32{int32(node), int32(q), int32(q)}]
			if !ok {
				want = vls.Default
			}
			got, err := r.fab.SL2VL(n.GUID, uint8(q), uint8(q))
			must(t, err)
			if got != want {
				t.Fatalf("CA %#x/%d SL2VL %v, want %v", n.GUID, q, got, want)
			}
		}
	}
}

// planVLs returns a VL plan using n data VLs: SL k -> VL k mod n by
// default, with every destination on SL 1 so the tables are needed, and,
// when caEntry is set, a table of its own for the last endpoint's CA port.
func planVLs(topo *topology.Topology, rz *plan.Realized, n int, caEntry bool) *plan.VLPlan {
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(rz.TopLID)+1), VLs: n}
	for i := range v.Default {
		v.Default[i] = uint8(i % n)
	}
	for lid := range v.SLByDLID {
		v.SLByDLID[lid] = 1 % uint8(n)
	}
	if caEntry {
		ep := topo.Endpoints()[len(topo.Endpoints())-1]
		var t [16]uint8
		for i := range t {
			t[i] = uint8((i + 1) % n)
		}
		v.SL2VL = append(v.SL2VL, plan.SL2VLEntry{Node: ep.Node, In: ep.Port, Out: ep.Port, VL: t})
	}
	return v
}

func countLinks(topo *topology.Topology) int64 {
	links := int64(0)
	for i := range topo.Nodes {
		for p := 1; p < len(topo.Nodes[i].Ports); p++ {
			if topo.Nodes[i].Ports[p].Peer.Connected() {
				links++
			}
		}
	}
	return links
}

// TestVLCounts: the OperationalVLs code follows the plan's VLs (capped at
// the sim's VLCap 4 = VL0-7), each linked port gets one low and one high
// VLArbitration block, and the same plan again sends nothing.
func TestVLCounts(t *testing.T) {
	tests := []struct {
		name   string
		vls    int
		opVLs  uint8
		caList bool
	}{
		{"two VLs", 2, 2, false},
		{"three VLs need VL0-3", 3, 3, true},
		{"eight VLs", 8, 4, false},
		{"fifteen VLs capped at VLCap", 15, 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, cases[1].file(t))
			_, topo := r.discover(t)
			rz := realize(t, topo, analysistest.MinHop(topo), 0)
			v := planVLs(topo, rz, tc.vls, tc.caList)
			p := &program.Programmer{C: r.c, Parallel: 4}
			st := apply(t, p, r, rz, v)
			links := countLinks(topo)
			if st.VLArbSets != 2*links || st.OpVLsSets != 0 {
				t.Fatalf("stats %+v, want %d VLArb Sets and no separate OperationalVLs Sets", st, 2*links)
			}
			checkVLs(t, r, topo, v, tc.opVLs)
			if st := apply(t, p, r, rz, v); st.Sets() != 0 {
				t.Fatalf("same plan again sent %d Sets: %+v", st.Sets(), st)
			}
		})
	}
}

// TestSingleVLUnchanged: a one-VL plan (none, or one mapping everything to
// VL 0) sends exactly what no plan sends, and leaves OperationalVLs at 1.
func TestSingleVLUnchanged(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var base program.Stats
			for i, v := range []*plan.VLPlan{nil, {VLs: 1}} {
				r := newRig(t, tc.file(t))
				_, topo := r.discover(t)
				rz := realize(t, topo, tc.route(topo), tc.lmc)
				if v != nil {
					v.SLByDLID = make([]uint8, int(rz.TopLID)+1)
				}
				st := apply(t, p0(r), r, rz, v)
				if i == 0 {
					base = st
				} else if st != base {
					t.Fatalf("one-VL plan stats %+v, no plan %+v", st, base)
				}
				if st.SL2VLSets+st.VLArbSets+st.OpVLsSets != 0 {
					t.Fatalf("one-VL plan sent VL Sets: %+v", st)
				}
				for _, ep := range topo.Endpoints() {
					if ep.Port == 0 {
						continue
					}
					snap, err := r.fab.PortInfo(topo.Nodes[ep.Node].GUID, ep.Port)
					must(t, err)
					if snap.OpVLs != 1 {
						t.Fatalf("one-VL plan: port OperationalVLs %d", snap.OpVLs)
					}
				}
			}
		})
	}
}

func p0(r *rig) *program.Programmer { return &program.Programmer{C: r.c, Parallel: 4} }

// TestUpgradeToTwoVLs: a fabric brought up on one VL (ports Active) and
// then given a two-VL plan gets a separate OperationalVLs Set on every
// linked port (no state Sets), the CA tables and the VLArbitration tables;
// a CA that loses its LID (reset) gets its tables again.
func TestUpgradeToTwoVLs(t *testing.T) {
	r := newRig(t, cases[1].file(t))
	_, topo := r.discover(t)
	rz := realize(t, topo, analysistest.MinHop(topo), 0)
	p := p0(r)
	apply(t, p, r, rz, nil)
	v := planVLs(topo, rz, 2, true)
	st := apply(t, p, r, rz, v)
	links := countLinks(topo)
	caPorts := links - switchLinks(topo)
	sl2vl := int64(0)
	for _, node := range topo.Switches() {
		np := int64(len(topo.Nodes[node].Ports))
		sl2vl += np * (np - 1)
	}
	want := program.Stats{LFTBlocksTotal: st.LFTBlocksTotal, OpVLsSets: links, SL2VLSets: sl2vl + caPorts, VLArbSets: 2 * links}
	if st != want {
		t.Fatalf("upgrade stats %+v, want %+v", st, want)
	}
	checkVLs(t, r, topo, v, 2)

	// A CA "resets": LID 0 and reset tables (raw Sets). The next Apply
	// gives back its LID and tables; nothing else goes out.
	d, _ := r.discover(t)
	ep := topo.Endpoints()[len(topo.Endpoints())-1]
	n := d.Nodes[topo.Nodes[ep.Node].GUID]
	pi := n.Ports[ep.Port].Info
	pi.LID, pi.PortState, pi.PortPhysicalState = 0, smp.PortStateNoChange, smp.PhysStateNoChange
	pi.LinkSpeedEnabled, pi.LinkWidthEnabled, pi.LinkDownDefaultState = 0, 0, 0
	must(t, r.c.Set(context.Background(), n.Path, smp.AttrPortInfo, uint32(ep.Port), &pi, nil))
	var zero smp.SL2VLTable
	must(t, r.c.Set(context.Background(), n.Path, smp.AttrSLtoVLMappingTable, 0, &zero, nil))
	var empty smp.VLArbBlock
	must(t, r.c.Set(context.Background(), n.Path, smp.AttrVLArbitrationTable, smp.VLArbMod(ep.Port, smp.VLArbLowBlock0), &empty, nil))
	st = apply(t, p, r, rz, v)
	want = program.Stats{LFTBlocksTotal: st.LFTBlocksTotal, PortInfoSets: 1, SL2VLSets: 1, VLArbSets: 2}
	if st != want {
		t.Fatalf("after a CA reset: stats %+v, want %+v", st, want)
	}
	checkVLs(t, r, topo, v, 2)
	if st := apply(t, p, r, rz, v); st.Sets() != 0 {
		t.Fatalf("third Apply sent %+v", st)
	}
}
