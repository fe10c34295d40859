package program_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// intruder is a second agent attached at a node's own port (port 0 of a
// switch, a CA's port): its SMPs with an empty directed route change that
// node behind the programmer's back.
func intruder(t *testing.T, r *rig, guid uint64, port uint8) *mad.Client {
	t.Helper()
	conn, err := r.fab.Attach(guid, port)
	must(t, err)
	tr := transport.New(conn, transport.Options{Timeout: 50 * time.Millisecond, Window: 4})
	t.Cleanup(func() { tr.Close() })
	return &mad.Client{T: tr}
}

// rawPortInfo reads port q and prepares a Set that changes only what the
// caller changes afterwards.
func rawPortInfo(t *testing.T, c *mad.Client, q uint8) smp.PortInfo {
	t.Helper()
	var pi smp.PortInfo
	must(t, c.Get(context.Background(), nil, smp.AttrPortInfo, uint32(q), &pi))
	pi.PortState, pi.PortPhysicalState = smp.PortStateNoChange, smp.PhysStateNoChange
	pi.LinkSpeedEnabled, pi.LinkWidthEnabled, pi.LinkDownDefaultState = 0, 0, 0
	return pi
}

// twoVLRig is the ring with two SL2VL-programmed VLs (SL2VL, VLArbitration
// and OperationalVLs all owned by the programmer), applied.
func twoVLRig(t *testing.T) (*rig, *program.Programmer, *discovery.Fabric, *topology.Topology, *plan.Realized) {
	r := newRig(t, cases[1].file(t))
	_, topo := r.discover(t)
	rz := realize(t, topo, analysistest.MinHop(topo), 0)
	p := p0(r)
	v := planVLs(topo, rz, 2, true)
	apply(t, p, r, rz, v)
	d, _ := r.discover(t)
	return r, p, d, topo, rz
}

// TestAuditCoversWhatItWrote: one rotation holds every switch's port 0,
// SwitchInfo and LFT blocks, and, for a multi-VL plan, every linked port's
// OperationalVLs, every SL2VL table and VLArbitration block; a budget of
// the whole rotation reads each once (one Get each) and finds nothing on a
// fabric nobody touched.
func TestAuditCoversWhatItWrote(t *testing.T) {
	tests := []struct {
		name string
		vls  bool
	}{
		{"one VL", false},
		{"two VLs", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, cases[1].file(t))
			_, topo := r.discover(t)
			rz := realize(t, topo, analysistest.MinHop(topo), 0)
			p := p0(r)
			var v *plan.VLPlan
			if tc.vls {
				v = planVLs(topo, rz, 2, true)
			}
			apply(t, p, r, rz, v)
			d, _ := r.discover(t)
			sw := len(topo.Switches())
			want := sw * (2 + (int(rz.TopLID)+64)/64)
			if tc.vls {
				links := countLinks(topo)
				sl2vl := int64(0)
				for _, node := range topo.Switches() {
					np := int64(len(topo.Nodes[node].Ports))
					sl2vl += np * (np - 1)
				}
				want += int(links + sl2vl + (links - switchLinks(topo)) + 2*links)
			}
			st0 := r.c.T.Stats()
			rep := p.Audit(context.Background(), d, 1<<20)
			st1 := r.c.T.Stats()
			if rep.Items != want || rep.Reads != want || !rep.Wrapped || rep.Differences+rep.ReadFailures != 0 {
				t.Fatalf("audit %+v; want %d items read once, nothing different", rep, want)
			}
			if gets, sets := st1.Gets-st0.Gets, st1.Sets-st0.Sets; gets != uint64(want) || sets != 0 {
				t.Fatalf("audit sent %d Gets %d Sets, want %d Gets", gets, sets, want)
			}
			if st := p.AuditStats(); st.Items != want || st.Rotations != 1 || st.Cursor != 0 || st.Reads != uint64(want) {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestAuditRepairs changes one thing the programmer wrote through a second
// agent (no trap, no PortStateChange) and runs the audit at a small budget:
// within ceil(items/budget) calls it finds exactly that difference and one
// Set puts back what was programmed; nothing else is sent.
func TestAuditRepairs(t *testing.T) {
	const budget = 7
	ctx := context.Background()
	type env struct {
		r    *rig
		topo *topology.Topology
		rz   *plan.Realized
		sw   uint64 // a switch
		ca   uint64 // the last endpoint's CA and its port
		caP  uint8
	}
	tests := []struct {
		name   string
		read   func(t *testing.T, e env) string
		change func(t *testing.T, e env)
	}{
		{"LFT block",
			func(t *testing.T, e env) string { l, err := e.r.fab.LFT(e.sw); must(t, err); return fmt.Sprint(l) },
			func(t *testing.T, e env) {
				c := intruder(t, e.r, e.sw, 0)
				var b smp.LFTBlock
				must(t, c.Get(ctx, nil, smp.AttrLinearForwardingTable, 0, &b))
				b[3], b[5] = b[5]^1, 0xFF
				must(t, c.Set(ctx, nil, smp.AttrLinearForwardingTable, 0, &b, nil))
			}},
		{"LinearFDBTop",
			func(t *testing.T, e env) string {
				top, _, err := e.r.fab.SwitchInfo(e.sw)
				must(t, err)
				return fmt.Sprint(top)
			},
			func(t *testing.T, e env) {
				c := intruder(t, e.r, e.sw, 0)
				var si smp.SwitchInfo
				must(t, c.Get(ctx, nil, smp.AttrSwitchInfo, 0, &si))
				si.LinearFDBTop -= 2
				si.PortStateChange = false
				must(t, c.Set(ctx, nil, smp.AttrSwitchInfo, 0, &si, nil))
			}},
		{"switch LID",
			func(t *testing.T, e env) string {
				s, err := e.r.fab.PortInfo(e.sw, 0)
				must(t, err)
				return fmt.Sprint(s.LID, s.LMC, s.MasterSMLID)
			},
			func(t *testing.T, e env) {
				c := intruder(t, e.r, e.sw, 0)
				pi := rawPortInfo(t, c, 0)
				pi.LID = 0x300
				must(t, c.Set(ctx, nil, smp.AttrPortInfo, 0, &pi, nil))
			}},
		{"switch SL2VL table",
			func(t *testing.T, e env) string {
				v, err := e.r.fab.SL2VL(e.sw, 2, 1)
				must(t, err)
				return fmt.Sprint(v)
			},
			func(t *testing.T, e env) {
				c := intruder(t, e.r, e.sw, 0)
				tbl := smp.SL2VLTable{1, 1, 1, 1}
				must(t, c.Set(ctx, nil, smp.AttrSLtoVLMappingTable, smp.SL2VLMod(2, 1), &tbl, nil))
			}},
		{"CA SL2VL table",
			func(t *testing.T, e env) string {
				v, err := e.r.fab.SL2VL(e.ca, e.caP, e.caP)
				must(t, err)
				return fmt.Sprint(v)
			},
			func(t *testing.T, e env) {
				c := intruder(t, e.r, e.ca, e.caP)
				var tbl smp.SL2VLTable
				must(t, c.Set(ctx, nil, smp.AttrSLtoVLMappingTable, 0, &tbl, nil))
			}},
		{"VLArbitration block",
			func(t *testing.T, e env) string {
				b, err := e.r.fab.VLArb(e.sw, 1, smp.VLArbLowBlock0)
				must(t, err)
				return fmt.Sprint(b)
			},
			func(t *testing.T, e env) {
				c := intruder(t, e.r, e.sw, 0)
				b := smp.VLArbBlock{{VL: 0, Weight: 255}}
				must(t, c.Set(ctx, nil, smp.AttrVLArbitrationTable, smp.VLArbMod(1, smp.VLArbLowBlock0), &b, nil))
			}},
		{"OperationalVLs",
			func(t *testing.T, e env) string {
				s, err := e.r.fab.PortInfo(e.sw, 1)
				must(t, err)
				return fmt.Sprint(s.OpVLs)
			},
			func(t *testing.T, e env) {
				c := intruder(t, e.r, e.sw, 0)
				pi := rawPortInfo(t, c, 1)
				pi.OperationalVLs = 1
				must(t, c.Set(ctx, nil, smp.AttrPortInfo, 1, &pi, nil))
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, p, d, topo, rz := twoVLRig(t)
			ep := topo.Endpoints()[len(topo.Endpoints())-1]
			e := env{r: r, topo: topo, rz: rz, sw: topo.Nodes[topo.Switches()[2]].GUID, ca: topo.Nodes[ep.Node].GUID, caP: ep.Port}
			before := tc.read(t, e)
			tc.change(t, e)
			if tc.read(t, e) == before {
				t.Fatal("the change did not reach the device; the test proves nothing")
			}
			st0 := r.c.T.Stats()
			var sum program.AuditReport
			calls := 0
			for calls == 0 || (sum.Repaired == 0 && calls < (sum.Items+budget-1)/budget) {
				rep := p.Audit(ctx, d, budget)
				calls++
				if rep.Reads != min(budget, rep.Items) {
					t.Fatalf("call %d read %d items, budget %d of %d", calls, rep.Reads, budget, rep.Items)
				}
				sum.Items = rep.Items
				sum.Reads += rep.Reads
				sum.Differences += rep.Differences
				sum.Repaired += rep.Repaired
				sum.ReadFailures += rep.ReadFailures
			}
			st1 := r.c.T.Stats()
			if sum.Differences != 1 || sum.Repaired != 1 || sum.ReadFailures != 0 {
				t.Fatalf("after %d calls (%d items, budget %d): %+v; want one difference repaired", calls, sum.Items, budget, sum)
			}
			if got := tc.read(t, e); got != before {
				t.Fatalf("after the repair the device holds %s, programmed %s", got, before)
			}
			if gets, sets := st1.Gets-st0.Gets, st1.Sets-st0.Sets; gets != uint64(sum.Reads) || sets != 1 {
				t.Fatalf("audit sent %d Gets %d Sets; want %d Gets (its reads) and one Set", gets, sets, sum.Reads)
			}
			checkFabric(t, r, topo, rz, nil)
			if st := p.AuditStats(); st.Differences != 1 || st.Repaired != 1 {
				t.Fatalf("stats %+v", st)
			}
			// Repaired, and the next rotation finds nothing.
			if rep := p.Audit(ctx, d, 1<<20); rep.Differences != 0 {
				t.Fatalf("a whole rotation after the repair: %+v", rep)
			}
		})
	}
}

// TestAuditSwitchReset: a switch whose port 0 lost its LID was reset; the
// audit sends nothing to it and names it, so the sweep re-programs it
// whole.
func TestAuditSwitchReset(t *testing.T) {
	r, p, d, topo, _ := twoVLRig(t)
	g := topo.Nodes[topo.Switches()[1]].GUID
	c := intruder(t, r, g, 0)
	pi := rawPortInfo(t, c, 0)
	pi.LID = 0
	must(t, c.Set(context.Background(), nil, smp.AttrPortInfo, 0, &pi, nil))
	sets0 := r.c.T.Stats().Sets
	rep := p.Audit(context.Background(), d, 1<<20)
	if rep.Differences != 1 || rep.Repaired != 0 || len(rep.Reset) != 1 || rep.Reset[0] != g {
		t.Fatalf("audit %+v; want switch %#x reported reset", rep, g)
	}
	if s := r.c.T.Stats().Sets - sets0; s != 0 {
		t.Fatalf("audit sent %d Sets to a reset switch", s)
	}
}

// TestAuditReadFailures: a read that gets no answer stops the call (the
// path is likely through something gone: the sweep must look, not wait
// for every other read over it to time out); failures are not differences
// and send nothing, and the next call starts at the first item not read.
func TestAuditReadFailures(t *testing.T) {
	r, p, d, _, _ := twoVLRig(t)
	must(t, r.fab.SetDropRate(1, 1))
	sets0 := r.c.T.Stats().Sets
	rep := p.Audit(context.Background(), d, 1<<20)
	must(t, r.fab.SetDropRate(0, 1))
	if !rep.Stopped || rep.FirstFailure == nil || rep.ReadFailures < 1 || rep.Reads != rep.ReadFailures || rep.Differences != 0 || rep.Wrapped {
		t.Fatalf("audit with every MAD lost: %+v; want it stopped at its first failures, without finishing the rotation", rep)
	}
	if rep.Reads >= rep.Items/2 {
		t.Fatalf("audit with every MAD lost read %d of %d items; want only those in flight when the first failed", rep.Reads, rep.Items)
	}
	if s := r.c.T.Stats().Sets - sets0; s != 0 {
		t.Fatalf("audit sent %d Sets after failed reads", s)
	}
	st := p.AuditStats()
	if st.ReadFailures != uint64(rep.ReadFailures) || st.Differences != 0 || st.Cursor > rep.Reads {
		t.Fatalf("stats %+v after %d failed reads; want the cursor at the first item not read", st, rep.Reads)
	}
	again := p.Audit(context.Background(), d, 5)
	if again.Stopped || again.Reads != 5 || again.ReadFailures != 0 || again.Differences != 0 {
		t.Fatalf("audit once MADs pass again: %+v", again)
	}
	if c := p.AuditStats().Cursor; c != st.Cursor+5 {
		t.Fatalf("cursor %d after reading 5 from %d", c, st.Cursor)
	}
}
