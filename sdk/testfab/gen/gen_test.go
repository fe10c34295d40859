package gen

import (
	"testing"
)

// switchAdjacency returns, for every switch, its switch neighbours (with
// repetition for parallel links).
func (g *Graph) switchAdjacency() [][]int32 {
	adj := make([][]int32, len(g.Switches))
	for _, l := range g.Links {
		if l.A.IsCA() || l.B.IsCA() {
			continue
		}
		a, b := l.A.Index(), l.B.Index()
		adj[a] = append(adj[a], int32(b))
		adj[b] = append(adj[b], int32(a))
	}
	return adj
}

// TestRRGDegree checks Jellyfish's promise: every switch has exactly r
// distinct neighbours, or one port stays free when n*r is odd.
func TestRRGDegree(t *testing.T) {
	tests := []struct {
		n, r, h  int
		deficits int
	}{
		{512, 12, 4, 0},
		{101, 5, 1, 1},
		{10, 9, 1, 0},
		{64, 3, 2, 0},
		{31, 7, 0, 1},
	}
	for _, tt := range tests {
		for seed := int64(1); seed <= 5; seed++ {
			g, err := RRG{Switches: tt.n, NetPorts: tt.r, CAsPerSwitch: tt.h, Seed: seed}.Graph()
			if err != nil {
				t.Fatalf("n=%d r=%d seed=%d: %v", tt.n, tt.r, seed, err)
			}
			adj := g.switchAdjacency()
			short := 0
			for s, nb := range adj {
				seen := map[int32]bool{}
				for _, v := range nb {
					if seen[v] || int(v) == s {
						t.Fatalf("n=%d r=%d seed=%d: switch %d has a repeated or self neighbour %d", tt.n, tt.r, seed, s, v)
					}
					seen[v] = true
				}
				switch len(nb) {
				case tt.r:
				case tt.r - 1:
					short++
				default:
					t.Fatalf("n=%d r=%d seed=%d: switch %d has %d neighbours", tt.n, tt.r, seed, s, len(nb))
				}
			}
			if short != tt.deficits {
				t.Fatalf("n=%d r=%d seed=%d: %d switches short of a neighbour, want %d", tt.n, tt.r, seed, short, tt.deficits)
			}
		}
	}
}

// TestRandomSimple checks the irregular generator keeps to a simple graph
// with exactly the requested number of cables.
func TestRandomSimple(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		g, err := Random{Switches: 16, Degree: 4, CAs: 40, Seed: seed}.Graph()
		if err != nil {
			t.Fatal(err)
		}
		edges := 0
		for s, nb := range g.switchAdjacency() {
			seen := map[int32]bool{}
			for _, v := range nb {
				if seen[v] || int(v) == s {
					t.Fatalf("seed %d: switch %d: repeated or self neighbour %d", seed, s, v)
				}
				seen[v] = true
			}
			edges += len(nb)
		}
		if edges != 2*32 {
			t.Fatalf("seed %d: %d cable ends, want 64", seed, edges)
		}
		if len(g.CAs) != 40 {
			t.Fatalf("seed %d: %d CAs, want 40", seed, len(g.CAs))
		}
	}
}
