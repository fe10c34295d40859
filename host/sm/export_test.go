package sm

import (
	"context"
	"fmt"
	"reflect"

	"github.com/ibsm/ibsm/host/program"
)

// AuditIn runs the periodic audit of the fabric model in chunks of chunk
// reads, asking yield after each, as Run's tick does with auditChunk.
func (s *SM) AuditIn(ctx context.Context, chunk int, yield func() bool) {
	s.audit(ctx, s.Fabric(), chunk, yield)
}

// NewSMs is the master's periodic look for new SMs (newSMs).
func (s *SM) NewSMs(ctx context.Context, yield func() bool) (found, done bool) {
	return s.newSMs(ctx, yield)
}

// CleanModelHolds checks what the bookkeeping of the next incremental
// sweep relies on (since): the model is the clean model of the plan in
// force, in which every endpoint read holds the plan's LID, LMC, SM LID
// and GID prefix, every switch its LinearFDBTop, no live port waits to be
// activated; and the remote SMs known for it are those it holds.
func (s *SM) CleanModelHolds() error {
	s.mu.Lock()
	clean, a, fab, sms := s.clean, s.applied, s.fabric, s.smsOf
	s.mu.Unlock()
	if clean.fab != fab || clean.of != a || a == nil {
		return fmt.Errorf("the model is not the clean model of the plan in force")
	}
	smLID := smLIDOf(a.Topo, a.Result)
	for i, ep := range a.Topo.Endpoints() {
		n := fab.Nodes[a.Topo.Nodes[ep.Node].GUID]
		pt := &n.Ports[ep.Port]
		want := a.Result.Realized.LIDs.Ports[i]
		if pt.Valid && (pt.Info.LID != want.Base || pt.Info.LMC != want.LMC || pt.Info.MasterSMLID != smLID || pt.Info.GIDPrefix != program.SubnetPrefix) {
			return fmt.Errorf("endpoint %#x/%d holds LID %d LMC %d SM %d, the plan %d %d %d", n.Info.NodeGUID, ep.Port, pt.Info.LID, pt.Info.LMC, pt.Info.MasterSMLID, want.Base, want.LMC, smLID)
		}
	}
	for g, n := range fab.Nodes {
		if n.Switch != nil && n.Switch.LinearFDBTop != a.Result.Realized.TopLID {
			return fmt.Errorf("switch %#x: LinearFDBTop %d, the plan %d", g, n.Switch.LinearFDBTop, a.Result.Realized.TopLID)
		}
		if toActivate(n) {
			return fmt.Errorf("node %#x has a port to activate", g)
		}
	}
	if sms.fab == fab && !reflect.DeepEqual(sms.rs, remoteSMs(fab)) {
		return fmt.Errorf("remote SMs known %+v, the model holds %+v", sms.rs, remoteSMs(fab))
	}
	return nil
}

// CrossCheck makes the SM compute the bookkeeping an incremental sweep
// restricts to the changed nodes also whole, and fail where they differ.
func (s *SM) CrossCheck() { s.crossCheck = true }
