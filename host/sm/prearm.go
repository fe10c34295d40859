package sm

import (
	"context"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/sdk/topology"
)

// armAhead is the Armed Sets of a heavy sweep sent while its plan is
// computed (program.Prearm), after the P_Key read-back so that each
// counts its own SMPs; the distribution phase counts them. They use what
// the routing phase leaves of the SMP rate: once the plan is ready no more
// go out (the rest are Apply's), so they never hold the sweep up.
type armAhead struct {
	done, stop chan struct{}
	gets, sets uint64
}

// armAhead starts moving the switch ports of Init–Init links to Armed
// beside the plan, when Options.ArmAhead asks for it, the plan will need no OperationalVLs (a CapOneVL
// assigner) and this SM, master after the sweep's election, still finds
// no other master (checkAlone: it writes nothing otherwise). Armed
// forwards no data; Active waits for the verified plan (Apply). nil when
// not started.
func (s *SM) armAhead(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, after *pkeyRead) *armAhead {
	if pipe, _ := s.pipe(); !s.Opts.ArmAhead || pipe == nil || !pipe.VL.OneVL {
		return nil
	}
	a := &armAhead{done: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(a.done)
		after.wait()
		select {
		case <-a.stop:
			s.Log.Debug("no port armed before the plan: the P_Key read-back took the routing phase")
			return
		default:
		}
		start, st0 := time.Now(), s.T.Stats()
		defer func() { a.gets, a.sets = delta(st0, s.T.Stats()) }()
		if err := s.checkAlone(ctx, fab, topo, nil, false, nil); err != nil {
			s.Log.Debug("no port armed before the plan", "reason", err)
			return
		}
		n := s.prog.Prearm(ctx, fab, a.stop)
		s.Log.Debug("switch ports armed before the plan", "sets", n, "took", time.Since(start))
	}()
	return a
}

// finish stops the Sets (the plan is ready) and waits for those in
// flight (a may be nil).
func (a *armAhead) finish() {
	if a != nil {
		close(a.stop)
		<-a.done
	}
}

// addTo counts the Sets (and the last look's Gets) in the distribution
// phase p, whose work they are.
func (a *armAhead) addTo(p *Phase) {
	if a != nil {
		p.Gets += a.gets
		p.Sets += a.sets
	}
}
