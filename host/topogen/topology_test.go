package topogen

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/testfab/gen"
	"github.com/ibsm/ibsm/transport/netfile"
)

// Written reads back what Write wrote: the same snapshot Topology builds
// in process, and Parse's error for a bad command line.
func TestWritten(t *testing.T) {
	args := []string{"paper", "--set", "001", "--switches", "64", "--degree", "4", "--seed", "3"}
	got, err := Written(args)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Topology(Paper{Set: "001", Switches: 64, Degree: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash() != want.Hash() || len(got.Nodes) != 128 {
		t.Fatalf("written fabric: %d nodes, hash %x; in process %x", len(got.Nodes), got.Hash(), want.Hash())
	}
	if _, err := Written([]string{"paper", "--set", "001", "--switches", "100", "--degree", "4"}); err == nil || !strings.Contains(err.Error(), "64 or 256") {
		t.Fatalf("bad size: err = %v, want the preset's size error", err)
	}
}

// gen's snapshot of a shape is the snapshot of the file topogen writes
// for it: plugin tests route gen's fabrics, the SM reads the files.
func TestGenSnapshotIsFileSnapshot(t *testing.T) {
	fdr := Cable{Width: uint8(netfile.Width12x), Speed: uint8(netfile.FDR)}
	tests := []struct {
		name  string
		shape gen.Shape
		file  Generator
	}{
		{"fat tree", gen.FatTree{Radix: 4, Levels: 3}, FatTree{Radix: 4, Levels: 3}},
		{"xgft partial", gen.FatTree{Children: []int{3, 4}, Parents: []int{1, 2}, CAsPerLeaf: 2, Cable: fdr}, FatTree{Children: []int{3, 4}, Parents: []int{1, 2}, CAsPerLeaf: 2, Cable: fdr}},
		{"ring", gen.Ring(5, 2), Ring(5, 2)},
		{"mesh", gen.Torus{Dims: []int{3, 4}, Mesh: true, CAsPerSwitch: 1, SwitchPorts: 8}, Torus{Dims: []int{3, 4}, Mesh: true, CAsPerSwitch: 1, SwitchPorts: 8}},
		{"random", gen.Random{Switches: 12, Degree: 3, CAs: 30, Seed: 5}, Random{Switches: 12, Degree: 3, CAs: 30, Seed: 5}},
		{"rrg", gen.RRG{Switches: 16, NetPorts: 4, CAsPerSwitch: 3, Seed: 2}, RRG{Switches: 16, NetPorts: 4, CAsPerSwitch: 3, Seed: 2}},
		{"dragonfly", gen.Dragonfly{A: 3, P: 2, H: 1}, Dragonfly{A: 3, P: 2, H: 1}},
		{"hyperx", gen.HyperX{Dims: []int{3, 2}, K: 2, T: 1}, HyperX{Dims: []int{3, 2}, K: 2, T: 1}},
		{"kautz", gen.Kautz{D: 2, K: 2, T: 1}, Kautz{D: 2, K: 2, T: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gen.Topology(tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Topology(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if got.Hash() != want.Hash() || !reflect.DeepEqual(got.Nodes, want.Nodes) {
				t.Fatalf("gen snapshot (hash %x) differs from the file's (hash %x)", got.Hash(), want.Hash())
			}
		})
	}
}
