package sssp

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/ibsm/ibsm/plugins/lib/paths"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/testfab/gen"
	"github.com/ibsm/ibsm/sdk/topology"
)

// reference is a deliberately plain SSSP: O(N²) Dijkstra with the same
// (distance, switch index) settle order and first-found parent, and weights
// updated by walking every CA source's route hop by hop.
func reference(t *topology.Topology, lmc uint8) []plan.DestPlanes {
	f, err := paths.NewFabric(t)
	if err != nil {
		panic(err)
	}
	w := make([]int64, f.Channels())
	for i := range w {
		w[i] = 1
	}
	out := make([]plan.DestPlanes, len(t.Endpoints()))
	for e := range out {
		n := 1
		if f.IsCA[e] {
			n = 1 << lmc
		}
		for k := 0; k < n; k++ {
			pl := make(plan.Plane, f.N)
			for i := range pl {
				pl[i] = plan.NoPort
			}
			out[e].Planes = append(out[e].Planes, pl)
			root := f.Home[e]
			if root < 0 {
				continue
			}
			dist := make([]int64, f.N)
			parent := make([]int32, f.N)
			done := make([]bool, f.N)
			for i := range dist {
				dist[i], parent[i] = math.MaxInt64, -1
			}
			dist[root] = 0
			for {
				best := int32(-1)
				for s := range dist {
					if !done[s] && dist[s] != math.MaxInt64 && (best < 0 || dist[s] < dist[best]) {
						best = int32(s)
					}
				}
				if best < 0 {
					break
				}
				done[best] = true
				for r := f.Off[best]; r < f.Off[best+1]; r++ {
					c := f.Rev[r]
					if s := f.From[c]; !done[s] && dist[best]+w[c] < dist[s] {
						dist[s], parent[s] = dist[best]+w[c], c
					}
				}
			}
			for s := range pl {
				if int32(s) == root {
					pl[s] = f.HomePort[e]
				} else if parent[s] >= 0 {
					pl[s] = f.Port[parent[s]]
				}
			}
			if !f.IsCA[e] {
				continue
			}
			for src := range f.Home {
				if src == e || !f.IsCA[src] || f.Home[src] < 0 {
					continue
				}
				for s := f.Home[src]; s != root; s = f.Peer[parent[s]] {
					w[parent[s]]++
				}
			}
		}
	}
	return out
}

func fabrics(t *testing.T) map[string]*topology.Topology {
	t.Helper()
	out := map[string]*topology.Topology{}
	var err error
	if out["rrg16"], err = gen.Topology(gen.RRG{Switches: 16, NetPorts: 4, CAsPerSwitch: 3, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	if out["irregular"], err = gen.Topology(gen.Random{Switches: 12, Degree: 3, CAs: 30, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	if out["sdktest-random"], err = sdktest.Random(7, 10, 8, 2); err != nil {
		t.Fatal(err)
	}
	if out["fattree2"], err = sdktest.FatTree2(6, 3, 4); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMatchesReference(t *testing.T) {
	for name, topo := range fabrics(t) {
		for _, lmc := range []uint8{0, 1} {
			got, _, err := Route(context.Background(), topo, lmc)
			if err != nil {
				t.Fatal(err)
			}
			if want := reference(topo, lmc); !reflect.DeepEqual(got, want) {
				t.Errorf("%s lmc %d: planes differ from the reference SSSP", name, lmc)
			}
			if err := sdktest.CheckRoutes(topo, &plan.Routes{Planes: got}); err != nil {
				t.Errorf("%s lmc %d: %v", name, lmc, err)
			}
		}
	}
}

func TestPlanesDivergeWithLMC(t *testing.T) {
	topo, err := gen.Topology(gen.RRG{Switches: 32, NetPorts: 6, CAsPerSwitch: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := Route(context.Background(), topo, 2)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := paths.NewFabric(topo)
	diverge := 0
	for e, dp := range got {
		want := 1
		if f.IsCA[e] {
			want = 4
		}
		if len(dp.Planes) != want {
			t.Fatalf("endpoint %d has %d planes, want %d", e, len(dp.Planes), want)
		}
		if want == 4 && !reflect.DeepEqual(dp.Planes[0], dp.Planes[1]) {
			diverge++
		}
	}
	if diverge == 0 {
		t.Error("no CA's planes differ: later planes do not see the weight of earlier ones")
	}
}

// TestBalancesBetterThanFirstTree: weights must spread load compared with
// routing every destination on the unweighted (first) tree.
func TestBalancesBetterThanFirstTree(t *testing.T) {
	topo, err := gen.Topology(gen.RRG{Switches: 32, NetPorts: 6, CAsPerSwitch: 4, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := paths.NewFabric(topo)
	got, _, err := Route(context.Background(), topo, 0)
	if err != nil {
		t.Fatal(err)
	}
	flat := make([]plan.DestPlanes, len(got))
	d := newDijkstra(f)
	ones := make([]int64, f.Channels())
	for i := range ones {
		ones[i] = 1
	}
	for e := range flat {
		pl := make(plan.Plane, f.N)
		d.run(f.Home[e], ones)
		for s := range pl {
			if int32(s) == f.Home[e] {
				pl[s] = f.HomePort[e]
			} else {
				pl[s] = f.PeerPort[d.parent[s]] // parent is the channel next→s
			}
		}
		flat[e].Planes = []plan.Plane{pl}
	}
	if a, b := maxLoad(f, got), maxLoad(f, flat); a >= b {
		t.Errorf("sssp max channel load %d, unweighted trees %d: no balancing", a, b)
	}
}

func maxLoad(f *paths.Fabric, planes []plan.DestPlanes) int {
	load := make([]int, f.Channels())
	for dst := range planes {
		if !f.IsCA[dst] {
			continue
		}
		pl := planes[dst].Planes[0]
		for src := range f.Home {
			if src == dst || !f.IsCA[src] {
				continue
			}
			for s := f.Home[src]; s != f.Home[dst]; {
				c := f.ChannelOf(s, pl[s])
				load[c]++
				s = f.Peer[c]
			}
		}
	}
	m := 0
	for _, l := range load {
		m = max(m, l)
	}
	return m
}

func TestErrors(t *testing.T) {
	if _, _, err := Route(context.Background(), nil, 0); err == nil {
		t.Error("nil topology accepted")
	}
	topo, _ := sdktest.Ring(3, 1)
	if _, _, err := Route(context.Background(), topo, 8); err == nil {
		t.Error("LMC 8 accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Route(ctx, topo, 0); err == nil {
		t.Error("cancelled context ignored")
	}
}

// BenchmarkRRG512 is the scale the routing+VL budget (2 s) is set for: a
// random 12-regular graph of 512 switches with 4 CAs each (2,048 CAs).
func BenchmarkRRG512(b *testing.B) {
	topo, err := gen.Topology(gen.RRG{Switches: 512, NetPorts: 12, CAsPerSwitch: 4, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, lmc := range []uint8{0, 2} {
		b.Run(map[uint8]string{0: "lmc0", 2: "lmc2"}[lmc], func(b *testing.B) {
			testfab.Bench(b, func() error {
				_, _, err := Route(context.Background(), topo, lmc)
				return err
			})
		})
	}
}
