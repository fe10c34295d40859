// Package nue is a dependency-graph routing in the spirit of Nue (Domke,
// Hoefler and Matsuoka, "Routing on the Dependency Graph: A New Approach to
// Deadlock-Free High-Performance Routing", HPDC 2016), shared by the nue
// routing engine and the nue VL assigner.
//
// The destinations are split over the VL budget's virtual layers (compact
// regions of the switch graph, one per layer). Each layer keeps its channel
// dependency graph (CDG) acyclic at all times: a destination's tree is grown
// by a Dijkstra search from the destination's switch whose every step must
// add a dependency the layer's CDG can take without closing a cycle, under
// channel weights that grow with the routes already placed (balanced like
// sssp), plus a cost per hop and per turn the layer does not hold yet; a
// layer's trees go nearest its escape root first, and a second pass can
// rip each tree up and search it again with all the others in place.
// Every layer's CDG starts with the dependencies of a spanning tree's
// routes (the escape paths; with one layer, two BFS trees are routed and the
// one giving the lower sum of squared channel loads is kept); where the search gets stuck, the stuck switches
// (and the switches their tree paths cross) follow the spanning tree, whose
// turns are always in the CDG. Routes are thus deadlock-free by
// construction for any topology and any budget, 1 VL included, and layer k
// is SL k and VL k.
package nue

import (
	"fmt"
	"sort"

	"github.com/ibsm/ibsm/plugins/lib/paths"
	"github.com/ibsm/ibsm/plugins/lib/vl"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// MaxBudget is the largest VL budget: 8 data VLs, what ibsim and most
// switches offer.
const MaxBudget = 8

// net is the fabric as both searches see it: numbered switch-to-switch
// channels (paths.Fabric) and the dependency ids and acyclic layers of
// plugins/lib/vl over the same switch indices.
type net struct {
	*paths.Fabric
	vf *vl.Fabric
	// comp[s] is the connected component of switch s; compSize its size.
	comp     []int32
	compSize []int32
	// turnBase[s] numbers the turns at switch s: turn (in, out) is
	// turnBase[s] + i*deg(s) + j where Rev[in] and out are s's channels
	// Off[s]+i and Off[s]+j. turns is the number of ids.
	turnBase []int32
	turns    int
	// maxDeg is the largest deg.
	maxDeg int32
}

func newNet(t *topology.Topology) (*net, error) {
	f, err := paths.NewFabric(t)
	if err != nil {
		return nil, err
	}
	// vl.Fabric indexes dependencies and layers from realised tables; an
	// empty table (no LIDs) gives the indexing alone.
	empty := &plan.Realized{Topo: t, LFT: make([][]uint8, f.N), LIDOwner: []int32{0}}
	for s := range empty.LFT {
		empty.LFT[s] = []uint8{plan.NoPort}
	}
	vf, err := vl.NewFabric(empty)
	if err != nil {
		return nil, err
	}
	n := &net{Fabric: f, vf: vf, comp: make([]int32, f.N), turnBase: make([]int32, f.N)}
	for s := int32(0); s < int32(f.N); s++ {
		n.turnBase[s] = int32(n.turns)
		n.turns += int(n.deg(s) * n.deg(s))
		n.maxDeg = max(n.maxDeg, n.deg(s))
	}
	for s := range n.comp {
		n.comp[s] = -1
	}
	var queue []int32
	for s := int32(0); s < int32(f.N); s++ {
		if n.comp[s] >= 0 {
			continue
		}
		id := int32(len(n.compSize))
		n.comp[s] = id
		queue = append(queue[:0], s)
		for i := 0; i < len(queue); i++ {
			x := queue[i]
			for c := f.Off[x]; c < f.Off[x+1]; c++ {
				if y := f.Peer[c]; n.comp[y] < 0 {
					n.comp[y] = id
					queue = append(queue, y)
				}
			}
		}
		n.compSize = append(n.compSize, int32(len(queue)))
	}
	return n, nil
}

// deg is the number of channels leaving switch s.
func (n *net) deg(s int32) int32 { return n.Off[s+1] - n.Off[s] }

// turn is the id of the dependency of traffic arriving on channel in and
// leaving on channel out (out leaves the switch in enters).
func (n *net) turn(in, out int32) int32 {
	s := n.Peer[in]
	return n.turnBase[s] + (n.Rev[in]-n.Off[s])*n.deg(s) + (out - n.Off[s])
}

// turnChans is the (in, out) channel pair of turn id t.
func (n *net) turnChans(t int32) (in, out int32) {
	// The last switch whose ids start at or below t (one without
	// channels has none and shares its base with the next).
	s := int32(sort.Search(n.N, func(i int) bool { return n.turnBase[i] > t })) - 1
	off := t - n.turnBase[s]
	d := n.deg(s)
	return n.Rev[n.Off[s]+off/d], n.Off[s] + off%d
}

// Budget resolves a configured budget (0: the default) against the
// fabric: the default is min(8, smallest VLCap); an explicit budget above
// the smallest VLCap is refused, since the host would refuse the plan.
func Budget(configured int, t *topology.Topology) (int, error) {
	capv := t.MinLinkVLs()
	if configured == 0 {
		return max(1, min(MaxBudget, capv)), nil
	}
	if configured < 1 || configured > MaxBudget {
		return 0, fmt.Errorf("vls = %d is out of range 1..%d", configured, MaxBudget)
	}
	if configured > capv {
		return 0, fmt.Errorf("vls = %d but some cabled port carries only %d data VLs (VLCap); set vls to at most %d or leave it unset", configured, capv, capv)
	}
	return configured, nil
}
