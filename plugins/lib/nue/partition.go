package nue

// partition splits the switches into k compact regions with about equal
// numbers of destinations; region i's destinations are routed in layer i.
// Destinations close together send their trees the same way, so a layer
// of neighbouring destinations holds fewer conflicting dependencies than a
// random one (Nue's reason for partitioning the destinations with METIS).
//
// Seeds are spread by farthest-point sampling from switch 0's component;
// then the region with the fewest destinations so far claims the next
// unclaimed switch of its BFS frontier, until no region can grow. Switches
// no region reached (other components) stay in layer 0. The result depends
// on the topology and k alone, so the VL assigner recomputes it.
//
// seeds[i] is region i's seed (none when k is 1).
func partition(n *net, k int) (part []uint8, seeds []int32) {
	part = make([]uint8, n.N)
	if k <= 1 || n.N == 0 {
		return part, nil
	}
	weight := make([]int64, n.N)
	for _, h := range n.Home {
		if h >= 0 {
			weight[h]++
		}
	}
	// Farthest-point seeds.
	const far = int32(1 << 30)
	dmin := make([]int32, n.N)
	for s := range dmin {
		dmin[s] = far
	}
	seeds = []int32{0}
	var queue []int32
	dist := make([]int32, n.N)
	for {
		src := seeds[len(seeds)-1]
		for s := range dist {
			dist[s] = -1
		}
		dist[src] = 0
		queue = append(queue[:0], src)
		for i := 0; i < len(queue); i++ {
			x := queue[i]
			dmin[x] = min(dmin[x], dist[x])
			for c := n.Off[x]; c < n.Off[x+1]; c++ {
				if y := n.Peer[c]; dist[y] < 0 {
					dist[y] = dist[x] + 1
					queue = append(queue, y)
				}
			}
		}
		if len(seeds) == k {
			break
		}
		best := int32(-1)
		for s := int32(0); s < int32(n.N); s++ {
			if dmin[s] < far && dmin[s] > 0 && (best < 0 || dmin[s] > dmin[best]) {
				best = s
			}
		}
		if best < 0 {
			break // fewer switches than layers
		}
		seeds = append(seeds, best)
	}
	const unclaimed = 0xFF
	for s := range part {
		part[s] = unclaimed
	}
	fronts := make([][]int32, len(seeds))
	heads := make([]int, len(seeds))
	load := make([]int64, len(seeds))
	for r, s := range seeds {
		fronts[r] = []int32{s}
	}
	for {
		r := -1
		for i := range fronts {
			for heads[i] < len(fronts[i]) && part[fronts[i][heads[i]]] != unclaimed {
				heads[i]++
			}
			if heads[i] < len(fronts[i]) && (r < 0 || load[i] < load[r]) {
				r = i
			}
		}
		if r < 0 {
			break
		}
		s := fronts[r][heads[r]]
		heads[r]++
		part[s] = uint8(r)
		load[r] += weight[s]
		for c := n.Off[s]; c < n.Off[s+1]; c++ {
			if y := n.Peer[c]; part[y] == unclaimed {
				fronts[r] = append(fronts[r], y)
			}
		}
	}
	for s := range part {
		if part[s] == unclaimed {
			part[s] = 0
		}
	}
	return part, seeds
}
