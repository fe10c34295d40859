package nue

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// escape is the spanning forest whose routes every layer can always take:
// BFS trees from a central switch of each component. In a tree a route
// never turns back, so the turns of tree routes (any two distinct tree
// links of a switch) form an acyclic CDG; seeding every layer with them
// keeps a tree route open to every destination whatever else the layer
// holds.
type escape struct {
	// out[s] lists the channels leaving s over tree links.
	out [][]int32
	// roots are the tree roots, one per component.
	roots []int32
}

func newEscape(n *net) *escape {
	e := &escape{out: make([][]int32, n.N)}
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
	for s := int32(0); s < int32(n.N); s++ {
		if seen[s] {
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
		q = bfs(root)
		for _, x := range q[1:] {
			// The tree link: the lowest channel toward a switch one hop closer.
			for c := n.Off[x]; c < n.Off[x+1]; c++ {
				if y := n.Peer[c]; dist[y] == dist[x]-1 {
					e.out[x] = append(e.out[x], c)
					e.out[y] = append(e.out[y], n.Rev[c])
					break
				}
			}
		}
	}
	return e
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

// seed adds every tree turn to layer l, a fresh layer whose order is
// e.order: they cannot close a cycle, and a failure is a bug worth
// stopping on.
func (e *escape) seed(n *net, l *layer) error {
	defer func(limit int) { l.limit = limit }(l.limit)
	l.limit = math.MaxInt // a refusal here must mean a cycle
	for x := int32(0); x < int32(n.N); x++ {
		for _, a := range e.out[x] {
			in := n.Rev[a]
			for _, b := range e.out[x] {
				if a == b {
					continue
				}
				if !l.insert(in, b) {
					return fmt.Errorf("nue: the escape tree's turns close a cycle at switch 0x%016x (a bug: tree routes never turn back)", n.vf.G.SwitchGUID(x))
				}
			}
		}
	}
	return nil
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
