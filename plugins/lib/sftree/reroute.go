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
// A cable between the root's pod and a top switch, or the root's own
// uplink, leaves switches without an up*/down* path to the root, so T no
// longer reaches them: the top switch; the root's aggregation switch, its
// top switches and their other children (84 at ft3-56). Moving the root
// would move every entry that follows T (1.9 M at ft3-56); instead the
// one lost switch lam whose own way to the root died is tied to a child y
// that T still reaches and that reaches every lost switch on an up*/down*
// path (lostSet): lam goes down to y (a U-turn there), the other lost
// switches keep their entries, which lead to lam, and the rows toward a
// lost switch follow, where a switch has no up*/down* path to it, the
// plane toward y (toward) instead of T, turning at y to climb to it. So
// the new down-to-up turns are all at y, as the paper's are at the root;
// its argument does not cover two such switches, so the tests check the
// one-VL CDG of every single cable's repair and of every second cable's
// after a lost switch (ft3-k8, ft3-k12), and the host proves every plan
// before it is sent. Later repairs keep lam's child while it is cabled,
// reached and reaches them all. A second switch whose own way died (the
// root's other uplinks; another cable between its pod and a top switch; a
// cable inside the lost switches on their way to lam) still needs another
// root: Reroute says so and routes the fabric in full.

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
	// lost is the switches root no longer reaches on up*/down* paths, nil
	// if none.
	lost *lostSet
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
	// Lost is the switch (a GUID) whose way to the subtree root died,
	// routed through its child Via, LostSwitches how many switches reach
	// the root through it (Lost included); 0 if the root still reaches
	// every switch.
	Lost, Via    uint64
	LostSwitches int
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
	return s.rerouteOrFull(ctx, g, &delta)
}

// RerouteTo is Reroute for a caller that holds only the two snapshots: the
// delta is whatever differs between s's fabric and g, found once.
func (s *State) RerouteTo(ctx context.Context, g *route.Graph) (*State, *RerouteReport, error) {
	return s.rerouteOrFull(ctx, g, nil)
}

// rerouteOrFull is Reroute; a nil delta is not checked.
func (s *State) rerouteOrFull(ctx context.Context, g *route.Graph, delta *Delta) (*State, *RerouteReport, error) {
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
		if sameNodes(s.g, g) == "" {
			rep.Diff = diffRoutes(g, s.routes, next.routes, nil)
		} else {
			rep.Diff = everyDest(g, next.routes) // another fabric: nothing to compare
		}
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
func (s *State) reroute(ctx context.Context, g *route.Graph, delta *Delta, rep *RerouteReport) (*State, error) {
	if why := sameNodes(s.g, g); why != "" {
		rep.Fallback = why
		return nil, nil
	}
	removed, added := linkDiff(s.g, g)
	rep.Removed, rep.Added = len(removed), len(added)
	if delta != nil {
		if why := delta.matches(g, removed, added); why != "" {
			rep.Fallback = why
			return nil, nil
		}
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
			rep.Diff = diffRoutes(g, s.routes, r.routes, nil)
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
				rep.Diff = diffRoutes(g, s.routes, next.routes, nil)
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
	dead := deadPorts(s.g, removed)
	ud.repairLocal(T, s.root, int(s.root), dead, nil, nil, nil, sc)
	isLost, lost := ud.unreached(T, s.root)
	// Switches the root lost go through a child of the one whose way to
	// the root died (see lostSet).
	var ls *lostSet
	if len(lost) > 0 {
		var why string
		if ls, why = ud.tieLost(T, s.rootTree, s.root, lost, isLost, removed, s.lost, sc); why != "" {
			rep.Fallback = fmt.Sprintf("subtree root 0x%016x no longer reaches %d switches (0x%016x first) on an up*/down* path, %s; another root is needed", g.SwitchGUID(s.root), len(lost), g.SwitchGUID(lost[0]), why)
			rep.rootLost = true
			return nil, nil
		}
		rep.Lost, rep.Via, rep.LostSwitches = g.SwitchGUID(ls.lam), g.SwitchGUID(ls.y), len(lost)
	}
	wasLost := func(d int32) bool { return s.lost != nil && s.lost.in[d] }
	// The trees each switch row follows where it has no up*/down* path,
	// now (T, or ls.tree toward a lost switch) and before, and the
	// switches where they differ.
	type trees struct {
		now, was plan.Plane
		moved    []int32
	}
	var byKind [2][2]trees // [lost now][lost before]
	for now := range 2 {
		for was := range 2 {
			t := &byKind[now][was]
			t.now, t.was = T, s.rootTree
			if now == 1 {
				if ls == nil {
					continue
				}
				t.now = ls.tree
			}
			if was == 1 {
				if s.lost == nil {
					continue
				}
				t.was = s.lost.tree
			}
			for x := range t.now {
				if t.now[x] != t.was[x] {
					t.moved = append(t.moved, int32(x))
				}
			}
		}
	}
	kind := func(d int32) *trees {
		now, was := 0, 0
		if isLost[d] {
			now = 1
		}
		if wasLost(d) {
			was = 1
		}
		return &byKind[now][was]
	}

	eps := g.Topo.Endpoints()
	isSwitch := make([]int32, len(eps)) // switch index + 1 of a port-0 endpoint
	for d := int32(0); d < int32(g.N); d++ {
		isSwitch[swEndpoint(g, d)] = d + 1
	}
	// A plane needs repair if it crosses a dead cable, or (a switch row)
	// follows its tree where that moved.
	needs := func(e int32, pl plan.Plane) bool {
		for _, p := range removed {
			if pl[p.s] == p.port {
				return true
			}
		}
		if isSwitch[e] == 0 {
			return false
		}
		d := isSwitch[e] - 1
		if d == s.root {
			return len(byKind[0][0].moved) > 0
		}
		t := kind(d)
		for _, x := range t.moved {
			if pl[x] == t.was[x] {
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
				t := kind(d)
				if n := ud.repairLocal(out.Planes[e].Planes[0], d, int(d), dead, t.now, t.was, t.moved, sc); n > 0 {
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
				ud.repairLocal(pl, a.Switch, int(e)+k, dead, nil, nil, nil, sc)
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
	rep.Diff = diffRoutes(g, s.routes, out, todo) // only those can differ
	next := &State{g: g, ud: ud, tree: s.tree, routes: out, root: s.root, rootTree: T, lost: ls, prev: s.trimmed(maxHistory-1, false), lmc: s.lmc, cfg: s.cfg, opt: s.opt}
	return next, nil
}

// lostSet is the switches the subtree root no longer reaches on an
// up*/down* path (see the package comment): lam, the one whose own way to
// the root died, and those whose way led through lam; lam goes down to its
// child y, and rows toward any of them follow tree, the plane toward y,
// where they have no up*/down* path.
type lostSet struct {
	lam, y int32
	in     []bool // by switch: lost
	tree   plan.Plane
}

// unreached lists the ranked switches whose walk along T does not reach
// root, in u.order, and marks them by switch.
func (u *upDown) unreached(T plan.Plane, root int32) ([]bool, []int32) {
	const (
		unknown = iota
		reaches
		lost
	)
	state := make([]uint8, len(T))
	state[root] = reaches
	var out []int32
	var walk []int32
	for _, x := range u.order {
		walk = walk[:0]
		y := x
		for state[y] == unknown && len(walk) <= len(T) {
			walk = append(walk, y)
			if T[y] == plan.NoPort {
				break
			}
			n := u.g.PeerSwitch(y, T[y])
			if n < 0 {
				break
			}
			y = n
		}
		v := uint8(lost)
		if state[y] == reaches {
			v = reaches
		}
		for _, w := range walk {
			state[w] = v
		}
	}
	isLost := make([]bool, len(T))
	for _, x := range u.order {
		if state[x] == lost {
			isLost[x] = true
			out = append(out, x)
		}
	}
	return isLost, out
}

// tieLost finds, among the lost switches, the one switch lam whose way to
// the root died (its entry in old, the root's plane before, crossed a dead
// cable, or it was the lost switch there already), checks that every other
// lost switch's old entry still leads to a lost switch (so to lam), and
// chooses lam's child y: was's if was names the same switch and its child
// is still cabled, reached by T and reaches every lost switch on an
// up*/down* path, else the first such child in a rotation with lam. It
// then ties them into T (lam down to y, the others as in old) and builds
// the plane toward y. Else it says why not.
func (u *upDown) tieLost(T, old plan.Plane, root int32, lost []int32, isLost []bool, removed []portRef, was *lostSet, sc *scratch) (*lostSet, string) {
	lam := int32(-1)
	for _, x := range lost {
		if (was != nil && x == was.lam) || slices.Contains(removed, portRef{x, old[x]}) {
			if lam >= 0 {
				return nil, "more than one switch lost its way to the root"
			}
			lam = x
			continue
		}
		if n := u.g.PeerSwitch(x, old[x]); old[x] == plan.NoPort || n < 0 || !isLost[n] {
			return nil, fmt.Sprintf("switch 0x%016x lost its way to the root with its old route intact", u.g.SwitchGUID(x))
		}
	}
	if lam < 0 {
		return nil, "no switch lost its way to the root"
	}
	var c []int32
	for _, l := range u.down[lam] {
		if !isLost[l.Peer] {
			c = append(c, l.Peer)
		}
	}
	if len(c) == 0 {
		return nil, "none of its children reaches the root"
	}
	if was != nil && was.lam == lam {
		if i := slices.Index(c, was.y); i >= 0 {
			c = append([]int32{was.y}, slices.Delete(c, i, i+1)...)
		}
	} else {
		k := int(lam) % len(c)
		c = append(c[k:], c[:k]...)
	}
	for _, y := range c {
		if !u.reachesAll(y, lost, sc) {
			continue
		}
		for _, x := range lost {
			T[x] = old[x]
		}
		T[lam] = u.portTo(lam, y)
		tree, ok := u.toward(T, root, y, sc)
		if !ok {
			return nil, fmt.Sprintf("the root reaches its child 0x%016x on no up*/down* path", u.g.SwitchGUID(y))
		}
		return &lostSet{lam: lam, y: y, in: isLost, tree: tree}, ""
	}
	return nil, "none of its children reaches every lost switch on an up*/down* path"
}

// reachesAll reports whether y reaches every switch of ts on an up*/down*
// path: climbing to an ancestor of it, then descending.
func (u *upDown) reachesAll(y int32, ts []int32, sc *scratch) bool {
	sc.stamp++
	st := sc.stamp
	if len(sc.ancAt) < u.g.N {
		sc.ancAt, sc.affAt, sc.dstAt = make([]int32, u.g.N), make([]int32, u.g.N), make([]int32, u.g.N)
	}
	// Climb from y (ancAt), then descend from all of that (affAt).
	sc.ancAt[y] = st
	q := append(sc.queue[:0], y)
	for h := 0; h < len(q); h++ {
		for _, l := range u.up[q[h]] {
			if sc.ancAt[l.Peer] != st {
				sc.ancAt[l.Peer] = st
				q = append(q, l.Peer)
			}
		}
	}
	for _, x := range q {
		sc.affAt[x] = st
	}
	for h := 0; h < len(q); h++ {
		for _, l := range u.down[q[h]] {
			if sc.affAt[l.Peer] != st {
				sc.affAt[l.Peer] = st
				q = append(q, l.Peer)
			}
		}
	}
	sc.queue = q
	for _, t := range ts {
		if sc.affAt[t] != st {
			return false
		}
	}
	return true
}

// toward is the plane toward y that rows toward the lost switches follow:
// up*/down* where a switch has such a path to y, keeping T's entry wherever
// that is a step of one (y's ancestors descend, T's port if it leads to an
// ancestor one hop nearer, else one of those rotating with y; the others
// climb, T's port if its parent has a path, else a parent on a shortest
// climb), and T (toward the root, which must have a path) elsewhere. y
// itself is NoPort. It reports false if the root has no path to y.
func (u *upDown) toward(T plan.Plane, root, y int32, sc *scratch) (plan.Plane, bool) {
	pl := make(plan.Plane, len(T))
	if ok, err := u.descents(y, pl, sc); !ok || err != nil {
		return nil, false
	}
	for _, a := range sc.queue[1:] {
		if n := u.g.PeerSwitch(a, T[a]); T[a] != plan.NoPort && n >= 0 && sc.dist[n] == sc.dist[a]-1 && u.rank[n] > u.rank[a] {
			pl[a] = T[a]
		}
	}
	for _, s := range u.order {
		if pl[s] != plan.NoPort || s == y {
			continue
		}
		if n := u.g.PeerSwitch(s, T[s]); T[s] != plan.NoPort && n >= 0 && u.rank[n] < u.rank[s] && sc.dist[n] != route.Unreachable {
			pl[s], sc.dist[s] = T[s], min(sc.dist[n], route.MaxHops-1)+1
			continue
		}
		best, c := closestUp(u.up[s], func(p int32) uint8 { return sc.dist[p] }, sc.cand)
		sc.cand = c
		if best != route.Unreachable {
			pl[s], sc.dist[s] = c[int(y)%len(c)], min(best, route.MaxHops-1)+1
		}
	}
	if pl[root] == plan.NoPort && root != y {
		return nil, false
	}
	for _, s := range u.order {
		if pl[s] == plan.NoPort && s != y {
			pl[s] = T[s]
		}
	}
	pl[y] = plan.NoPort
	return pl, true
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
func (u *upDown) repairLocal(pl plan.Plane, target int32, rot int, dead []deadPort, tree, oldTree plan.Plane, moved []int32, sc *scratch) (unrouted int) {
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
	kind := sc.kind[:0]
	for _, p := range dead {
		if pl[p.s] == p.port && sc.affAt[p.s] != st {
			seed(p.s)
			kind = append(kind, u.walkKind(pl, p.s, target, dead))
		}
	}
	// Upstream of the seeds, by reverse walk: only the walks that were
	// up*/down* through them may have lost their path; the others follow
	// a tree that still leads where it did (a switch without a path before
	// has none now).
	for h := 0; h < len(aff); h++ {
		x, k := aff[h], kind[h]
		if k == walkOther {
			continue
		}
		for _, l := range u.g.Links(x) {
			y := l.Peer
			if u.rank[y] < 0 || pl[y] == plan.NoPort || sc.affAt[y] == st || u.g.PeerSwitch(y, pl[y]) != x {
				continue
			}
			switch {
			case u.rank[y] > u.rank[x]: // climbs into x
				seed(y)
				kind = append(kind, walkClimbs)
			case u.rank[y] < u.rank[x] && k == walkDescends:
				seed(y)
				kind = append(kind, walkDescends)
			}
		}
	}
	sc.kind = kind
	// A switch that follows the old tree where the tree moved takes the
	// new one; the switches whose walk leads through it need no look: one
	// with an up*/down* path does not go through a switch without one, and
	// one without keeps following the tree (paths only die with a dead
	// cable, whose walks were seeded above).
	for _, x := range moved {
		if pl[x] == oldTree[x] && x != target {
			seed(x)
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

// deadPort is a switch port whose cable went down, with the switch at its
// other end.
type deadPort struct {
	s    int32
	port uint8
	peer int32
}

// deadPorts names the removed ports' peers on old, the graph they were up
// in.
func deadPorts(old *route.Graph, removed []portRef) []deadPort {
	out := make([]deadPort, len(removed))
	for i, p := range removed {
		out[i] = deadPort{p.s, p.port, old.PeerSwitch(p.s, p.port)}
	}
	return out
}

// What kind of walk a switch had toward a plane's target.
const (
	walkOther    = iota // not up*/down* (it follows a tree to a U-turn), or broken
	walkClimbs          // up*/down*, climbing first
	walkDescends        // descending only
)

// walkKind classifies x's walk along pl toward target as it was before
// the dead cables went down.
func (u *upDown) walkKind(pl plan.Plane, x, target int32, dead []deadPort) uint8 {
	climbed, descended := false, false
	for y, hops := x, 0; hops <= route.MaxHops; hops++ {
		if y == target {
			if climbed {
				return walkClimbs
			}
			return walkDescends
		}
		if pl[y] == plan.NoPort {
			return walkOther
		}
		n := u.g.PeerSwitch(y, pl[y])
		for _, d := range dead {
			if d.s == y && d.port == pl[y] {
				n = d.peer
			}
		}
		switch {
		case n < 0 || u.rank[n] < 0 || u.rank[n] == u.rank[y]:
			return walkOther
		case u.rank[n] < u.rank[y]:
			if descended {
				return walkOther
			}
			climbed = true
		default:
			descended = true
		}
		y = n
	}
	return walkOther
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

// everyDest is the Diff that counts every destination of r and its
// entries as changed.
func everyDest(g *route.Graph, r *plan.Routes) Diff {
	var d Diff
	for e, dp := range r.Planes {
		n := int64(0)
		for _, pl := range dp.Planes {
			n += int64(len(pl))
		}
		d.add(g, int32(e), n)
	}
	return d
}

// add counts destination e with n entries changed.
func (d *Diff) add(g *route.Graph, e int32, n int64) {
	d.Entries += n
	d.Changed = append(d.Changed, e)
	if g.Attachment(e).IsSwitch {
		d.SwitchDests++
	} else {
		d.CADests++
	}
}

// diffRoutes is the Diff from a to b, routes of fabrics with the same
// nodes (sameNodes), over the destinations of only (ascending; nil: all).
func diffRoutes(g *route.Graph, a, b *plan.Routes, only []int32) Diff {
	var d Diff
	diff := func(e int32) {
		pa, pb := a.Planes[e].Planes, b.Planes[e].Planes
		n := int64(0)
		for k := range min(len(pa), len(pb)) {
			if len(pa[k]) == 0 || &pa[k][0] == &pb[k][0] {
				continue // shared
			}
			n += differing(pa[k], pb[k])
		}
		if n > 0 {
			d.add(g, e, n)
		}
	}
	if only != nil {
		for _, e := range only {
			diff(e)
		}
		return d
	}
	for e := range a.Planes {
		diff(int32(e))
	}
	return d
}

// differing counts the entries in which planes a and b (of one length)
// differ, comparing 64 at a time first: a repair changes few of a
// plane's entries.
func differing(a, b plan.Plane) int64 {
	n := int64(0)
	for len(a) > 0 {
		k := min(len(a), 64)
		if !bytes.Equal(a[:k], b[:k]) {
			for x := range k {
				if a[x] != b[x] {
					n++
				}
			}
		}
		a, b = a[k:], b[k:]
	}
	return n
}
