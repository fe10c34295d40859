package nue

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/sssp"
	"github.com/ibsm/ibsm/sdk/plan"
)

// TestLoadByDepth says where a 1-VL routing's all-to-all channel load sits
// against sssp's, when IBSM_NUE_LOADS=1 and IBSM_NUE_NET names a topology
// file: the total (detours add to it), the load by depth of the channel in
// the escape tree (the root's links first), and the hottest channels with
// the share of their load on shortest paths. It fails if a route loops.
func TestLoadByDepth(t *testing.T) {
	file := os.Getenv("IBSM_NUE_NET")
	if os.Getenv("IBSM_NUE_LOADS") != "1" || file == "" {
		t.Skip("set IBSM_NUE_LOADS=1 and IBSM_NUE_NET=<topology file>")
	}
	topo := readNet(t, file)
	n, err := newNet(topo)
	if err != nil {
		t.Fatal(err)
	}
	cas := make([]int64, n.N)
	for e, h := range n.Home {
		if h >= 0 && n.IsCA[e] {
			cas[h]++
		}
	}
	// The balanced tree from the central root: what Route keeps on the
	// random graphs (its report says which).
	esc := newEscape(n, -1, true)
	depth := esc.hops(n, esc.roots[0])
	// Switch distances (BFS from each switch), for the shortest-path share.
	dist := make([][]int32, n.N)
	for s := range dist {
		d := make([]int32, n.N)
		dist[s] = d
		for i := range d {
			d[i] = -1
		}
		d[s] = 0
		q := []int32{int32(s)}
		for i := 0; i < len(q); i++ {
			for c := n.Off[q[i]]; c < n.Off[q[i]+1]; c++ {
				if y := n.Peer[c]; d[y] < 0 {
					d[y] = d[q[i]] + 1
					q = append(q, y)
				}
			}
		}
	}
	loads := func(planes []plan.DestPlanes) (load, minimal, turns []int64) {
		load, minimal, turns = make([]int64, n.Channels()), make([]int64, n.Channels()), make([]int64, n.turns)
		var path []int32
		for e, h := range n.Home {
			if h < 0 || !n.IsCA[e] {
				continue
			}
			pl := planes[e].Planes[0]
			for s := int32(0); s < int32(n.N); s++ {
				if cas[s] == 0 || s == h {
					continue
				}
				path = path[:0]
				for x := s; x != h; x = n.Peer[path[len(path)-1]] {
					if len(path) > n.N {
						t.Fatalf("the route from switch %d toward endpoint %d loops", s, e)
					}
					path = append(path, n.ChannelOf(x, uint8(pl[x])))
				}
				for i, c := range path {
					if i > 0 {
						turns[n.turn(path[i-1], c)] += cas[s]
					}
					load[c] += cas[s]
					if int32(len(path)) == dist[s][h] {
						minimal[c] += cas[s]
					}
				}
			}
		}
		return load, minimal, turns
	}
	np, _, rep, err := Route(context.Background(), topo, Options{Budget: 1, Reroute: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("nue kept the balanced escape tree: %v", rep.BalancedEscape)
	sp, _, err := sssp.Route(context.Background(), topo, 0)
	if err != nil {
		t.Fatal(err)
	}
	var held [][]int64 // turn loads of nue's routes, then sssp's
	for _, r := range []struct {
		name   string
		planes []plan.DestPlanes
	}{{"nue 1 VL", np}, {"sssp", sp}} {
		load, minimal, turns := loads(r.planes)
		held = append(held, turns)
		var total int64
		for _, l := range load {
			total += l
		}
		mean := float64(total) / float64(len(load))
		sum, cnt, top := make([]int64, n.N), make([]int64, n.N), make([]int64, n.N)
		for c, l := range load {
			d := min(depth[n.From[c]], depth[n.Peer[c]])
			sum[d] += l
			cnt[d]++
			top[d] = max(top[d], l)
		}
		t.Logf("%s: total channel load %d, mean %.0f", r.name, total, mean)
		for d := range sum {
			if cnt[d] > 0 {
				t.Logf("  escape-tree depth %d: %d channels, mean %.2fx, max %.2fx the mean", d, cnt[d], float64(sum[d])/float64(cnt[d])/mean, float64(top[d])/mean)
			}
		}
		hot := make([]int32, len(load))
		for c := range hot {
			hot[c] = int32(c)
		}
		slices.SortFunc(hot, func(a, b int32) int { return int(load[b] - load[a]) })
		for _, c := range hot[:8] {
			x, y := n.From[c], n.Peer[c]
			t.Logf("  hot %d->%d (depth %d->%d): %.2fx the mean, %.0f%% of it on shortest paths", x, y, depth[x], depth[y], float64(load[c])/mean, 100*float64(minimal[c])/float64(load[c]))
		}
	}
	var used [2]int
	var all, kept int64
	for t := range held[1] {
		for i := range used {
			if held[i][t] > 0 {
				used[i]++
			}
		}
		all += held[1][t]
		if held[0][t] > 0 {
			kept += held[1][t]
		}
	}
	possible := 0 // turns that do not go back over the same cable
	for s := int32(0); s < int32(n.N); s++ {
		possible += int(n.deg(s) * (n.deg(s) - 1))
	}
	t.Logf("turns taken (of %d): nue 1 VL %d, sssp %d; sssp's turn load on turns nue's routes hold: %.1f%%", possible, used[0], used[1], 100*float64(kept)/float64(all))
}
