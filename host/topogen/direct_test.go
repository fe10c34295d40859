package topogen

import (
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// switchPairs counts the cables between each pair of switches, by name.
func switchPairs(f *netfile.File) map[[2]string]int {
	out := map[[2]string]int{}
	for _, l := range f.Links() {
		if l.A.Type != topology.Switch || l.B.Type != topology.Switch {
			continue
		}
		a, b := l.A.Name, l.B.Name
		if a > b {
			a, b = b, a
		}
		out[[2]string{a, b}]++
	}
	return out
}

// TestDirectFabrics: the census of each direct network, the invariants
// every generated fabric keeps, and its defining structure cable by cable.
func TestDirectFabrics(t *testing.T) {
	tests := []struct {
		args  []string
		want  census
		ports int
		shape func(t *testing.T, f *netfile.File)
	}{
		{[]string{"dragonfly", "--a", "8", "--p", "4", "--h", "4"}, census{264, 1056, 1056 + 33*28 + 33*32/2}, 15, func(t *testing.T, f *netfile.File) {
			groups := map[[2]string]int{}
			for k, n := range switchPairs(f) {
				ga, gb := strings.Split(k[0], "-")[1], strings.Split(k[1], "-")[1]
				if ga == gb {
					if n != 1 {
						t.Fatalf("%v: %d local cables, want 1", k, n)
					}
					continue
				}
				if ga > gb {
					ga, gb = gb, ga
				}
				groups[[2]string{ga, gb}] += n
			}
			if len(groups) != 33*32/2 {
				t.Fatalf("%d pairs of groups cabled, want all %d", len(groups), 33*32/2)
			}
			for k, n := range groups {
				if n != 1 {
					t.Fatalf("groups %v share %d global cables, want 1", k, n)
				}
			}
		}},
		{[]string{"dragonfly", "--a", "4", "--p", "2", "--h", "2", "--groups", "5"}, census{20, 40, 40 + 5*6 + 5*4}, 7, nil},
		{[]string{"dragonfly", "--a", "4", "--p", "1", "--h", "1", "--groups", "4"}, census{16, 16, 16 + 4*6 + 6}, 5, nil},
		{[]string{"hyperx", "--dims", "12x8", "--cas", "7"}, census{96, 672, 672 + 96*18/2}, 7 + 18, func(t *testing.T, f *netfile.File) {
			for k, n := range switchPairs(f) {
				a, b := strings.Split(k[0], "-")[1:], strings.Split(k[1], "-")[1:]
				if n != 1 || (a[0] != b[0]) == (a[1] != b[1]) {
					t.Fatalf("%v: %d cables; want one between switches that differ in exactly one coordinate", k, n)
				}
			}
		}},
		{[]string{"hyperx", "--dims", "3x3x2", "--links", "2", "--cas", "1"}, census{18, 18, 18 + 18*(2+2+1)*2/2}, 1 + 2*5, nil},
		{[]string{"kautz", "--degree", "4", "--diameter", "3", "--cas", "4"}, census{320, 1280, 1280 + 320*4}, 12, func(t *testing.T, f *netfile.File) {
			for _, l := range f.Links() {
				if l.A.Type != topology.Switch || l.B.Type != topology.Switch {
					continue
				}
				a, b := strings.TrimPrefix(l.A.Name, "kautz-"), strings.TrimPrefix(l.B.Name, "kautz-")
				if a[1:] != b[:len(b)-1] && b[1:] != a[:len(a)-1] {
					t.Fatalf("cable %s - %s is no Kautz arc", a, b)
				}
			}
		}},
		{[]string{"kautz", "--degree", "2", "--diameter", "1", "--cas", "0"}, census{6, 0, 12}, 4, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := generate(t, tt.args...)
			if got := count(f); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			checkInvariants(t, f, tt.ports)
			if tt.shape != nil {
				tt.shape(t, f)
			}
			// Seeded degradation works on every kind.
			d := generate(t, append(tt.args, "--remove-links", "0.05", "--seed", "3")...)
			if got, cut := count(d).links, tt.want.links-count(d).links; cut != int(0.05*float64(tt.want.links-tt.want.cas)) {
				t.Fatalf("--remove-links 0.05 left %d cables (%d cut)", got, cut)
			}
		})
	}
}

func TestDirectErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"dragonfly", "--a", "8", "--p", "4"}, "give --h"},
		{[]string{"dragonfly", "--a", "2", "--p", "1", "--h", "1", "--groups", "4"}, "1 to a·h+1 = 3"},
		{[]string{"hyperx", "--cas", "2"}, "give --dims"},
		{[]string{"hyperx", "--dims", "4x4", "--links", "0"}, "--links ≥ 1"},
		{[]string{"kautz", "--degree", "1", "--diameter", "2"}, "degree ≥ 2"},
		{[]string{"kautz", "--degree", "4"}, "give --diameter"},
		{[]string{"kautz", "--degree", "8", "--diameter", "6"}, "more than"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			g, err := Parse(tt.args)
			if err == nil {
				_, err = g.Generate()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
