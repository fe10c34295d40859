package sftree

import (
	"context"
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
			g, _, u := degradedUpDown(t, tc.k, tc.frac, tc.seed, tc.parallel)
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

// degradedUpDown is ft3-k (with parallel cables per switch pair if > 0)
// with a seeded share frac of its switch cables down, split by ftree's
// levels.
func degradedUpDown(t *testing.T, k int, frac float64, seed uint64, parallel int) (*route.Graph, Tree, *upDown) {
	t.Helper()
	topo, err := sdktest.FatTree3(k)
	if parallel > 0 {
		topo, err = gen.Topology(gen.FatTree{Radix: k, Levels: 3, Parallel: parallel})
	}
	if err != nil {
		t.Fatal(err)
	}
	degrade(topo, frac, seed)
	ft, err := ftree.Build(topo, ftree.Config{})
	if err != nil {
		t.Fatal(err)
	}
	g := route.NewGraph(topo)
	tree := FromFtree(ft)
	u, err := newUpDown(g, tree)
	if err != nil {
		t.Fatal(err)
	}
	return g, tree, u
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

// TestPassMatchesWalk: pass, deciding switches in the subtree's order by
// one look at their next switch, routes exactly the switches (with the
// same ports, the same sibling) that following each one's walk hop by hop
// does (passWalk, the plain reference), for the first root and for a
// second root after it, on full and degraded trees.
func TestPassMatchesWalk(t *testing.T) {
	for _, tc := range []struct {
		k    int
		frac float64
		seed uint64
	}{{8, 0, 0}, {12, 0.05, 2}, {12, 0.1, 3}, {8, 0.2, 4}, {8, 0.3, 5}} {
		t.Run(fmt.Sprintf("ft3-k%d-%.0fpct", tc.k, 100*tc.frac), func(t *testing.T) {
			g, tree, u := degradedUpDown(t, tc.k, tc.frac, tc.seed, 0)
			rows, err := u.planes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			root, _, err := chooseRoot(g, tree, rows, 0)
			if err != nil {
				t.Fatal(err)
			}
			second := tree.Leaves()[len(tree.Leaves())-1]
			got := make([]plan.Plane, g.N)
			want := make([]plan.Plane, g.N)
			for d := range rows {
				got[d], want[d] = slices.Clone(rows[d]), slices.Clone(rows[d])
			}
			c := newCombiner(g, u, got, root)
			c.addRoot(second, slices.Clone(rows[second]))
			ref := &combiner{g: g, ud: u, rows: want, roots: c.roots, trees: c.trees, sibs: c.sibs}
			sc := c.newPassScratch()
			routed := 0
			for d := range int32(g.N) {
				if u.rank[d] < 0 {
					continue
				}
				for i := range c.roots {
					sib := c.pass(d, i, sc)
					added := slices.Sorted(slices.Values(sc.added))
					wsib, wadded := ref.passWalk(d, i)
					slices.Sort(wadded)
					if sib != wsib || !slices.Equal(added, wadded) || !slices.Equal(got[d], want[d]) {
						t.Fatalf("row %d, root %d: sibling %d, routed %v, row %v; walking: %d, %v, %v", d, i, sib, added, got[d], wsib, wadded, want[d])
					}
					routed += len(added)
				}
			}
			if routed == 0 {
				t.Fatalf("no pass routed anything: nothing compared")
			}
		})
	}
}

// passWalk is pass as it was before the subtree order: every unrouted
// switch follows its walk until a decided switch, and the walk's switches
// take its fate. It returns the sibling port and the switches routed.
func (c *combiner) passWalk(d int32, i int) (uint8, []int32) {
	const (
		unknown = iota
		good
		dead
	)
	row := c.rows[d]
	r, tree := c.roots[i], c.trees[i]
	state := make([]uint8, len(row))
	for x := range state {
		if row[x] != plan.NoPort {
			state[x] = good
		}
	}
	var added []int32
	sib := plan.NoPort
	if state[r] != good {
		state[r] = dead
		if sib = c.sibling(row, i); sib != plan.NoPort {
			state[r], row[r] = good, sib
			added = append(added, r)
		}
	}
	for _, s := range c.ud.order {
		if row[s] != plan.NoPort {
			continue
		}
		var path []int32
		x := s
		for state[x] == unknown {
			path = append(path, x)
			if tree[x] == plan.NoPort || tree[x] == 0 {
				state[x] = dead
				break
			}
			x = c.g.PeerSwitch(x, tree[x])
		}
		for _, y := range path {
			state[y] = state[x]
		}
		if state[x] == good {
			row[s] = tree[s]
			added = append(added, s)
		}
	}
	return sib, added
}
