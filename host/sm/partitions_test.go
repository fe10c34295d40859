package sm_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibsm/ibsm/conf"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// TestPartitionSweeps: the SM programs the partitions with its sweeps on
// the embedded fabric: a storage partition lands on its members and the
// switch ports in front of them; an unchanged sweep, and an incremental
// sweep after a member's link bounced, send no P_Key SMP; SetPartitions
// (SIGHUP) with a change sends only the changed blocks, with no
// re-routing; a partition that does not fit a port's table is a sweep
// warning, not a failure.
func TestPartitionSweeps(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 1), sm.Options{}, nil)
	ctx := context.Background()
	var cas []*netfile.Node
	smGUID, _ := fab.DefaultSMPort()
	for _, n := range f.Nodes {
		if n.Type == topology.CA && n.GUID != smGUID {
			cas = append(cas, n)
		}
	}
	storage := func(members ...*netfile.Node) conf.Partition {
		p := conf.Partition{Name: "storage", PKey: 0x0002}
		for _, n := range members {
			p.Members = append(p.Members, conf.PartitionMember{Kind: conf.MemberGUID, GUID: n.Ports[1].GUID, Full: true})
		}
		return p
	}
	s.SetPartitions([]conf.Partition{conf.DefaultPartition(), storage(cas[0], cas[1])})
	rep, err := s.HeavySweep(ctx)
	must(t, err)
	st := s.PKeyStats()
	// Block 0 of the two members, the SM's port and the three switch
	// ports in front of them; every CA-facing switch port enforces, turned
	// on by its Active Set (no Get and Set of its own).
	if st.BlocksSent != 6 || st.EnforceSets != 0 || st.EnforcedActive != int64(len(cas)+1) || rep.Program.Enforcing != st.EnforcedActive || len(rep.Warnings) != 0 {
		t.Fatalf("first sweep: %+v (%d turned on by Active Sets), warnings %q; want %d CA-facing switch ports enforcing, no Set of their own", st, rep.Program.Enforcing, rep.Warnings, len(cas)+1)
	}
	var smNode *netfile.Node
	for _, n := range f.Nodes {
		if n.GUID == smGUID {
			smNode = n
		}
	}
	for _, n := range append(cas, smNode) {
		pt := n.Ports[1]
		if in, out := fab.PartitionEnforcement(pt.Peer.GUID, uint8(pt.PeerPort)); !in || !out {
			t.Errorf("switch port %#x/%d in front of %s: enforcement in=%v out=%v", pt.Peer.GUID, pt.PeerPort, n.Name, in, out)
		}
	}
	holds := func(n *netfile.Node, key uint16) bool {
		keys, ok := fab.PKeys(n.GUID, 1)
		if !ok {
			t.Fatalf("no port %#x/1", n.GUID)
		}
		for _, k := range keys {
			if k == key {
				return true
			}
		}
		return false
	}
	if !holds(cas[0], 0x8002) || !holds(cas[1], 0x8002) || holds(cas[2], 0x8002) || holds(cas[2], 0x0002) {
		t.Fatal("storage keys not where the partition puts them")
	}
	if pl := s.PKeyPlan(); pl == nil || len(pl.Tables) == 0 {
		t.Fatal("no P_Key plan in force")
	}

	rep, err = s.HeavySweep(ctx)
	must(t, err)
	if st := s.PKeyStats(); rep.Rerouted || st.BlocksRead+st.BlocksSent+st.EnforceSets != 0 {
		t.Errorf("unchanged sweep: rerouted %v, %+v", rep.Rerouted, st)
	}

	// A member's link bounces: the incremental sweeps re-activate it and
	// send no P_Key SMP (the port kept its LID and table; the switch
	// port kept its enforcement).
	sw := cas[0].Ports[1].Peer
	for _, up := range []bool{false, true} {
		if up {
			must(t, fab.LinkUp(sw.GUID, uint8(cas[0].Ports[1].PeerPort)))
		} else {
			must(t, fab.LinkDown(sw.GUID, uint8(cas[0].Ports[1].PeerPort)))
		}
		ch, full, err := s.LightSweepChanges(ctx)
		must(t, err)
		if full != "" {
			t.Fatalf("light sweep wants a heavy sweep: %s", full)
		}
		rep, err := s.IncrementalSweep(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		if st := s.PKeyStats(); st.BlocksSent+st.EnforceSets != 0 || rep.PKeysKept {
			t.Errorf("link up=%v: %+v, kept without a look %v; want it looked at, no P_Key Set", up, st, rep.PKeysKept)
		}
	}
	if !holds(cas[0], 0x8002) {
		t.Error("the bounced member lost its key")
	}

	// A cable between two switches bounces: no end port changed, so the
	// P_Key plan stays without a read-back (no P_Key SMP at all).
	isl := interSwitchLink(t, f)
	for _, up := range []bool{false, true} {
		if up {
			must(t, fab.LinkUp(isl.A.GUID, uint8(isl.PA)))
		} else {
			must(t, fab.LinkDown(isl.A.GUID, uint8(isl.PA)))
		}
		ch, full, err := s.LightSweepChanges(ctx)
		must(t, err)
		if full != "" {
			t.Fatalf("light sweep wants a heavy sweep: %s", full)
		}
		rep, err := s.IncrementalSweep(ctx, ch)
		must(t, err)
		if !rep.Rerouted || !rep.PKeysKept || rep.Partitions.Gets+rep.Partitions.Sets != 0 {
			t.Errorf("switch cable up=%v: rerouted %v, P_Keys kept %v, %d P_Key Gets, %d Sets; want kept, none", up, rep.Rerouted, rep.PKeysKept, rep.Partitions.Gets, rep.Partitions.Sets)
		}
	}
	rep, err = s.HeavySweep(ctx)
	must(t, err)
	if st := s.PKeyStats(); rep.Rerouted || st.BlocksRead+st.BlocksSent+st.EnforceSets != 0 || !holds(cas[0], 0x8002) {
		t.Errorf("heavy sweep after the switch cable: rerouted %v, %+v; want nothing to do, the plan kept in force", rep.Rerouted, st)
	}

	// SIGHUP: cas[1] leaves, cas[2] joins: their blocks and their switch
	// ports' blocks, nothing else, and no re-routing.
	s.SetPartitions([]conf.Partition{conf.DefaultPartition(), storage(cas[0], cas[2])})
	rep, err = s.HeavySweep(ctx)
	must(t, err)
	if st := s.PKeyStats(); rep.Rerouted || st.BlocksSent != 4 || st.BlocksRead != 0 {
		t.Errorf("changed partitions: rerouted %v, %+v; want 4 blocks sent", rep.Rerouted, st)
	}
	if holds(cas[1], 0x8002) || !holds(cas[2], 0x8002) {
		t.Error("the change did not land")
	}

	// 70 partitions of everyone do not fit 64-entry tables: reported,
	// those ports left alone, the sweep still succeeds.
	many := []conf.Partition{conf.DefaultPartition()}
	for k := 1; k <= 70; k++ {
		many = append(many, conf.Partition{Name: fmt.Sprintf("p%d", k), PKey: uint16(k), Members: []conf.PartitionMember{{Kind: conf.MemberAll, Full: true}}})
	}
	s.SetPartitions(many)
	rep, err = s.HeavySweep(ctx)
	must(t, err)
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, "do not fit a P_Key table") {
		t.Errorf("no capacity warning: %q", rep.Warnings)
	}
	if st := s.PKeyStats(); st.BlocksSent != 0 {
		t.Errorf("%d blocks sent to tables the partitions do not fit", st.BlocksSent)
	}
}

// TestMeasurePartitions measures what P_Key programming costs on the
// embedded 648-CA fat tree and a 3-level radix-16 fat tree: the first
// sweep with the default partition (every table read once), then 8
// partitions of an eighth of the CAs each (SetPartitions, as SIGHUP), then
// an unchanged sweep. Run it with IBSM_MEASURE=1 (not part of make test).
func TestMeasurePartitions(t *testing.T) {
	if os.Getenv("IBSM_MEASURE") == "" {
		t.Skip("set IBSM_MEASURE=1 to measure")
	}
	for _, tc := range []struct {
		name string
		file func(t *testing.T) *netfile.File
	}{
		{"ft2-648", func(t *testing.T) *netfile.File {
			f, err := netfile.ParseFile("../../conf/examples/ft2-648.net")
			must(t, err)
			return f
		}},
		{"ft3 radix 16", func(t *testing.T) *netfile.File {
			f, err := topogen.FatTree{Radix: 16, Levels: 3}.Generate()
			must(t, err)
			return f
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.file(t)
			_, tr := attach(t, f)
			s := sm.New(tr, runner([]sdk.RoutingEngine{&spineUpDown{base{"updn"}}}, 1), sm.Options{Parallel: 64}, nil)
			ctx := context.Background()
			_, err := s.HeavySweep(ctx) // routing alone
			must(t, err)
			var cas []uint64
			for _, n := range f.Nodes {
				if n.Type == topology.CA {
					cas = append(cas, n.Ports[1].GUID)
				}
			}
			step := func(what string, ps []conf.Partition) {
				s.SetPartitions(ps)
				st0 := tr.Stats()
				t0 := time.Now()
				rep, err := s.HeavySweep(ctx)
				must(t, err)
				st := tr.Stats()
				p := s.PKeyStats()
				t.Logf("%s, %s: sweep %v (rerouted %v), %d ports, P_Key blocks read %d, sent %d, enforcement Sets %d; sweep SMPs %d Get %d Set",
					tc.name, what, time.Since(t0).Round(time.Millisecond), rep.Rerouted, p.Ports, p.BlocksRead, p.BlocksSent, p.EnforceSets, st.Gets-st0.Gets, st.Sets-st0.Sets)
			}
			step("partitions not managed (baseline re-sweep)", nil)
			step("default partition, first time", []conf.Partition{conf.DefaultPartition()})
			eight := []conf.Partition{conf.DefaultPartition()}
			for k := 0; k < 8; k++ {
				p := conf.Partition{Name: fmt.Sprintf("p%d", k), PKey: uint16(0x10 + k), IPoIB: &conf.IPoIB{MTU: 4, Rate: 3, Scope: 2, QKey: 0x0B1B}}
				for i := k; i < len(cas); i += 8 {
					p.Members = append(p.Members, conf.PartitionMember{Kind: conf.MemberGUID, GUID: cas[i], Full: true})
				}
				eight = append(eight, p)
			}
			step("8 partitions added (SIGHUP)", eight)
			step("unchanged", eight)
		})
	}
}

// hookRoute is updn that runs during before its first Route.
type hookRoute struct {
	updn
	during func()
	once   sync.Once
}

func (e *hookRoute) Route(ctx context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	e.once.Do(e.during)
	return e.updn.Route(ctx, req)
}

// TestPartitionsReadDuringRouting: the P_Key read-back runs beside the
// routing and counts in the partitions phase; partitions changed
// (SIGHUP) while the sweep routed are the ones programmed, not those the
// read-back started with.
func TestPartitionsReadDuringRouting(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	var cas []*netfile.Node
	smGUID, _ := fab.DefaultSMPort()
	for _, n := range f.Nodes {
		if n.Type == topology.CA && n.GUID != smGUID {
			cas = append(cas, n)
		}
	}
	storage := func(members ...*netfile.Node) []conf.Partition {
		p := conf.Partition{Name: "storage", PKey: 0x0002}
		for _, n := range members {
			p.Members = append(p.Members, conf.PartitionMember{Kind: conf.MemberGUID, GUID: n.Ports[1].GUID, Full: true})
		}
		return []conf.Partition{conf.DefaultPartition(), p}
	}
	var s *sm.SM
	e := &hookRoute{updn: updn{base: base{"updn"}}, during: func() { s.SetPartitions(storage(cas[0], cas[2])) }}
	s = sm.New(tr, runner([]sdk.RoutingEngine{e}, 1), sm.Options{}, nil)
	s.SetPartitions(storage(cas[0], cas[1]))
	rep, err := s.HeavySweep(context.Background())
	must(t, err)
	st := s.PKeyStats()
	if st.BlocksRead == 0 || rep.Partitions.Gets < uint64(st.BlocksRead) || rep.Partitions.Sets != uint64(st.BlocksSent+st.EnforceSets) {
		t.Fatalf("partitions phase %d Gets / %d Sets for %+v", rep.Partitions.Gets, rep.Partitions.Sets, st)
	}
	for _, c := range []struct {
		n    *netfile.Node
		want bool
	}{{cas[0], true}, {cas[1], false}, {cas[2], true}} {
		keys, _ := fab.PKeys(c.n.GUID, 1)
		if slices.Contains(keys, 0x8002) != c.want {
			t.Fatalf("CA %#x holds %#x; want the storage key: %v", c.n.GUID, keys, c.want)
		}
	}
}
