package check

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Delta checks a one-VL plan by what changed since the last plan Check
// (or Delta) accepted on the same fabric less or plus switch-to-switch
// cables: a cable down at ft3-56 changes ~0.1 % of the forwarding, and
// the full check walks all 187 M entries again (2.7 CPU-s). It can only
// accept: where it cannot prove the plan sound it says why, and the
// caller runs Check, which decides.
//
// What it proves, given the basis was sound: the LID and VL plans are the
// basis's (same endpoints, so the same verdict on them); every column
// (LID) whose entries changed, or that crosses a port whose link changed,
// has no loop and every entry an up link to a switch, the owner's port or
// none, and arrives at its owner from every switch that has sources for it
// (as Check counts pairs: every switch for a switch's LID, the switches
// with CAs for a CA's LID); the other columns follow the same links as
// before; and the one-VL channel dependency graph stays acyclic: it
// keeps, per dependency, how many LIDs' trees hold it (from every switch:
// a superset of the traffic's, so never a cycle fewer), and looks for a
// cycle where the dependencies new to the graph lead.
//
// The zero value is ready; it is safe for concurrent use.
type Delta struct {
	mu sync.Mutex
	b  *basis
	// pending is the basis of the plan Check accepted last, kept until
	// Accepted names that plan (the caller may still refuse it).
	pending *basis
}

// basis is an accepted plan and, once a Delta call needed them, its
// dependency counts.
type basis struct {
	p      Plan
	g      *route.Graph
	counts *cdg.Counts // per dependency: the LIDs whose tree holds it
	// content is what Accepted was told identifies the plan (0: not known).
	content uint64
	// undo are the changes this basis made to counts it shares with the
	// basis it was checked from, undone if it is not the one kept.
	undo []move
}

// move takes one tree's dependency from one index to another (-1: none).
type move struct {
	from, to int32 // dependency indices, -1 none (channels × ports: 12.5 M at ft3-56)
	head     int32 // the channel the dependency "to" leads to
}

// apply makes the moves in counts and returns the channels the
// dependencies new to the graph lead to. All removals come first, so
// that a dependency that stays is not taken for a new one.
func apply(counts *cdg.Counts, moves []move) (heads []int32) {
	for _, m := range moves {
		if m.from >= 0 {
			counts.Add(int(m.from), -1)
		}
	}
	for _, m := range moves {
		if m.to >= 0 && counts.Add(int(m.to), 1) {
			heads = append(heads, m.head)
		}
	}
	return heads
}

// revert undoes b's changes to the counts it shares with the basis it was
// checked from (nothing if it made none).
func (b *basis) revert() {
	if b == nil || b.undo == nil {
		return
	}
	for _, m := range b.undo {
		if m.to >= 0 {
			b.counts.Add(int(m.to), -1)
		}
		if m.from >= 0 {
			b.counts.Add(int(m.from), 1)
		}
	}
	b.undo = nil
}

// Accepted records p, which Check accepted without warnings, as the basis
// of the next Delta call. content identifies p's content (equal non-zero
// values: the same plan on the same fabric; 0: not known): a plan that is
// the basis's again keeps its counts without looking at its tables. Plans
// with more than one VL, or whose LIDs come from a LID assigner's own
// planes, are not kept (Delta does not cover them).
func (d *Delta) Accepted(p Plan, content uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	prev, pending := d.b, d.pending
	d.b, d.pending = nil, nil
	if pending != nil && (pending.p.Realized != p.Realized || pending.p.Topo != p.Topo || !oneVL(p.VLs)) {
		pending.revert() // not the plan going on: prev's counts as they were
		pending = nil
	}
	switch {
	case pending != nil:
		pending.undo = nil
		d.b = pending // what Check accepted: its dependency counts are kept
	case prev != nil && content != 0 && prev.content == content:
		d.b = prev // the same plan again (every heavy sweep of a fabric that did not change)
		d.b.p = p  // whose tables are the ones in force now
	case p.Topo == nil || p.Realized == nil || p.LIDs == nil || p.LIDs.Planes != nil || !oneVL(p.VLs):
		return
	case prev != nil && prev.counts != nil:
		// A plan accepted without Check (a verdict remembered, say, when a
		// cable comes back and the plan cache has the plan from before it
		// went): carry the counts over its changes rather than count all
		// dependencies again at the next call.
		if next, _ := prev.check(p); next != nil {
			next.undo = nil
			d.b = next
		}
	}
	if d.b == nil {
		d.b = &basis{p: p}
	}
	d.b.content = content
}

// Prepare counts the basis's dependencies now, which Check would do at its
// first call (1.2 CPU-s at ft3-56): call it when the host is idle, once
// the plan is programmed.
func (d *Delta) Prepare() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.b != nil && d.b.counts == nil {
		d.b.build()
	}
}

// Settle makes t the basis's topology when t differs from it only in
// what no check reads (ports Armed at a bring-up that are Active now): the
// next cable's topology is patched from t, and against the bring-up's
// every CA node differed (Graph.Patch went through all of them, 60 ms
// at ft3-56, in the first cable event). Anything more than that, or a
// plan still pending, leaves the basis as it is. Call it when idle.
func (d *Delta) Settle(t *topology.Topology) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.b == nil || d.pending != nil || t == nil || d.b.p.Topo == t || !slices.Equal(d.b.p.Topo.Endpoints(), t.Endpoints()) {
		return
	}
	if ports, why := cableChanges(d.b.p.Topo, t); why != "" || len(ports) > 0 {
		return
	}
	d.b.p.Topo = t
	if d.b.g != nil {
		d.b.g = d.b.g.Patch(t)
		if d.b.counts != nil {
			d.b.counts = d.b.counts.Over(d.b.g)
		}
	}
}

// Forget drops the basis (the next plan is checked in full).
func (d *Delta) Forget() {
	d.mu.Lock()
	d.b, d.pending = nil, nil
	d.mu.Unlock()
}

func oneVL(v *plan.VLPlan) bool { return v == nil || v.IsOneVL() }

// Check accepts p if it can prove it sound from the basis; otherwise it
// returns why not (and Check must decide). The basis stays until Accepted
// names the plan that goes on, which keeps what Check learnt of p if it
// is p.
func (d *Delta) Check(p Plan) (ok bool, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending.revert()
	d.pending = nil
	if d.b == nil {
		return false, "no plan accepted before"
	}
	next, why := d.b.check(p)
	if next == nil {
		return false, why
	}
	d.pending = next
	return true, ""
}

// check returns p's basis if p is sound given b, or why it cannot tell.
func (b *basis) check(p Plan) (*basis, string) {
	old, rz := b.p, p.Realized
	switch {
	case p.Topo == nil || rz == nil || p.LIDs == nil:
		return nil, "the plan has no topology, LIDs or tables"
	case !oneVL(p.VLs):
		return nil, "the plan uses more than one VL"
	case !sameLIDs(old.LIDs, p.LIDs):
		return nil, "the LID plan changed"
	case rz.TopLID != old.Realized.TopLID || !slices.Equal(rz.LIDOwner, old.Realized.LIDOwner):
		return nil, "the LIDs' owners changed"
	}
	changedPorts, why := cableChanges(old.Topo, p.Topo)
	if why != "" {
		return nil, why
	}
	at, sw, why := b.changedEntries(rz, changedPorts)
	if why != "" {
		return nil, why
	}
	if len(sw) > maxChanged {
		return nil, fmt.Sprintf("%d entries changed: checking them all is as fast", len(sw))
	}
	if b.counts == nil {
		b.build()
	}
	g := b.g.Patch(p.Topo) // the switches a cable changed; NewGraph where not patched
	next := &basis{p: p, g: g, counts: b.counts.Over(g)}
	moves, why := next.update(b, at, sw)
	if why != "" {
		return nil, why
	}
	next.undo = moves
	if next.counts.CycleFrom(apply(next.counts, moves)) {
		next.revert()
		return nil, "a new channel dependency closes a cycle (credit loop)"
	}
	return next, ""
}

// sameLIDs reports whether a and b number every endpoint alike.
func sameLIDs(a, b *plan.LIDPlan) bool {
	return a.Planes == nil && b.Planes == nil && a.Rule == b.Rule &&
		slices.Equal(a.Ports, b.Ports) && slices.Equal(a.Overrides, b.Overrides)
}

// cableChanges lists the switch ports (node index, port) whose link
// differs between a and b, or says why the change is more than switch
// cables (nodes, ports, CA links or the SM's port). A port's link can
// differ only on a node whose ports differ or at the peer of such a port
// (its state is half of the link's), so nodes a copy-on-write patch shares
// (topology.Patch: the same ports) are looked at only as such peers: at
// ft3-56 a cable is two of 47,824 nodes, where reading all 311 k ports
// took ~35 ms.
func cableChanges(a, b *topology.Topology) ([]topology.PortRef, string) {
	if len(a.Nodes) != len(b.Nodes) || a.SM != b.SM {
		return nil, "the fabric's nodes changed"
	}
	var cand []topology.PortRef
	for i := range a.Nodes {
		na, nb := &a.Nodes[i], &b.Nodes[i]
		if na.GUID != nb.GUID || na.Type != nb.Type || len(na.Ports) != len(nb.Ports) {
			return nil, "the fabric's nodes changed"
		}
		if len(na.Ports) == 0 || &na.Ports[0] == &nb.Ports[0] {
			continue
		}
		for q := range na.Ports {
			pa, pb := &na.Ports[q], &nb.Ports[q]
			// Only a port whose link differs (its peer, or whether it
			// is up: both ends' state) names candidates. A port that
			// differs otherwise (Armed to Active, after a bring-up every
			// CA port of a topology the patch does not share) named
			// 311 k at ft3-56, 0.2 s of sorting in the first cable event.
			r := topology.PortRef{Node: int32(i), Port: uint8(q)}
			if *pa == *pb || pa.Peer == pb.Peer && a.IsLinkUp(r) == b.IsLinkUp(r) {
				continue
			}
			cand = append(cand, r)
			for _, peer := range []topology.PortRef{pa.Peer, pb.Peer} {
				if peer.Connected() {
					cand = append(cand, peer)
				}
			}
		}
	}
	slices.SortFunc(cand, func(x, y topology.PortRef) int {
		return cmp.Or(cmp.Compare(x.Node, y.Node), cmp.Compare(x.Port, y.Port))
	})
	var out []topology.PortRef
	for _, r := range slices.Compact(cand) {
		pa, pb := a.Port(r), b.Port(r)
		if pa.Peer == pb.Peer && a.IsLinkUp(r) == b.IsLinkUp(r) {
			continue
		}
		if a.Nodes[r.Node].Type != topology.Switch || !switchOrNone(a, pa.Peer) || !switchOrNone(b, pb.Peer) {
			return nil, "a CA or router link changed"
		}
		out = append(out, r)
	}
	return out, ""
}

func switchOrNone(t *topology.Topology, r topology.PortRef) bool {
	return !r.Connected() || t.Nodes[r.Node].Type == topology.Switch
}

// build counts the basis's dependencies: for every owned LID, switch s
// sending it out of port out to switch t, which sends it on out of
// out2 toward a switch, holds (s, out) -> (t, out2).
func (b *basis) build() {
	rz := b.p.Realized
	b.g = route.NewGraph(b.p.Topo)
	b.counts = cdg.NewCounts(b.g)
	owner := rz.LIDOwner
	// Each switch adds to its own channels' counts only.
	_ = route.ForEach(context.Background(), b.g.N, func() func(int32) error {
		return func(s int32) error {
			for lid := range rz.LFT[s] {
				if lid < len(owner) && owner[lid] != 0 {
					if i, _, ok := b.counts.DepTables(s, rz.LFT, lid); ok {
						b.counts.Add(i, 1)
					}
				}
			}
			return nil
		}
	})
}

// sendsCA reports whether switch s has a CA that sends to a CA attached
// at switch home (its own, when s is home, does not count).
func (b *basis) sendsCA(s, home int32) bool {
	n := len(b.g.Group(s)) - 1 // the group ends with the switch's port 0
	if s == home {
		n--
	}
	return n > 0
}

// maxChanged: beyond this many changed entries Delta leaves the plan to
// Check (at ft3-56 a re-route that moves the sFtree root changes 1.9 M
// entries and took Delta 2 s against Check's 1.5; repairing one cable
// changes 4-13 k).
const maxChanged = 500_000

// changedEntries lists, by LID, the switches whose entry differs between
// the basis's tables and rz or uses one of the changed ports (in either):
// at[lid]..at[lid+1] index sw. It says why Delta cannot check them when
// an unassigned LID's entry is among them.
func (b *basis) changedEntries(rz *plan.Realized, ports []topology.PortRef) (at []int32, sw []int32, why string) {
	old := b.p.Realized
	changed := map[int32][]uint8{} // switch index -> its changed ports
	for _, r := range ports {
		s := b.p.Topo.SwitchIndex(r.Node)
		changed[s] = append(changed[s], r.Port)
	}
	type entry struct{ lid, s int32 }
	var es []entry
	const block = 64
	// Tables RealizeChanged made from the basis's, or from the tables the
	// basis's were made from, differ from them only in the LIDs it names
	// (ft3-56, one cable: ~1,700 of 47,824).
	lids, only := plan.ChangedBetween(old, rz)
	// Tables made from the basis's by changed entries say which LIDs
	// changed in which row (ft3-56, the root's cable: ~7,000 entries,
	// where the LIDs times the rows copied were 14 M compares).
	rows, byRow := rz.ChangedRows(old)
	for s := range old.LFT {
		a, c := old.LFT[s], rz.LFT[s]
		if len(a) != len(c) {
			return nil, nil, "a table's length changed"
		}
		qs := changed[int32(s)]
		if len(qs) == 0 && len(a) > 0 && &a[0] == &c[0] {
			continue // one table shared by both (plan.RealizeChanged)
		}
		if only && len(qs) == 0 {
			lids := lids
			if byRow {
				lids = rows.Of(s)
			}
			for _, lid := range lids {
				if a[lid] == c[lid] {
					continue
				}
				if rz.LIDOwner[lid] == 0 {
					return nil, nil, fmt.Sprintf("the entry of unassigned LID %d changed", lid)
				}
				es = append(es, entry{lid, int32(s)})
			}
			continue
		}
		for lo := 0; lo < len(a); lo += block {
			hi := min(lo+block, len(a))
			if len(qs) == 0 && bytes.Equal(a[lo:hi], c[lo:hi]) {
				continue
			}
			for lid := lo; lid < hi; lid++ {
				if a[lid] == c[lid] && !slices.Contains(qs, a[lid]) {
					continue
				}
				if rz.LIDOwner[lid] == 0 {
					return nil, nil, fmt.Sprintf("the entry of unassigned LID %d changed or uses a port whose link changed", lid)
				}
				es = append(es, entry{int32(lid), int32(s)})
			}
		}
	}
	// Counting sort by LID.
	at = make([]int32, len(rz.LFT[0])+1)
	for _, e := range es {
		at[e.lid+1]++
	}
	for i := 1; i < len(at); i++ {
		at[i] += at[i-1]
	}
	sw = make([]int32, len(es))
	fill := slices.Clone(at)
	for _, e := range es {
		sw[fill[e.lid]] = e.s
		fill[e.lid]++
	}
	return at, sw, ""
}

// upLinks returns, per switch x, the switches with an up link to x and
// their port toward it.
func upLinks(g *route.Graph) [][]link {
	// Counted first, then cut from one array: appended switch by switch
	// it took 3.8-5.2 ms at ft3-56 (1.3-2.4 ms now), every check.
	at := make([]int32, g.N+1)
	for y := range int32(g.N) {
		for _, l := range g.Links(y) {
			at[l.Peer+1]++
		}
	}
	for x := range g.N {
		at[x+1] += at[x]
	}
	all := make([]link, at[g.N])
	in := make([][]link, g.N)
	for x := range in {
		in[x] = all[at[x]:at[x]:at[x+1]]
	}
	for y := range int32(g.N) {
		for _, l := range g.Links(y) {
			in[l.Peer] = append(in[l.Peer], link{y, l.Port})
		}
	}
	return in
}

type link struct {
	s    int32
	port uint8
}

// update moves to next the dependencies of the entries that changed (at,
// sw: see changedEntries) and of the switches that send into them, after
// checking each LID's changed entries: each is an up link to a switch, the
// owner's port or none, the forwarding from each goes on without a loop,
// and where it ends without arriving no switch with sources for the LID
// sends into it. Entries that did not change send as before over links
// that did not change, so they arrive, or not, as they did. It returns
// the dependency moves the changes make (for apply), or why it cannot
// accept.
func (next *basis) update(old *basis, at, sw []int32) (moves []move, why string) {
	rz, orz := next.p.Realized, old.p.Realized
	n := len(rz.LFT)
	const unknown, walking, arrives, dead = 0, 1, 2, 3
	st := make([]uint8, n)
	stamp := make([]int32, n) // the LID (+1) st[s] and the dependency pass last saw s for
	seen := make([]int32, n)
	in := upLinks(next.g)
	var path, queue, up []int32
	// A changed entry moves its own dependency and those of the switches
	// sending into it: 1-14 per entry at ft3-56 (the root's cable: 137 k
	// for 10 k entries), grown from nothing ~25 ms a check on the VM
	// measured (fresh pages at every doubling).
	moves = make([]move, 0, min(16*len(sw), 1<<22))
	for lid := range len(at) - 1 {
		c := sw[at[lid]:at[lid+1]]
		if len(c) == 0 {
			continue
		}
		e := rz.LIDOwner[lid] - 1
		a := next.g.Attachment(e)
		if a.Switch < 0 {
			return nil, fmt.Sprintf("LID %d's owner is not attached", lid)
		}
		source := func(s int32) bool { return a.IsSwitch || next.sendsCA(s, a.Switch) }
		mark := int32(lid + 1)
		state := func(s int32) uint8 {
			if stamp[s] != mark {
				return unknown
			}
			return st[s]
		}
		set := func(s int32, v uint8) { stamp[s], st[s] = mark, v }
		for _, s0 := range c {
			path = path[:0]
			s := s0
			end := uint8(0)
			for state(s) == unknown {
				set(s, walking)
				path = append(path, s)
				out := rz.LFT[s][lid]
				if out == plan.NoPort {
					end = dead
					break
				}
				if s == a.Switch {
					if out != a.Port {
						return nil, fmt.Sprintf("switch %d does not deliver LID %d to its owner", s, lid)
					}
					end = arrives
					break
				}
				t := next.g.PeerSwitch(s, out)
				if t < 0 {
					return nil, fmt.Sprintf("switch %d's entry for LID %d is not an up link to a switch", s, lid)
				}
				s = t
			}
			if end == 0 {
				if st[s] == walking {
					return nil, fmt.Sprintf("LID %d loops", lid)
				}
				end = st[s]
			}
			for _, q := range path {
				st[q] = end
			}
			if end != dead {
				continue
			}
			// Nothing with sources for the LID may send into s0 now.
			queue = append(queue[:0], s0)
			for len(queue) > 0 {
				x := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				if source(x) {
					return nil, fmt.Sprintf("switch %d's traffic toward LID %d does not arrive", x, lid)
				}
				for _, l := range in[x] {
					if rz.LFT[l.s][lid] == l.port && seen[l.s] != mark {
						seen[l.s] = mark
						queue = append(queue, l.s)
					}
				}
			}
		}
		// The dependencies that may differ start at a changed entry or at
		// a switch sending into one (over the same link as before: its
		// own entry did not change).
		for _, x := range c {
			up = append(upstream(up[:0], in[x], rz.LFT, lid), x)
			for _, s := range up {
				if stamp[s] == -mark {
					continue
				}
				stamp[s] = -mark
				from, _, okOld := old.counts.DepTables(s, orz.LFT, lid)
				to, head, okNew := next.counts.DepTables(s, rz.LFT, lid)
				if !okOld {
					from = -1
				}
				if !okNew {
					to = -1
				}
				if from != to {
					moves = append(moves, move{int32(from), int32(to), head})
				}
			}
		}
	}
	return moves, ""
}

// upstream appends to out the switches of in whose entry for lid sends
// into the switch in belongs to.
func upstream(out []int32, in []link, lft [][]uint8, lid int) []int32 {
	for _, l := range in {
		if lft[l.s][lid] == l.port {
			out = append(out, l.s)
		}
	}
	return out
}
