package analysis

import (
	"context"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"

	"github.com/ibsm/ibsm/sdk/route"
)

// MinimalStats compares every reachable CA→CA route with the shortest path
// the fabric offers: switches traversed (as Report.Hops counts them)
// against one more than the switch-graph distance over live links. Engines
// that detour to stay deadlock-free on few VLs show it here.
type MinimalStats struct {
	Pairs   int64 `json:"pairs"`   // reachable CA→CA pairs (the DLID each source selects)
	Minimal int64 `json:"minimal"` // of which on a shortest path
	// ExtraHops sums, over the pairs, the switches beyond the shortest path.
	ExtraHops int64 `json:"extra_hops"`
	MaxExtra  int   `json:"max_extra"`
}

// Percent is the share of minimal pairs in percent (100 with no pairs).
func (m MinimalStats) Percent() float64 {
	if m.Pairs == 0 {
		return 100
	}
	return 100 * float64(m.Minimal) / float64(m.Pairs)
}

// Minimal measures the realised tables of r: per destination CA one
// breadth-first search over the switches and one memoised walk of the LFTs
// per DLID its sources use, O(CAs·(switches+links)) in all, spread over
// GOMAXPROCS goroutines.
func Minimal(r *plan.Realized) MinimalStats {
	t := r.Topo
	eps := t.Endpoints()
	var cas []int32
	for i, e := range eps {
		if t.Nodes[e.Node].Type != topology.Switch {
			cas = append(cas, int32(i))
		}
	}
	over := map[[2]int32]uint8{}
	for _, o := range r.LIDs.Overrides {
		over[[2]int32{o.Src, o.Dst}] = o.Offset
	}
	parts := make([]MinimalStats, route.Workers(len(cas)))
	walkers := make([]*minWalker, len(parts))
	_, _ = route.Each(context.Background(), len(cas), len(parts), func(w, i int) error {
		if walkers[w] == nil {
			walkers[w] = newMinWalker(r)
		}
		walkers[w].dest(cas, cas[i], over, &parts[w])
		return nil
	})
	var out MinimalStats
	for _, p := range parts {
		out.Pairs += p.Pairs
		out.Minimal += p.Minimal
		out.ExtraHops += p.ExtraHops
		out.MaxExtra = max(out.MaxExtra, p.MaxExtra)
	}
	return out
}

// minWalker owns one goroutine's scratch space.
type minWalker struct {
	r     *plan.Realized
	dist  []int32 // switch-graph distance to the destination's switch, -1 unknown
	hops  []int32 // switches traversed toward the current DLID, 0 unknown, -1 no arrival
	queue []int32
	path  []int32
}

func newMinWalker(r *plan.Realized) *minWalker {
	n := len(r.Topo.Switches())
	return &minWalker{r: r, dist: make([]int32, n), hops: make([]int32, n)}
}

// home is the switch index endpoint e hangs off, -1 if none.
func home(t *topology.Topology, e topology.PortRef) int32 {
	if s := t.SwitchIndex(e.Node); s >= 0 {
		return s
	}
	if !t.IsLinkUp(e) {
		return -1
	}
	return t.SwitchIndex(t.Port(e).Peer.Node)
}

func (m *minWalker) dest(cas []int32, d int32, over map[[2]int32]uint8, st *MinimalStats) {
	t := m.r.Topo
	eps := t.Endpoints()
	h := home(t, eps[d])
	if h < 0 {
		return
	}
	m.bfs(h)
	port := m.r.LIDs.Ports[d]
	for k := 0; k < port.Count(); k++ {
		lid := port.Base + uint16(k)
		clear(m.hops)
		for _, s := range cas {
			if s == d {
				continue
			}
			dlid := m.r.LIDs.DLID(s, d)
			if off, ok := over[[2]int32{s, d}]; ok {
				dlid = port.Base + uint16(off)
			}
			if dlid != lid {
				continue
			}
			src := home(t, eps[s])
			if src < 0 || m.dist[src] < 0 {
				continue
			}
			got := m.walk(src, lid, eps[d])
			if got < 0 {
				continue
			}
			extra := int(got) - int(m.dist[src]) - 1
			st.Pairs++
			if extra <= 0 {
				st.Minimal++
				continue
			}
			st.ExtraHops += int64(extra)
			st.MaxExtra = max(st.MaxExtra, extra)
		}
	}
}

// bfs fills dist from switch h over live switch-to-switch links.
func (m *minWalker) bfs(h int32) {
	t := m.r.Topo
	sw := t.Switches()
	for i := range m.dist {
		m.dist[i] = -1
	}
	m.dist[h] = 0
	m.queue = append(m.queue[:0], h)
	for i := 0; i < len(m.queue); i++ {
		s := m.queue[i]
		n := sw[s]
		for p := 1; p < len(t.Nodes[n].Ports); p++ {
			r := topology.PortRef{Node: n, Port: uint8(p)}
			if !t.IsLinkUp(r) {
				continue
			}
			q := t.SwitchIndex(t.Port(r).Peer.Node)
			if q >= 0 && m.dist[q] < 0 {
				m.dist[q] = m.dist[s] + 1
				m.queue = append(m.queue, q)
			}
		}
	}
}

// walk follows the LFTs from switch s toward lid owned by endpoint dst
// and returns the switches traversed to delivery, -1 when the walk does
// not arrive; results are memoised along the way.
func (m *minWalker) walk(s int32, lid uint16, dst topology.PortRef) int32 {
	t := m.r.Topo
	sw := t.Switches()
	m.path = m.path[:0]
	res := int32(-1)
	for {
		if v := m.hops[s]; v != 0 {
			if v > 0 {
				res = v
			}
			break
		}
		m.hops[s] = -1 // on the current walk: meeting it again is a loop
		m.path = append(m.path, s)
		if len(m.path) > len(sw) {
			break
		}
		out := m.r.LFT[s][lid]
		n := sw[s]
		if out == 0 {
			if (topology.PortRef{Node: n}) == dst {
				res = 0
			}
			break
		}
		if int(out) >= len(t.Nodes[n].Ports) {
			break
		}
		r := topology.PortRef{Node: n, Port: out}
		if !t.IsLinkUp(r) {
			break
		}
		peer := t.Port(r).Peer
		q := t.SwitchIndex(peer.Node)
		if q < 0 {
			if peer == dst {
				res = 0
			}
			break
		}
		s = q
	}
	// Unwind: the last switch on the path is res+1 from delivery.
	for i := len(m.path) - 1; i >= 0; i-- {
		if res >= 0 {
			res++
			m.hops[m.path[i]] = res
		} else {
			m.hops[m.path[i]] = -1
		}
	}
	if len(m.path) == 0 {
		return res
	}
	return m.hops[m.path[0]]
}
