package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// planesFor makes planes-form routes of the right shape; their contents do
// not matter to the LID assigner.
func planesFor(t *topology.Topology) *plan.Routes {
	r := &plan.Routes{Planes: make([]plan.DestPlanes, len(t.Endpoints()))}
	for e := range r.Planes {
		r.Planes[e].Planes = []plan.Plane{make(plan.Plane, len(t.Switches()))}
	}
	return r
}

func l(base uint16, lmc uint8) plan.PortLID { return plan.PortLID{Base: base, LMC: lmc} }

func ring3(t *testing.T) *topology.Topology {
	topo, err := testfab.Ring(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestAssign(t *testing.T) {
	topo := ring3(t)
	// Endpoint order is node GUID order: the 3 switches, then the 3 CAs.
	sw0 := topo.Nodes[topo.Switches()[0]].GUID
	ca := func(i int) uint64 { return testfab.CAPortGUID(testfab.CAGUIDBase + uint64(i) + 1) }
	tests := []struct {
		name     string
		lmc      uint8
		cfg      config
		previous map[uint64]uint16
		want     []plan.PortLID
		wantRule plan.DLIDRule
	}{
		{name: "fresh, LMC 0", want: []plan.PortLID{l(1, 0), l(2, 0), l(3, 0), l(4, 0), l(5, 0), l(6, 0)}},
		{name: "fresh, LMC 2: switches single, CAs aligned", lmc: 2, wantRule: plan.DLIDSpread,
			want: []plan.PortLID{l(1, 0), l(2, 0), l(3, 0), l(4, 2), l(8, 2), l(12, 2)}},
		{name: "switch_lmc", lmc: 1, cfg: config{switchLMC: true}, wantRule: plan.DLIDSpread,
			want: []plan.PortLID{l(2, 1), l(4, 1), l(6, 1), l(8, 1), l(10, 1), l(12, 1)}},
		{name: "previous honoured, the rest fill around it",
			previous: map[uint64]uint16{sw0: 5, ca(1): 1, 0x1234: 2},
			want:     []plan.PortLID{l(5, 0), l(2, 0), l(3, 0), l(4, 0), l(1, 0), l(6, 0)}},
		{name: "previous misaligned, out of range, or taken is dropped", lmc: 1, wantRule: plan.DLIDSpread,
			previous: map[uint64]uint16{ca(0): 7, ca(1): 0xBFFF, ca(2): 0x2000, sw0: 0x2001},
			// sw0 comes first in endpoint order and keeps 0x2001, so CA 2's
			// range 0x2000-0x2001 is taken.
			want: []plan.PortLID{l(0x2001, 0), l(1, 0), l(2, 0), l(4, 1), l(6, 1), l(8, 1)}},
		{name: "two ports claiming one LID: first in endpoint order keeps it",
			previous: map[uint64]uint16{ca(0): 9, ca(2): 9},
			want:     []plan.PortLID{l(1, 0), l(2, 0), l(3, 0), l(9, 0), l(4, 0), l(5, 0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lp, err := assign(context.Background(), sdk.LIDRequest{Topo: topo, Routes: planesFor(topo), LMC: tc.lmc, Previous: tc.previous}, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(lp.Ports) != len(tc.want) {
				t.Fatalf("got %d ports, want %d", len(lp.Ports), len(tc.want))
			}
			for i := range tc.want {
				if lp.Ports[i] != tc.want[i] {
					t.Errorf("endpoint %d: %+v, want %+v (all: %v)", i, lp.Ports[i], tc.want[i], lp.Ports)
				}
			}
			if lp.Rule != tc.wantRule || lp.Planes != nil {
				t.Errorf("rule %v planes %v, want rule %v and no planes", lp.Rule, lp.Planes != nil, tc.wantRule)
			}
			// The plan must realise.
			if _, err := plan.Realize(topo, planesFor(topo), lp); err != nil {
				t.Errorf("Realize: %v", err)
			}
		})
	}
}

func TestAssignErrors(t *testing.T) {
	topo := ring3(t)
	big, err := testfab.FatTree3(12) // 432 CAs: at LMC 7 only 383 ranges fit
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		req     sdk.LIDRequest
		wantErr string
	}{
		{"no topology", sdk.LIDRequest{Routes: planesFor(topo)}, "no topology"},
		{"paths-form routes", sdk.LIDRequest{Topo: topo, Routes: &plan.Routes{Paths: []plan.Path{{Src: 0, Dst: 1}}}}, "path-partitioning"},
		{"no routes", sdk.LIDRequest{Topo: topo}, "planes-form"},
		{"routes for another fabric", sdk.LIDRequest{Topo: topo, Routes: &plan.Routes{Planes: make([]plan.DestPlanes, 2)}}, "different topology"},
		{"LMC 8", sdk.LIDRequest{Topo: topo, Routes: planesFor(topo), LMC: 8}, "out of range"},
		{"LID space exhausted", sdk.LIDRequest{Topo: big, Routes: planesFor(big), LMC: 7}, "exhausted"},
	}
	for _, tc := range tests {
		_, err := assign(context.Background(), tc.req, config{})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	// Just fits: LMC 6 needs 432*64 + 180 < 0xBFFF.
	if _, err := assign(context.Background(), sdk.LIDRequest{Topo: big, Routes: planesFor(big), LMC: 6}, config{}); err != nil {
		t.Errorf("LMC 6 on 432 CAs: %v", err)
	}
}

func TestConfigure(t *testing.T) {
	a := &assigner{}
	if err := a.Configure(cty.ObjectVal(map[string]cty.Value{"switch_lmc": cty.True})); err != nil || !a.cfg.switchLMC {
		t.Errorf("switch_lmc=true: %v %+v", err, a.cfg)
	}
	if err := a.Configure(a.Schema().Defaults()); err != nil || a.cfg.switchLMC {
		t.Errorf("defaults: %v %+v", err, a.cfg)
	}
	if err := a.Configure(cty.ObjectVal(map[string]cty.Value{"switch_lmc": cty.NumberIntVal(1)})); err == nil {
		t.Error("number accepted for switch_lmc")
	}
	if i := a.Info(); i.Name != "sequential" || i.Kind != sdk.KindLIDAssign || i.Version != "0.1.0" {
		t.Errorf("Info = %+v", i)
	}
}

func BenchmarkFatTree36(b *testing.B) {
	topo, err := testfab.FatTree3(36)
	if err != nil {
		b.Fatal(err)
	}
	r := planesFor(topo)
	testfab.Bench(b, func() error {
		_, err := assign(context.Background(), sdk.LIDRequest{Topo: topo, Routes: r}, config{})
		return err
	})
}
