package paths

import (
	"math/rand/v2"
	"testing"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/testfab/gen"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Benchmarks on Nienaber et al.'s largest configurations (512 machines on 16
// and 64 switches, 261,632 pairs) and on the 512-switch random 12-regular
// graph with 4 CAs per switch (4,190,208 pairs; path selection is left out
// there: its candidate incidence would need about 1 GB).
func benchAlgo(b *testing.B, topo *topology.Topology, run func(*topology.Topology, *rand.Rand) (int, error)) {
	i := uint64(0)
	testfab.Bench(b, func() error {
		i++
		_, err := run(topo, rand.New(rand.NewPCG(i, 1)))
		return err
	})
}

func count(f func(*topology.Topology, *rand.Rand) ([]plan.Path, error)) func(*topology.Topology, *rand.Rand) (int, error) {
	return func(t *topology.Topology, r *rand.Rand) (int, error) {
		ps, err := f(t, r)
		return len(ps), err
	}
}

func BenchmarkPaper000(b *testing.B) {
	for _, sw := range []int{16, 64} {
		topo, err := gen.Topology(gen.Random{Switches: sw, Degree: 8, CAs: 512, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		name := map[int]string{16: "512of16", 64: "512of64"}[sw]
		b.Run(name+"/random", func(b *testing.B) { benchAlgo(b, topo, count(RandomShortestUpDown)) })
		b.Run(name+"/widest", func(b *testing.B) { benchAlgo(b, topo, count(ShortestWidest)) })
		b.Run(name+"/selection", func(b *testing.B) { benchAlgo(b, topo, count(PathSelection)) })
	}
}

func BenchmarkRRG512(b *testing.B) {
	topo, err := gen.Topology(gen.RRG{Switches: 512, NetPorts: 12, CAsPerSwitch: 4, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("random", func(b *testing.B) { benchAlgo(b, topo, count(RandomShortestUpDown)) })
	b.Run("widest", func(b *testing.B) { benchAlgo(b, topo, count(ShortestWidest)) })
}
