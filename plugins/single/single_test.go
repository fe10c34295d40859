package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/updn"
	"github.com/ibsm/ibsm/plugins/lib/vl/vltest"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

func minHop(topo *topology.Topology, lmc uint8) (*plan.Routes, error) {
	r, _, err := route.MinHopRoutes(context.Background(), route.NewGraph(topo), route.Options{LMC: lmc})
	return r, err
}

func upDown(topo *topology.Topology, lmc uint8) (*plan.Routes, error) {
	r, _, err := updn.Route(context.Background(), topo, lmc, updn.Config{})
	return r, err
}

var cycleRE = regexp.MustCompile(`^(0x[0-9a-f]{16}/\d+)( -> 0x[0-9a-f]{16}/\d+)+$`)

func TestAssign(t *testing.T) {
	tests := []struct {
		name    string
		build   func() (*topology.Topology, error)
		routing func(*topology.Topology, uint8) (*plan.Routes, error)
		lmc     uint8
		wantErr bool
	}{
		{"ring6 min-hop has a credit loop", func() (*topology.Topology, error) { return testfab.Ring(6, 1) }, minHop, 0, true},
		{"ring6 up/down is acyclic", func() (*topology.Topology, error) { return testfab.Ring(6, 1) }, upDown, 0, false},
		{"ring6 up/down lmc 2", func() (*topology.Topology, error) { return testfab.Ring(6, 1) }, upDown, 2, false},
		{"torus 4x4 min-hop has a credit loop", func() (*topology.Topology, error) { return testfab.Torus2D(4, 4, 1) }, minHop, 0, true},
		{"torus 4x4 up/down is acyclic", func() (*topology.Topology, error) { return testfab.Torus2D(4, 4, 1) }, upDown, 1, false},
		// Aggregation-to-aggregation management traffic dips through leaves
		// (down then up), which closes loops with the CA traffic.
		{"fat tree min-hop: switch traffic valleys close a loop", func() (*topology.Topology, error) { return testfab.FatTree3(6) }, minHop, 0, true},
		{"fat tree up/down is acyclic", func() (*topology.Topology, error) { return testfab.FatTree3(6) }, upDown, 1, false},
		{"line min-hop is acyclic", func() (*topology.Topology, error) { return testfab.Line(5, 2) }, minHop, 0, false},
		{"ring of 3 min-hop: no turn closes a loop", func() (*topology.Topology, error) { return testfab.Ring(3, 1) }, minHop, 0, false},
		{"ring of 4 min-hop", func() (*topology.Topology, error) { return testfab.Ring(4, 1) }, minHop, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			r, err := tc.routing(topo, tc.lmc)
			if err != nil {
				t.Fatal(err)
			}
			lids := testfab.SequentialLIDs(topo, tc.lmc)
			real, err := plan.Realize(topo, r, lids)
			if err != nil {
				t.Fatal(err)
			}
			// With the tables (in-process hosts, sdktest) and without
			// them (the plugin declares tables-unread: its SDK realises
			// none and the proof reads the planes).
			for _, tables := range []*plan.Realized{real, nil} {
				vp, err := assign(context.Background(), sdk.VLRequest{Topo: topo, Routes: r, LIDs: lids, Realized: tables, MaxVLs: 8})
				if tc.wantErr {
					if err == nil {
						t.Fatalf("accepted a routing with a CDG cycle (tables given: %v)", tables != nil)
					}
					msg := err.Error()
					i := strings.Index(msg, ": 0x")
					j := strings.Index(msg, "; use")
					if i < 0 || j < i || !cycleRE.MatchString(msg[i+2:j]) {
						t.Fatalf("error does not name the cycle as 0x<guid>/<port> -> ...: %s", msg)
					}
					checkCycle(t, topo, real, msg[i+2:j])
					continue
				}
				if err != nil {
					t.Fatalf("tables given %v: %v", tables != nil, err)
				}
				if vp.VLs != 1 || vp.SLByDLID != nil || vp.SL2VL != nil || vp.Default != [16]uint8{} || vp.Overrides != nil {
					t.Errorf("plan = %+v, want everything on VL 0", vp)
				}
			}
		})
	}
}

// checkCycle re-derives every dependency the printed cycle claims from the
// tables: channel a=(s,p) into switch t depends on b=(t,q) iff some LID is
// forwarded s→p and then t→q.
func checkCycle(t *testing.T, topo *topology.Topology, real *plan.Realized, text string) {
	t.Helper()
	parts := strings.Split(text, " -> ")
	type ch struct {
		guid uint64
		port uint8
	}
	var chans []ch
	for _, p := range parts {
		var c ch
		if _, err := fmt.Sscanf(p, "0x%x/%d", &c.guid, &c.port); err != nil {
			t.Fatalf("bad channel %q: %v", p, err)
		}
		chans = append(chans, c)
	}
	if chans[0] != chans[len(chans)-1] {
		t.Fatalf("cycle does not close: %s", text)
	}
	for i := 0; i+1 < len(chans); i++ {
		a, b := chans[i], chans[i+1]
		sn := topo.NodeByGUID(a.guid)
		peer := topo.Nodes[sn].Ports[a.port].Peer
		if topo.Nodes[peer.Node].GUID != b.guid {
			t.Fatalf("channel %x/%d does not lead to %x", a.guid, a.port, b.guid)
		}
		s, tt := topo.SwitchIndex(sn), topo.SwitchIndex(peer.Node)
		found := false
		for lid := 1; lid <= int(real.TopLID); lid++ {
			if real.LFT[s][lid] == a.port && real.LFT[tt][lid] == b.port {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("no LID takes %x/%d then %x/%d", a.guid, a.port, b.guid, b.port)
		}
	}
}

func TestFormatLimit(t *testing.T) {
	topo, err := testfab.Ring(40, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := minHop(topo, 0)
	if err != nil {
		t.Fatal(err)
	}
	lids := testfab.SequentialLIDs(topo, 0)
	real, err := plan.Realize(topo, r, lids)
	if err != nil {
		t.Fatal(err)
	}
	_, err = assign(context.Background(), sdk.VLRequest{Topo: topo, Realized: real})
	if err == nil || !strings.Contains(err.Error(), "... (40 channels in all)") {
		t.Fatalf("want a truncated 40-channel cycle, got %v", err)
	}
}

func TestBadRequest(t *testing.T) {
	if _, err := assign(context.Background(), sdk.VLRequest{}); err == nil {
		t.Error("nil Realized accepted")
	}
	topo, _ := testfab.Ring(3, 1)
	other, _ := testfab.Ring(4, 1)
	r, _ := minHop(other, 0)
	real, err := plan.Realize(other, r, testfab.SequentialLIDs(other, 0))
	if err != nil {
		t.Fatal(err)
	}
	real.Topo = topo // tables of a 4-switch fabric against a 3-switch topology
	if _, err := assign(context.Background(), sdk.VLRequest{Topo: topo, Realized: real}); err == nil {
		t.Error("mismatched tables accepted")
	}
}

func TestConfigure(t *testing.T) {
	vltest.Configure(t, &assigner{}, sdk.Info{Name: "single", Version: "0.1.0", Kind: sdk.KindVLAssign})
}

func BenchmarkFatTree36(b *testing.B) {
	topo, err := testfab.FatTree3(36)
	if err != nil {
		b.Fatal(err)
	}
	r, err := upDown(topo, 0)
	if err != nil {
		b.Fatal(err)
	}
	real, err := plan.Realize(topo, r, testfab.SequentialLIDs(topo, 0))
	if err != nil {
		b.Fatal(err)
	}
	testfab.Bench(b, func() error {
		_, err := assign(context.Background(), sdk.VLRequest{Topo: topo, Realized: real})
		return err
	})
}
