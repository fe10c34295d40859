package verify_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/host/analysis/analysistest"
	"github.com/ibsm/ibsm/host/verify"
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

func realize(t *testing.T, p *verify.Plan) *plan.Realized {
	t.Helper()
	r, err := plan.Realize(p.Topo, p.Routes, p.LIDs)
	if err != nil {
		t.Fatal(err)
	}
	p.Realized = r
	return r
}

func caLID(p *verify.Plan, i int) uint16 {
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
		plan func(t *testing.T) verify.Plan
		want []string // substrings of the error; none: must pass
	}{
		{
			name: "up/down fat tree passes",
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				return verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
			},
		},
		{
			name: "up/down fat tree with LMC 2 spread passes",
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				return verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 2, plan.DLIDSpread)}
			},
		},
		{
			name: "minhop ring on one VL has a credit loop",
			plan: func(t *testing.T) verify.Plan {
				topo, r := ring(t, 1)
				return verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
			},
			want: []string{"VL0 channel dependency graph is cyclic", "VL0 dependency cycle: 0x"},
		},
		{
			name: "minhop ring on two VLs passes",
			plan: func(t *testing.T) verify.Plan {
				topo, r := ring(t, 2)
				p := verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
				p.VLs = analysistest.RingVLs(realize(t, &p))
				return p
			},
		},
		{
			name: "two VLs on VLCap 1 ports",
			plan: func(t *testing.T) verify.Plan {
				topo, r := ring(t, 1)
				p := verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
				v := analysistest.RingVLs(realize(t, &p))
				v.Default = [16]uint8{} // the table is fine, the SLs are not
				v.SL2VL = []plan.SL2VLEntry{{Node: topo.Switches()[0], In: 2, Out: 1, VL: [16]uint8{0, 1}}}
				p.VLs = v
				return p
			},
			want: []string{"SL1 -> VL1 but the link carries 1 data VL"},
		},
		{
			name: "forwarding loop",
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				p := verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
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
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				p := verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
				realize(t, &p)
				// Leaf 0 port 4 (to the root spine) goes down after routing.
				topo.Nodes[topo.Switches()[0]].Ports[4].State = topology.StateDown
				return p
			},
			want: []string{"link is not up", "unreachable:"},
		},
		{
			name: "unaligned base LID",
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				l := analysistest.SequentialLIDs(topo, 1, plan.DLIDBase)
				l.Ports[0].Base = 101
				return verify.Plan{Topo: topo, Routes: r, LIDs: l}
			},
			want: []string{"base LID 101 is not aligned to 2^LMC = 2"},
		},
		{
			name: "shared LID",
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				l := analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)
				l.Ports[1].Base = l.Ports[0].Base
				return verify.Plan{Topo: topo, Routes: r, LIDs: l}
			},
			want: []string{"LID 1 is assigned to both"},
		},
		{
			name: "LMC 8 and LID beyond 0xBFFF",
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				l := analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)
				l.Ports[0].LMC = 8
				l.Ports[1].Base = 0xC000
				l.Ports[2].Base = 0
				return verify.Plan{Topo: topo, Routes: r, LIDs: l}
			},
			want: []string{"LMC 8 > 7", "leave the unicast range", "has no LID"},
		},
		{
			name: "SL above 15",
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				return verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase),
					VLs: &plan.VLPlan{SLByDLID: []uint8{0, 16}}}
			},
			want: []string{"DLID 1 has SL 16 > 15"},
		},
		{
			name: "tables realised for another topology",
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				p := verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
				realize(t, &p)
				other, _ := fatTree(t)
				p.Topo = other
				return p
			},
			want: []string{"another topology snapshot"},
		},
		{
			name: "unassigned LID pointing at a missing port",
			plan: func(t *testing.T) verify.Plan {
				topo, r := fatTree(t)
				l := analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)
				l.Ports[len(l.Ports)-1].Base = 40 // leaves LIDs in between unassigned
				p := verify.Plan{Topo: topo, Routes: r, LIDs: l}
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
			rep, err := verify.Verify(p, verify.Options{})
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
			var ve *verify.Error
			if !errors.As(err, &ve) || ve.Total == 0 || len(ve.Problems) == 0 {
				t.Errorf("want a *verify.Error with problems, got %T %v", err, err)
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
	p := verify.Plan{Topo: topo, Routes: r, LIDs: analysistest.SequentialLIDs(topo, 0, plan.DLIDBase)}
	rz := realize(t, &p)
	for s := range rz.LFT {
		for lid := range rz.LFT[s] {
			rz.LFT[s][lid] = plan.NoPort
		}
	}
	_, err := verify.Verify(p, verify.Options{MaxProblems: 3})
	var ve *verify.Error
	if !errors.As(err, &ve) {
		t.Fatalf("want *verify.Error, got %v", err)
	}
	if len(ve.Problems) != 3 || ve.Total <= 3 {
		t.Errorf("problems %d total %d, want 3 listed of more", len(ve.Problems), ve.Total)
	}
	if !strings.Contains(err.Error(), "has no route (LFT 0xFF)") {
		t.Errorf("error: %v", err)
	}
}
