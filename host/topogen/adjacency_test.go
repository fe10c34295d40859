package topogen

// switchAdjacency returns, for every switch, its switch neighbours (with
// repetition for parallel links).
func (g *graph) switchAdjacency() [][]int32 {
	adj := make([][]int32, len(g.switches))
	for _, l := range g.links {
		if l.a.isCA() || l.b.isCA() {
			continue
		}
		a, b := l.a.index(), l.b.index()
		adj[a] = append(adj[a], int32(b))
		adj[b] = append(adj[b], int32(a))
	}
	return adj
}
