package sftree

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/sdktest"
)

// TestRowsMatchPerSwitch: the grouped climb gives every up*/down* row
// exactly as choosing each climber's closest parents on its own does
// (rowPerSwitch, the plain reference), on full and degraded trees.
func TestRowsMatchPerSwitch(t *testing.T) {
	for _, tc := range []struct {
		k    int
		frac float64
		seed uint64
	}{{8, 0, 0}, {12, 0, 0}, {12, 0.05, 2}, {16, 0.05, 3}, {8, 0.2, 4}} {
		t.Run(fmt.Sprintf("ft3-k%d-%.0fpct", tc.k, 100*tc.frac), func(t *testing.T) {
			topo, err := sdktest.FatTree3(tc.k)
			if err != nil {
				t.Fatal(err)
			}
			degrade(topo, tc.frac, tc.seed)
			ft, err := ftree.Build(topo, ftree.Config{})
			if err != nil {
				t.Fatal(err)
			}
			g := route.NewGraph(topo)
			u, err := newUpDown(g, FromFtree(ft))
			if err != nil {
				t.Fatal(err)
			}
			if len(u.climb) >= len(u.order) {
				t.Errorf("%d groups for %d switches: nothing shared", len(u.climb), len(u.order))
			}
			sc, ref := u.newScratch(), u.newScratch()
			got, want := make(plan.Plane, g.N), make(plan.Plane, g.N)
			for d := range int32(g.N) {
				if err := u.row(d, got, sc); err != nil {
					t.Fatal(err)
				}
				if err := u.rowPerSwitch(d, want, ref); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("row %d differs from the per-switch choice", d)
				}
			}
		})
	}
}

// rowPerSwitch is row as it was before climbers were grouped: each
// climber scans its own up links.
func (u *upDown) rowPerSwitch(d int32, pl plan.Plane, sc *scratch) error {
	for i := range pl {
		pl[i] = plan.NoPort
		sc.dist[i] = route.Unreachable
	}
	if u.rank[d] < 0 {
		return nil
	}
	pl[d] = 0
	sc.dist[d] = 0
	// Ancestors by BFS over up links; BFS order is also ascending distance.
	q := append(sc.queue[:0], d)
	for h := 0; h < len(q); h++ {
		x := q[h]
		if sc.dist[x] >= route.MaxHops {
			return fmt.Errorf("sftree: switch 0x%016x is more than %d levels above another: the ranking is not a tree", u.g.SwitchGUID(x), route.MaxHops)
		}
		for _, l := range u.up[x] {
			if sc.dist[l.Peer] == route.Unreachable {
				sc.dist[l.Peer] = sc.dist[x] + 1
				q = append(q, l.Peer)
			}
		}
	}
	for _, a := range q[1:] {
		want := sc.dist[a] - 1
		c := sc.cand[:0]
		for _, l := range u.down[a] {
			if sc.dist[l.Peer] == want && (pl[l.Peer] != plan.NoPort) {
				c = append(c, l.Port)
			}
		}
		sc.cand = c
		// BFS layering guarantees a child one level closer.
		pl[a] = c[int(d)%len(c)]
	}
	sc.queue = q
	// Climbers, parents first. Ancestors already hold a port.
	for _, s := range u.order {
		if pl[s] != plan.NoPort {
			continue
		}
		// One pass: the candidates restart whenever a closer parent shows.
		best := route.Unreachable
		c := sc.cand[:0]
		for _, l := range u.up[s] {
			switch dp := sc.dist[l.Peer]; {
			case dp < best:
				best = dp
				c = append(c[:0], l.Port)
			case dp == best && dp != route.Unreachable:
				c = append(c, l.Port)
			}
		}
		sc.cand = c
		if best == route.Unreachable {
			continue
		}
		if best >= route.MaxHops {
			return fmt.Errorf("sftree: up*/down* path from switch 0x%016x longer than %d hops", u.g.SwitchGUID(s), route.MaxHops)
		}
		pl[s] = c[int(d)%len(c)]
		sc.dist[s] = best + 1
	}
	return nil
}
