package nue

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
)

// torus3 builds an x×y×z torus (wraparound in every dimension of size > 2)
// with cas CAs per switch: ports 1..6 are ±x, ±y, ±z, CAs from port 7.
func torus3(t testing.TB, x, y, z, cas int) *topology.Topology {
	t.Helper()
	f := testfab.New()
	sw := make([]uint64, x*y*z)
	for i := range sw {
		sw[i] = f.Switch(6 + cas)
		for c := 0; c < cas; c++ {
			f.Link(f.CA(), 1, sw[i], 7+c)
		}
	}
	id := func(a, b, c int) int { return ((a+x)%x)*y*z + ((b+y)%y)*z + (c+z)%z }
	dims := [3]int{x, y, z}
	for a := 0; a < x; a++ {
		for b := 0; b < y; b++ {
			for c := 0; c < z; c++ {
				for d := 0; d < 3; d++ {
					if dims[d] < 2 || (dims[d] == 2 && [3]int{a, b, c}[d] == 1) {
						continue // a 2-long dimension has one cable, not two
					}
					st := [3]int{a, b, c}
					st[d]++
					f.Link(sw[id(a, b, c)], 1+2*d, sw[id(st[0], st[1], st[2])], 2+2*d)
				}
			}
		}
	}
	topo, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// routeAndLayer runs the engine and the VL assigner on topo with budget
// and checks the plan as the host does.
func routeAndLayer(t testing.TB, topo *topology.Topology, lmc uint8, budget int) (*Report, Assignment) {
	t.Helper()
	ctx := context.Background()
	planes, _, rep, err := Route(ctx, topo, Options{LMC: lmc, Budget: budget, Reroute: 1})
	if err != nil {
		t.Fatalf("Route: %v", err)
	}
	routes := &plan.Routes{Planes: planes}
	if err := sdktest.CheckRoutes(topo, routes); err != nil {
		t.Fatal(err)
	}
	lids := testfab.SequentialLIDs(topo, lmc)
	real, err := plan.Realize(topo, routes, lids)
	if err != nil {
		t.Fatal(err)
	}
	v, a, err := Assign(ctx, real, budget)
	if err != nil {
		t.Fatalf("Assign: %v", err)
	}
	if a.FirstFit || a.Budget < 1 || a.Budget > budget || v.VLs > budget {
		t.Fatalf("the VL assigner did not find nue's layout within %d VLs: %+v, plan VLs %d", budget, a, v.VLs)
	}
	if _, err := check.Check(check.Plan{Topo: topo, Routes: routes, LIDs: lids, VLs: v, Realized: real}, check.Options{}); err != nil {
		t.Fatalf("the host refuses the plan: %v", err)
	}
	return rep, a
}

func TestDeadlockFreeWithinBudget(t *testing.T) {
	ring, err := testfab.Ring(9, 2)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := testfab.FatTree3(4)
	if err != nil {
		t.Fatal(err)
	}
	fabrics := map[string]*topology.Topology{
		"torus4x4x4": torus3(t, 4, 4, 4, 2),
		"torus5x3x2": torus3(t, 5, 3, 2, 1),
		"ring9":      ring,
		"fattree3k4": ft,
	}
	for _, seed := range []uint64{1, 2, 3} {
		r, err := sdktest.Random(seed, 48, 8, 2)
		if err != nil {
			t.Fatal(err)
		}
		fabrics[fmt.Sprintf("random%d", seed)] = r
	}
	for name, topo := range fabrics {
		for _, budget := range []int{1, 2, 4, 8} {
			t.Run(fmt.Sprintf("%s/%dvl", name, budget), func(t *testing.T) {
				if _, err := Budget(budget, topo); err != nil {
					if c := topo.MinLinkVLs(); c >= budget {
						t.Fatalf("Budget(%d) refused with VLCap %d: %v", budget, c, err)
					}
					return // beyond the ports' VLCap: refused, as it must be
				}
				rep, a := routeAndLayer(t, topo, 0, budget)
				t.Logf("trees %d, escaped %d (%d switch entries), minimal %.1f%% of %d CA pairs, VL assigner budget %d",
					rep.Trees, rep.Escaped, rep.EscapedSwitches, 100*float64(rep.MinimalPairs)/float64(max(rep.Pairs, 1)), rep.Pairs, a.Budget)
			})
		}
	}
}

// TestTurnChans: every turn id maps back to its channel pair, on a fabric
// with switches of different degrees.
func TestTurnChans(t *testing.T) {
	topo, err := sdktest.Random(4, 24, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	n, err := newNet(topo)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for s := int32(0); s < int32(n.N); s++ {
		for in := n.Off[s]; in < n.Off[s+1]; in++ {
			for out := n.Off[s]; out < n.Off[s+1]; out++ {
				a := n.Rev[in] // arrives at s
				if gi, go_ := n.turnChans(n.turn(a, out)); gi != a || go_ != out {
					t.Fatalf("turn (%d, %d) at switch %d maps back to (%d, %d)", a, out, s, gi, go_)
				}
				seen++
			}
		}
	}
	if seen != n.turns {
		t.Fatalf("checked %d turns of %d", seen, n.turns)
	}
}

// TestSameRoutesAnyWorkers: the planes do not depend on how many layers
// are searched at once (weights change only between rounds), with the
// second pass too.
func TestSameRoutesAnyWorkers(t *testing.T) {
	topo, err := sdktest.Random(5, 40, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{1, 4} {
		t.Run(fmt.Sprintf("%dvl", budget), func(t *testing.T) {
			var want []plan.DestPlanes
			for _, procs := range []int{1, 3} {
				prev := runtime.GOMAXPROCS(procs)
				got, _, _, err := Route(context.Background(), topo, Options{Budget: budget, Reroute: 1})
				runtime.GOMAXPROCS(prev)
				if err != nil {
					t.Fatal(err)
				}
				if want == nil {
					want = got
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("GOMAXPROCS %d routes differently from GOMAXPROCS 1", procs)
				}
			}
		})
	}
}
