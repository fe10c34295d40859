package sftree

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Incremental re-routing after cables go down (issue 16).
//
// Every plane of an sFtree routing is an up*/down* plane with respect to
// the tree's ranks (ftree's CA planes, the rows toward switches where a
// switch has an up*/down* path) except the switches that follow the
// subtree root's own up*/down* plane T to their first U-turn. Removing a
// cable only shrinks the set of switches that have an up*/down* path, so a
// plane whose entries avoid the dead cable stays valid as it is, and in a
// plane that crossed it an entry needs to change only where its next hop
// is gone or lost its path:
//
//   - an ancestor of the destination (a switch that reaches it descending)
//     keeps its down port while the child is still an ancestor, else takes
//     another descending child on a shortest descent;
//   - any other switch keeps its up port while the parent still has a path,
//     else climbs to another parent that has one on a shortest climb, or
//     is left at NoPort if none has (ftree's full route leaves it so too);
//   - in a switch row, a switch without an up*/down* path follows T,
//     repaired the same way, to its U-turn (what combiner.pass gives).
//
// Only the switches whose walk crossed the cable are looked at
// (repairLocal), so a repair costs what the cable carried.
//
// Ties rotate with the destination, as in the full route, so destinations
// moved off one cable spread over the survivors. The rows keep the single
// root's structure — every down-to-up turn on T, all other turns up*/down*
// — which is the paper's deadlock-freedom argument; the tests check the
// CDG of every result anyway.
//
// A cable between the root's pod and a top switch leaves that top switch
// without an up*/down* path to the root (it reaches no leaf of the pod),
// and T no longer reaches it. Moving the root would move every top
// switch's entry toward every switch it reaches only through T (1.9 M
// entries at ft3-56); instead the lost top switch is tied to one of its
// children y that T still reaches: its own entries that followed T go down
// to y (a U-turn there), and the row toward it leads everyone that does not
// climb to it to y, from which the last hop climbs into it (lostRow: why
// neither closes a credit loop). Later repairs keep that child while it
// is cabled and reached, and rebuild the row toward the lost switch. More
// than one switch lost (the root's own uplink: its aggregation switch and
// that switch's top switches; or a second such cable) or a lost switch
// with up links still needs another root: Reroute says so and routes the
// fabric in full.

// End is one end of a cable: a node GUID and port number.
type End struct {
	GUID uint64
	Port uint8
}

// Cable is a link between two ports.
type Cable struct{ A, B End }

// Delta is what changed in the fabric since a State's routing.
type Delta struct {
	Removed, Added []Cable
}

// State is an earlier routing that Reroute can repair: its routes, the
// graph and ranks they were computed on, and the subtree root with its
// plane. A State is immutable; Reroute returns a new one.
type State struct {
	g        *route.Graph
	ud       *upDown
	tree     Tree
	routes   *plan.Routes
	root     int32
	rootTree plan.Plane
	// why is "" when Reroute can repair these routes in place, else the
	// reason it cannot.
	why string
	// lost is the top switch root no longer reaches and the child its
	// routes go through (rootTree leads it there), nil if none.
	lost *lostTop
	// prev is the State this one was rerouted from, kept so that cables
	// coming back up restore its routes: up to maxHistory States, and
	// behind a full route only as far as the first earlier full route, so
	// that at most two full sets of planes are kept (repairs share every
	// plane they did not change).
	prev *State
	// full is set for routes computed by a full route.
	full bool
	// For the full route a fallback makes.
	lmc uint8
	cfg ftree.Config
	opt Options
}

// Routes are the State's routes. They are shared: do not modify them.
func (s *State) Routes() *plan.Routes { return s.routes }

// Root is the subtree root's GUID.
func (s *State) Root() uint64 { return s.g.SwitchGUID(s.root) }

// Delta lists the switch-to-switch cables that went down or came up
// between s's fabric and g, for callers that hold only the two snapshots
// (each cable once; none if the nodes differ, which Reroute refuses).
func (s *State) Delta(g *route.Graph) Delta {
	var d Delta
	if sameNodes(s.g, g) != "" {
		return d
	}
	removed, added := linkDiff(s.g, g)
	d.Removed = cables(s.g, removed)
	d.Added = cables(g, added)
	return d
}

// cables names the cables at ports of g's switches, each once (by its end
// with the smaller GUID and port).
func cables(g *route.Graph, ports []portRef) []Cable {
	var out []Cable
	for _, p := range ports {
		ref := topology.PortRef{Node: g.Topo.Switches()[p.s], Port: p.port}
		peer := g.Topo.Port(ref).Peer
		a, b := End{g.SwitchGUID(p.s), p.port}, End{g.Topo.Nodes[peer.Node].GUID, peer.Port}
		if b.GUID < a.GUID || (b.GUID == a.GUID && b.Port < a.Port) {
			continue // named from its other end
		}
		out = append(out, Cable{a, b})
	}
	return out
}

// How Reroute produced its routes.
const (
	HowUnchanged = "unchanged" // the graph is the one routed
	HowRepaired  = "repaired"  // the planes that crossed dead cables repaired in place
	HowRestored  = "restored"  // the fabric is back to an earlier State's: its routes
	HowFull      = "full"      // routed in full; Fallback says why
)

// RerouteReport says what Reroute did.
type RerouteReport struct {
	How string
	// Fallback is why the routes could not be repaired in place (How ==
	// HowFull), for the log.
	Fallback string
	// Removed and Added count the switch ports whose cable went down or
	// came up (two per switch-to-switch cable).
	Removed, Added int
	// Back is how many States behind the last one the routing restored or
	// repaired is (0: the last one).
	Back int
	// Diff is what changed against the routes Reroute was called on (for
	// HowFull too).
	Diff
	// Full is the full route's report on switch destinations (HowFull).
	Full *Report
	// Time is the wall time of the call.
	Time time.Duration
	// Lost is the top switch (a GUID) the subtree root no longer reaches,
	// routed through its child Via; 0 if the root still reaches every
	// switch.
	Lost, Via uint64
	// rootLost: the fallback is for the subtree root's reach.
	rootLost bool
	// base is the earlier State repaired (Back > 0), nil for the last.
	base *State
}

// nearestRoot chooses the subtree root of a full route that replaces a
// root that lost its reach: among the leaves that reach every switch of g
// on up*/down* paths (Algorithm 1's condition), the one whose up*/down*
// plane differs from the old root's in the fewest entries, in Algorithm
// 1's order on ties and the SM's leaf last. Every switch row follows the
// root's plane where it has no up*/down* path, so this keeps most of those
// entries (on ft3 a leaf in the same position of another pod keeps the
// aggregation switches' climbs); Algorithm 1's first leaf would move them.
// 0 if no leaf qualifies (Route then does what it can).
func (s *State) nearestRoot(ctx context.Context, g *route.Graph) (uint64, error) {
	ud, err := newUpDown(g, s.tree)
	if err != nil {
		return 0, err
	}
	leaves := s.tree.Leaves()
	diff := make([]int, len(leaves))
	err = route.ForEach(ctx, len(leaves), func() func(int32) error {
		sc := ud.newScratch()
		pl := make(plan.Plane, g.N)
		return func(k int32) error {
			if err := ud.row(leaves[k], pl, sc); err != nil {
				return err
			}
			n := 0
			for _, x := range ud.order {
				if pl[x] == plan.NoPort {
					n = -1
					break
				}
				if pl[x] != s.rootTree[x] {
					n++
				}
			}
			diff[k] = n
			return nil
		}
	})
	if err != nil {
		return 0, err
	}
	sm := smSwitch(g.Topo)
	best := -1
	for k, n := range diff {
		switch {
		case n < 0:
		case best < 0, leaves[best] == sm && leaves[k] != sm, n < diff[best] && leaves[k] != sm:
			best = k
		}
	}
	if best < 0 {
		return 0, nil
	}
	return g.SwitchGUID(leaves[best]), nil
}

// Reroute returns routes for g, the fabric s was routed on with the cables
// of delta gone down or come back up, changing as little as it must. It
// repairs in place when only cables between switches went down and the
// subtree root still reaches every switch on an up*/down* path; restores
// an earlier State's routes when the fabric is back to that State's;
// and otherwise routes g in full (RouteFatTree), naming the reason in
// RerouteReport.Fallback. delta is checked against g: a delta that does
// not match what changed is a fallback too.
func (s *State) Reroute(ctx context.Context, g *route.Graph, delta Delta) (*State, *RerouteReport, error) {
	start := time.Now()
	rep := &RerouteReport{}
	next, err := s.reroute(ctx, g, delta, rep)
	if err != nil {
		return nil, nil, err
	}
	if next == nil {
		// The routing kept behind the full one is the one whose fabric g
		// lacks cables of only, if one was tried (the host's plan cache
		// may serve those cables' return without a call): a later change
		// repairs it, where the routing Reroute was called on lacks them.
		from := s
		if rep.base != nil {
			from = rep.base
		}
		opt := s.opt
		if rep.rootLost && opt.Root == 0 {
			if opt.Root, err = from.nearestRoot(ctx, g); err != nil {
				return nil, nil, err
			}
		}
		res, err := RouteFatTree(ctx, g.Topo, s.lmc, s.cfg, opt)
		if err != nil && opt.Root != s.opt.Root {
			// The new tree may rank the chosen leaf otherwise: Algorithm 1.
			opt = s.opt
			res, err = RouteFatTree(ctx, g.Topo, s.lmc, s.cfg, opt)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("sftree: full route after %s: %w", rep.Fallback, err)
		}
		next = res.State
		next.opt = s.opt // the root chosen here is not a configured one
		if opt.Root != s.opt.Root {
			res.Switches.RootHow = "the leaf reaching every switch whose plane is nearest the lost root's (incremental re-route)"
		}
		next.prev = from.trimmed(maxHistory-1, true)
		rep.How, rep.Full = HowFull, res.Switches
		rep.Diff = diffRoutes(g, s.routes, next.routes)
	}
	rep.Time = time.Since(start)
	return next, rep, nil
}

// maxHistory bounds the States a repaired State keeps behind it.
const maxHistory = 8

// trimmed is s with at most n States behind it, none behind the first full
// route if toFull (copies: States are immutable).
func (s *State) trimmed(n int, toFull bool) *State {
	if s == nil {
		return nil
	}
	c := *s
	c.prev = nil
	if n > 0 && !(toFull && s.full) {
		c.prev = s.prev.trimmed(n-1, toFull)
	}
	return &c
}

// reroute is Reroute without the fallback: nil with rep.Fallback set when
// a full route is needed.
func (s *State) reroute(ctx context.Context, g *route.Graph, delta Delta, rep *RerouteReport) (*State, error) {
	if why := sameNodes(s.g, g); why != "" {
		rep.Fallback = why
		return nil, nil
	}
	removed, added := linkDiff(s.g, g)
	rep.Removed, rep.Added = len(removed), len(added)
	if why := delta.matches(g, removed, added); why != "" {
		rep.Fallback = why
		return nil, nil
	}
	switch {
	case len(removed) == 0 && len(added) == 0:
		rep.How = HowUnchanged
		return s, nil
	case len(added) == 0:
		return s.repair(ctx, g, removed, rep)
	}
	// Cables came up: an earlier routing of this very fabric is restored;
	// else one whose fabric g lacks cables of only (the host may have served
	// the cables' return from its plan cache without asking) is repaired.
	back := 0
	for p := s.prev; p != nil; p = p.prev {
		back++
		if sameLinks(p.g, g) {
			r := *p
			rep.How, rep.Back = HowRestored, back
			rep.Diff = diffRoutes(g, s.routes, r.routes)
			r.g = g
			return &r, nil
		}
	}
	back = 0
	for p := s.prev; p != nil; p = p.prev {
		back++
		if sameNodes(p.g, g) != "" {
			continue
		}
		if r, a := linkDiff(p.g, g); len(a) == 0 {
			rep.Back, rep.base = back, p
			next, err := p.repair(ctx, g, r, rep)
			if next != nil {
				// What changed is counted against the routes in force.
				rep.Diff = diffRoutes(g, s.routes, next.routes)
			}
			return next, err
		}
	}
	rep.Fallback = fmt.Sprintf("%d switch ports came up that no kept routing had up; a full route uses them", len(added))
	return nil, nil
}

// repair is reroute for a fabric that lacks the removed ports' cables of
// s's and nothing else.
func (s *State) repair(ctx context.Context, g *route.Graph, removed []portRef, rep *RerouteReport) (*State, error) {
	if s.why != "" {
		rep.Fallback = s.why
		return nil, nil
	}
	ud := s.ud.without(g, removed)
	// The root's own plane first: every switch must still reach the root.
	sc := ud.newScratch()
	T := slices.Clone(s.rootTree)
	if s.lost != nil {
		T[s.lost.lam] = plan.NoPort // T proper: it still does not reach lam
	}
	ud.repairLocal(T, s.root, int(s.root), removed, nil, nil, nil, sc)
	isLost := make([]bool, g.N)
	var lost []int32
	for _, x := range ud.order {
		if T[x] == plan.NoPort {
			isLost[x] = true
			lost = append(lost, x)
		}
	}
	// A top switch the root lost goes through one of its children that
	// the root still reaches (see lostTop).
	var lt *lostTop
	lam := int32(-1)
	if len(lost) > 0 {
		var why string
		if lt, why = ud.lostTop(T, lost, s.lost); why != "" {
			rep.Fallback = fmt.Sprintf("subtree root 0x%016x no longer reaches %d switches (0x%016x first) on an up*/down* path, %s; another root is needed", g.SwitchGUID(s.root), len(lost), g.SwitchGUID(lost[0]), why)
			rep.rootLost = true
			return nil, nil
		}
		lam = lt.lam
		T[lam] = ud.portTo(lam, lt.y)
		rep.Lost, rep.Via = g.SwitchGUID(lam), g.SwitchGUID(lt.y)
	}
	var movedT []int32 // switches whose entry in T changed
	for x := range T {
		if T[x] != s.rootTree[x] {
			movedT = append(movedT, int32(x))
		}
	}

	eps := g.Topo.Endpoints()
	isSwitch := make([]int32, len(eps)) // switch index + 1 of a port-0 endpoint
	for d := int32(0); d < int32(g.N); d++ {
		isSwitch[swEndpoint(g, d)] = d + 1
	}
	// A plane needs repair if it crosses a dead cable, or (a switch row)
	// follows T where T moved.
	needs := func(e int32, pl plan.Plane) bool {
		for _, p := range removed {
			if pl[p.s] == p.port {
				return true
			}
		}
		if isSwitch[e] == 0 {
			return false
		}
		if isLost[isSwitch[e]-1] {
			return true
		}
		for _, x := range movedT {
			if pl[x] == s.rootTree[x] {
				return true
			}
		}
		return false
	}
	out := &plan.Routes{Planes: slices.Clone(s.routes.Planes)}
	var todo []int32
	for e := range out.Planes {
		for _, pl := range out.Planes[e].Planes {
			if needs(int32(e), pl) {
				todo = append(todo, int32(e))
				break
			}
		}
	}
	// Copy on write: the previous routes stay as they were.
	for _, e := range todo {
		dp := slices.Clone(out.Planes[e].Planes)
		for k := range dp {
			dp[k] = slices.Clone(dp[k])
		}
		out.Planes[e] = plan.DestPlanes{Planes: dp}
	}
	var unrouted atomic.Int64
	var example atomic.Value
	err := route.ForEach(ctx, len(todo), func() func(int32) error {
		sc := ud.newScratch()
		return func(i int32) error {
			e := todo[i]
			if d := isSwitch[e] - 1; d >= 0 {
				if ud.rank[d] < 0 {
					return nil
				}
				if d == s.root {
					copy(out.Planes[e].Planes[0], T)
					return nil
				}
				if d == lam {
					if err := ud.lostRow(out.Planes[e].Planes[0], lam, lt.y, T, sc); err != nil {
						return err
					}
					return nil
				}
				if n := ud.repairLocal(out.Planes[e].Planes[0], d, int(d), removed, T, s.rootTree, movedT, sc); n > 0 {
					unrouted.Add(int64(n))
					example.CompareAndSwap(nil, fmt.Sprintf("switch 0x%016x", g.SwitchGUID(d)))
				}
				return nil
			}
			a := g.Attachment(e)
			if a.Switch < 0 || ud.rank[a.Switch] < 0 {
				return nil
			}
			for k, pl := range out.Planes[e].Planes {
				ud.repairLocal(pl, a.Switch, int(e)+k, removed, nil, nil, nil, sc)
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	if n := unrouted.Load(); n > 0 {
		rep.Fallback = fmt.Sprintf("%d switch pairs have no route through subtree root 0x%016x (toward %v and others); a full route adds roots", n, g.SwitchGUID(s.root), example.Load())
		return nil, nil
	}
	rep.How = HowRepaired
	rep.Diff = diffRoutes(g, s.routes, out)
	next := &State{g: g, ud: ud, tree: s.tree, routes: out, root: s.root, rootTree: T, lost: lt, prev: s.trimmed(maxHistory-1, false), lmc: s.lmc, cfg: s.cfg, opt: s.opt}
	return next, nil
}

// lostTop is a top switch lam the subtree root no longer reaches and the
// child y its routes go through.
type lostTop struct{ lam, y int32 }

// lostTop checks that the switches lost (the root's repaired plane T
// reaches them on no up*/down* path) are one top switch (no up or sibling
// links), and names the child its routes go through: was's if was names
// the same switch and its child is still cabled and reached by T, else one
// T reaches (rotating with the switch), never an ancestor of the root
// (else the switch would reach the root). Else it says why not.
func (u *upDown) lostTop(T plan.Plane, lost []int32, was *lostTop) (*lostTop, string) {
	if len(lost) > 1 {
		return nil, fmt.Sprintf("more than one switch lost (%d)", len(lost))
	}
	lam := lost[0]
	if len(u.up[lam]) > 0 || len(u.sib[lam]) > 0 {
		return nil, "not a top switch"
	}
	var c []int32
	for _, l := range u.down[lam] {
		if T[l.Peer] == plan.NoPort {
			continue
		}
		if was != nil && was.lam == lam && was.y == l.Peer {
			return was, ""
		}
		c = append(c, l.Peer)
	}
	if len(c) == 0 {
		return nil, "none of its children reaches the root"
	}
	return &lostTop{lam, c[int(lam)%len(c)]}, ""
}

// portTo is the port of a link from s to t.
func (u *upDown) portTo(s, t int32) uint8 {
	for _, l := range u.g.Links(s) {
		if l.Peer == t {
			return l.Port
		}
	}
	return plan.NoPort
}

// lostRow fills pl, the switch row toward a top switch lam that the
// subtree root no longer reaches, through lam's child y (lostTop): y
// forwards up to lam; y's ancestors descend toward y on a shortest
// descent; every other switch climbs on a shortest climb to lam itself or
// to an ancestor of y; the rest follow T (which leads lam to y too) to
// their U-turn.
//
// lam's own routes, where it has no up*/down* path, go down to y and on
// from there (T), a U-turn at y; the row toward lam has its last turn at
// y too, down from an ancestor and up into lam. Neither adds a credit
// loop: lam's turn at y is entered over lam->y, which only traffic
// climbing into lam from another child feeds, and that climbs from its
// own source (its U-turn could only be at y, and lam->y cannot follow
// y->lam); the U-turn into lam leaves over y->lam, after which traffic
// only descends from lam into other children's subtrees, where no U-turn
// leads up again (the root's U-turns are below the dead cable, out of
// lam's reach, and y's need lam->y). Every other U-turn stays on the
// root's plane.
func (u *upDown) lostRow(pl plan.Plane, lam, y int32, T plan.Plane, sc *scratch) error {
	if ok, err := u.descents(y, pl, sc); !ok || err != nil {
		return err
	}
	pl[lam], sc.dist[lam] = 0, 0
	pl[y], sc.dist[y] = u.portTo(y, lam), 1
	for _, s := range u.order {
		if pl[s] != plan.NoPort {
			continue
		}
		best, c := closestUp(u.up[s], func(p int32) uint8 { return sc.dist[p] }, sc.cand)
		sc.cand = c
		if best == route.Unreachable {
			continue
		}
		if best >= route.MaxHops {
			return fmt.Errorf("sftree: path from switch 0x%016x longer than %d hops", u.g.SwitchGUID(s), route.MaxHops)
		}
		pl[s], sc.dist[s] = c[int(lam)%len(c)], best+1
	}
	for _, s := range u.order {
		if pl[s] == plan.NoPort {
			pl[s] = T[s]
		}
	}
	return nil
}

// without is u on g, the same fabric with the removed ports' cables gone:
// only their switches' link lists are rebuilt. Its climb groups are left
// out (they are row's, which a repaired State does not call).
func (u *upDown) without(g *route.Graph, removed []portRef) *upDown {
	n := &upDown{g: g, rank: u.rank, order: u.order, up: slices.Clone(u.up), down: slices.Clone(u.down), sib: slices.Clone(u.sib)}
	gone := func(s int32, p uint8) bool { return slices.Contains(removed, portRef{s, p}) }
	for _, p := range removed {
		for _, ls := range [][][]route.Link{n.up, n.down, n.sib} {
			ls[p.s] = slices.DeleteFunc(slices.Clone(ls[p.s]), func(l route.Link) bool { return gone(p.s, l.Port) })
		}
	}
	return n
}

// repairLocal repairs one plane toward target after the cables of dead
// went down, touching only the switches whose walk crossed a dead port or,
// in a switch row (tree is the root's repaired plane T', oldTree T), a
// switch of moved (where T' differs from T) on T: every other switch keeps
// a walk that is still there, so the cost is that of the walks that
// crossed the cable, not of the fabric. Those switches get, in rank
// order, what the rules above give them: an up*/down* entry where they
// still have an up*/down* path (the old one if it still is one), else T'
// in a switch row and NoPort in a CA plane (or in T itself). Ties rotate
// with rot. It returns how many switches of a switch row it left at NoPort.
func (u *upDown) repairLocal(pl plan.Plane, target int32, rot int, dead []portRef, tree, oldTree plan.Plane, moved []int32, sc *scratch) (unrouted int) {
	if len(sc.ancAt) < len(pl) {
		sc.ancAt, sc.affAt, sc.dstAt = make([]int32, len(pl)), make([]int32, len(pl)), make([]int32, len(pl))
	}
	sc.stamp++
	st := sc.stamp
	aff := sc.aff[:0]
	seed := func(x int32) {
		if sc.affAt[x] != st {
			sc.affAt[x] = st
			aff = append(aff, x)
		}
	}
	for _, p := range dead {
		if pl[p.s] == p.port {
			seed(p.s)
		}
	}
	for _, x := range moved {
		if pl[x] == oldTree[x] && x != target {
			seed(x)
		}
	}
	// Upstream of the seeds, by reverse walk.
	for h := 0; h < len(aff); h++ {
		x := aff[h]
		for _, l := range u.g.Links(x) {
			if y := l.Peer; u.rank[y] >= 0 && pl[y] != plan.NoPort && u.g.PeerSwitch(y, pl[y]) == x {
				seed(y)
			}
		}
	}
	sc.aff = aff
	if len(aff) == 0 {
		return 0
	}
	// Ancestors of target with their descent distances.
	sc.ancAt[target], sc.dist[target] = st, 0
	q := append(sc.queue[:0], target)
	for h := 0; h < len(q); h++ {
		x := q[h]
		for _, l := range u.up[x] {
			if sc.ancAt[l.Peer] != st {
				sc.ancAt[l.Peer], sc.dist[l.Peer] = st, sc.dist[x]+1
				q = append(q, l.Peer)
			}
		}
	}
	sc.queue = q
	slices.SortFunc(aff, func(a, b int32) int { return int(u.rank[a]) - int(u.rank[b]) })
	for _, s := range aff {
		old := pl[s]
		n := u.g.PeerSwitch(s, old)
		c := sc.cand[:0]
		if sc.ancAt[s] == st {
			if n >= 0 && sc.ancAt[n] == st && u.rank[n] > u.rank[s] {
				continue
			}
			for _, l := range u.down[s] {
				if sc.ancAt[l.Peer] == st && sc.dist[l.Peer] == sc.dist[s]-1 {
					c = append(c, l.Port)
				}
			}
		} else {
			var best uint8
			best, c = closestUp(u.up[s], func(p int32) uint8 { return u.distance(pl, p, sc) }, c)
			sc.cand = c
			keep := n >= 0 && u.rank[n] < u.rank[s] && u.distance(pl, n, sc) != route.Unreachable
			sc.dstAt[s], sc.dist[s] = st, min(best, route.MaxHops)+1
			switch {
			case best == route.Unreachable:
				sc.dist[s] = route.Unreachable
				pl[s] = plan.NoPort
				if tree != nil {
					pl[s] = tree[s] // followed to its U-turn, as pass does
					if pl[s] == plan.NoPort {
						unrouted++
					}
				}
				continue
			case keep:
				continue
			}
		}
		sc.cand = c
		pl[s] = c[rot%len(c)]
	}
	return unrouted
}

// closestUp puts into c the ports of the up links ups whose parents are
// nearest by dist, and returns that distance (Unreachable: none is).
func closestUp(ups []route.Link, dist func(int32) uint8, c []uint8) (uint8, []uint8) {
	best := route.Unreachable
	c = c[:0]
	for _, l := range ups {
		switch dp := dist(l.Peer); {
		case dp < best:
			best = dp
			c = append(c[:0], l.Port)
		case dp == best && dp != route.Unreachable:
			c = append(c, l.Port)
		}
	}
	return best, c
}

// distance is x's hop count to the target of repairLocal's plane pl on an
// up*/down* path, Unreachable if x has none: from the BFS for an ancestor,
// as decided for a switch repairLocal handled, else along x's own walk
// (which crosses no dead cable) if that walk is up*/down*.
func (u *upDown) distance(pl plan.Plane, x int32, sc *scratch) uint8 {
	st := sc.stamp
	if sc.ancAt[x] == st || sc.dstAt[x] == st {
		return sc.dist[x]
	}
	d := route.Unreachable
	down := false
	for hops, y := 0, x; hops < route.MaxHops; hops++ {
		if sc.ancAt[y] == st {
			d = uint8(min(hops+int(sc.dist[y]), route.MaxHops))
			break
		}
		if sc.dstAt[y] == st && y != x {
			// A climber, unless unreachable: legal only if still climbing.
			if !down && sc.dist[y] != route.Unreachable {
				d = uint8(min(hops+int(sc.dist[y]), route.MaxHops))
			}
			break
		}
		if pl[y] == plan.NoPort {
			break
		}
		z := u.g.PeerSwitch(y, pl[y])
		if z < 0 || u.rank[z] == u.rank[y] || (down && u.rank[z] < u.rank[y]) {
			break // not an up*/down* walk: x follows the subtree
		}
		down = u.rank[z] > u.rank[y]
		y = z
	}
	sc.dstAt[x], sc.dist[x] = st, d
	return d
}

// portRef is a switch port.
type portRef struct {
	s    int32
	port uint8
}

// sameNodes says why a and b cannot share routes ("" if they can): the
// same switches, endpoints and endpoint attachments, index for index.
func sameNodes(a, b *route.Graph) string {
	if a.N != b.N || len(a.Topo.Endpoints()) != len(b.Topo.Endpoints()) {
		return fmt.Sprintf("the fabric has %d switches and %d endpoints, the routing had %d and %d", b.N, len(b.Topo.Endpoints()), a.N, len(a.Topo.Endpoints()))
	}
	for s := int32(0); s < int32(a.N); s++ {
		if a.SwitchGUID(s) != b.SwitchGUID(s) {
			return fmt.Sprintf("switch %d is 0x%016x, the routing had 0x%016x", s, b.SwitchGUID(s), a.SwitchGUID(s))
		}
	}
	ea, eb := a.Topo.Endpoints(), b.Topo.Endpoints()
	for e := range ea {
		if a.Topo.PortGUID(ea[e]) != b.Topo.PortGUID(eb[e]) || a.Attachment(int32(e)) != b.Attachment(int32(e)) {
			return fmt.Sprintf("endpoint 0x%016x moved or its cable changed", b.Topo.PortGUID(eb[e]))
		}
	}
	return ""
}

// linkDiff lists the switch ports whose switch-to-switch cable is in a and
// not in b (removed) and the reverse (added).
func linkDiff(a, b *route.Graph) (removed, added []portRef) {
	for s := int32(0); s < int32(a.N); s++ {
		la, lb := a.Links(s), b.Links(s)
		i, j := 0, 0
		for i < len(la) || j < len(lb) {
			switch {
			case j == len(lb) || (i < len(la) && la[i].Port < lb[j].Port):
				removed = append(removed, portRef{s, la[i].Port})
				i++
			case i == len(la) || lb[j].Port < la[i].Port:
				added = append(added, portRef{s, lb[j].Port})
				j++
			default:
				if la[i].Peer != lb[j].Peer {
					removed = append(removed, portRef{s, la[i].Port})
					added = append(added, portRef{s, lb[j].Port})
				}
				i++
				j++
			}
		}
	}
	return removed, added
}

// sameLinks reports whether a and b have the same switch-to-switch links.
func sameLinks(a, b *route.Graph) bool {
	if sameNodes(a, b) != "" {
		return false
	}
	r, ad := linkDiff(a, b)
	return len(r) == 0 && len(ad) == 0
}

// matches says why d does not describe removed and added on g ("" if it
// does).
func (d Delta) matches(g *route.Graph, removed, added []portRef) string {
	want := func(cs []Cable) (map[portRef]bool, string) {
		m := map[portRef]bool{}
		for _, c := range cs {
			for _, end := range []End{c.A, c.B} {
				n := g.Topo.NodeByGUID(end.GUID)
				if n < 0 || g.Topo.SwitchIndex(n) < 0 {
					return nil, fmt.Sprintf("cable end 0x%016x/%d is not a switch port: a CA's cable changed", end.GUID, end.Port)
				}
				m[portRef{g.Topo.SwitchIndex(n), end.Port}] = true
			}
		}
		return m, ""
	}
	for _, side := range []struct {
		name   string
		cables []Cable
		seen   []portRef
	}{{"down", d.Removed, removed}, {"up", d.Added, added}} {
		m, why := want(side.cables)
		if why != "" {
			return why
		}
		if len(m) != len(side.seen) {
			return fmt.Sprintf("the delta has %d switch ports going %s, the fabric %d", len(m), side.name, len(side.seen))
		}
		for _, p := range side.seen {
			if !m[p] {
				return fmt.Sprintf("switch 0x%016x port %d went %s but is not in the delta", g.SwitchGUID(p.s), p.port, side.name)
			}
		}
	}
	return ""
}

// Diff is what changed between two routings of one fabric.
type Diff struct {
	// CADests and SwitchDests count the destinations whose planes differ,
	// Entries the (plane, switch) entries that differ.
	CADests, SwitchDests int
	Entries              int64
	// Changed lists those destinations (endpoint indices, ascending): what
	// a plan of the changes only would send and verify.
	Changed []int32
}

// diffRoutes is the Diff from a to b.
func diffRoutes(g *route.Graph, a, b *plan.Routes) Diff {
	var d Diff
	for e := range a.Planes {
		pa, pb := a.Planes[e].Planes, b.Planes[e].Planes
		n := int64(0)
		for k := range min(len(pa), len(pb)) {
			if len(pa[k]) == 0 || &pa[k][0] == &pb[k][0] || bytes.Equal(pa[k], pb[k]) {
				continue // shared or equal
			}
			for x := range pa[k] {
				if pa[k][x] != pb[k][x] {
					n++
				}
			}
		}
		if n == 0 {
			continue
		}
		d.Entries += n
		d.Changed = append(d.Changed, int32(e))
		if g.Attachment(int32(e)).IsSwitch {
			d.SwitchDests++
		} else {
			d.CADests++
		}
	}
	return d
}
