package ftree

import (
	"context"
	"slices"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/testfab/gen"
	"github.com/ibsm/ibsm/sdk/topology"
)

// TestDmkMatchesGeneral: the D-mod-k path writes byte for byte the planes
// the general algorithm writes, and reports the same unrouted pairs, on
// trees where it takes every plane (full 2-, 3- and 4-level trees, XGFTs,
// partial and empty leaves, a detached CA, switches outside the tree, a CA
// order, LMC), where it takes some (a cable or two down, switches out) and
// where it takes none (degraded throughout, parallel cables, port layouts
// that differ between switches).
func TestDmkMatchesGeneral(t *testing.T) {
	ft3 := func(k int) func() (*topology.Topology, error) {
		return func() (*topology.Topology, error) { return sdktest.FatTree3(k) }
	}
	shape := func(s gen.Shape) func() (*topology.Topology, error) {
		return func() (*topology.Topology, error) { return gen.Topology(s) }
	}
	// caDown takes the cables of the first n CAs of leaf leaf (by ftree's
	// leaf order) down.
	caDown := func(make func() (*topology.Topology, error), leaf, n int) func() (*topology.Topology, error) {
		return func() (*topology.Topology, error) {
			topo, err := make()
			if err != nil {
				return nil, err
			}
			tree, err := Build(topo, Config{})
			if err != nil {
				return nil, err
			}
			s := tree.Leaves[leaf]
			for _, e := range tree.LeafCAs[leaf][:n] {
				testfab.SetLinkState(topo, s, tree.Graph.Attachment(e).Port, topology.StateDown)
			}
			return topo, nil
		}
	}
	for _, tc := range []struct {
		name    string
		make    func() (*topology.Topology, error)
		frac    float64 // switch cables taken down
		lmc     uint8
		order   bool // CAs ranked in reverse
		missing bool // take a core and an aggregation switch out
		// fast says which planes take the D-mod-k path: all, some, none;
		// lost that some of them go to leaves some top switch cannot reach.
		fast string
		lost bool
	}{
		{name: "ft3-k8", make: ft3(8), fast: "all"},
		{name: "ft3-k12-lmc2", make: ft3(12), lmc: 2, fast: "all"},
		{name: "ft3-k16", make: ft3(16), fast: "all"},
		{name: "ft3-k8-ca-order-lmc1", make: ft3(8), lmc: 1, order: true, fast: "all"},
		{name: "ft2-6x3", make: func() (*topology.Topology, error) { return sdktest.FatTree2(6, 3, 4) }, fast: "all"},
		{name: "ft2-outside", make: withOutside, fast: "all"},
		{name: "4-level-radix8", make: shape(gen.FatTree{Radix: 8, Levels: 4}), lmc: 1, fast: "all"},
		{name: "3-ary-4-tree", make: shape(gen.FatTree{Arity: 3, Levels: 4}), fast: "all"},
		{name: "xgft", make: shape(gen.FatTree{Children: []int{3, 4, 2}, Parents: []int{1, 3, 2}}), lmc: 1, fast: "all"},
		{name: "partial-leaves", make: shape(gen.FatTree{Radix: 8, Levels: 3, CAsPerLeaf: 3}), fast: "all"},
		{name: "detached-ca", make: caDown(ft3(8), 5, 1), fast: "all"},
		{name: "empty-leaf", make: caDown(ft3(8), 6, 4), fast: "all"},
		{name: "ft3-k12-one-cable", make: ft3(12), frac: 0.0012, fast: "some"},
		{name: "ft3-k16-two-cables", make: ft3(16), frac: 0.0008, lmc: 1, fast: "some"},
		{name: "ft3-k16-4-cables", make: ft3(16), frac: 0.0017, fast: "some"},
		{name: "4-level-one-cable", make: shape(gen.FatTree{Radix: 8, Levels: 4}), frac: 0.0008, fast: "some"},
		{name: "ft2-one-cable", make: func() (*topology.Topology, error) { return sdktest.FatTree2(6, 3, 4) }, frac: 0.06, lmc: 1, fast: "some", lost: true},
		{name: "missing-switches", make: ft3(8), missing: true, fast: "some"},
		{name: "ft3-k12-5pct", make: ft3(12), frac: 0.05, fast: "some", lost: true},
		{name: "ft3-k12-20pct", make: ft3(12), frac: 0.2, fast: "some", lost: true},
		{name: "parallel", make: shape(gen.FatTree{Radix: 8, Levels: 3, Parallel: 2}), fast: "none"},
		{name: "rotated-ports", make: rotatedPorts, fast: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.make()
			if err != nil {
				t.Fatal(err)
			}
			if n := degrade(topo, tc.frac, 3); tc.frac > 0 && n == 0 {
				t.Fatalf("no cable taken down")
			}
			var cfg Config
			if tc.order {
				tree, err := Build(topo, Config{})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range slices.Backward(tree.CAOrder()) {
					cfg.CAOrder = append(cfg.CAOrder, topo.Nodes[topo.Endpoints()[e].Node].GUID)
				}
			}
			tree, err := Build(topo, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.missing {
				takeOut(topo, tree, tree.ByLevel[0][2])
				takeOut(topo, tree, tree.ByLevel[1][3])
				if tree, err = Build(topo, cfg); err != nil {
					t.Fatal(err)
				}
			}
			route := func(general bool) (*plan.Routes, *Report, *Router) {
				r, err := NewRouter(context.Background(), tree)
				if err != nil {
					t.Fatal(err)
				}
				r.general = general
				routes := NewRoutes(tree, 1<<tc.lmc)
				rep, err := r.RouteCAs(context.Background(), routes)
				if err != nil {
					t.Fatal(err)
				}
				return routes, rep, r
			}
			fast, frep, r := route(false)
			slow, srep, _ := route(true)
			w := r.newWorker()
			planes, fastPlanes, patched, lost := 0, 0, 0, 0
			for li, l := range tree.Leaves {
				w.ancestors(l)
				leafOK := w.dmkLeaf(l)
				for _, e := range tree.LeafCAs[li] {
					for k := range 1 << tc.lmc {
						planes++
						if leafOK && w.dmkPlane(l, int64(tree.CAIndex[e]), k) {
							fastPlanes++
							if len(w.patch) > 0 {
								patched++ // a switch lacks the digit slot or its parent there
							}
							if w.lost > 0 {
								lost++
							}
						}
					}
				}
			}
			got := map[bool]string{true: "some"}[fastPlanes > 0]
			if fastPlanes == planes {
				got = "all"
			} else if fastPlanes == 0 {
				got = "none"
			}
			if got != tc.fast {
				t.Fatalf("the D-mod-k path takes %d of %d planes (%s), want %s", fastPlanes, planes, got, tc.fast)
			}
			if (tc.frac > 0 || tc.missing) && got != "none" && patched == 0 {
				t.Fatalf("no D-mod-k plane has a switch without its digit slot or parent: nothing patched")
			}
			if (lost > 0) != tc.lost {
				t.Fatalf("%d D-mod-k planes go to leaves some top switch cannot reach, want some: %v", lost, tc.lost)
			}
			for e := range fast.Planes {
				a, b := fast.Planes[e].Planes, slow.Planes[e].Planes
				if len(a) != len(b) {
					t.Fatalf("endpoint %d: %d planes vs %d", e, len(a), len(b))
				}
				for k := range a {
					// NewRoutes leaves these planes to RouteCAs: no entry
					// may stay at its zero value (no route to a CA is 0).
					if tree.CAIndex[e] >= 0 && slices.Contains(b[k], 0) {
						t.Fatalf("endpoint %d plane %d: an entry left unwritten: %v", e, k, b[k])
					}
					// Switches' and detached endpoints' planes stay NoPort.
					if tree.CAIndex[e] < 0 && slices.ContainsFunc(b[k], func(p uint8) bool { return p != plan.NoPort }) {
						t.Fatalf("endpoint %d plane %d is not all NoPort: %v", e, k, b[k])
					}
					if !slices.Equal(a[k], b[k]) {
						t.Fatalf("endpoint %d plane %d:\n%v\nvs the general algorithm's\n%v", e, k, a[k], b[k])
					}
				}
			}
			if frep.SwitchPairs != srep.SwitchPairs || frep.CAPairs != srep.CAPairs || frep.Detached != srep.Detached || len(frep.Examples) != len(srep.Examples) {
				t.Fatalf("report %+v, the general algorithm's %+v", frep, srep)
			}
		})
	}
}

// takeOut takes every cable of switch s down.
func takeOut(topo *topology.Topology, tree *Tree, s int32) {
	for _, gs := range [][]Group{tree.Up[s], tree.Down[s]} {
		for _, g := range gs {
			for _, p := range g.Ports {
				testfab.SetLinkState(topo, s, p, topology.StateDown)
			}
		}
	}
}

// withOutside is a 2-level tree (4 leaves of 3 CAs, 3 spines) next to two
// switches cabled to each other and to no CA: a component outside the tree.
func withOutside() (*topology.Topology, error) {
	f := testfab.New()
	spines := []uint64{f.Switch(8), f.Switch(8), f.Switch(8)}
	a := f.Switch(4)
	for l := 0; l < 4; l++ {
		leaf := f.Switch(8)
		for x, sp := range spines {
			f.Link(leaf, 4+x, sp, l+1)
		}
		for c := 0; c < 3; c++ {
			f.CAOn(leaf, c+1)
		}
	}
	f.Link(a, 1, f.Switch(4), 1)
	return f.Build()
}

// rotatedPorts is a 2-level tree whose leaves cable spine x on port
// 4+(x+leaf)%3: the port layouts differ, so slots follow port order and
// the leaves climb to one spine through different slots.
func rotatedPorts() (*topology.Topology, error) {
	f := testfab.New()
	spines := []uint64{f.Switch(8), f.Switch(8), f.Switch(8)}
	for l := 0; l < 5; l++ {
		leaf := f.Switch(8)
		for x, sp := range spines {
			f.Link(leaf, 4+(x+l)%3, sp, l+1)
		}
		for c := 0; c < 3; c++ {
			f.CAOn(leaf, c+1)
		}
	}
	return f.Build()
}
