package sm_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/host/mcast"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// bfsRouter routes multicast with the SDK's reference router; bad makes
// it answer a loop (every tree switch forwards out of every port).
type bfsRouter struct {
	base
	bad   bool
	calls int
}

func (r *bfsRouter) RouteMulticast(_ context.Context, req sdk.MulticastRequest) ([]sdk.MulticastTree, error) {
	r.calls++
	trees, err := sdktest.BFSMulticast(req)
	if r.bad {
		for i := range trees {
			for j := range trees[i].Switches {
				s := &trees[i].Switches[j]
				s.Out = nil
				for p := 1; p < len(req.Topo.Nodes[s.Node].Ports); p++ {
					s.Out = append(s.Out, uint8(p))
				}
			}
		}
	}
	return trees, err
}

// newGroup creates a group in store with guids as full members.
func newGroup(t *testing.T, store *mcast.Store, guids []uint64) mcast.Group {
	t.Helper()
	g, err := store.Create(mcast.Group{QKey: 1, PKey: 0xFFFF})
	must(t, err)
	for _, guid := range guids {
		_, err := store.Join(g.MGID, guid, mcast.Member{State: smp.JoinFullMember})
		must(t, err)
	}
	return g
}

// caPorts lists the CA ports of topo as probe addresses and port GUIDs.
func caPorts(topo *topology.Topology) ([]sim.Delivery, []uint64) {
	var ds []sim.Delivery
	var guids []uint64
	for _, ep := range topo.Endpoints() {
		if topo.Nodes[ep.Node].Type == topology.CA {
			ds = append(ds, sim.Delivery{GUID: topo.Nodes[ep.Node].GUID, Port: ep.Port})
			guids = append(guids, topo.PortGUID(ep))
		}
	}
	return ds, guids
}

func TestMulticastJoinLeaveProgramsMFTs(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 1), sm.Options{}, nil)
	router := &bfsRouter{base: base{"bfs"}}
	store := mcast.NewStore(0)
	s.EnableMulticast(router, store)
	ctx := context.Background()
	if _, err := s.HeavySweep(ctx); err != nil {
		t.Fatal(err)
	}
	topo := s.Applied().Topo
	cas, guids := caPorts(topo)
	if len(cas) < 4 {
		t.Fatalf("fabric has %d CA ports", len(cas))
	}

	g, err := store.Create(mcast.Group{QKey: 0x0B1B, PKey: 0xFFFF, MTU: 4})
	must(t, err)
	if g.MLID != smp.MulticastLIDBase {
		t.Fatalf("first MLID %#x", g.MLID)
	}
	for _, guid := range guids {
		_, err := store.Join(g.MGID, guid, mcast.Member{State: smp.JoinFullMember})
		must(t, err)
	}
	s.MulticastWait()
	must(t, fab.CheckMulticastGroup(g.MLID, cas, cas))

	// Half leave; one of them stays as a send-only member: it reaches
	// the others and gets nothing.
	half := len(guids) / 2
	for _, guid := range guids[:half] {
		_, _, err := store.Leave(g.MGID, guid, smp.JoinFullMember)
		must(t, err)
	}
	_, err = store.Join(g.MGID, guids[0], mcast.Member{State: smp.JoinSendOnlyNonMember})
	must(t, err)
	s.MulticastWait()
	must(t, fab.CheckMulticastGroup(g.MLID, append([]sim.Delivery{cas[0]}, cas[half:]...), cas[half:]))

	// A second group changes only its own MLID's entries; the first's
	// blocks are not resent.
	before := s.MulticastStats()
	g2 := newGroup(t, store, guids[:2])
	s.MulticastWait()
	must(t, fab.CheckMulticastGroup(g2.MLID, cas[:2], cas[:2]))
	must(t, fab.CheckMulticastGroup(g.MLID, cas[half:], cas[half:]))
	after := s.MulticastStats()
	if sent := after.BlocksSent - before.BlocksSent; sent == 0 || sent > int64(len(topo.Switches())) {
		t.Fatalf("second group sent %d MFT blocks; want at most one per switch", sent)
	}

	// The last members leave: the group goes and its entries with it.
	for _, guid := range guids[:2] {
		_, _, err := store.Leave(g2.MGID, guid, smp.JoinFullMember)
		must(t, err)
	}
	s.MulticastWait()
	if _, ok := store.ByMLID(g2.MLID); ok {
		t.Fatal("empty group kept")
	}
	for _, sw := range topo.Switches() {
		m, err := fab.MFT(topo.Nodes[sw].GUID)
		must(t, err)
		if len(m[g2.MLID]) != 0 {
			t.Fatalf("switch %#x still forwards deleted group %#x to %v", topo.Nodes[sw].GUID, g2.MLID, m[g2.MLID])
		}
	}
	// A re-sweep of the unchanged fabric sends no MFT block.
	before = s.MulticastStats()
	if _, err := s.HeavySweep(ctx); err != nil {
		t.Fatal(err)
	}
	s.MulticastWait()
	if d := s.MulticastStats().BlocksSent - before.BlocksSent; d != 0 {
		t.Fatalf("unchanged fabric: %d MFT blocks sent", d)
	}
}

// A router proposing loops is refused: the MFTs in force stay, the error
// is counted.
func TestMulticastLoopingTreeRejected(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 1), sm.Options{}, nil)
	router := &bfsRouter{base: base{"bfs"}}
	store := mcast.NewStore(0)
	s.EnableMulticast(router, store)
	if _, err := s.HeavySweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	cas, guids := caPorts(s.Applied().Topo)
	g := newGroup(t, store, guids[:3])
	s.MulticastWait()
	must(t, fab.CheckMulticastGroup(g.MLID, cas[:3], cas[:3]))
	router.bad = true
	_, err := store.Join(g.MGID, guids[3], mcast.Member{State: smp.JoinFullMember})
	must(t, err)
	s.MulticastWait()
	st := s.MulticastStats()
	if st.Rejected != 1 || st.LastError == "" {
		t.Fatalf("looping trees: stats %+v", st)
	}
	must(t, fab.CheckMulticastGroup(g.MLID, cas[:3], cas[:3]))
}
