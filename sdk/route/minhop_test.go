package route

import (
	"context"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/testfab"
)

// TestMinHopTies: every tie gives min-hop walks that arrive; LowestPort
// always takes the lowest candidate, ByDestination candidate e mod n, and
// a fixed tie refuses LMC > 0.
func TestMinHopTies(t *testing.T) {
	for name, topo := range fabrics(t) {
		g := NewGraph(topo)
		hops, err := g.HopMatrix(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cand := g.MinHop(hops)
		dist := testfab.SwitchDistances(topo)
		for _, tie := range []Tie{LeastLoad, LowestPort, ByDestination} {
			r := MinHop(topo, tie)
			for e := range r.Planes {
				pl := r.Planes[e].Planes[0]
				home := testfab.HomeSwitch(topo, int32(e))
				for s := int32(0); s < int32(g.N); s++ {
					n, err := testfab.Walk(topo, pl, s, int32(e))
					if err != nil || n != dist[s][home] {
						t.Fatalf("%s tie %d: switch %d to endpoint %d: %d hops (%v), want %d", name, tie, s, e, n, err, dist[s][home])
					}
					if s == home || tie == LeastLoad {
						continue
					}
					c := cand(s, home, nil)
					want := c[0]
					if tie == ByDestination {
						want = c[e%len(c)]
					}
					if pl[s] != want {
						t.Fatalf("%s tie %d: switch %d to endpoint %d takes port %d of %v, want %d", name, tie, s, e, pl[s], c, want)
					}
				}
			}
		}
		if _, _, err := MinHopRoutes(context.Background(), g, Options{Tie: LowestPort, LMC: 1}); err == nil || !strings.Contains(err.Error(), "needs LeastLoad") {
			t.Fatalf("%s: LMC 1 with a fixed tie: %v", name, err)
		}
	}
}
