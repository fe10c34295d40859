package sm_test

import (
	"context"
	"testing"

	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// TestKeepRegistrations: an SM restarted over the fabric it programmed,
// whose SA state came back (KeepRegistrations), sends no PortInfo Set at
// all; only a CA port whose MasterSMLID names another SM is asked to
// re-register. Without KeepRegistrations every CA port is.
func TestKeepRegistrations(t *testing.T) {
	t.Parallel()
	f := fatTree(t)
	fab, tr := attach(t, f)
	ctx := context.Background()
	newSM := func() *sm.SM {
		return sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100), sm.Options{}, nil)
	}
	first := newSM()
	rep, err := first.HeavySweep(ctx)
	must(t, err)
	cas := rep.Program.Reregistered
	if cas == 0 {
		t.Fatalf("first SM asked no CA port to re-register: %+v", rep.Program)
	}

	// Restarted with its registrations restored: nothing to send.
	tr = reattach(t, fab, tr)
	s := newSM()
	s.KeepRegistrations()
	rep, err = s.HeavySweep(ctx)
	must(t, err)
	checkProgrammed(t, fab, s)
	if p := rep.Program; p.Reregistered != 0 || p.PortInfoSets != 0 || p.Sets() != 0 {
		t.Fatalf("restart with registrations kept: %+v; want no Set at all", p)
	}

	// One CA port served by another SM meanwhile (its MasterSMLID moved):
	// only it re-registers.
	tr = reattach(t, fab, tr)
	smGUID, _ := fab.DefaultSMPort()
	var other *netfile.Node
	for _, n := range f.Nodes {
		if n.Type == topology.CA && n.GUID != smGUID {
			other = n
			break
		}
	}
	must(t, fab.SetMasterSMLID(other.GUID, 1, 0x7777))
	s = newSM()
	s.KeepRegistrations()
	rep, err = s.HeavySweep(ctx)
	must(t, err)
	if p := rep.Program; p.Reregistered != 1 || p.PortInfoSets != 1 {
		t.Fatalf("restart with one port served by another SM: %+v; want that port alone re-registered", p)
	}

	// Not kept: every CA port again.
	tr = reattach(t, fab, tr)
	s = newSM()
	rep, err = s.HeavySweep(ctx)
	must(t, err)
	if p := rep.Program; p.Reregistered != cas {
		t.Fatalf("restart without kept registrations re-registered %d CA ports, want %d", p.Reregistered, cas)
	}
}
