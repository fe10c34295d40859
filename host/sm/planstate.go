package sm

import (
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/program"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

func smLIDOf(topo *topology.Topology, res *pipeline.Result) uint16 {
	if topo.SM.Connected() {
		if i := topo.EndpointIndex(topo.SM); i >= 0 {
			return res.Realized.LIDs.Ports[i].Base
		}
	}
	return 0
}

// lidIndex maps the LIDs of the plan in force to ports: by LID, the
// endpoint's index + 1 (0: none). A slice, not a map: the first trap after
// every re-route builds it, and at ft3-56 a map of 47,824 LIDs took ms.
type lidIndex struct {
	of  *Applied
	eps []int32
}

// portOfLID returns the port the plan in force gave lid (port 0 for a
// switch).
func (s *SM) portOfLID(lid uint16) (discovery.PortRef, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.applied
	if a == nil {
		return discovery.PortRef{}, false
	}
	if s.lids == nil || s.lids.of != a {
		idx := &lidIndex{of: a, eps: make([]int32, plan.MaxUnicastLID+1)}
		for i, pl := range a.Result.LIDs.Ports {
			for l := int(pl.Base); l < int(pl.Base)+pl.Count() && l < len(idx.eps); l++ {
				idx.eps[l] = int32(i) + 1
			}
		}
		s.lids = idx
	}
	if int(lid) >= len(s.lids.eps) || s.lids.eps[lid] == 0 {
		return discovery.PortRef{}, false
	}
	ep := a.Topo.Endpoints()[s.lids.eps[lid]-1]
	return discovery.PortRef{GUID: a.Topo.Nodes[ep.Node].GUID, Port: ep.Port}, true
}

// drift reports whether the fabric holds other LIDs, SM LIDs or
// LinearFDBTops than the plan (a port reset behind the SM's back). With
// lin, when res is the plan in force's (its LIDs, SM LID and
// LinearFDBTop), only the changed nodes can differ.
func drift(fab *discovery.Fabric, topo *topology.Topology, res *pipeline.Result, lin *since) bool {
	smLID := smLIDOf(topo, res)
	eps, switches := topo.Endpoints(), topo.Switches()
	idx := func(k int) int { return k }
	if lin != nil && lin.samePlan(topo, res) {
		eps, switches = lin.endpoints(topo), lin.switches(topo)
		idx = func(k int) int { return int(topo.EndpointIndex(eps[k])) }
	}
	for k, ep := range eps {
		n := fab.Nodes[topo.Nodes[ep.Node].GUID]
		pt := &n.Ports[ep.Port]
		want := res.Realized.LIDs.Ports[idx(k)]
		if pt.Valid && (pt.Info.LID != want.Base || pt.Info.LMC != want.LMC || pt.Info.MasterSMLID != smLID) {
			return true
		}
	}
	for _, node := range switches {
		n := fab.Nodes[topo.Nodes[node].GUID]
		if n.Switch != nil && n.Switch.LinearFDBTop != res.Realized.TopLID {
			return true
		}
	}
	return false
}

// gidPrefixesSet reports whether every endpoint read holds the subnet
// prefix the programmer writes (drift does not look at it). With lin,
// when res is the plan in force's, only the changed nodes can differ.
func gidPrefixesSet(fab *discovery.Fabric, topo *topology.Topology, res *pipeline.Result, lin *since) bool {
	eps := topo.Endpoints()
	if lin != nil && lin.samePlan(topo, res) {
		eps = lin.endpoints(topo)
	}
	for _, ep := range eps {
		if pt := &fab.Nodes[topo.Nodes[ep.Node].GUID].Ports[ep.Port]; pt.Valid && pt.Info.GIDPrefix != program.SubnetPrefix {
			return false
		}
	}
	return true
}

// activating lists the switches with a live port the programmer will arm
// and activate (their PortStateChange is cleared after programming, as a
// heavy sweep clears every switch's).
func activating(fab *discovery.Fabric) []uint64 {
	var out []uint64
	for g, n := range fab.Nodes {
		if n.Info.NodeType != smp.NodeTypeSwitch {
			continue
		}
		if toActivate(n) {
			out = append(out, g)
		}
	}
	return out
}

// programmed returns a copy of fab holding what the programmer wrote for
// res: endpoint LIDs, LMCs, SM LID and GID prefix, LinearFDBTop, and live links
// Active; and the switches and CAs whose ports it activated (their
// snapshot now differs from topo's). fab (as discovered) is left alone:
// the copy shares every node that already held all of it, so a sweep
// after one cable event copies a few nodes, not the fabric.
//
// With lin (fab differs from the clean model of the plan in force only in
// its changed nodes), when res numbers endpoints, the SM's LID and
// LinearFDBTop as that plan did, only the changed nodes and the endpoints
// whose LIDs res changed are looked at: every other node holds what res
// asks already.
func programmed(fab *discovery.Fabric, topo *topology.Topology, res *pipeline.Result, lin *since) (*discovery.Fabric, []uint64) {
	out := fab.ShallowCopy()
	own := func(g uint64) *discovery.Node {
		n := out.Nodes[g]
		if n == fab.Nodes[g] {
			n = n.Clone()
			out.Nodes[g] = n
		}
		return n
	}
	smLID := smLIDOf(topo, res)
	rz := res.Realized
	eps := topo.Endpoints()
	endpoint := func(i int) {
		ep := eps[i]
		g := topo.Nodes[ep.Node].GUID
		n := out.Nodes[g]
		pt := &n.Ports[ep.Port]
		want := rz.LIDs.Ports[i]
		if !pt.Valid || pt.Info.LID == want.Base && pt.Info.LMC == want.LMC && pt.Info.MasterSMLID == smLID && pt.Info.GIDPrefix == program.SubnetPrefix {
			return // nothing to write (nor, for port 0, to mirror)
		}
		n = own(g)
		pt = &n.Ports[ep.Port]
		old := pt.Info
		set := func(pi *smp.PortInfo) {
			pi.LID, pi.LMC, pi.MasterSMLID, pi.GIDPrefix = want.Base, want.LMC, smLID, program.SubnetPrefix
		}
		set(&pt.Info)
		if ep.Port == 0 {
			// A switch's other ports report port 0's addressing where the
			// device mirrors it (the simulator and ibsim do).
			for p := 1; p < len(n.Ports); p++ {
				q := &n.Ports[p].Info
				if n.Ports[p].Valid && q.LID == old.LID && q.LMC == old.LMC && q.MasterSMLID == old.MasterSMLID {
					set(q)
				}
			}
		}
	}
	var activated []uint64
	node := func(g uint64, n *discovery.Node) {
		if n.Switch != nil && n.Switch.LinearFDBTop != rz.TopLID {
			n = own(g)
			n.Switch.LinearFDBTop = rz.TopLID
		}
		if !toActivate(n) {
			return
		}
		n = own(g)
		activated = append(activated, g)
		for p := 1; p < len(n.Ports); p++ {
			if pt := &n.Ports[p]; activates(pt) {
				pt.Info.PortState = smp.PortStateActive
			}
		}
	}
	if lin != nil && lin.sameIndex(topo) && smLIDOf(lin.cur.Topo, lin.cur.Result) == smLID && lin.cur.Result.Realized.TopLID == rz.TopLID {
		was := lin.cur.Result.Realized.LIDs.Ports
		for i := range eps {
			if was[i] != rz.LIDs.Ports[i] {
				endpoint(i)
			}
		}
		for _, ep := range lin.endpoints(topo) {
			endpoint(int(topo.EndpointIndex(ep)))
		}
		for _, g := range lin.changed {
			if n := out.Nodes[g]; n != nil {
				node(g, n)
			}
		}
		return out, activated
	}
	for i := range eps {
		endpoint(i)
	}
	for g, n := range out.Nodes {
		node(g, n)
	}
	return out, activated
}

// activates reports whether pt is a live link's port the programmer arms
// and activates (up, not yet Active).
func activates(pt *discovery.Port) bool {
	return pt.Valid && pt.PeerGUID != 0 && pt.Info.PortState >= smp.PortStateInit && pt.Info.PortState < smp.PortStateActive
}

// toActivate reports whether n has such a port.
func toActivate(n *discovery.Node) bool {
	for p := 1; p < len(n.Ports); p++ {
		if activates(&n.Ports[p]) {
			return true
		}
	}
	return false
}
