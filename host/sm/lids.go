package sm

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// previousLIDs is what the LID assigner is asked to keep: the LIDs persisted
// in guid2lid, then those of the plan in force (what this SM programmed: a
// LID changed behind its back is repaired, not adopted) and, for ports
// neither lists (a lost or new state directory, a port another SM
// numbered), the LID the port already holds in the fabric, as discovery
// read it from PortInfo. Renumbering a live port
// breaks every connection to it, so a fabric LID is kept unless it is no
// valid base for the port (zero, out of range, misaligned for the LMC) or
// some other port claims a LID of its range.
//
// On the first plan of a term that follows another SM's (takeover,
// handover: election.adopting), the fabric is the truth and this SM's
// memory may be stale: every valid, unclaimed fabric LID is kept first,
// and guid2lid only fills in ports without one, where it collides with
// no kept LID (as OpenSM drops its guid2lid when it leaves standby).
//
// The map may be shared: do not change it.
func (s *SM) previousLIDs(fab *discovery.Fabric, topo *topology.Topology, lmc uint8) (map[uint64]uint16, error) {
	if prev := s.previousKept(topo); prev != nil {
		if s.crossCheck {
			all, err := s.previousAll(fab, topo, lmc)
			if err != nil || !maps.Equal(prev, all) {
				return nil, fmt.Errorf("cross-check: previous LIDs kept (%d) differ from those computed whole (%d, %v)", len(prev), len(all), err)
			}
		}
		return prev, nil
	}
	return s.previousAll(fab, topo, lmc)
}

// previousAll is previousLIDs computed whole.
func (s *SM) previousAll(fab *discovery.Fabric, topo *topology.Topology, lmc uint8) (map[uint64]uint16, error) {
	remembered := map[uint64]uint16{}
	spans := map[uint64]int{} // guid2lid ranges, for the adopting collision check
	if s.Opts.LIDFile != "" {
		m, err := s.lidFile.load(s.Opts.LIDFile)
		if err != nil {
			return nil, fmt.Errorf("LID file: %w (fix or remove it; ports without an entry keep the LID the fabric shows, or get new LIDs)", err)
		}
		for g, r := range m {
			remembered[g] = r.Min
			if r.Max >= r.Min {
				spans[g] = int(r.Max-r.Min) + 1
			}
		}
	}
	if a := s.Applied(); a != nil {
		for i, ep := range a.Topo.Endpoints() {
			g := a.Topo.PortGUID(ep)
			if _, ok := remembered[g]; !ok && g != 0 {
				remembered[g] = a.Result.LIDs.Ports[i].Base
				spans[g] = a.Result.LIDs.Ports[i].Count()
			}
		}
	}
	if fab == nil {
		return remembered, nil
	}
	adopt := s.elect.adopting()
	type cand struct {
		guid uint64
		base uint16
		n    int
	}
	span := func(ep topology.PortRef) int {
		if topo.Nodes[ep.Node].Type == topology.Switch {
			return 1 // switch port 0 keeps one LID unless its assigner says otherwise
		}
		return 1 << lmc
	}
	claims := make([]uint8, plan.MaxUnicastLID+1)
	claim := func(base uint16, n int, by uint8) {
		for l := int(base); l < int(base)+n && l <= plan.MaxUnicastLID; l++ {
			claims[l] = min(claims[l]+by, 2)
		}
	}
	prev := map[uint64]uint16{}
	if !adopt {
		prev = remembered
	}
	var cands []cand
	for _, ep := range topo.Endpoints() {
		guid := topo.PortGUID(ep)
		if lid, ok := prev[guid]; ok {
			claim(lid, span(ep), 2) // guid2lid wins every collision
			continue
		}
		node := fab.Nodes[topo.Nodes[ep.Node].GUID]
		if node == nil || int(ep.Port) >= len(node.Ports) || !node.Ports[ep.Port].Valid {
			continue
		}
		lid, n := node.Ports[ep.Port].Info.LID, span(ep)
		if lid == 0 || int(lid)+n-1 > plan.MaxUnicastLID || int(lid)&(n-1) != 0 {
			continue
		}
		cands = append(cands, cand{guid, lid, n})
		claim(lid, n, 1)
	}
	kept := 0
	for _, c := range cands {
		free := true
		for l := int(c.base); l < int(c.base)+c.n; l++ {
			free = free && claims[l] == 1
		}
		if free {
			prev[c.guid] = c.base
			kept++
		}
	}
	if adopt {
		// What this SM remembers fills in the rest where it collides with
		// nothing the fabric holds.
		taken := make([]bool, plan.MaxUnicastLID+1)
		for _, c := range cands {
			if prev[c.guid] == c.base {
				for l := int(c.base); l < int(c.base)+c.n && l <= plan.MaxUnicastLID; l++ {
					taken[l] = true
				}
			}
		}
		dropped := 0
		for g, lid := range remembered {
			if _, ok := prev[g]; ok {
				continue
			}
			n := max(spans[g], 1)
			free := int(lid)+n-1 <= plan.MaxUnicastLID
			for l := int(lid); free && l < int(lid)+n; l++ {
				free = !taken[l]
			}
			if !free {
				dropped++
				continue
			}
			prev[g] = lid
			for l := int(lid); l < int(lid)+n; l++ {
				taken[l] = true
			}
		}
		s.Log.Info("taking over: keeping the LIDs the fabric holds", "ports", kept, "candidates", len(cands), "remembered_dropped", dropped)
		return prev, nil
	}
	if kept > 0 {
		s.Log.Info("keeping LIDs the fabric already holds for ports guid2lid does not list", "ports", kept, "candidates", len(cands))
	}
	return prev, nil
}

// previousKept is previousLIDs when its answer is the guid2lid file as
// saved for the plan in force, known without a pass over every endpoint
// (nil when not): the file holds exactly that plan's LIDs (lidFile.basesOf:
// then the plan adds nothing to what it remembers), this is no takeover,
// and every endpoint of topo is listed: topo numbers its endpoints as the
// plan in force does and every node whose ports it does not share with
// that plan's snapshot (a cable event's few) has its endpoints in the
// file. No port then keeps a fabric LID the file does not name.
func (s *SM) previousKept(topo *topology.Topology) map[uint64]uint16 {
	a := s.Applied()
	if s.Opts.LIDFile == "" || a == nil || s.elect.adopting() || !slices.Equal(a.Topo.Endpoints(), topo.Endpoints()) {
		return nil
	}
	bases := s.lidFile.basesOf(s.Opts.LIDFile, a.Topo, a.Result.LIDs.Ports)
	if bases == nil {
		return nil
	}
	changed, ok := topo.Unshared(a.Topo)
	if !ok {
		return nil
	}
	for _, i := range changed {
		for _, ep := range topo.NodeEndpoints(i) {
			if _, ok := bases[topo.PortGUID(ep)]; !ok {
				return nil
			}
		}
	}
	return bases
}
