package sm

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// LightSweep polls every switch for port state changes and checks the SM's
// own port and a share of the CA ports. It reports whether a sweep is
// needed.
func (s *SM) LightSweep(ctx context.Context) (bool, error) {
	ch, full, err := s.lightSweep(ctx)
	return full != "" || !ch.Empty(), err
}

// LightSweepChanges is LightSweep saying what changed (for
// IncrementalSweep) or why only a heavy sweep will do ("" if not).
func (s *SM) LightSweepChanges(ctx context.Context) (discovery.Changes, string, error) {
	return s.lightSweep(ctx)
}

// lightSweep is pollAndCheck, then, if that found nothing to re-read,
// the audit of the next share of what the programmer wrote (a switch the
// audit finds reset is returned as a changed port 0). Run does the same in
// periodic, auditing after the incremental sweep instead of skipping.
func (s *SM) lightSweep(ctx context.Context) (discovery.Changes, string, error) {
	s.client.Forget() // routes found dead before may answer now
	ch, full, err := s.pollAndCheck(ctx)
	if full != "" || !ch.Empty() {
		return ch, full, err
	}
	ch.Ports = s.audit(ctx, s.Fabric(), auditChunk, nil)
	return ch, full, err
}

// pollAndCheck polls every switch's PortStateChange, then reads the SM's
// own port and the next share of CA ports and compares them with the plan.
// It returns what changed, or why a full discovery is needed.
//
// What it sees: any port going to or from Down on a switch (both ends of
// a switch-to-switch cable, the switch end of a CA cable, so CA link loss
// too), a switch that stops answering, the SM's own port leaving Active or
// losing its LID, and — within ceil(CAs/CAChecksPerSweep) light sweeps — a
// CA port whose LID, LMC, SM LID or state no longer match the plan (a
// reset HCA, a LID changed behind the SM's back). What it does not see:
// changes that leave these fields alone, e.g. a CA's NodeDescription or a
// link retraining at a different width without going Down. (Tables and
// settings changed behind the SM's back are the audit's: see lightSweep.)
func (s *SM) pollAndCheck(ctx context.Context) (discovery.Changes, string, error) {
	var ch discovery.Changes
	fab, a := s.Fabric(), s.Applied()
	if fab == nil || a == nil {
		return ch, "no plan in force yet", nil
	}
	changed, _, err := s.pollSwitches(ctx, fab, nil, false)
	ch.Switches = changed
	if err != nil {
		// A switch that does not answer is re-read by the update, which
		// drops it if its neighbours report it gone and gives up (full
		// sweep) otherwise.
		s.Log.Info("light sweep: a switch did not answer", "error", err)
	}
	// With switches to re-read, the CA ports wait for the next sweep: the
	// incremental sweep re-reads the changed area, and a CA whose route
	// crosses a cable that just went down would only time out.
	ports, full := s.checkEndpoints(ctx, fab, a, len(changed) == 0)
	ch.Ports = ports
	return ch, full, nil
}

// checkEndpoints reads the SM's own port and, withCAs, the next
// CAChecksPerSweep CA ports, all at once, and returns those that differ
// from the plan.
func (s *SM) checkEndpoints(ctx context.Context, fab *discovery.Fabric, a *Applied, withCAs bool) ([]discovery.PortRef, string) {
	n := s.Opts.CAChecksPerSweep
	if n == 0 {
		n = defaultCAChecks
	}
	if !withCAs {
		n = 0
	}
	topo, res := a.Topo, a.Result
	eps := topo.Endpoints()
	smLID := smLIDOf(topo, res)
	var cas []int
	for i, ep := range eps {
		if topo.Nodes[ep.Node].Type != topology.Switch && topo.Nodes[ep.Node].GUID != fab.SMGUID {
			cas = append(cas, i)
		}
	}
	pick := []int{}
	if i := topo.EndpointIndex(topo.SM); topo.SM.Connected() && i >= 0 {
		pick = append(pick, int(i))
	}
	s.mu.Lock()
	for k := 0; n > 0 && k < n && k < len(cas); k++ {
		pick = append(pick, cas[(s.caNext+k)%len(cas)])
	}
	if len(cas) > 0 && n > 0 {
		s.caNext = (s.caNext + min(n, len(cas))) % len(cas)
	}
	s.mu.Unlock()
	var (
		mu    sync.Mutex
		out   []discovery.PortRef
		smErr error
	)
	// Concurrently: a CA behind a dead cable costs its timeouts once, not
	// once per CA in turn (64 in turn took 45-100 s on ft3-8 and ft3-24).
	g := fanout.New(s.Opts.Parallel)
	for _, i := range pick {
		ep := eps[i]
		guid := topo.Nodes[ep.Node].GUID
		node := fab.Nodes[guid]
		if node == nil {
			continue
		}
		g.Go(func() error {
			var pi smp.PortInfo
			if err := s.client.Get(ctx, node.Path, smp.AttrPortInfo, uint32(ep.Port), &pi); err != nil {
				if guid == fab.SMGUID {
					mu.Lock()
					smErr = err
					mu.Unlock()
					return nil
				}
				// Its switch reports the link if it went down; a lost MAD
				// is checked again next time round.
				s.Log.Debug("light sweep: CA port did not answer", "guid", fmt.Sprintf("0x%016x", guid), "port", ep.Port, "error", err)
				return nil
			}
			want := res.LIDs.Ports[i]
			if pi.LID != want.Base || pi.LMC != want.LMC || pi.MasterSMLID != smLID || pi.PortState != smp.PortStateActive {
				s.Log.Info("light sweep: port differs from the plan", "guid", fmt.Sprintf("0x%016x", guid), "port", ep.Port,
					"lid", pi.LID, "plan_lid", want.Base, "sm_lid", pi.MasterSMLID, "state", pi.PortState)
				mu.Lock()
				out = append(out, discovery.PortRef{GUID: guid, Port: ep.Port})
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait("checking CA ports") // failures are logged above, not errors
	if smErr != nil {
		return nil, fmt.Sprintf("the SM's own port does not answer: %v", smErr)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GUID != out[j].GUID {
			return out[i].GUID < out[j].GUID
		}
		return out[i].Port < out[j].Port
	})
	return out, ""
}
