package program_test

import (
	"context"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// memRecord is a Record kept in memory: what the state directory's
// record would hold, and how often the Programmer used it.
type memRecord struct {
	held             *program.Held
	heldCalls, marks int
}

func (m *memRecord) Held() (*program.Held, error) { m.heldCalls++; return m.held, nil }
func (m *memRecord) Programming() error           { m.marks++; return nil }

// heldOf is what the record of rz and vls programmed holds (host/rollout
// writes the same from the plan).
func heldOf(topo *topology.Topology, rz *plan.Realized, vls *plan.VLPlan) *program.Held {
	h := &program.Held{Top: rz.TopLID, SMLID: rz.LIDs.Ports[topo.EndpointIndex(topo.SM)].Base, Switches: map[uint64]program.HeldSwitch{}, NoSL2VL: vls == nil}
	listed := map[int32]map[[2]uint8][16]uint8{}
	if vls != nil {
		h.SL2VLDefault = vls.Default
		for _, e := range vls.SL2VL {
			if topo.Nodes[e.Node].Type == topology.Switch {
				if listed[e.Node] == nil {
					listed[e.Node] = map[[2]uint8][16]uint8{}
				}
				listed[e.Node][[2]uint8{e.In, e.Out}] = e.VL
			}
		}
	}
	for s, node := range topo.Switches() {
		pl := rz.LIDs.Ports[topo.EndpointIndex(topology.PortRef{Node: node, Port: 0})]
		h.Switches[topo.Nodes[node].GUID] = program.HeldSwitch{LID: pl.Base, LMC: pl.LMC, LFT: slices.Clone(rz.LFT[s]), SL2VL: listed[node]}
	}
	return h
}

// TestRestartRestoresFromRecord: a new Programmer (a restarted SM) over a
// fabric an earlier one programmed takes each switch's forwarding table
// from the record instead of reading it back, when the switch's port-0
// LID, LMC and MasterSMLID and its LinearFDBTop are still the recorded
// ones and its probe block (the one holding its LID) reads back as
// recorded; a switch failing any of these is read back and mended in the
// same Apply, and a probe that differs (another SM's tables) has every
// switch read back. A block changed behind the SM's back with every
// condition still true is not seen by the Apply: the audit finds and
// repairs it.
func TestRestartRestoresFromRecord(t *testing.T) {
	ctx := context.Background()
	f, err := topogen.FatTree{Radix: 12, Levels: 2}.Generate()
	must(t, err)
	type env struct {
		r   *rig
		c   *mad.Client // an agent at the switch's port 0: changes behind the SM's back
		sw  uint64      // the switch changed behind the SM's back
		lid uint16      // its port-0 LID
		// block is the LFT block changed: the one not holding lid (not
		// its probe), unless the case says.
		block int
		held  *program.Held
	}
	changeBlock := func(t *testing.T, e env) {
		var b smp.LFTBlock
		must(t, e.c.Get(ctx, nil, smp.AttrLinearForwardingTable, uint32(e.block), &b))
		b[3], b[5] = b[5]^1, 0xFF
		must(t, e.c.Set(ctx, nil, smp.AttrLinearForwardingTable, uint32(e.block), &b, nil))
	}
	tests := []struct {
		name   string
		change func(t *testing.T, e env)
		// restored: switches taken from the record, probed: switches
		// whose probe block was read, readBack: switches read back whole
		// (-1: all, -2: all but the changed one).
		restored, probed, readBack int
		// The Apply's PortInfo, SwitchInfo and LFT block Sets.
		portInfo, switchInfo, lftSent int64
		// auditFinds: the change survives the Apply; a rotation of the
		// audit finds and repairs it.
		auditFinds bool
	}{
		{name: "untouched", restored: -1, probed: -1},
		{name: "block changed, conditions hold", change: changeBlock, restored: -1, probed: -1, auditFinds: true},
		{name: "probe block changed: another SM's tables on our LIDs", change: func(t *testing.T, e env) {
			e.block = int(e.lid) / 64
			changeBlock(t, e)
		}, probed: -1, readBack: -1, lftSent: 1},
		{name: "block and LinearFDBTop changed", change: func(t *testing.T, e env) {
			changeBlock(t, e)
			var si smp.SwitchInfo
			must(t, e.c.Get(ctx, nil, smp.AttrSwitchInfo, 0, &si))
			si.LinearFDBTop--
			si.PortStateChange = false
			must(t, e.c.Set(ctx, nil, smp.AttrSwitchInfo, 0, &si, nil))
		}, restored: -2, probed: -2, readBack: 1, switchInfo: 1, lftSent: 1},
		{name: "block changed, another SM's LID on port 0", change: func(t *testing.T, e env) {
			changeBlock(t, e)
			must(t, e.r.fab.SetMasterSMLID(e.sw, 0, e.held.SMLID+100))
		}, restored: -2, probed: -2, readBack: 1, portInfo: 1, lftSent: 1},
		{name: "block changed, switch LID changed", change: func(t *testing.T, e env) {
			changeBlock(t, e)
			must(t, e.r.fab.SetPortLID(e.sw, 0, e.lid+1000, 0))
		}, restored: -2, probed: -2, readBack: 1, portInfo: 1, lftSent: 1},
		{name: "block changed, record of another SM port", change: func(t *testing.T, e env) {
			changeBlock(t, e)
			e.held.SMLID++
		}, readBack: -1, lftSent: 1},
		{name: "block changed, switch not in the record", change: func(t *testing.T, e env) {
			changeBlock(t, e)
			delete(e.held.Switches, e.sw)
		}, restored: -2, probed: -2, readBack: 1, lftSent: 1},
		{name: "block changed, no record", change: func(t *testing.T, e env) {
			changeBlock(t, e)
			*e.held = program.Held{}
		}, readBack: -1, lftSent: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, f)
			_, topo := r.discover(t)
			rz := realize(t, topo, analysistest.UpDown(topo, 0), 0)
			if rz.TopLID < 64+5 {
				t.Fatalf("top LID %d: one LFT block", rz.TopLID)
			}
			apply(t, p0(r), r, rz, nil)
			checkFabric(t, r, topo, rz, nil)

			sw := len(topo.Switches())
			blocks := int64(rz.TopLID)/64 + 1
			victim := topo.Switches()[2]
			e := env{r: r, c: intruder(t, r, topo.Nodes[victim].GUID, 0), sw: topo.Nodes[victim].GUID, held: heldOf(topo, rz, nil),
				lid: rz.LIDs.Ports[topo.EndpointIndex(topology.PortRef{Node: victim, Port: 0})].Base}
			e.block = 1 - int(e.lid)/64
			if tc.change != nil {
				tc.change(t, e)
			}
			rec := &memRecord{held: e.held}
			if e.held.Switches == nil {
				rec.held = nil
			}
			count := func(n int) int64 {
				switch n {
				case -1:
					return int64(sw)
				case -2:
					return int64(sw - 1)
				}
				return int64(n)
			}

			// The restarted SM.
			p := &program.Programmer{C: r.c, Parallel: 4, Record: rec}
			st := apply(t, p, r, rz, nil)
			want := program.Stats{LFTRestored: count(tc.restored), LFTBlocksRead: count(tc.probed) + count(tc.readBack)*blocks, LFTBlocksTotal: int64(sw) * blocks,
				PortInfoSets: tc.portInfo, SwitchInfoSets: tc.switchInfo, LFTBlocksSent: tc.lftSent}
			if st != want {
				t.Fatalf("restart Apply: %+v\nwant %+v", st, want)
			}
			if rec.heldCalls != 1 || rec.marks != 1 {
				t.Fatalf("record read %d times, marked stale %d times; want once each", rec.heldCalls, rec.marks)
			}

			d, _ := r.discover(t)
			if tc.auditFinds {
				lft, err := r.fab.LFT(e.sw)
				must(t, err)
				if slices.Equal(lft, rz.LFT[slices.Index(topo.Switches(), victim)]) {
					t.Fatal("the change did not reach the switch; the test proves nothing")
				}
				rep := p.Audit(ctx, d, 1<<20) // one whole rotation
				if rep.Differences != 1 || rep.Repaired != 1 || rep.ReadFailures != 0 || !rep.Wrapped {
					t.Fatalf("audit after the restart: %+v; want the changed block found and repaired", rep)
				}
			}
			checkFabric(t, r, topo, rz, nil)
			if rep := p.Audit(ctx, d, 1<<20); rep.Differences != 0 || rep.ReadFailures != 0 {
				t.Fatalf("a whole rotation after the restart: %+v; want nothing to repair", rep)
			}

			// Later Applies mark the record stale again but never read it.
			if st := apply(t, p, r, rz, nil); st.Sets() != 0 || st.LFTBlocksRead != 0 || st.LFTRestored != 0 {
				t.Fatalf("Apply after the restart: %+v", st)
			}
			if rec.heldCalls != 1 || rec.marks != 2 {
				t.Fatalf("after a second Apply: record read %d times, marked %d; want 1 and 2", rec.heldCalls, rec.marks)
			}
		})
	}
}

// TestRestoreSendsWhatTheNewPlanChanges: restored from the record of one
// plan, an Apply of another sends exactly the blocks where they differ
// (the record stands for what the switches hold, not for the new plan).
func TestRestoreSendsWhatTheNewPlanChanges(t *testing.T) {
	tc := cases[0]
	r := newRig(t, tc.file(t))
	_, topo := r.discover(t)
	routes := tc.route(topo)
	rz := realize(t, topo, routes, tc.lmc)
	apply(t, p0(r), r, rz, nil)
	e := len(topo.Endpoints()) - 1
	rz2 := realize(t, topo, reroute(t, topo, routes, e, []int{1, 2}), tc.lmc)

	p := &program.Programmer{C: r.c, Record: &memRecord{held: heldOf(topo, rz, nil)}}
	st := apply(t, p, r, rz2, nil)
	sw := int64(len(topo.Switches()))
	want := program.Stats{LFTRestored: sw, LFTBlocksRead: sw, LFTBlocksSent: 2, LFTBlocksTotal: st.LFTBlocksTotal}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	checkFabric(t, r, topo, rz2, nil)
}

// TestRestoreSL2VL: restored from the record of a two-VL plan, a restart
// sends no switch SL2VL table (the record holds them all: the default and
// the listed pairs), only the tables of CA ports, which the record does
// not hold, and the VLArbitration blocks, which it does not hold either;
// the audit then reads every table back and finds nothing to repair.
func TestRestoreSL2VL(t *testing.T) {
	r := newRig(t, cases[1].file(t))
	_, topo := r.discover(t)
	rz := realize(t, topo, analysistest.MinHop(topo), 0)
	vls := planVLs(topo, rz, 2, true)
	first := apply(t, p0(r), r, rz, vls)

	p := &program.Programmer{C: r.c, Parallel: 4, Record: &memRecord{held: heldOf(topo, rz, vls)}}
	st := apply(t, p, r, rz, vls)
	links := int64(0)
	for i := range topo.Nodes {
		for q := 1; q < len(topo.Nodes[i].Ports); q++ {
			if topo.Nodes[i].Ports[q].Peer.Connected() {
				links++
			}
		}
	}
	caPorts := links - switchLinks(topo)
	sw := int64(len(topo.Switches()))
	want := program.Stats{LFTRestored: sw, LFTBlocksRead: sw, LFTBlocksTotal: st.LFTBlocksTotal, SL2VLSets: caPorts, VLArbSets: first.VLArbSets}
	if st != want {
		t.Fatalf("restart Apply: %+v\nwant %+v (first Apply: %+v)", st, want, first)
	}
	checkFabric(t, r, topo, rz, vls)
	d, _ := r.discover(t)
	if rep := p.Audit(context.Background(), d, 1<<20); rep.Differences != 0 || rep.ReadFailures != 0 || !rep.Wrapped {
		t.Fatalf("a whole audit rotation after the restart: %+v", rep)
	}
}
