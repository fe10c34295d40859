package sm

import (
	"context"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/sdk/topology"
)

// armAhead is the Armed Sets of a heavy sweep sent while its plan is
// computed (program.Prearm), after the P_Key read-back so that each
// counts its own SMPs; the distribution phase counts them.
type armAhead struct {
	done       chan struct{}
	gets, sets uint64
}

// armAhead starts moving the switch ports of Init–Init links to Armed
// beside the plan, when the plan will need no OperationalVLs (a CapOneVL
// assigner) and this SM, master after the sweep's election, still finds
// no other master (checkAlone: it writes nothing otherwise). Armed
// forwards no data; Active waits for the verified plan (Apply). nil when
// not started.
func (s *SM) armAhead(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, after *pkeyRead) *armAhead {
	if pipe, _ := s.pipe(); pipe == nil || !pipe.VL.OneVL {
		return nil
	}
	a := &armAhead{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		after.wait()
		start, st0 := time.Now(), s.T.Stats()
		defer func() { a.gets, a.sets = delta(st0, s.T.Stats()) }()
		if err := s.checkAlone(ctx, fab, topo, nil, false, nil); err != nil {
			s.Log.Debug("no port armed before the plan", "reason", err)
			return
		}
		n := s.prog.Prearm(ctx, fab)
		s.Log.Debug("switch ports armed before the plan", "sets", n, "took", time.Since(start))
	}()
	return a
}

// wait waits for the Sets (a may be nil).
func (a *armAhead) wait() {
	if a != nil {
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
