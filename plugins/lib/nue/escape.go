package nue

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// escape is the spanning forest whose routes a layer can always take:
// BFS trees, one per component, from the layer's region seed in its
// component and from a central switch in the others. In a tree a route
// never turns back, so the turns of tree routes form an acyclic CDG;
// seeding a layer with the turns of the tree routes toward its own
// destinations keeps one open to each of them whatever else the layer
// holds. With the root inside the layer's region those are few outside
// it: a switch whose subtree holds none of the layer's destinations needs
// only the turns toward its parent.
type escape struct {
	// out[s] lists the channels leaving s over tree links.
	out [][]int32
	// roots are the tree roots, one per component.
	roots []int32
	// kids[s] counts s's children, balanced says how parents were chosen.
	kids     []int32
	balanced bool
}

// newEscape builds the forest; root, if >= 0, roots its component's tree.
// A switch's parent is its lowest channel toward the root, or, balanced,
// the candidate with the fewest children so far (lowest channel at a
// tie): on a random graph the first way piles the switches of a level
// under the first few of the level above, whose links toward the root then
// carry most of the traffic that must cross it.
func newEscape(n *net, root int32, balanced bool) *escape {
	e := &escape{out: make([][]int32, n.N), kids: make([]int32, n.N), balanced: balanced}
	seen := make([]bool, n.N)
	dist := make([]int32, n.N)
	for s := range dist {
		dist[s] = -1
	}
	var queue []int32
	bfs := func(src int32) []int32 {
		for _, s := range queue {
			dist[s] = -1 // only the previous search's switches are set
		}
		queue = append(queue[:0], src)
		dist[src] = 0
		for i := 0; i < len(queue); i++ {
			x := queue[i]
			for c := n.Off[x]; c < n.Off[x+1]; c++ {
				if y := n.Peer[c]; dist[y] < 0 {
					dist[y] = dist[x] + 1
					queue = append(queue, y)
				}
			}
		}
		return queue
	}
	starts := make([]int32, 0, n.N+1)
	if root >= 0 {
		starts = append(starts, root)
	}
	for s := int32(0); s < int32(n.N); s++ {
		starts = append(starts, s)
	}
	for i, s := range starts {
		if seen[s] {
			continue
		}
		if i == 0 && root >= 0 {
			e.roots = append(e.roots, root)
			for _, x := range e.grow(n, bfs(root), dist) {
				seen[x] = true
			}
			continue
		}
		// Double sweep: the farthest switch a from s, the farthest b from
		// a; the root is the middle of a shortest a-b path, near a center.
		q := bfs(s)
		a := q[len(q)-1]
		q = bfs(a)
		b := q[len(q)-1]
		for _, x := range q {
			seen[x] = true
		}
		root, want := b, dist[b]/2
		for dist[root] > want {
			for c := n.Off[root]; c < n.Off[root+1]; c++ {
				if y := n.Peer[c]; dist[y] == dist[root]-1 {
					root = y
					break
				}
			}
		}
		e.roots = append(e.roots, root)
		e.grow(n, bfs(root), dist)
	}
	return e
}

// grow adds the BFS tree of q (a BFS order from its root, dist its
// distances) and returns q.
func (e *escape) grow(n *net, q []int32, dist []int32) []int32 {
	for _, x := range q[1:] {
		// The tree link: a channel toward a switch one hop closer.
		up := int32(-1)
		for c := n.Off[x]; c < n.Off[x+1]; c++ {
			if y := n.Peer[c]; dist[y] == dist[x]-1 && (up < 0 || e.kids[y] < e.kids[n.Peer[up]]) {
				up = c
				if !e.balanced {
					break
				}
			}
		}
		e.kids[n.Peer[up]]++
		e.out[x] = append(e.out[x], up)
		e.out[n.Peer[up]] = append(e.out[n.Peer[up]], n.Rev[up])
	}
	return q
}

// order is an initial channel order in which every tree turn goes
// forward: channels toward a root first (deepest first), then the channels
// off the tree, then the channels away from a root (shallowest first). A
// tree route climbs, then descends, so its turns never go against it, and
// seeding a layer needs no search.
func (e *escape) order(n *net) []int32 {
	depth := make([]int32, n.N)
	for s := range depth {
		depth[s] = -1
	}
	var queue []int32
	for _, r := range e.roots {
		depth[r] = 0
		queue = append(queue, r)
	}
	for i := 0; i < len(queue); i++ {
		x := queue[i]
		for _, c := range e.out[x] {
			if y := n.Peer[c]; depth[y] < 0 {
				depth[y] = depth[x] + 1
				queue = append(queue, y)
			}
		}
	}
	// key: 0 up (by -depth of its tail), 1 off the tree, 2 down (by depth).
	tree := make([]bool, n.Channels())
	for x := range e.out {
		for _, c := range e.out[x] {
			tree[c] = true
		}
	}
	maxD := int32(0)
	for _, d := range depth {
		maxD = max(maxD, d)
	}
	key := func(c int32) int64 {
		x, y := n.From[c], n.Peer[c]
		switch {
		case !tree[c]:
			return int64(maxD + 1)
		case depth[y] < depth[x]: // up
			return int64(maxD - depth[x])
		default: // down
			return int64(maxD+2) + int64(depth[x])
		}
	}
	chans := make([]int32, n.Channels())
	for c := range chans {
		chans[c] = int32(c)
	}
	slices.SortStableFunc(chans, func(a, b int32) int { return cmp.Compare(key(a), key(b)) })
	ord := make([]int32, len(chans))
	for i, c := range chans {
		ord[c] = int32(i)
	}
	return ord
}

// seed adds to layer l, a fresh layer whose order is e.order, the turns
// of the tree routes toward the switches marked in dest: at a switch, from
// any tree link onto its parent's if a destination lies outside its
// subtree, and onto a child's if one lies in that child's subtree. They
// cannot close a cycle; a failure is a bug worth stopping on.
func (e *escape) seed(n *net, l *layer, dest []bool) error {
	defer func(limit int) { l.limit = limit }(l.limit)
	l.limit = math.MaxInt    // a refusal here must mean a cycle
	up := make([]int32, n.N) // channel toward the parent, -1 at a root
	top := make([]int32, n.N)
	sub := make([]int32, n.N) // destinations in the subtree
	for s := range up {
		up[s] = -2
	}
	var q []int32
	for _, r := range e.roots {
		up[r], top[r] = -1, r
		q = append(q, r)
	}
	for i := 0; i < len(q); i++ {
		x := q[i]
		for _, c := range e.out[x] {
			if y := n.Peer[c]; up[y] == -2 {
				up[y], top[y] = n.Rev[c], top[x]
				q = append(q, y)
			}
		}
	}
	for i := len(q) - 1; i >= 0; i-- {
		x := q[i]
		if dest[x] {
			sub[x]++
		}
		if up[x] >= 0 {
			sub[n.Peer[up[x]]] += sub[x]
		}
	}
	for x := int32(0); x < int32(n.N); x++ {
		for _, a := range e.out[x] {
			in := n.Rev[a]
			for _, b := range e.out[x] {
				need := false
				switch {
				case a == b:
				case b == up[x]:
					need = sub[top[x]] > sub[x]
				default:
					need = sub[n.Peer[b]] > 0
				}
				if need && !l.insert(in, b) {
					return fmt.Errorf("nue: the escape tree's turns close a cycle at switch 0x%016x (a bug: tree routes never turn back)", n.vf.G.SwitchGUID(x))
				}
			}
		}
	}
	return nil
}

// hops is the number of tree hops from root to every switch of its
// component (-1 elsewhere).
func (e *escape) hops(n *net, root int32) []int32 {
	d := make([]int32, n.N)
	for s := range d {
		d[s] = -1
	}
	d[root] = 0
	q := []int32{root}
	for i := 0; i < len(q); i++ {
		for _, c := range e.out[q[i]] {
			if y := n.Peer[c]; d[y] < 0 {
				d[y] = d[q[i]] + 1
				q = append(q, y)
			}
		}
	}
	return d
}

// toward fills next[s] with the tree channel s takes toward switch h (-1
// for h and for switches of other components), using queue as scratch.
func (e *escape) toward(n *net, h int32, next []int32, queue []int32) []int32 {
	for i := range next {
		next[i] = -2
	}
	next[h] = -1
	queue = append(queue[:0], h)
	for i := 0; i < len(queue); i++ {
		x := queue[i]
		for _, c := range e.out[x] {
			// c leaves x over a tree link; its reverse leads back to x.
			if y := n.Peer[c]; next[y] == -2 {
				next[y] = n.Rev[c]
				queue = append(queue, y)
			}
		}
	}
	for i := range next {
		if next[i] == -2 {
			next[i] = -1
		}
	}
	return queue
}
