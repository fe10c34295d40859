package sm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestBadMKeyTrap: trap 256 (a port refused an SMP with a wrong M_Key) is
// reported with who was refused and what was asked, and makes no sweep.
func TestBadMKeyTrap(t *testing.T) {
	f := fatTree(t)
	fab, tr := attach(t, f)
	sink := &logSink{}
	log := hclog.New(&hclog.LoggerOptions{Output: sink, Level: hclog.Info})
	s := sm.New(tr, runner([]sdk.RoutingEngine{&updn{base: base{"updn"}}}, 100),
		sm.Options{Parallel: 8, SweepInterval: time.Hour, TrapCoalesce: 30 * time.Millisecond}, log)
	ctx, cancel := context.WithCancel(context.Background())
	reps := make(chan *sm.Report, 16)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, nil, func(r *sm.Report, _ error) { reps <- r }) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-reps:
	case <-time.After(5 * time.Second):
		t.Fatal("no first sweep")
	}
	a := s.Applied()
	smLID := a.Result.LIDs.Ports[a.Topo.EndpointIndex(a.Topo.SM)].Base
	sw := switchLinks(f)[0].B
	swLID := a.Result.LIDs.Ports[a.Topo.EndpointIndex(topology.PortRef{Node: a.Topo.NodeByGUID(sw.GUID), Port: 0})].Base

	n := smp.NewTrap256(smp.ProducerSwitch, smp.Trap256{LID: swLID, Method: smp.MethodSet, AttrID: smp.AttrPortInfo,
		AttrMod: 3, MKey: 0xbad, DRNotice: true, DRHops: 2, DRReturnPath: [30]byte{0, 5, 1}})
	sendTrap(t, trapSender(t, fab, sw.GUID), smLID, swLID, n, 1)
	want := []string{"wrong M_Key (trap 256)", fmt.Sprintf("port_lid=%d", swLID), fmt.Sprintf("port_guid=0x%016x", sw.GUID),
		"attr=0x0015", "m_key=0x0000000000000bad", "directed_route_hops=2", `return_path="[0 5]"`}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end) && !strings.Contains(sink.String(), want[0]); {
		time.Sleep(10 * time.Millisecond)
	}
	out := sink.String()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the trap 256 warning lacks %q:\n%s", w, out)
		}
	}
	select {
	case r := <-reps:
		t.Fatalf("trap 256 made a sweep: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
}
