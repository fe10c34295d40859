package topogen

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// shape is what a paper fabric must look like: per switch its CA count
// and its distinct switch neighbours.
type shape struct {
	cas, nbrs []int
}

func shapeOf(t *testing.T, f *netfile.File) shape {
	t.Helper()
	var s shape
	for _, n := range f.Nodes {
		if n.Type != topology.Switch {
			continue
		}
		cas, seen := 0, map[*netfile.Node]bool{}
		for p := 1; p < len(n.Ports); p++ {
			peer := n.Ports[p].Peer
			switch {
			case peer == nil:
			case peer.Type != topology.Switch:
				cas++
			case seen[peer]:
				t.Fatalf("switch %s has two cables to %s; the papers' graphs are simple", n.Name, peer.Name)
			default:
				seen[peer] = true
			}
		}
		s.cas = append(s.cas, cas)
		s.nbrs = append(s.nbrs, len(seen))
	}
	return s
}

func sum(v []int) int {
	t := 0
	for _, x := range v {
		t += x
	}
	return t
}

func TestPaperFabrics(t *testing.T) {
	var cfgs []Paper
	for _, set := range PaperSets() {
		cfgs = append(cfgs, PaperConfigs(set)...)
	}
	if len(cfgs) != 9+18+4+1 {
		t.Fatalf("%d paper configurations, want 9 (000) + 18 (001) + 4 (003) + 1", len(cfgs))
	}
	for _, p := range cfgs {
		seeds := []int64{1, 2}
		if p.Switches >= 256 {
			seeds = seeds[:1] // large ones are slow-ish and covered by RRG tests
		}
		for _, seed := range seeds {
			p.Seed = seed
			name := p.Set + "/" + strconv.Itoa(p.Switches) + "/" + strconv.Itoa(p.CAs) + "/" + strconv.Itoa(p.Degree) + "/" + strconv.FormatInt(seed, 10)
			f, err := p.Generate()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			c := count(f)
			checkInvariants(t, f, f.Nodes[c.cas].NumPorts()) // CAs come first
			s := shapeOf(t, f)
			if len(s.cas) != p.Switches {
				t.Fatalf("%s: %d switches", name, len(s.cas))
			}
			switch p.Set {
			case "000":
				if c.cas != p.CAs || sum(s.cas) != p.CAs {
					t.Fatalf("%s: %d machines, want %d", name, c.cas, p.CAs)
				}
				if sum(s.nbrs) != 8*p.Switches {
					t.Fatalf("%s: average degree %.2f, want exactly 8", name, float64(sum(s.nbrs))/float64(p.Switches))
				}
			default:
				wantCAs, wantDeg := map[string]int{"001": 1, "003": 4, "rrg512": 4}[p.Set], p.Degree
				for i := range s.cas {
					if s.cas[i] != wantCAs || s.nbrs[i] != wantDeg {
						t.Fatalf("%s: switch %d has %d CAs and %d neighbours, want %d and %d", name, i, s.cas[i], s.nbrs[i], wantCAs, wantDeg)
					}
				}
			}
			if _, err := f.Topology(); err != nil {
				t.Fatalf("%s: not a valid topology: %v", name, err)
			}
		}
	}
}

// TestPaper000Placement: machines land on switches uniformly, so on 16
// switches with 512 machines no switch is empty and none holds a large
// share (a placement bug that piles CAs up would fail this).
func TestPaper000Placement(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		f, err := Paper{Set: "000", Switches: 16, CAs: 512, Seed: seed}.Generate()
		if err != nil {
			t.Fatal(err)
		}
		s := shapeOf(t, f)
		for i, n := range s.cas {
			if n < 12 || n > 56 { // mean 32, sd about 5.5
				t.Fatalf("seed %d: switch %d holds %d of 512 machines", seed, i, n)
			}
		}
	}
}

func TestPaperCLI(t *testing.T) {
	a := run(t, "paper", "--set", "003", "--switches", "16", "--seed", "4")
	b := run(t, "paper", "--set", "003", "--switches", "16", "--seed", "4")
	c := run(t, "paper", "--set", "003", "--switches", "16", "--seed", "5")
	if !bytes.Equal(a, b) {
		t.Error("same seed, different files")
	}
	if bytes.Equal(a, c) {
		t.Error("seeds 4 and 5 gave the same file")
	}
	// The paper preset is the plain generator with the paper's numbers.
	if d := run(t, "rrg", "--switches", "16", "--ports", "4", "--cas", "4", "--seed", "4"); !bytes.Equal(a[bytes.IndexByte(a, '\n'):], d[bytes.IndexByte(d, '\n'):]) {
		t.Error("paper 003 differs from rrg --ports 4 --cas 4 with the same seed")
	}
	f := generate(t, "paper", "--set", "rrg512", "--remove-links", "0.01", "--seed", "2")
	if got := len(f.Links()); got != 512*12/2-30+2048 {
		t.Errorf("degraded rrg512 has %d cables, want %d", got, 512*12/2-30+2048)
	}
}

func TestPaperErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"paper"}, "give --set"},
		{[]string{"paper", "--set", "002"}, "unknown paper set"},
		{[]string{"paper", "--set", "000", "--switches", "20", "--cas", "128"}, "not 20 switches and 128 machines"},
		{[]string{"paper", "--set", "000", "--switches", "16", "--cas", "100"}, "topo random"},
		{[]string{"paper", "--set", "001", "--switches", "64", "--degree", "13"}, "degree 3 to 12"},
		{[]string{"paper", "--set", "001", "--switches", "100", "--degree", "4"}, "64 or 256"},
		{[]string{"paper", "--set", "003", "--switches", "4"}, "8 to 64"},
		{[]string{"paper", "--set", "003", "--switches", "8", "--degree", "9"}, "links per switch"},
		{[]string{"paper", "--set", "003", "--switches", "8", "--degree", "2"}, "links per switch"},
		{[]string{"paper", "--set", "rrg512", "--switches", "256"}, "fixed at 512"},
	} {
		_, err := Parse(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
