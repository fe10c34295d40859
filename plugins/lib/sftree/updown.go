package sftree

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// upDown holds the switch graph split by rank: up links lead to a smaller
// rank, down links to a larger one, sibling links join equal ranks.
type upDown struct {
	g    *route.Graph
	rank []int32
	up   [][]route.Link
	down [][]route.Link
	sib  [][]route.Link
	// order lists ranked switches by rank, top first, so that a switch's
	// parents come before it.
	order []int32
	// climb groups the ranked switches whose up links lead to the same
	// parents in the same order (a pod's leaves, an aggregation column),
	// in rank order: a climber's closest parents depend on its parents
	// only, so they are found once per group and destination.
	climb []climbGroup
	// upFar[s][i] is the port at the far end of up[s][i], for descents to
	// find a parent's way down without scanning its down links; nil in a
	// repaired copy (without), whose rows scan.
	upFar [][]uint8
}

// climbGroup is a set of switches of one rank with equal parent lists.
type climbGroup struct {
	rep     int32   // a member whose up links are read
	members []int32 // in order
	// ports[i*len(members)+m] is member m's port of its i-th up link.
	ports []uint8
}

func newUpDown(g *route.Graph, tree Tree) (*upDown, error) {
	u := &upDown{g: g, rank: make([]int32, g.N), up: make([][]route.Link, g.N), down: make([][]route.Link, g.N), sib: make([][]route.Link, g.N)}
	ranked := 0
	for s := int32(0); s < int32(g.N); s++ {
		r := tree.Rank(s)
		if r >= 0 {
			ranked++
			u.order = append(u.order, s)
		}
		u.rank[s] = int32(r)
	}
	if ranked == 0 {
		return nil, fmt.Errorf("sftree: the fat tree ranks no switch; check that the fabric is a fat tree (leaves carry the CAs)")
	}
	for s := int32(0); s < int32(g.N); s++ {
		if u.rank[s] < 0 {
			continue
		}
		for _, l := range g.Links(s) {
			switch pr := u.rank[l.Peer]; {
			case pr < 0:
			case pr < u.rank[s]:
				u.up[s] = append(u.up[s], l)
			case pr > u.rank[s]:
				u.down[s] = append(u.down[s], l)
			default:
				u.sib[s] = append(u.sib[s], l)
			}
		}
	}
	sort.SliceStable(u.order, func(i, j int) bool { return u.rank[u.order[i]] < u.rank[u.order[j]] })
	u.groupClimbers()
	t := g.Topo
	u.upFar = make([][]uint8, g.N)
	for s := int32(0); s < int32(g.N); s++ {
		node := t.Switches()[s]
		for _, l := range u.up[s] {
			u.upFar[s] = append(u.upFar[s], t.Port(topology.PortRef{Node: node, Port: l.Port}).Peer.Port)
		}
	}
	return u, nil
}

// groupClimbers fills u.climb from u.order.
func (u *upDown) groupClimbers() {
	type key struct {
		rank    int32
		parents string
	}
	index := map[key]int{}
	var b strings.Builder
	for _, s := range u.order {
		b.Reset()
		for _, l := range u.up[s] {
			b.WriteString(strconv.Itoa(int(l.Peer)))
			b.WriteByte(',')
		}
		k := key{u.rank[s], b.String()}
		i, ok := index[k]
		if !ok {
			i = len(u.climb)
			index[k] = i
			u.climb = append(u.climb, climbGroup{rep: s})
		}
		u.climb[i].members = append(u.climb[i].members, s)
	}
	for gi := range u.climb {
		g := &u.climb[gi]
		m := len(g.members)
		g.ports = make([]uint8, len(u.up[g.rep])*m)
		for mi, s := range g.members {
			for i, l := range u.up[s] {
				g.ports[i*m+mi] = l.Port
			}
		}
	}
}

// scratch is one worker's per-destination working space.
type scratch struct {
	dist  []uint8
	queue []int32
	cand  []uint8
	// repairLocal's marks, valid where equal to stamp: ancestors (dist
	// from the BFS), switches whose walk crossed a dead port, and switches
	// whose distance to the target is known.
	stamp               int32
	ancAt, affAt, dstAt []int32
	aff                 []int32
	kind                []uint8 // walkKind by position in aff, for the reverse walk
	// descents' count of ways down per ancestor and the port of the last.
	downs, downPort []uint8
}

func (u *upDown) newScratch() *scratch {
	n := u.g.N
	return &scratch{dist: make([]uint8, n), queue: make([]int32, 0, n), downs: make([]uint8, n), downPort: make([]uint8, n)}
}

// row fills pl with the up*/down* plane toward switch d: the destination
// uses port 0, each of its ancestors (switches that reach it descending
// only) a down port on a shortest descent, every other switch that can
// climb to an ancestor an up port on a shortest such climb, and all others
// NoPort. Among equal ports the choice rotates with d (D-mod-k style), so
// switch traffic toward different switches spreads over the ports.
func (u *upDown) row(d int32, pl plan.Plane, sc *scratch) error {
	if ok, err := u.descents(d, pl, sc); !ok || err != nil {
		return err
	}
	// Climbers, parents first. Ancestors already hold a port. A group's
	// members share their parents, so their closest parents (positions in
	// the up list) are the same: found once from the representative, with
	// the candidates restarting whenever a closer parent shows.
	for gi := range u.climb {
		g := &u.climb[gi]
		best := route.Unreachable
		c := sc.cand[:0]
		for i, l := range u.up[g.rep] {
			switch dp := sc.dist[l.Peer]; {
			case dp < best:
				best = dp
				c = append(c[:0], uint8(i))
			case dp == best && dp != route.Unreachable:
				c = append(c, uint8(i))
			}
		}
		sc.cand = c
		if best == route.Unreachable {
			continue
		}
		m := len(g.members)
		pick := int(c[int(d)%len(c)])
		ports := g.ports[pick*m : (pick+1)*m]
		for mi, s := range g.members {
			if pl[s] != plan.NoPort {
				continue
			}
			if best >= route.MaxHops {
				return fmt.Errorf("sftree: up*/down* path from switch 0x%016x longer than %d hops", u.g.SwitchGUID(s), route.MaxHops)
			}
			pl[s] = ports[mi]
			sc.dist[s] = best + 1
		}
	}
	return nil
}

// descents starts row d: it resets pl and sc.dist, gives d port 0 and each
// ancestor of d a down port on a shortest descent (rotating with d among
// equal ones), leaving the ancestors' distances in sc.dist. It reports
// false for an unranked d, whose row stays empty.
func (u *upDown) descents(d int32, pl plan.Plane, sc *scratch) (bool, error) {
	ftree.Fill(pl, plan.NoPort)
	ftree.Fill(sc.dist, route.Unreachable)
	if u.rank[d] < 0 {
		return false, nil
	}
	pl[d] = 0
	sc.dist[d] = 0
	// Ancestors by BFS over up links; BFS order is also ascending distance.
	// A parent found at distance D+1 from a child at D has that link as a
	// way down on a shortest descent: counted (saturating), so that the
	// many ancestors with a single way down need not scan their down links.
	q := append(sc.queue[:0], d)
	for h := 0; h < len(q); h++ {
		x := q[h]
		if sc.dist[x] >= route.MaxHops {
			return false, fmt.Errorf("sftree: switch 0x%016x is more than %d levels above another: the ranking is not a tree", u.g.SwitchGUID(x), route.MaxHops)
		}
		next := sc.dist[x] + 1
		for i, l := range u.up[x] {
			p := l.Peer
			if sc.dist[p] == route.Unreachable {
				sc.dist[p] = next
				q = append(q, p)
				sc.downs[p] = 0
			}
			if u.upFar != nil && sc.dist[p] == next {
				sc.downs[p] = min(sc.downs[p]+1, 2)
				sc.downPort[p] = u.upFar[x][i]
			}
		}
	}
	for _, a := range q[1:] {
		if u.upFar != nil && sc.downs[a] == 1 {
			pl[a] = sc.downPort[a] // c below would be just that port
			continue
		}
		want := sc.dist[a] - 1
		c := sc.cand[:0]
		for _, l := range u.down[a] {
			if sc.dist[l.Peer] == want && (pl[l.Peer] != plan.NoPort) {
				c = append(c, l.Port)
			}
		}
		sc.cand = c
		// BFS layering guarantees a child one level closer.
		pl[a] = c[int(d)%len(c)]
	}
	sc.queue = q
	return true, nil
}

// planes computes the up*/down* plane toward every switch, in parallel.
func (u *upDown) planes(ctx context.Context) ([]plan.Plane, error) {
	n := u.g.N
	back := make([]uint8, n*n)
	rows := make([]plan.Plane, n)
	for d := range rows {
		rows[d] = back[d*n : (d+1)*n : (d+1)*n]
	}
	err := ftree.ForEach(ctx, n, func() func(int32) error {
		sc := u.newScratch()
		return func(d int32) error { return u.row(d, rows[d], sc) }
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}
