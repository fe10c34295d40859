package sftree

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/ftree"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/route"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab/gen"
)

// TestRowsMatchPerSwitch: the grouped climb and the descents that count
// ways down while climbing give every up*/down* row exactly as choosing
// each climber's closest parents on its own and scanning each ancestor's
// down links do (rowPerSwitch without upFar, the plain reference), on
// full, degraded and parallel-cable trees.
func TestRowsMatchPerSwitch(t *testing.T) {
	for _, tc := range []struct {
		k        int
		frac     float64
		seed     uint64
		parallel int
	}{{8, 0, 0, 0}, {12, 0, 0, 0}, {12, 0.05, 2, 0}, {16, 0.05, 3, 0}, {8, 0.2, 4, 0}, {12, 0, 0, 2}, {12, 0.05, 5, 2}} {
		t.Run(fmt.Sprintf("ft3-k%d-%.0fpct-par%d", tc.k, 100*tc.frac, tc.parallel), func(t *testing.T) {
			topo, err := sdktest.FatTree3(tc.k)
			if tc.parallel > 0 {
				topo, err = gen.Topology(gen.FatTree{Radix: tc.k, Levels: 3, Parallel: tc.parallel})
			}
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
			scan := *u
			scan.upFar = nil
			sc, ref := u.newScratch(), u.newScratch()
			got, want := make(plan.Plane, g.N), make(plan.Plane, g.N)
			for d := range int32(g.N) {
				if err := u.row(d, got, sc); err != nil {
					t.Fatal(err)
				}
				if err := scan.rowPerSwitch(d, want, ref); err != nil {
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
	if ok, err := u.descents(d, pl, sc); !ok || err != nil {
		return err
	}
	for _, s := range u.order {
		if pl[s] != plan.NoPort {
			continue
		}
		best := route.Unreachable
		for _, l := range u.up[s] {
			best = min(best, sc.dist[l.Peer])
		}
		if best == route.Unreachable {
			continue
		}
		var c []uint8
		for _, l := range u.up[s] {
			if sc.dist[l.Peer] == best {
				c = append(c, l.Port)
			}
		}
		pl[s] = c[int(d)%len(c)]
		sc.dist[s] = best + 1
	}
	return nil
}
