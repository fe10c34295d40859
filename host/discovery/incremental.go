package discovery

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport/smp"
)

// PortRef names a port by node GUID and port number.
type PortRef struct {
	GUID uint64
	Port uint8
}

// Changes is what the SM learnt may have changed since the fabric model was
// built: switches that reported a port state change (trap 128, or
// SwitchInfo.PortStateChange seen by a light sweep) and single ports to
// re-read (a link trap, a CA port whose PortInfo no longer matches the plan).
type Changes struct {
	Switches []uint64
	Ports    []PortRef
}

// Empty reports whether there is nothing to re-read.
func (c Changes) Empty() bool { return len(c.Switches) == 0 && len(c.Ports) == 0 }

// Merge adds o to c.
func (c *Changes) Merge(o Changes) {
	c.Switches = append(c.Switches, o.Switches...)
	c.Ports = append(c.Ports, o.Ports...)
}

// UpdateSummary says what an incremental update found.
type UpdateSummary struct {
	// PortsRead counts PortInfo reads; LinksDown/LinksUp links the model
	// lost or gained; NewNodes nodes explored for the first time; Dropped
	// nodes no longer reachable; Rounds the read rounds (a round re-reads
	// what failed because its directed route crossed a link that is gone).
	PortsRead, LinksDown, LinksUp, NewNodes, Dropped, Rounds int
	// Changed lists, sorted, the nodes whose ports the update read or
	// re-linked (cut from a dropped node included): every other node's
	// ports are as in the model it started from. Routes (Node.Path) may
	// have changed anywhere.
	Changed []uint64
}

// ErrUntrusted wraps every reason Update gives up: the caller must fall back
// to a full discovery (Run).
var ErrUntrusted = errors.New("incremental update cannot be trusted; run a full discovery")

// maxRounds bounds the read rounds of an update. A round reads the changed
// switches no other pending one stands in front of, and retries reads whose
// route the previous round changed; a route has at most MaxHops switches.
const maxRounds = 2 * smp.MaxHops

type failure struct {
	n    *Node
	port uint8
	path mad.Path
	what string
	err  error
}

// incState is the bookkeeping of an incremental update.
type incState struct {
	w      *walk
	linkMu sync.Mutex // serialises link changes (link, unlink, cutStale)

	mu      sync.Mutex
	claimed map[*Node]map[uint8]bool // ports read (or being read) in this update
	touched map[*Node]bool           // nodes whose ports were read or re-linked (UpdateSummary.Changed)
	failed  []failure
	// deferred are far ends of cut links whose route crossed the cut: read
	// in the next round, over their new route.
	deferred []PortRef
	sum      UpdateSummary
	// What the routes depend on that changed since the last re-route:
	// cables cut and made, nodes found.
	cuts, made []cable
	fresh      []uint64

	// owned (guarded by walk.mu): nodes of the update's model that are
	// its own, copied from the old model when first changed (walk.own)
	// or found; every other node is the old model's and must not change.
	owned map[uint64]bool
}

// cable is a link (A, PA) — (B, PB) by node GUID.
type cable struct {
	a, b   uint64
	pa, pb uint8
}

// own returns the update's own copy of node guid, copying the old
// model's on first use (nil if the model has no such node). Everything
// that changes a node during an update gets it from here first: the
// model shares every other node with the one it was made from, so an
// update copies the few nodes a cable event touches, not ~40 MB (ft3-56).
// A full walk's nodes are all its own.
func (w *walk) own(guid uint64) *Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.f.Nodes[guid]
	if n == nil || w.inc == nil || w.inc.owned[guid] {
		return n
	}
	c := n.Clone()
	w.f.Nodes[guid] = c
	w.inc.owned[guid] = true
	return c
}

// claim reports whether (n, p) is still to be read in this update and marks
// it read.
func (s *incState) claim(n *Node, p uint8) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touched[n] = true
	m := s.claimed[n]
	if m == nil {
		m = map[uint8]bool{}
		s.claimed[n] = m
	}
	if m[p] {
		return false
	}
	m[p] = true
	s.sum.PortsRead++
	return true
}

func (s *incState) unclaim(n *Node, p uint8) {
	s.mu.Lock()
	delete(s.claimed[n], p)
	s.sum.PortsRead--
	s.mu.Unlock()
}

// fail records a read of (n, p) that failed while n's route was path.
func (s *incState) fail(n *Node, p uint8, path mad.Path, what string, err error) {
	s.mu.Lock()
	s.failed = append(s.failed, failure{n: n, port: p, path: path, what: what, err: err})
	s.mu.Unlock()
}

// touch records that the ports of the given nodes changed.
func (s *incState) touch(ns ...*Node) {
	s.mu.Lock()
	for _, n := range ns {
		if n != nil {
			s.touched[n] = true
		}
	}
	s.mu.Unlock()
}

func (s *incState) count(f func(*UpdateSummary)) {
	s.mu.Lock()
	f(&s.sum)
	s.mu.Unlock()
}

// isSMPort reports whether (n, p) is the SM's own CA port, the one CA port
// the walk reads and probes without reaching it over a cable.
func (w *walk) isSMPort(n *Node, p uint8) bool {
	return n.Info.NodeGUID == w.f.SMGUID && p == w.f.SMPort
}

// check re-reads PortInfo of (n, p) through path and brings the model's
// link at that port up to date: a link that went down is cut, a port that
// came up (or retrained, so its far end may be another node) is probed.
func (w *walk) check(n *Node, p uint8, path mad.Path) {
	if o := w.own(n.Info.NodeGUID); o != nil {
		n = o
	}
	if !w.inc.claim(n, p) {
		return
	}
	pi := new(smp.PortInfo)
	w.ask(path, smp.AttrPortInfo, uint32(p), pi, func(err error) {
		if err != nil {
			w.inc.fail(n, p, path, "PortInfo", err)
			return
		}
		isSwitch := n.Info.NodeType == smp.NodeTypeSwitch
		n.mu.Lock()
		old := n.Ports[p]
		n.Ports[p].Info, n.Ports[p].Valid = *pi, true
		if isSwitch {
			n.Ports[p].GUID = n.Info.PortGUID
		}
		n.mu.Unlock()
		if p == 0 {
			return
		}
		linked, up := old.PeerGUID != 0, pi.PortState >= smp.PortStateInit
		// Probing needs a hop out of n: only switches and the SM's own CA
		// port give one; other CA ports are seen from their switch.
		canProbe := isSwitch || (w.isSMPort(n, p) && len(path) == 0)
		// A linked port whose state moved retrained (an Active port the SM
		// activated is back in Init): what is behind it may have been
		// swapped. A swap that leaves the state as the model has it (an
		// unprogrammed Init link swapped for another Init link) is not seen.
		suspect := !old.Valid || old.Info.PortState != pi.PortState
		switch {
		case linked && !up:
			w.unlink(n, p)
		case !linked && !up && !isSwitch && !w.isSMPort(n, p):
			// A CA port is known only through its cable (as in Run).
			n.mu.Lock()
			n.Ports[p] = Port{}
			n.mu.Unlock()
		case up && canProbe && (!linked || suspect):
			w.probe(n, p)
		}
	})
}

// unlink cuts the model's link at (n, p) and re-reads the far end.
func (w *walk) unlink(n *Node, p uint8) {
	w.inc.linkMu.Lock()
	far, q := w.cut(n, p)
	w.inc.linkMu.Unlock()
	w.inc.count(func(s *UpdateSummary) { s.LinksDown++ })
	w.forgetCAPort(n, p)
	if far != nil {
		w.forgetCAPort(far, q)
		w.recheckEnd(far, q)
	}
}

// cut clears both ends of the link at (n, p) and returns the far end.
// Caller holds linkMu.
func (w *walk) cut(n *Node, p uint8) (*Node, uint8) {
	n.mu.Lock()
	g, q := n.Ports[p].PeerGUID, n.Ports[p].PeerPort
	n.Ports[p].PeerGUID, n.Ports[p].PeerPort = 0, 0
	n.mu.Unlock()
	if g == 0 {
		return nil, 0
	}
	far := w.own(g)
	w.inc.touch(n, far)
	w.inc.mu.Lock()
	w.inc.cuts = append(w.inc.cuts, cable{n.Info.NodeGUID, g, p, q})
	w.inc.mu.Unlock()
	if far == nil || int(q) >= len(far.Ports) {
		return nil, 0
	}
	far.mu.Lock()
	defer far.mu.Unlock()
	if far.Ports[q].PeerGUID != n.Info.NodeGUID || far.Ports[q].PeerPort != p {
		return nil, 0
	}
	far.Ports[q].PeerGUID, far.Ports[q].PeerPort = 0, 0
	return far, q
}

// cutStale cuts the link at (n, p) if it leads anywhere but (guid, q).
// Caller holds linkMu.
func (w *walk) cutStale(n *Node, p uint8, guid uint64, q uint8) {
	n.mu.Lock()
	g, gq := n.Ports[p].PeerGUID, n.Ports[p].PeerPort
	n.mu.Unlock()
	if g == 0 || (g == guid && gq == q) {
		return
	}
	far, fq := w.cut(n, p)
	w.inc.count(func(s *UpdateSummary) { s.LinksDown++ })
	if far != nil {
		w.forgetCAPort(far, fq)
		w.recheckEnd(far, fq)
	}
}

// forgetCAPort clears a CA port that lost its cable: a full walk would not
// have read it.
func (w *walk) forgetCAPort(n *Node, p uint8) {
	if n.Info.NodeType == smp.NodeTypeSwitch || w.isSMPort(n, p) {
		return
	}
	n.mu.Lock()
	if n.Ports[p].PeerGUID == 0 {
		n.Ports[p] = Port{}
	}
	n.mu.Unlock()
}

// recheckEnd re-reads the far end of a link that went away, if the model
// reads it at all (switch ports and the SM's port).
func (w *walk) recheckEnd(far *Node, q uint8) {
	if far.Info.NodeType != smp.NodeTypeSwitch && !w.isSMPort(far, q) {
		return
	}
	far.mu.Lock()
	path := far.Path
	far.mu.Unlock()
	if !w.intact(path, far) {
		// Reading over a link the model just cut would only time out.
		w.inc.mu.Lock()
		w.inc.deferred = append(w.inc.deferred, PortRef{far.Info.NodeGUID, q})
		w.inc.mu.Unlock()
		return
	}
	w.check(far, q, path)
}

// intact reports whether path still leads to target over the model's links.
func (w *walk) intact(path mad.Path, target *Node) bool {
	w.mu.Lock()
	cur := w.f.Nodes[w.f.SMGUID]
	w.mu.Unlock()
	for _, hop := range path {
		cur.mu.Lock()
		var g uint64
		if int(hop) < len(cur.Ports) {
			g = cur.Ports[hop].PeerGUID
		}
		cur.mu.Unlock()
		w.mu.Lock()
		cur = w.f.Nodes[g]
		w.mu.Unlock()
		if cur == nil {
			return false
		}
	}
	return cur == target
}

// Update brings old up to date after the given changes without walking the
// whole fabric: it re-reads the ports of the switches that reported a
// change (and the listed ports), cuts links that went down, explores what
// is behind ports that came up with directed routes extended from the known
// route to the switch, recomputes routes and drops nodes no longer
// reachable. old is not modified. The result is what Run would find,
// except for warnings about parts of the fabric Update did not read.
//
// Any failure that a changed route does not explain (a lost SMP after all
// retries, a switch the model does not hold) returns an error wrapping
// ErrUntrusted: the caller must fall back to Run.
func (d *Discoverer) Update(ctx context.Context, old *Fabric, ch Changes) (*Fabric, UpdateSummary, error) {
	if old == nil || old.Nodes[old.SMGUID] == nil {
		return nil, UpdateSummary{}, fmt.Errorf("%w: no fabric model yet", ErrUntrusted)
	}
	f := old.ShallowCopy()
	f.Warnings = nil
	w := newWalk(ctx, d, f)
	w.inc = &incState{w: w, claimed: map[*Node]map[uint8]bool{}, touched: map[*Node]bool{}, owned: map[uint64]bool{}}
	pending := map[*Node]bool{}
	for _, g := range ch.Switches {
		n := f.Nodes[g]
		if n == nil || n.Info.NodeType != smp.NodeTypeSwitch {
			return nil, UpdateSummary{}, fmt.Errorf("%w: switch 0x%016x reported a change but is not a switch of the model", ErrUntrusted, g)
		}
		pending[w.own(g)] = true // read whole: its own copy from the start
	}
	for _, r := range ch.Ports {
		n := f.Nodes[r.GUID]
		if n == nil || int(r.Port) >= len(n.Ports) {
			return nil, UpdateSummary{}, fmt.Errorf("%w: port 0x%016x/%d is not in the model", ErrUntrusted, r.GUID, r.Port)
		}
		w.check(n, r.Port, n.Path)
	}
	// unrouted: nodes without a route after the last re-route (dropped
	// at the end unless a later round finds one).
	var unrouted map[uint64]bool
	var waiting []failure // failed reads whose route crosses a pending switch
	for round := 1; ; round++ {
		w.inc.sum.Rounds = round
		// A changed switch whose route crosses another changed switch is
		// read after it: the link between them may be the one that went
		// down, and reading over it would only time out.
		for _, n := range f.ready(pending) {
			delete(pending, n)
			for p := range n.Ports {
				w.check(n, uint8(p), n.Path)
			}
		}
		w.drain()
		if err := ctx.Err(); err != nil {
			return nil, w.inc.sum, err
		}
		if f.routed {
			unrouted = f.rerouteChanged(w.inc.cuts, w.inc.made, append(w.inc.fresh, keys(unrouted)...), w.own)
		} else {
			// A model whose routes are not canonical (not made by Run or
			// Update): all of them once.
			unrouted = f.reroute(w.own).unreached
			f.routed = true
		}
		w.inc.cuts, w.inc.made, w.inc.fresh = nil, nil, nil
		reach := func(n *Node) bool { return !unrouted[n.Info.NodeGUID] }
		failed, deferred := append(waiting, w.inc.failed...), w.inc.deferred
		w.inc.failed, w.inc.deferred, waiting = nil, nil, nil
		for n := range pending {
			if !reach(n) {
				delete(pending, n) // gone: nothing to read
			}
		}
		var retry []failure
		for _, fl := range failed {
			if !reach(fl.n) {
				continue // gone, and its failure with it
			}
			if f.behind(fl.n, pending) {
				// The route crosses a changed switch not read yet (the
				// far end of a cut link re-read over its other route,
				// which may lead through the same lost switch): that
				// read may still cut the route.
				waiting = append(waiting, fl)
				continue
			}
			if fl.n.Path.String() == fl.path.String() {
				return nil, w.inc.sum, fmt.Errorf("%w: node 0x%016x port %d: %s via DR %s: %v", ErrUntrusted, fl.n.Info.NodeGUID, fl.port, fl.what, fl.path, fl.err)
			}
			retry = append(retry, fl)
		}
		var later []*Node
		var laterPorts []uint8
		for _, r := range deferred {
			if n := f.Nodes[r.GUID]; n != nil && reach(n) {
				later, laterPorts = append(later, n), append(laterPorts, r.Port)
			}
		}
		if len(retry) == 0 && len(pending) == 0 && len(later) == 0 && len(waiting) == 0 {
			w.inc.touch(f.drop(unrouted, w.own, &w.inc.sum)...)
			break
		}
		if round == maxRounds {
			return nil, w.inc.sum, fmt.Errorf("%w: routes still changing after %d rounds", ErrUntrusted, maxRounds)
		}
		for _, fl := range retry {
			w.inc.unclaim(fl.n, fl.port)
			w.check(fl.n, fl.port, fl.n.Path)
		}
		for i, n := range later {
			w.check(n, laterPorts[i], n.Path)
		}
	}
	f.SMPs = w.smps.Load()
	for n := range w.inc.touched {
		if g := n.Info.NodeGUID; f.Nodes[g] == n {
			w.inc.sum.Changed = append(w.inc.sum.Changed, g)
		}
	}
	slices.Sort(w.inc.sum.Changed)
	return f, w.inc.sum, nil
}

// Order splits switches into those whose route crosses no other of them
// (front) and the rest (behind): what the SM can safely touch over the old
// routes before an update, and what it should touch only after.
func (f *Fabric) Order(switches []uint64) (front, behind []uint64) {
	pending := map[*Node]bool{}
	for _, g := range switches {
		if n := f.Nodes[g]; n != nil {
			pending[n] = true
		}
	}
	ok := map[uint64]bool{}
	for _, n := range f.ready(pending) {
		ok[n.Info.NodeGUID] = true
	}
	for _, g := range switches {
		if ok[g] {
			front = append(front, g)
		} else {
			behind = append(behind, g)
		}
	}
	return front, behind
}

// ready returns the pending switches whose route crosses no other pending
// switch.
func (f *Fabric) ready(pending map[*Node]bool) []*Node {
	var out []*Node
	for n := range pending {
		if !f.behind(n, pending) {
			out = append(out, n)
		}
	}
	return out
}

// behind reports whether n's route crosses a pending switch other than n.
func (f *Fabric) behind(n *Node, pending map[*Node]bool) bool {
	return f.Crosses(n, pending) != nil
}

// Crosses returns the first node of set, other than n, that n's route
// crosses (following the model's links hop by hop from the SM), or nil.
func (f *Fabric) Crosses(n *Node, set map[*Node]bool) *Node {
	cur := f.Nodes[f.SMGUID]
	for _, hop := range n.Path {
		if cur != n && set[cur] {
			return cur
		}
		if int(hop) >= len(cur.Ports) || f.Nodes[cur.Ports[hop].PeerGUID] == nil {
			return nil // the model has no such hop: read it and let it fail
		}
		cur = f.Nodes[cur.Ports[hop].PeerGUID]
	}
	return nil
}

// routes is what a re-route found.
type routes struct {
	all       bool            // every node of the model was reached
	unreached map[uint64]bool // the nodes not reached (none if all)
}

// reroute recomputes every node's directed route breadth-first over the
// model's links from the SM, as a walk would reach them (through switches
// and the SM's own port). A node's route is then its canonical one: the
// shortest, and of those the lowest port by port (the breadth-first queue
// holds each level in that order), whatever order the walk found nodes
// in. own (nil: change nodes in place) gives the node to change. Not safe
// to run concurrently with a walk.
func (f *Fabric) reroute(own func(uint64) *Node) routes {
	root := f.Nodes[f.SMGUID]
	reach := make(map[uint64]bool, len(f.Nodes))
	reach[f.SMGUID] = true
	if root.Path != nil && own != nil {
		root = own(f.SMGUID)
	}
	root.Path = nil
	queue := []*Node{root}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		isSwitch := n.Info.NodeType == smp.NodeTypeSwitch
		if !isSwitch && n != root {
			continue
		}
		if len(n.Path) >= smp.MaxHops {
			continue
		}
		for p := 1; p < len(n.Ports); p++ {
			if !isSwitch && uint8(p) != f.SMPort {
				continue
			}
			far := f.linked(n, p)
			if far == nil || reach[far.Info.NodeGUID] {
				continue
			}
			reach[far.Info.NodeGUID] = true
			if !isRoute(far.Path, n.Path, uint8(p)) {
				if own != nil {
					far = own(far.Info.NodeGUID)
				}
				far.Path = n.Path.Extend(uint8(p)) // else the route stays: no copy per node per update
			}
			queue = append(queue, far)
		}
	}
	if len(reach) == len(f.Nodes) {
		return routes{all: true}
	}
	out := routes{unreached: map[uint64]bool{}}
	for g := range f.Nodes {
		if !reach[g] {
			out.unreached[g] = true
		}
	}
	return out
}

// linked returns the node at the far end of port p of n if the model
// holds that link at both ends (nil if not).
func (f *Fabric) linked(n *Node, p int) *Node {
	pt := &n.Ports[p]
	if pt.PeerGUID == 0 {
		return nil
	}
	far := f.Nodes[pt.PeerGUID]
	if far == nil || int(pt.PeerPort) >= len(far.Ports) {
		return nil
	}
	if fp := &far.Ports[pt.PeerPort]; fp.PeerGUID != n.Info.NodeGUID || int(fp.PeerPort) != p {
		return nil
	}
	return far
}

// isRoute reports whether route is via extended by port.
func isRoute(route, via mad.Path, port uint8) bool {
	return len(route) == len(via)+1 && route[len(via)] == port && bytes.Equal(route[:len(via)], via)
}

// lower reports whether via extended by port is a lower route than
// route: shorter, or as long and lower port by port (reroute's order).
func lower(via mad.Path, port uint8, route mad.Path) bool {
	if len(via)+1 != len(route) {
		return len(via)+1 < len(route)
	}
	if c := bytes.Compare(via, route[:len(via)]); c != 0 {
		return c < 0
	}
	return port < route[len(via)]
}

// hop is a candidate route: via extended by port, to node to.
type hop struct {
	via  mad.Path
	port uint8
	to   uint64
}

// below reports whether h is a lower route than o (as lower).
func (h hop) below(o hop) bool {
	if len(h.via) != len(o.via) {
		return len(h.via) < len(o.via)
	}
	if c := bytes.Compare(h.via, o.via); c != 0 {
		return c < 0
	}
	return h.port < o.port
}

// hops is a heap of candidate routes, lowest first.
type hops []hop

func (h hops) Len() int           { return len(h) }
func (h hops) Less(i, j int) bool { return h[i].below(h[j]) }
func (h hops) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hops) Push(x any)        { *h = append(*h, x.(hop)) }
func (h *hops) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// rerouteChanged gives every node the route reroute would, after the
// walk cut the cables cuts and made made, starting from a model whose
// routes were reroute's except for the nodes in lost (found since, or
// unreached then): only the nodes whose route crossed a cut cable (the
// subtree behind it: routes are prefixes of their descendants'), those
// in lost, and those a new cable gives a lower route get a new one, in
// order of their new routes from the lowest (Dijkstra's, as each route
// is a lower one's extended by a hop). At ft3-56 a cable event re-routes
// tens of nodes where reroute walks 47,824. It returns the nodes left
// without a route. own gives the node to change.
func (f *Fabric) rerouteChanged(cuts, made []cable, lost []uint64, own func(uint64) *Node) map[uint64]bool {
	// expands: the walk reads on through port p of n (reroute's rule).
	expands := func(n *Node, p int) bool {
		if p == 0 || len(n.Path) >= smp.MaxHops {
			return false
		}
		return n.Info.NodeType == smp.NodeTypeSwitch || (n.Info.NodeGUID == f.SMGUID && uint8(p) == f.SMPort)
	}
	// child: c's route runs through port p of n.
	child := func(n *Node, p uint8, c *Node) bool {
		return c.Info.NodeGUID != f.SMGUID && isRoute(c.Path, n.Path, p)
	}
	unset := map[uint64]bool{} // nodes whose route is to be found
	var stack []*Node
	mark := func(n *Node) {
		if n != nil && n.Info.NodeGUID != f.SMGUID && !unset[n.Info.NodeGUID] {
			unset[n.Info.NodeGUID] = true
			stack = append(stack, n)
		}
	}
	for _, g := range lost {
		mark(f.Nodes[g])
	}
	for _, c := range cuts {
		a, b := f.Nodes[c.a], f.Nodes[c.b]
		if a == nil || b == nil {
			continue
		}
		if child(a, c.pa, b) {
			mark(b)
		}
		if child(b, c.pb, a) {
			mark(a)
		}
	}
	// The subtrees behind: a child's link is either still there or cut
	// (then it is marked above).
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Info.NodeType != smp.NodeTypeSwitch {
			continue
		}
		for p := 1; p < len(n.Ports); p++ {
			if c := f.Nodes[n.Ports[p].PeerGUID]; c != nil && child(n, uint8(p), c) {
				mark(c)
			}
		}
	}
	h := &hops{}
	// Every unset node's neighbours that keep their route, and every new
	// cable from a node that keeps its route, offer a route.
	for g := range unset {
		n := f.Nodes[g]
		for q := range n.Ports {
			if u := f.linked(n, q); u != nil && !unset[u.Info.NodeGUID] && expands(u, int(n.Ports[q].PeerPort)) {
				heap.Push(h, hop{u.Path, n.Ports[q].PeerPort, g})
			}
		}
	}
	for _, c := range made {
		a, b := f.Nodes[c.a], f.Nodes[c.b]
		if a == nil || b == nil || f.linked(a, int(c.pa)) != b {
			continue
		}
		if !unset[c.a] && expands(a, int(c.pa)) && c.b != f.SMGUID {
			heap.Push(h, hop{a.Path, c.pa, c.b})
		}
		if !unset[c.b] && expands(b, int(c.pb)) && c.a != f.SMGUID {
			heap.Push(h, hop{b.Path, c.pb, c.a})
		}
	}
	done := map[uint64]bool{}
	for h.Len() > 0 {
		c := heap.Pop(h).(hop)
		n := f.Nodes[c.to]
		if done[c.to] || (!unset[c.to] && !lower(c.via, c.port, n.Path)) {
			continue // routed, or keeps a route at least as low
		}
		done[c.to] = true
		delete(unset, c.to)
		if !isRoute(n.Path, c.via, c.port) {
			n = own(c.to)
			n.Path = c.via.Extend(c.port)
		}
		for p := range n.Ports {
			if !expands(n, p) {
				continue
			}
			if w := f.linked(n, p); w != nil && w.Info.NodeGUID != f.SMGUID && !done[w.Info.NodeGUID] &&
				(unset[w.Info.NodeGUID] || lower(n.Path, uint8(p), w.Path)) {
				heap.Push(h, hop{n.Path, uint8(p), w.Info.NodeGUID})
			}
		}
	}
	return unset
}

// keys lists a set's members.
func keys(m map[uint64]bool) []uint64 {
	out := make([]uint64, 0, len(m))
	for g := range m {
		out = append(out, g)
	}
	return out
}

// drop removes the nodes in gone (those the re-route left without a
// route) and every link to them, and returns the nodes whose links it cut.
// own gives the node to change.
func (f *Fabric) drop(gone map[uint64]bool, own func(uint64) *Node, sum *UpdateSummary) []*Node {
	if len(gone) == 0 {
		return nil
	}
	var cut []*Node
	for g := range gone {
		delete(f.Nodes, g)
		sum.Dropped++
	}
	for g, n := range f.Nodes {
		for p := range n.Ports {
			pt := &n.Ports[p]
			if pt.PeerGUID == 0 || f.Nodes[pt.PeerGUID] != nil {
				continue
			}
			if n = own(g); !slices.Contains(cut, n) {
				cut = append(cut, n)
			}
			pt = &n.Ports[p]
			pt.PeerGUID, pt.PeerPort = 0, 0
			if n.Info.NodeType != smp.NodeTypeSwitch && !(g == f.SMGUID && uint8(p) == f.SMPort) {
				*pt = Port{}
			}
		}
	}
	return cut
}

// ShallowCopy returns a copy of f that shares f's nodes: replace a node
// (Node.Clone) before changing it.
func (f *Fabric) ShallowCopy() *Fabric {
	return &Fabric{Nodes: maps.Clone(f.Nodes), SMGUID: f.SMGUID, SMPort: f.SMPort, Warnings: f.Warnings, SMPs: f.SMPs, routed: f.routed}
}

// Clone returns a deep copy of n.
func (n *Node) Clone() *Node {
	c := &Node{Info: n.Info, Desc: n.Desc, Path: n.Path, Ports: append([]Port(nil), n.Ports...)}
	if n.Switch != nil {
		si := *n.Switch
		c.Switch = &si
	}
	return c
}
