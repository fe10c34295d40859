package ftree

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/cdg"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// switchLinks lists every switch-to-switch cable once, by its lower end.
func switchLinks(t *topology.Topology) [][2]int32 {
	var out [][2]int32
	for s, node := range t.Switches() {
		for p, port := range t.Nodes[node].Ports {
			if p == 0 || !port.Peer.Connected() {
				continue
			}
			ps := t.SwitchIndex(port.Peer.Node)
			if ps < 0 || ps < int32(s) || (ps == int32(s) && port.Peer.Port < uint8(p)) {
				continue
			}
			out = append(out, [2]int32{int32(s), int32(p)})
		}
	}
	return out
}

// degrade takes down ⌊frac·links⌋ seeded switch-to-switch cables.
func degrade(t *topology.Topology, frac float64, seed uint64) int {
	links := switchLinks(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	rng.Shuffle(len(links), func(i, j int) { links[i], links[j] = links[j], links[i] })
	n := int(frac * float64(len(links)))
	for _, l := range links[:n] {
		testfab.SetLinkState(t, l[0], uint8(l[1]), topology.StateDown)
	}
	return n
}

// checkAll walks every plane from every CA-carrying switch to every CA and
// checks the single-VL CDG of the realised tables.
func checkAll(t *testing.T, topo *topology.Topology, r *plan.Routes, lmc uint8) {
	t.Helper()
	c := newChecker(topo, r)
	leaves := map[int32]bool{}
	for _, h := range c.home {
		leaves[h] = true
	}
	for _, d := range c.cas {
		for k := range r.Planes[d].Planes {
			for leaf := range leaves {
				if err := c.walk(leaf, d, k, 1, nil); err != nil {
					t.Fatalf("CA pair unroutable: %v", err)
				}
			}
		}
	}
	real, err := testfab.Realize(topo, r, lmc)
	if err != nil {
		t.Fatal(err)
	}
	if cyc, err := cdg.Cycle(context.Background(), real); err != nil {
		t.Fatal(err)
	} else if cyc != "" {
		t.Fatalf("single-VL CDG is cyclic: %s", cyc)
	}
}

func TestDegradedTrees(t *testing.T) {
	builds := map[string]func() (*topology.Topology, error){
		"ft3-12":  func() (*topology.Topology, error) { return sdktest.FatTree3(12) },
		"ft2-648": func() (*topology.Topology, error) { return sdktest.FatTree2(36, 18, 18) },
	}
	for name, build := range builds {
		for _, frac := range []float64{0.01, 0.05} {
			for seed := uint64(1); seed <= 3; seed++ {
				topo, err := build()
				if err != nil {
					t.Fatal(err)
				}
				cut := degrade(topo, frac, seed)
				for _, lmc := range []uint8{0, 1} {
					r, res, err := Route(context.Background(), topo, lmc, Config{})
					if err != nil {
						t.Fatalf("%s %.0f%% seed %d: %v", name, frac*100, seed, err)
					}
					if res.CAs.CAPairs != 0 {
						t.Errorf("%s %.0f%% seed %d: %d CA pairs reported unroutable: %v", name, frac*100, seed, res.CAs.CAPairs, res.CAs.Examples)
					}
					checkAll(t, topo, r, lmc)
					if lmc == 0 && seed == 1 {
						a2a, err := newChecker(topo, r).allToAll()
						if err != nil {
							t.Fatal(err)
						}
						t.Logf("%s, %d cables down (%.0f%%): a2a max switch-link load %d; unrouted switch->CA %d, switch->switch %d",
							name, cut, frac*100, a2a, res.CAs.SwitchPairs, res.Switches.SwitchPairs)
					}
				}
			}
		}
	}
}

// TestMissingSwitches takes whole core and aggregation switches out: CA
// routes go around them and stay deadlock-free.
func TestMissingSwitches(t *testing.T) {
	topo, err := sdktest.FatTree3(8)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := Build(topo, Config{})
	if err != nil {
		t.Fatal(err)
	}
	down := func(s int32) {
		for _, gs := range [][]Group{tree.Up[s], tree.Down[s]} {
			for _, g := range gs {
				for _, p := range g.Ports {
					testfab.SetLinkState(topo, s, p, topology.StateDown)
				}
			}
		}
	}
	down(tree.ByLevel[0][0]) // a core
	down(tree.ByLevel[0][5]) // another core
	down(tree.ByLevel[1][3]) // an aggregation switch
	r, res, err := Route(context.Background(), topo, 0, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res.CAs.CAPairs != 0 {
		t.Errorf("%d CA pairs unroutable", res.CAs.CAPairs)
	}
	checkAll(t, topo, r, 0)
	// The lost switches reach nothing and are reported, not routed.
	if res.Switches.SwitchPairs == 0 || res.CAs.SwitchPairs == 0 {
		t.Errorf("isolated switches not reported: %+v %+v", res.CAs, res.Switches)
	}
}

// TestLMCPlanes: the planes of a CA go through different top switches, and
// each plane alone is shift-congestion-free.
func TestLMCPlanes(t *testing.T) {
	topo, err := sdktest.FatTree3(8)
	if err != nil {
		t.Fatal(err)
	}
	const lmc = 2
	r, res, err := Route(context.Background(), topo, lmc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	tree := res.Tree
	sws := topo.Switches()
	for _, d := range tree.CAOrder() {
		planes := r.Planes[d].Planes
		if len(planes) != 1<<lmc {
			t.Fatalf("endpoint %d: %d planes", d, len(planes))
		}
		// Walk from a leaf of another pod: the route crosses a top switch.
		home := testfab.HomeSwitch(topo, d)
		var far int32 = -1
		for _, l := range tree.Leaves {
			if tree.Level[l] == tree.LeafLevel() && !shareParent(tree, l, home) {
				far = l
				break
			}
		}
		tops := map[int32]bool{}
		for k, pl := range planes {
			s := far
			for pl[s] != 0 && tree.Level[s] > 0 {
				peer := topo.Port(topology.PortRef{Node: sws[s], Port: pl[s]}).Peer
				s = topo.SwitchIndex(peer.Node)
			}
			if tree.Level[s] != 0 {
				t.Fatalf("endpoint %d plane %d: route from a far leaf never reaches a top switch", d, k)
			}
			tops[s] = true
		}
		if len(tops) != 1<<lmc {
			t.Fatalf("endpoint %d: %d planes use %d distinct top switches", d, 1<<lmc, len(tops))
		}
	}
	c := newChecker(topo, r)
	for k := 0; k < 1<<lmc; k++ {
		one := &plan.Routes{Planes: make([]plan.DestPlanes, len(r.Planes))}
		for e := range r.Planes {
			pls := r.Planes[e].Planes
			one.Planes[e].Planes = pls[k%len(pls) : k%len(pls)+1]
		}
		c.r = one
		if ws, err := c.worstShift(tree.CAOrder()); err != nil || ws != 1 {
			t.Errorf("plane %d: worst shift load %d (%v), want 1", k, ws, err)
		}
	}
}

func shareParent(t *Tree, a, b int32) bool {
	for _, x := range t.Up[a] {
		for _, y := range t.Up[b] {
			if x.Peer == y.Peer {
				return true
			}
		}
	}
	return false
}

func TestNotFatTrees(t *testing.T) {
	twoLevel := func(mod func(f *testfab.Fabric, spines, leaves []uint64)) func() (*topology.Topology, error) {
		return func() (*topology.Topology, error) {
			f := testfab.New()
			spines := []uint64{f.Switch(8), f.Switch(8)}
			var leaves []uint64
			for l := 0; l < 4; l++ {
				leaf := f.Switch(8)
				leaves = append(leaves, leaf)
				for i, s := range spines {
					f.Link(leaf, 5+i, s, l+1)
				}
				for c := 0; c < 2; c++ {
					f.Link(leaf, c+1, f.CA(), 1)
				}
			}
			mod(f, spines, leaves)
			return f.Build()
		}
	}
	tests := []struct {
		name  string
		build func() (*topology.Topology, error)
		cfg   func(*topology.Topology) Config
		want  []string
	}{
		{"ring", func() (*topology.Topology, error) { return testfab.Ring(6, 2) }, nil, []string{"both at level 0", "cabled to each other"}},
		{"torus", func() (*topology.Topology, error) { return testfab.Torus2D(3, 3, 1) }, nil, []string{"at level 0"}},
		{"spines cabled together", twoLevel(func(f *testfab.Fabric, s, _ []uint64) { f.Link(s[0], 8, s[1], 8) }), nil, []string{"both at level 0", "sw1", "sw2"}},
		{"CA on a spine", twoLevel(func(f *testfab.Fabric, s, _ []uint64) { f.Link(s[0], 8, f.CA(), 1) }), nil, []string{"carries CAs at level"}},
		{"leaf configured as root", twoLevel(func(*testfab.Fabric, []uint64, []uint64) {}), func(t *topology.Topology) Config {
			return Config{Roots: []uint64{testfab.SwitchGUIDBase + 3}}
		}, []string{"check root_guids"}},
		{"no CA", func() (*topology.Topology, error) { return testfab.Line(3, 0) }, nil, []string{"no switch has a CA"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			var cfg Config
			if tc.cfg != nil {
				cfg = tc.cfg(topo)
			}
			_, err = Build(topo, cfg)
			var nf *NotFatTreeError
			if !errors.As(err, &nf) {
				t.Fatalf("err = %v, want *NotFatTreeError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestConfig(t *testing.T) {
	topo, err := sdktest.FatTree3(8)
	if err != nil {
		t.Fatal(err)
	}
	auto, err := Build(topo, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var roots []uint64
	for _, s := range auto.Roots {
		roots = append(roots, topo.Nodes[topo.Switches()[s]].GUID)
	}
	conf, err := Build(topo, Config{Roots: append(roots, 0xdead)})
	if err != nil {
		t.Fatal(err)
	}
	if conf.How != "configured" || len(conf.Roots) != len(auto.Roots) || len(conf.Missing) != 1 || !strings.Contains(conf.Missing[0], "dead") {
		t.Errorf("configured roots: how %q, %d roots, missing %v", conf.How, len(conf.Roots), conf.Missing)
	}

	// A CA order (here: the default one reversed) is followed, and shifts
	// in that order stay congestion-free.
	def := auto.CAOrder()
	var order []uint64
	for i := len(def) - 1; i >= 0; i-- {
		ep := topo.Endpoints()[def[i]]
		order = append(order, topo.Port(ep).GUID)
	}
	r, res, err := Route(context.Background(), topo, 0, Config{CAOrder: order})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Tree.CAOrder()
	for i := range got {
		if got[i] != def[len(def)-1-i] {
			t.Fatalf("CA order position %d: endpoint %d, want %d", i, got[i], def[len(def)-1-i])
		}
	}
	if ws, err := newChecker(topo, r).worstShift(got); err != nil || ws != 1 {
		t.Errorf("worst shift in the configured order: %d (%v), want 1", ws, err)
	}
}
