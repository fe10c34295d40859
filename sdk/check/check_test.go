package check_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

func fatTree(t *testing.T) (*topology.Topology, *plan.Routes) {
	t.Helper()
	topo, err := analysistest.FatTree2(3, 2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	return topo, analysistest.UpDown(topo, int32(len(topo.Switches())-1))
}

func ring(t *testing.T, vlcap uint8) (*topology.Topology, *plan.Routes) {
	t.Helper()
	topo, err := analysistest.Ring(6, 1, vlcap)
	if err != nil {
		t.Fatal(err)
	}
	return topo, analysistest.MinHop(topo)
}

// dateline is a ring routed clockwise with a two-VL dateline plan (see
// analysistest.DatelineVLs), built by hand as sdk/plan values.
func dateline(t *testing.T, lmc uint8, dropBack bool) check.Plan {
	t.Helper()
	topo, err := analysistest.Ring(6, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysistest.ClockwiseRing(topo, lmc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := analysistest.DatelineVLs(r, dropBack)
	if err != nil {
		t.Fatal(err)
	}
	return check.Plan{Topo: topo, LIDs: r.LIDs, VLs: v, Realized: r}
}

func realize(t *testing.T, p *check.Plan) *plan.Realized {
	t.Helper()
	r, err := plan.Realize(p.Topo, p.Routes, p.LIDs)
	if err != nil {
		t.Fatal(err)
	}
	p.Realized = r
	return r
}

func caLID(p *check.Plan, i int) uint16 {
	for e, ref := range p.Topo.Endpoints() {
		if p.Topo.Nodes[ref.Node].Type == topology.CA {
			if i == 0 {
				return p.LIDs.Ports[e].Base
			}
			i--
		}
	}
	panic("no such CA")
}

func TestVerify(t *testing.T) {
	cases := []struct {
		name string
		plan func(t *testing.T) check.Plan
		want []string // substrings of the error; none: must pass
	}{
		{
			name: "up/down fat tree passes",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				return check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
			},
		},
		{
			name: "up/down fat tree with LMC 2 spread passes",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				return check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 2, plan.DLIDSpread)}
			},
		},
		{
			name: "minhop ring on one VL has a credit loop",
			plan: func(t *testing.T) check.Plan {
				topo, r := ring(t, 1)
				return check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
			},
			want: []string{"VL0 channel dependency graph is cyclic", "VL0 dependency cycle: 0x"},
		},
		{
			name: "minhop ring on two VLs passes",
			plan: func(t *testing.T) check.Plan {
				topo, r := ring(t, 2)
				p := check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
				p.VLs = analysistest.RingVLs(realize(t, &p))
				return p
			},
		},
		{
			name: "two VLs on VLCap 1 ports",
			plan: func(t *testing.T) check.Plan {
				topo, r := ring(t, 1)
				p := check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
				v := analysistest.RingVLs(realize(t, &p))
				v.Default = [16]uint8{} // the table is fine, the SLs are not
				v.SL2VL = []plan.SL2VLEntry{{Node: topo.Switches()[0], In: 2, Out: 1, VL: [16]uint8{0, 1}}}
				p.VLs = v
				return p
			},
			want: []string{"SL1 -> VL1 but the link carries 1 data VL"},
		},
		{
			name: "dateline ring: the VL changes mid-path, deadlock-free",
			plan: func(t *testing.T) check.Plan { return dateline(t, 0, false) },
		},
		{
			name: "dateline ring at LMC 1 (every LID in use) with per-source SLs",
			plan: func(t *testing.T) check.Plan { return dateline(t, 1, false) },
		},
		{
			name: "dateline ring whose SL2VL drops back to VL0 after the dateline",
			plan: func(t *testing.T) check.Plan { return dateline(t, 0, true) },
			want: []string{"channel dependency graph is cyclic through VLs [0 1]", "dependency cycle: 0x", " (VL0) -> 0x", " (VL1) -> (back to start)", "never return to one it left"},
		},
		{
			name: "dateline ring whose default table puts hops on VL1 past a VLCap 1 link",
			plan: func(t *testing.T) check.Plan {
				p := dateline(t, 0, false)
				// Switch 1 (ring position 0) loses its explicit tables
				// toward port 1 (and its neighbour those toward the same
				// link, which clockwise traffic does not use): the default
				// maps every SL to VL1 there, on a link that now carries
				// VL0 only. Every other hop keeps its tables and stays
				// within its link's VLCap.
				sw := p.Topo.Switches()[0]
				peer := p.Topo.Port(topology.PortRef{Node: sw, Port: 1}).Peer
				var keep []plan.SL2VLEntry
				for _, e := range p.VLs.SL2VL {
					if (e.Node != sw || e.Out != 1) && (e.Node != peer.Node || e.Out != peer.Port) {
						keep = append(keep, e)
					}
				}
				p.VLs.SL2VL = keep
				for i := range p.VLs.Default {
					p.VLs.Default[i] = 1
				}
				p.Topo.Nodes[sw].Ports[1].VLCap = 1
				return p
			},
			want: []string{"1 channel(s) carry VLs their link cannot", "channel 0x0002c90000000001/1: traffic on VL1 but the link carries 1 data VLs"},
		},
		{
			name: "forwarding loop",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				p := check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
				rz := realize(t, &p)
				lid := caLID(&p, 0) // on leaf 0 (switch 0, ports 1-2; spines on 3-4)
				spine := len(topo.Switches()) - 1
				rz.LFT[spine][lid] = 2 // spine port 2 is leaf 1
				rz.LFT[1][lid] = 3 + uint8(spine-3)
				return p
			},
			want: []string{"loop at switch 0x", "for DLID", "forwarding loops toward 1 LID"},
		},
		{
			name: "LFT entry on a link that went down",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				p := check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
				realize(t, &p)
				// Leaf 0 port 4 (to the root spine) goes down after routing.
				topo.Nodes[topo.Switches()[0]].Ports[4].State = topology.StateDown
				return p
			},
			want: []string{"link is not up", "unreachable:"},
		},
		{
			name: "unaligned base LID",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				l := analysistest.SequentialLIDs(topo, 1, plan.DLIDBase)
				l.Ports[0].Base = 101
				return check.Plan{Topo: topo, Routes: r, LIDs: l}
			},
			want: []string{"base LID 101 is not aligned to 2^LMC = 2"},
		},
		{
			name: "shared LID",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				l := analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)
				l.Ports[1].Base = l.Ports[0].Base
				return check.Plan{Topo: topo, Routes: r, LIDs: l}
			},
			want: []string{"LID 1 is assigned to both"},
		},
		{
			name: "LMC 8 and LID beyond 0xBFFF",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				l := analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)
				l.Ports[0].LMC = 8
				l.Ports[1].Base = 0xC000
				l.Ports[2].Base = 0
				return check.Plan{Topo: topo, Routes: r, LIDs: l}
			},
			want: []string{"LMC 8 > 7", "leave the unicast range", "has no LID"},
		},
		{
			name: "SL above 15",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				return check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase),
					VLs: &plan.VLPlan{SLByDLID: []uint8{0, 16}}}
			},
			want: []string{"DLID 1 has SL 16 > 15"},
		},
		{
			name: "tables realised for another topology",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				p := check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
				realize(t, &p)
				other, _ := fatTree(t)
				p.Topo = other
				return p
			},
			want: []string{"another topology snapshot"},
		},
		{
			name: "unassigned LID pointing at a missing port",
			plan: func(t *testing.T) check.Plan {
				topo, r := fatTree(t)
				l := analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)
				l.Ports[len(l.Ports)-1].Base = 40 // leaves LIDs in between unassigned
				p := check.Plan{Topo: topo, Routes: r, LIDs: l}
				rz := realize(t, &p)
				rz.LFT[0][30] = 200
				return p
			},
			want: []string{"LFT[30] (unassigned LID) = port 200"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.plan(t)
			rep, err := check.Verify(p, check.Options{})
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				if rep == nil || !rep.OK() {
					t.Fatalf("report not OK: %+v", rep)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error containing %q", c.want)
			}
			var ve *check.Error
			if !errors.As(err, &ve) || ve.Total == 0 || len(ve.Problems) == 0 {
				t.Errorf("want a *check.Error with problems, got %T %v", err, err)
			}
			t.Log(err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestVerifyCapsProblems(t *testing.T) {
	topo, r := fatTree(t)
	p := check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
	rz := realize(t, &p)
	for s := range rz.LFT {
		for lid := range rz.LFT[s] {
			rz.LFT[s][lid] = plan.NoPort
		}
	}
	_, err := check.Verify(p, check.Options{MaxProblems: 3})
	var ve *check.Error
	if !errors.As(err, &ve) {
		t.Fatalf("want *check.Error, got %v", err)
	}
	if len(ve.Problems) != 3 || ve.Total <= 3 {
		t.Errorf("problems %d total %d, want 3 listed of more", len(ve.Problems), ve.Total)
	}
	if !strings.Contains(err.Error(), "has no route (LFT 0xFF)") {
		t.Errorf("error: %v", err)
	}
}

// switchLID is the base LID of switch index s (Topology.Switches order).
func switchLID(p *check.Plan, s int) uint16 {
	node := p.Topo.Switches()[s]
	for e, ref := range p.Topo.Endpoints() {
		if ref.Node == node {
			return p.LIDs.Ports[e].Base
		}
	}
	panic("switch has no endpoint")
}

// TestSwitchToSwitchPolicy runs every plan under both policies: only
// unreachable switch->switch pairs may pass, and only under best_effort.
func TestSwitchToSwitchPolicy(t *testing.T) {
	// fatTree: leaves 0-2 (CAs on ports 1-2, spines 3 and 4 on ports 3-4),
	// spines 3-4; up/down rooted at spine 4.
	base := func(t *testing.T, lmc uint8) check.Plan {
		topo, r := fatTree(t)
		p := check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, lmc, plan.DLIDSpread)}
		realize(t, &p)
		return p
	}
	// holeToLeaf0 removes leaf 1's route to leaf 0's own LID range: exactly
	// one switch->switch pair is lost (everybody else reaches leaf 0 from a
	// spine) and no CA pair.
	holeToLeaf0 := func(p *check.Plan) {
		d := switchLID(p, 0)
		for k := 0; k < p.LIDs.Ports[p.Topo.EndpointIndex(topology.PortRef{Node: p.Topo.Switches()[0]})].Count(); k++ {
			p.Realized.LFT[1][int(d)+k] = plan.NoPort
		}
	}
	type want struct {
		err      []string // substrings of the error; nil: accepted
		warnings []string // substrings of the single warning; nil: none
	}
	cases := []struct {
		name                 string
		plan                 func(t *testing.T) check.Plan
		required, bestEffort want
		swLost               int64
	}{
		{
			name: "complete plan",
			plan: func(t *testing.T) check.Plan { return base(t, 0) },
		},
		{
			name: "one switch pair unreachable",
			plan: func(t *testing.T) check.Plan {
				p := base(t, 0)
				holeToLeaf0(&p)
				return p
			},
			required:   want{err: []string{"0 of 30 CA->CA and 1 of 20 switch->switch", "has no route (LFT 0xFF)"}},
			bestEffort: want{warnings: []string{"1 of 20 switch->switch (source, DLID) pairs unreachable (5.0%)", `routing.switch_to_switch = "best_effort"`, "e.g. 0x", "has no route"}},
			swLost:     1,
		},
		{
			name: "switch pair unreachable over every LID of an LMC 1 range",
			plan: func(t *testing.T) check.Plan {
				p := base(t, 1)
				p.Routes.Planes = nil // routing-engine planes: SA may hand out any LID
				holeToLeaf0(&p)
				return p
			},
			required:   want{err: []string{"1 of 20 switch->switch (source, DLID)", "unreachable with LMC 1", "2 of 40 switch->switch (source, LID)"}},
			bestEffort: want{warnings: []string{"1 of 20 switch->switch", "2 of 40 over every LID of each range (LMC 1)"}},
			swLost:     1,
		},
		{
			name: "CA pair unreachable rejects whatever the policy",
			plan: func(t *testing.T) check.Plan {
				p := base(t, 0)
				holeToLeaf0(&p)
				p.Realized.LFT[0][caLID(&p, 0)] = plan.NoPort
				return p
			},
			required:   want{err: []string{"5 of 30 CA->CA and 1 of 20 switch->switch"}},
			bestEffort: want{err: []string{"5 of 30 CA->CA (source, DLID) pairs (switch->switch pairs are best effort: 1 of 20 unreachable, not counted)"}},
			swLost:     1,
		},
		{
			name: "loop toward a switch LID rejects whatever the policy",
			plan: func(t *testing.T) check.Plan {
				p := base(t, 0)
				spine := len(p.Topo.Switches()) - 1
				d := switchLID(&p, 0)
				p.Realized.LFT[spine][d] = 2 // spine port 2 is leaf 1 …
				p.Realized.LFT[1][d] = 4     // … whose port 4 is that spine
				return p
			},
			required:   want{err: []string{"forwarding loops toward 1 LID", "loop at switch 0x"}},
			bestEffort: want{err: []string{"forwarding loops toward 1 LID", "loop at switch 0x"}},
			swLost:     3, // leaves 1, 2 and spine 4 walk into the loop; spine 3 goes straight down
		},
		{
			name: "credit loop rejects whatever the policy",
			plan: func(t *testing.T) check.Plan {
				topo, r := ring(t, 1)
				return check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
			},
			required:   want{err: []string{"VL0 channel dependency graph is cyclic"}},
			bestEffort: want{err: []string{"VL0 channel dependency graph is cyclic"}},
		},
	}
	policies := []struct {
		policy check.SwitchPolicy
		pick   func(required, bestEffort want) want
	}{
		{"", func(r, _ want) want { return r }},
		{check.SwitchRequired, func(r, _ want) want { return r }},
		{check.SwitchBestEffort, func(_, b want) want { return b }},
	}
	for _, c := range cases {
		for _, pol := range policies {
			t.Run(c.name+"/"+string(pol.policy), func(t *testing.T) {
				w := pol.pick(c.required, c.bestEffort)
				v, err := check.Check(c.plan(t), check.Options{SwitchToSwitch: pol.policy})
				if w.err == nil {
					if err != nil {
						t.Fatalf("want acceptance, got %v", err)
					}
				} else {
					var ve *check.Error
					if !errors.As(err, &ve) {
						t.Fatalf("want a *check.Error containing %q, got %v", w.err, err)
					}
					for _, s := range w.err {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("error lacks %q:\n%v", s, err)
						}
					}
				}
				if v == nil {
					t.Fatal("no verdict for an analysable plan")
				}
				if v.SwitchUnreachable != c.swLost {
					t.Errorf("SwitchUnreachable = %d, want %d", v.SwitchUnreachable, c.swLost)
				}
				if c.swLost > 0 && len(v.SwitchSamples) == 0 {
					t.Error("no switch->switch samples")
				}
				if w.warnings == nil {
					if len(v.Warnings) != 0 {
						t.Errorf("unexpected warnings %q", v.Warnings)
					}
					return
				}
				if len(v.Warnings) != 1 {
					t.Fatalf("warnings %q, want one", v.Warnings)
				}
				for _, s := range w.warnings {
					if !strings.Contains(v.Warnings[0], s) {
						t.Errorf("warning lacks %q:\n%s", s, v.Warnings[0])
					}
				}
			})
		}
	}
}

func TestUnknownSwitchPolicy(t *testing.T) {
	topo, r := fatTree(t)
	_, err := check.Check(check.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)},
		check.Options{SwitchToSwitch: "sometimes"})
	if err == nil || !strings.Contains(err.Error(), `"sometimes"`) || !strings.Contains(err.Error(), "best_effort") {
		t.Fatalf("want an error naming the policy and the choices, got %v", err)
	}
}
