package program_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/analysis/analysistest"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/topogen"
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
	d, err := (&discovery.Discoverer{C: r.c, Parallel: 8}).Run(context.Background())
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
			wantSL2VL, wantArb := int64(0), int64(0)
			if tc.vls {
				for _, node := range topo.Switches() {
					np := int64(len(topo.Nodes[node].Ports))
					wantSL2VL += np * (np - 1)
				}
				wantSL2VL += links - switchLinks(topo) // one table per linked CA port
				wantArb = 2 * links                     // low block 1 and high block 3 (caps are 8)
			}
			want := program.Stats{
				PortInfoSets:   int64(len(topo.Endpoints())),
				SwitchInfoSets: sw,
				LFTBlocksSent:  sw * blocks,
				LFTBlocksTotal: sw * blocks,
				SL2VLSets:      wantSL2VL,
				VLArbSets:      wantArb,
				// OperationalVLs rides on the LID and Armed Sets.
				StateSets: 2 * links, // Armed, then Active
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

func TestOnlyChangedBlocks(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
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
				rz2 := realize(t, topo, reroute(t, topo, routes, e, sub.switches), tc.lmc)
				st := apply(t, p, r, rz2, nil)
				want := program.Stats{LFTBlocksSent: int64(len(sub.switches)), LFTBlocksTotal: st.LFTBlocksTotal}
				if st != want {
					t.Fatalf("%s: stats %+v, want %+v", sub.name, st, want)
				}
				checkFabric(t, r, topo, rz2, nil)
				// And back.
				st = apply(t, p, r, rz, nil)
				if st.LFTBlocksSent != int64(len(sub.switches)) || st.Sets() != st.LFTBlocksSent {
					t.Fatalf("%s, reverting: stats %+v", sub.name, st)
				}
				checkFabric(t, r, topo, rz, nil)
			}
		})
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

	st := apply(t, p, r, rz, nil)
	want := program.Stats{PortInfoSets: 1, LFTBlocksSent: blocks, LFTBlocksTotal: st.LFTBlocksTotal}
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
