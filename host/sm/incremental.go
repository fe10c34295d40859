package sm

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/sdk/topology"
)

// fullInstead runs a heavy sweep where an incremental one was meant, and
// says why in the log and the report.
func (s *SM) fullInstead(ctx context.Context, why string) (*Report, error) {
	s.Log.Warn("full re-discovery instead of an incremental one", "reason", why)
	rep, err := s.HeavySweep(ctx)
	if rep != nil {
		rep.Fallback = why
	}
	return rep, err
}

// IncrementalSweep re-reads what ch names, brings the fabric model up to
// date (discovery.Update), and re-routes and re-programs if the plan
// changed. When the update cannot be trusted it logs why and runs a heavy
// sweep instead (Report.Fallback).
func (s *SM) IncrementalSweep(ctx context.Context, ch discovery.Changes) (*Report, error) {
	s.client.Forget() // routes found dead before may answer now
	old := s.Fabric()
	if old == nil || s.Applied() == nil {
		return s.fullInstead(ctx, "no plan in force yet")
	}
	rep := &Report{Incremental: true}
	start := time.Now()
	st0 := s.T.Stats()
	// Clear PortStateChange before reading the ports: a change after the
	// read sets it again and is seen by the next light sweep.
	// A switch behind another changed one may sit behind the link that
	// went down, and one that is gone cannot answer at all: their bit is
	// cleared after the update, over their new routes, if they are still
	// there.
	front, unclear := old.Order(ch.Switches)
	if len(front) > 0 {
		_, failed, _ := s.pollSwitches(ctx, old, front, true)
		unclear = append(unclear, failed...)
	}
	fab, sum, err := s.disc.Update(ctx, old, ch)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return s.fullInstead(ctx, err.Error())
	}
	topo, err := s.topologyOf(old, fab, sum)
	if err != nil {
		return s.fullInstead(ctx, fmt.Sprintf("updated fabric model is inconsistent: %v", err))
	}
	rep.Update = sum
	var still []uint64
	for _, g := range unclear {
		if fab.Nodes[g] != nil {
			still = append(still, g)
		}
	}
	if len(still) > 0 {
		if _, _, err := s.pollSwitches(ctx, fab, still, true); err != nil {
			s.Log.Warn("incremental sweep: PortStateChange not cleared; the next light sweep re-reads the switch", "error", err)
		}
	}
	st1 := s.T.Stats()
	rep.Discovery = Phase{Time: time.Since(start)}
	rep.Discovery.Gets, rep.Discovery.Sets = delta(st0, st1)
	s.Log.Debug("incremental discovery", "switches", len(ch.Switches), "ports", len(ch.Ports), "ports_read", sum.PortsRead,
		"links_down", sum.LinksDown, "links_up", sum.LinksUp, "new_nodes", sum.NewNodes, "dropped", sum.Dropped, "rounds", sum.Rounds)
	lin := s.sinceClean(old, sum)
	if lin != nil {
		s.mu.Lock()
		if c := s.smsOf; c.fab == old {
			s.smsOf = fabricSMs{fab: fab, rs: remoteSMsSince(c.rs, old, fab, sum.Changed)}
			if s.crossCheck && !reflect.DeepEqual(s.smsOf.rs, remoteSMs(fab)) {
				s.mu.Unlock()
				return nil, fmt.Errorf("cross-check: remote SMs %+v, computed whole %+v", s.smsOf.rs, remoteSMs(fab))
			}
		}
		s.mu.Unlock()
	}
	return s.route(ctx, rep, fab, topo, start, st0, []uint64{}, s.unaffected(old, fab, sum), lin)
}

// snapshot is the topology cut for a fabric model, so that an incremental
// sweep patches it (discovery.Fabric.PatchTopology: O(changed nodes))
// instead of cutting all of ft3-56's 47,824 nodes again (0.13 s a cable
// event).
type snapshot struct {
	fab  *discovery.Fabric
	topo *topology.Topology
	// dirty: nodes of fab whose snapshot may differ from topo (ports the
	// programmer activated after topo was cut).
	dirty []uint64
}

// topologyOf cuts the snapshot of fab, which Update made from old with
// sum: patched from old's when the SM holds it, else whole.
func (s *SM) topologyOf(old, fab *discovery.Fabric, sum discovery.UpdateSummary) (*topology.Topology, error) {
	s.mu.Lock()
	snap := s.snap
	s.mu.Unlock()
	if snap.fab != old || snap.topo == nil {
		return fab.Topology()
	}
	topo, err := fab.PatchTopology(snap.topo, sum, snap.dirty)
	if err != nil {
		s.Log.Warn("incremental sweep: the snapshot could not be patched, cutting it whole", "error", err)
		return fab.Topology()
	}
	return topo, nil
}

// settleSnapshot patches topo (cut before the programmer activated the
// ports of the nodes in dirty) into done's snapshot, if done is still the
// fabric model by then.
func (s *SM) settleSnapshot(done *discovery.Fabric, topo *topology.Topology, dirty []uint64) {
	t, err := done.PatchTopology(topo, discovery.UpdateSummary{}, dirty)
	if err != nil {
		s.Log.Debug("snapshot of the programmed fabric not patched; the next incremental sweep does it", "error", err)
		return
	}
	s.mu.Lock()
	settled := s.snap.fab == done
	if settled {
		s.snap = snapshot{fab: done, topo: t}
	}
	s.mu.Unlock()
	if pipe, _ := s.pipe(); settled && pipe != nil {
		pipe.Settle(t) // the next cable's topology is patched from t
	}
}
