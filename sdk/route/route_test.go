package route

import (
	"context"
	"math/rand"
	"runtime"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

func fabrics(t *testing.T) map[string]*topology.Topology {
	t.Helper()
	out := map[string]*topology.Topology{}
	for name, f := range map[string]func() (*topology.Topology, error){
		"ring7":    func() (*topology.Topology, error) { return testfab.Ring(7, 2) },
		"line5":    func() (*topology.Topology, error) { return testfab.Line(5, 1) },
		"torus4x3": func() (*topology.Topology, error) { return testfab.Torus2D(4, 3, 1) },
		"fattree6": func() (*topology.Topology, error) { return testfab.FatTree3(6) },
	} {
		topo, err := f()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = topo
	}
	return out
}

func TestHopMatrix(t *testing.T) {
	for name, topo := range fabrics(t) {
		// Cut one link so that a distance changes and a down link is exercised.
		testfab.SetLinkState(topo, 0, 1, topology.StateDown)
		g := NewGraph(topo)
		m, err := g.HopMatrix(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := testfab.SwitchDistances(topo)
		for a := 0; a < g.N; a++ {
			for b := 0; b < g.N; b++ {
				got := int(m[b*g.N+a])
				if got == int(Unreachable) {
					got = -1
				}
				if got != want[a][b] {
					t.Fatalf("%s: dist(%d,%d) = %d, want %d", name, a, b, got, want[a][b])
				}
			}
		}
	}
}

// TestPickSingleMatchesRescan checks the cursor shortcut against the plain
// "least load, lowest port" rescan it replaces.
func TestPickSingleMatchesRescan(t *testing.T) {
	topo, err := testfab.Ring(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(topo)
	for seed := int64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		nc := 1 + rng.Intn(20)
		c := make([]uint8, nc)
		for i := range c {
			c[i] = uint8(1 + 2*i)
		}
		ld := make([]int32, 64)
		for i := range ld {
			ld[i] = int32(rng.Intn(4))
		}
		ref := append([]int32(nil), ld...)
		// Group: a mix of CA-like (weight 1) and switch-like (weight 0) endpoints.
		eps := topo.Endpoints()
		ng := 1 + rng.Intn(40)
		grp := make([]int32, ng)
		for i := range grp {
			grp[i] = int32(rng.Intn(len(eps)))
		}
		routes := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
		for e := range routes.Planes {
			routes.Planes[e].Planes = []plan.Plane{make(plan.Plane, g.N)}
		}
		for _, e := range grp {
			best := c[0]
			for _, p := range c[1:] {
				if ref[p] < ref[best] {
					best = p
				}
			}
			g.pickSingle(c, ld, []int32{e}, false, routes, 0)
			if got := routes.Planes[e].Planes[0][0]; got != best {
				t.Fatalf("seed %d: single pick %d, rescan %d", seed, got, best)
			}
			if !g.attach[e].IsSwitch {
				ref[best]++
			}
		}
		for i := range ld {
			if ld[i] != ref[i] {
				t.Fatalf("seed %d: loads diverged at port %d: %d vs %d", seed, i, ld[i], ref[i])
			}
		}
	}
}

// TestGroupPickMatchesOneByOne: picking for a whole group equals picking one
// destination at a time.
func TestGroupPickMatchesOneByOne(t *testing.T) {
	topo, err := testfab.Ring(3, 4)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(topo)
	eps := topo.Endpoints()
	for seed := int64(0); seed < 100; seed++ {
		rng := rand.New(rand.NewSource(seed))
		c := []uint8{2, 3, 5, 7, 11}[:1+rng.Intn(5)]
		ldA, ldB := make([]int32, 16), make([]int32, 16)
		for i := range ldA {
			ldA[i] = int32(rng.Intn(3))
			ldB[i] = ldA[i]
		}
		grp := make([]int32, 1+rng.Intn(len(eps)))
		for i := range grp {
			grp[i] = int32(rng.Intn(len(eps)))
		}
		mk := func() *plan.Routes {
			r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
			for e := range r.Planes {
				r.Planes[e].Planes = []plan.Plane{make(plan.Plane, g.N)}
			}
			return r
		}
		ra, rb := mk(), mk()
		var seqA, seqB []uint8
		g.pickSingle(c, ldA, grp, false, ra, 1)
		for _, e := range grp {
			seqA = append(seqA, ra.Planes[e].Planes[0][1])
		}
		for _, e := range grp {
			g.pickSingle(c, ldB, []int32{e}, false, rb, 1)
			seqB = append(seqB, rb.Planes[e].Planes[0][1])
		}
		// Repeated endpoints overwrite; compare the final loads and last picks.
		for i := range ldA {
			if ldA[i] != ldB[i] {
				t.Fatalf("seed %d: loads differ: %v vs %v", seed, ldA, ldB)
			}
		}
		for i := range grp {
			if ra.Planes[grp[i]].Planes[0][1] != rb.Planes[grp[i]].Planes[0][1] {
				t.Fatalf("seed %d: picks differ %v vs %v", seed, seqA, seqB)
			}
		}
	}
}

// TestBalanceDeterministic: the result must not depend on how many workers
// split the switches.
func TestBalanceDeterministic(t *testing.T) {
	for name, topo := range fabrics(t) {
		for _, lmc := range []uint8{0, 1} {
			var got [2]*plan.Routes
			for i, procs := range []int{1, 2} {
				old := runtime.GOMAXPROCS(procs)
				g := NewGraph(topo)
				m, err := g.HopMatrix(context.Background())
				if err == nil {
					got[i], _, err = Balance(context.Background(), g, g.MinHop(m), Options{LMC: lmc})
				}
				runtime.GOMAXPROCS(old)
				if err != nil {
					t.Fatal(err)
				}
			}
			for e := range got[0].Planes {
				for k := range got[0].Planes[e].Planes {
					a, b := got[0].Planes[e].Planes[k], got[1].Planes[e].Planes[k]
					if string(a) != string(b) {
						t.Fatalf("%s lmc %d: endpoint %d plane %d differs between 1 and 2 workers", name, lmc, e, k)
					}
				}
			}
		}
	}
}

func TestBalanceCancelled(t *testing.T) {
	topo, err := testfab.FatTree3(4)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := NewGraph(topo)
	if _, err := g.HopMatrix(ctx); err == nil {
		t.Error("HopMatrix ignored a cancelled context")
	}
	if _, _, err := Balance(ctx, g, func(s, d int32, b []uint8) []uint8 { return b }, Options{}); err == nil {
		t.Error("Balance ignored a cancelled context")
	}
	if _, _, err := Balance(context.Background(), g, func(s, d int32, b []uint8) []uint8 { return b }, Options{LMC: 8}); err == nil {
		t.Error("Balance accepted LMC 8")
	}
}

// TestPickSpreadMatchesGeneral checks the one-pass LMC shortcut against
// the plane-by-plane OpenSM-style choice on switches whose candidates lead
// to distinct peers.
func TestPickSpreadMatchesGeneral(t *testing.T) {
	topo, err := testfab.FatTree3(8)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(topo)
	eps := topo.Endpoints()
	stamp := make([]int32, g.N)
	for seed := int64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		s := int32(rng.Intn(g.N))
		links := g.Links(s)
		var c []uint8
		for _, l := range links {
			if rng.Intn(3) > 0 {
				c = append(c, l.Port)
			}
		}
		if len(c) < 2 || !g.distinctPeers(s, c, stamp) {
			continue
		}
		np := 2
		if len(c) >= 4 && rng.Intn(2) == 0 {
			np = 4
		}
		ldA := make([]int32, len(g.peer[s]))
		for i := range ldA {
			ldA[i] = int32(rng.Intn(3))
		}
		ldB := append([]int32(nil), ldA...)
		grp := make([]int32, 1+rng.Intn(20))
		for i := range grp {
			grp[i] = int32(rng.Intn(len(eps)))
		}
		mk := func() *plan.Routes {
			r := &plan.Routes{Planes: make([]plan.DestPlanes, len(eps))}
			for e := range r.Planes {
				for k := 0; k < np; k++ {
					r.Planes[e].Planes = append(r.Planes[e].Planes, make(plan.Plane, g.N))
				}
			}
			return r
		}
		ra, rb := mk(), mk()
		for _, e := range grp {
			// One destination at a time so repeated endpoints compare equal.
			g.pickSpread(c, ldA, []int32{e}, false, ra, s, np)
			g.pickGeneral(c, ldB, e, false, rb, s, nil, nil)
			for k := 0; k < np; k++ {
				if a, b := ra.Planes[e].Planes[k][s], rb.Planes[e].Planes[k][s]; a != b {
					t.Fatalf("seed %d: endpoint %d plane %d: spread %d, general %d", seed, e, k, a, b)
				}
			}
		}
		for i := range ldA {
			if ldA[i] != ldB[i] {
				t.Fatalf("seed %d: loads differ %v vs %v", seed, ldA, ldB)
			}
		}
	}
}
