package sm

import (
	"fmt"
	"slices"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// cleanModel is the fabric model route left after programming the plan
// of: what discovery read with what the programmer wrote on top
// (programmed). In it every endpoint read holds of's LID, LMC and SM LID,
// every switch of's LinearFDBTop, and no live port waits to be activated.
type cleanModel struct {
	fab *discovery.Fabric
	of  *Applied
}

// since is how an incremental sweep's model differs from the clean model
// of the plan in force (cur): only in the nodes changed (the update's
// UpdateSummary.Changed; the nodes it dropped are gone). The sweep's
// bookkeeping then looks at those nodes, not at all 47,824 (ft3-56):
// every other node holds what the programmer wrote for cur.
type since struct {
	cur     *Applied
	changed []uint64
}

// sinceClean returns how fab, which Update made from old, differs from the
// clean model of the plan in force; nil when old is not that model (a
// sweep failed after discovery, a rollout step is in force): then the
// bookkeeping looks at every node.
func (s *SM) sinceClean(old *discovery.Fabric, sum discovery.UpdateSummary) *since {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applied == nil || s.clean.fab != old || s.clean.of != s.applied {
		return nil
	}
	return &since{cur: s.applied, changed: sum.Changed}
}

// nodes returns the changed nodes that fab holds.
func (d *since) nodes(fab *discovery.Fabric) []*discovery.Node {
	out := make([]*discovery.Node, 0, len(d.changed))
	for _, g := range d.changed {
		if n := fab.Nodes[g]; n != nil {
			out = append(out, n)
		}
	}
	return out
}

// endpoints returns the endpoints of topo's changed nodes, in Endpoints()
// order (Changed is sorted by GUID, like the snapshot's nodes).
func (d *since) endpoints(topo *topology.Topology) []topology.PortRef {
	var out []topology.PortRef
	for _, g := range d.changed {
		if i := topo.NodeByGUID(g); i != topology.NoNode {
			out = append(out, topo.NodeEndpoints(i)...)
		}
	}
	return out
}

// sameIndex reports whether topo numbers its endpoints as the plan in
// force does (no CA port's cable changed), so that a plan's arrays can be
// compared index by index.
func (d *since) sameIndex(topo *topology.Topology) bool {
	return slices.Equal(d.cur.Topo.Endpoints(), topo.Endpoints())
}

// samePlan reports whether res gives topo's endpoints what the plan in
// force gives them: the same endpoints, LIDs, SM LID and LinearFDBTop.
func (d *since) samePlan(topo *topology.Topology, res *pipeline.Result) bool {
	c := d.cur.Result.Realized
	return d.sameIndex(topo) && slices.Equal(c.LIDs.Ports, res.Realized.LIDs.Ports) && c.TopLID == res.Realized.TopLID &&
		smLIDOf(d.cur.Topo, d.cur.Result) == smLIDOf(topo, res)
}

// switches returns the node indices of topo's changed switches.
func (d *since) switches(topo *topology.Topology) []int32 {
	var out []int32
	for _, g := range d.changed {
		if i := topo.NodeByGUID(g); i != topology.NoNode && topo.Nodes[i].Type == topology.Switch {
			out = append(out, i)
		}
	}
	return out
}

// remoteSMsSince is remoteSMs(fab) for fab, which Update made from old
// changing only the nodes changed, given prev = remoteSMs(old): old's
// entries of unchanged nodes (with their routes now) and those of the
// changed nodes.
func remoteSMsSince(prev []remoteSM, old, fab *discovery.Fabric, changed []uint64) []remoteSM {
	if ownPortGUID(old) != ownPortGUID(fab) {
		return remoteSMs(fab)
	}
	skip := make(map[uint64]bool, len(changed))
	for _, g := range changed {
		skip[g] = true
	}
	var out []remoteSM
	for _, r := range prev {
		if n := fab.Nodes[r.node]; n != nil && !skip[r.node] {
			r.path = n.Path
			out = append(out, r)
		}
	}
	own := ownPortGUID(fab)
	for _, g := range changed {
		if n := fab.Nodes[g]; n != nil {
			out = nodeSMs(out, fab, own, g, n)
		}
	}
	sortSMs(out)
	return out
}

// activatingIn is activating restricted to nodes.
func activatingIn(nodes []*discovery.Node) []uint64 {
	var out []uint64
	for _, n := range nodes {
		if n.Info.NodeType == smp.NodeTypeSwitch && toActivate(n) {
			out = append(out, n.Info.NodeGUID)
		}
	}
	return out
}

// sameSet reports whether a and b hold the same GUIDs (crossCheck).
func sameSet(a, b []uint64) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// sameModel says how two fabric models differ node by node, routes
// included (crossCheck).
func sameModel(a, b *discovery.Fabric) error {
	if len(a.Nodes) != len(b.Nodes) {
		return fmt.Errorf("%d nodes vs %d", len(a.Nodes), len(b.Nodes))
	}
	for g, x := range a.Nodes {
		y := b.Nodes[g]
		if y == nil || x.Info != y.Info || x.Desc != y.Desc || !slices.Equal(x.Path, y.Path) || !slices.Equal(x.Ports, y.Ports) ||
			(x.Switch == nil) != (y.Switch == nil) || x.Switch != nil && *x.Switch != *y.Switch {
			return fmt.Errorf("node %#x differs", g)
		}
	}
	return nil
}
