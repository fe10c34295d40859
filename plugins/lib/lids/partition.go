// Package lids realises explicit path routings with destination-based
// forwarding: it partitions every destination's incoming paths into
// configurations (sets of paths that never leave a shared switch by different
// ports, Nienaber et al. Definition 2), gives each configuration one LID of
// the destination's 2^LMC range, and builds the per-LID forwarding trees and
// per-source DLID choices. The heuristics are those of Nienaber, Yuan and
// Duan, "On LID Assignment in InfiniBand Networks" (ANCS 2007), §4 (greedy,
// split-merge/S and /L, color/S and /L) and the destination renaming of
// López, Flich and Duato, "Deadlock-free Routing in InfiniBand through
// Destination Renaming" (ICPP 2001) (first-fit in path order).
package lids

import (
	"fmt"
	"math/bits"
	"slices"
)

// Heuristic names a partitioning algorithm; the values are the plugin names
// operators write in HCL.
type Heuristic string

const (
	Greedy      Heuristic = "greedy"
	SplitMergeS Heuristic = "split-merge-s"
	SplitMergeL Heuristic = "split-merge-l"
	ColorS      Heuristic = "color-s"
	ColorL      Heuristic = "color-l"
	Renaming    Heuristic = "renaming"
)

// Heuristics lists every heuristic in the order Nienaber et al.'s tables use,
// renaming last.
var Heuristics = []Heuristic{Greedy, SplitMergeS, SplitMergeL, ColorS, ColorL, Renaming}

// Valid reports whether h names a known heuristic.
func (h Heuristic) Valid() bool { return slices.Contains(Heuristics, h) }

// Step is one switch traversal of a path as the partitioners see it: the
// switch index (position in Topology.Switches()) and the out-port.
type Step struct {
	Switch int32
	Out    uint8
}

// unused marks a switch a configuration has no entry at.
const unused uint8 = 0xFF

// Partition splits the paths toward one destination into configurations.
// paths[i] lists path i's steps; nsw is the number of switches. It returns
// the configuration of every path and the number of configurations k; the
// configurations are numbered 0..k-1 in the order the heuristic created them.
// Paths must not visit a switch twice (they are loop-free by construction
// of any routing worth realising; Assign checks it).
func Partition(h Heuristic, paths [][]Step, nsw int) ([]int32, int, error) {
	switch h {
	case Greedy:
		return greedy(paths, nsw)
	case Renaming:
		return renaming(paths, nsw)
	case SplitMergeS:
		return splitMerge(paths, nsw, false)
	case SplitMergeL:
		return splitMerge(paths, nsw, true)
	case ColorS:
		return color(paths, nsw, false)
	case ColorL:
		return color(paths, nsw, true)
	}
	return nil, 0, fmt.Errorf("unknown LID heuristic %q (want one of %v)", h, Heuristics)
}

// config is one configuration's forwarding entries: out[s] is the port all
// its paths leave switch s by, unused where none of them passes.
type config []uint8

func newConfig(nsw int) config {
	c := make(config, nsw)
	for i := range c {
		c[i] = unused
	}
	return c
}

// fits reports whether path p has no split with the configuration.
func (c config) fits(p []Step) bool {
	for _, st := range p {
		if o := c[st.Switch]; o != unused && o != st.Out {
			return false
		}
	}
	return true
}

func (c config) add(p []Step) {
	for _, st := range p {
		c[st.Switch] = st.Out
	}
}

// greedy is Nienaber et al. Figure 5: fill one configuration at a time,
// scanning the remaining paths in order and taking every one that does not
// split with what the configuration already holds.
func greedy(paths [][]Step, nsw int) ([]int32, int, error) {
	idx := make([]int32, len(paths))
	one := make([][]int32, len(paths))
	for i := range idx {
		idx[i] = int32(i)
		one[i] = idx[i : i+1]
	}
	group, k := mergeGreedy(paths, nsw, one)
	return group, k, nil
}

// mergeGreedy fills one configuration at a time, scanning the remaining
// sets of paths in order and taking every set all of whose paths fit what
// the configuration already holds. With one path per set it is Figure 5;
// over split-merge's working sets it is Figure 7's merge.
func mergeGreedy(paths [][]Step, nsw int, sets [][]int32) ([]int32, int) {
	group := make([]int32, len(paths))
	left := sets
	k := 0
	for len(left) > 0 {
		c := newConfig(nsw)
		rest := left[:0]
		for _, m := range left {
			ok := true
			for _, i := range m {
				if !c.fits(paths[i]) {
					ok = false
					break
				}
			}
			if !ok {
				rest = append(rest, m)
				continue
			}
			for _, i := range m {
				c.add(paths[i])
				group[i] = int32(k)
			}
		}
		left = rest
		k++
	}
	return group, k
}

// renaming is López et al. Figures 3-4: paths are placed in order, each taking
// the first LID of its destination's range that has no entry with another
// port on any switch along the path, the range growing when none fits.
// (Placed in the same order it yields the same partition as greedy: a path
// lands in configuration j exactly when it fits none of 0..j-1 as they
// stood when it arrived. The two are kept separate because they are
// different algorithms in the literature and may be run on different path
// orders.)
func renaming(paths [][]Step, nsw int) ([]int32, int, error) {
	group := make([]int32, len(paths))
	var cfgs []config
	for i, p := range paths {
		g := -1
		for j, c := range cfgs {
			if c.fits(p) {
				g = j
				break
			}
		}
		if g < 0 {
			g = len(cfgs)
			cfgs = append(cfgs, newConfig(nsw))
		}
		cfgs[g].add(p)
		group[i] = int32(g)
	}
	return group, len(cfgs), nil
}

// use is one path leaving a switch: the path's index and its out-port.
type use struct {
	path int32
	out  uint8
}

// usesBySwitch lists, per switch index, the paths that traverse it, in
// path order: what both split-merge and the split graph scan switch by
// switch.
func usesBySwitch(paths [][]Step, nsw int) [][]use {
	at := make([][]use, nsw)
	for i, p := range paths {
		for _, st := range p {
			at[st.Switch] = append(at[st.Switch], use{int32(i), st.Out})
		}
	}
	return at
}

// splitMerge is Nienaber et al. Figure 7. Split: visit the switches the paths
// use, fewest-used first (/S) or most-used first (/L); at each, every working
// set whose paths leave that switch by several ports is split by port. The
// part with the most paths (lowest port on ties) keeps the set's identity and
// also keeps the set's paths that do not pass the switch (they split with
// nobody there, so any part may hold them; keeping them together avoids
// splitting for no reason). After all switches every set is a configuration.
// Merge: greedy over the sets in creation order.
func splitMerge(paths [][]Step, nsw int, largestFirst bool) ([]int32, int, error) {
	at := usesBySwitch(paths, nsw)
	order := make([]int32, 0, nsw)
	for s := range at {
		if len(at[s]) > 0 {
			order = append(order, int32(s))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		if largestFirst {
			return len(at[b]) - len(at[a])
		}
		return len(at[a]) - len(at[b])
	})
	set := make([]int32, len(paths)) // working set of each path
	nsets := int32(1)
	if len(paths) == 0 {
		nsets = 0
	}
	type key struct {
		set int32
		out uint8
	}
	count := map[key]int{}
	keep := map[int32]uint8{}
	moved := map[key]int32{}
	for _, s := range order {
		clear(count)
		clear(keep)
		clear(moved)
		for _, u := range at[s] {
			count[key{set[u.path], u.out}]++
		}
		// Per set, the port whose part stays.
		for k, n := range count {
			if o, ok := keep[k.set]; !ok || n > count[key{k.set, o}] || (n == count[key{k.set, o}] && k.out < o) {
				keep[k.set] = k.out
			}
		}
		for _, u := range at[s] {
			k := key{set[u.path], u.out}
			if keep[k.set] == u.out {
				continue
			}
			id, ok := moved[k]
			if !ok {
				id = nsets
				nsets++
				moved[k] = id
			}
			set[u.path] = id
		}
	}
	// Ids are dense and no set ever empties (the keeper part stays), so
	// merging in id order is merging in creation order.
	members := make([][]int32, nsets)
	for i, s := range set {
		members[s] = append(members[s], int32(i))
	}
	group, k := mergeGreedy(paths, nsw, members)
	return group, k, nil
}

// splitGraph is the adjacency of Nienaber et al.'s split graph as one bit row
// per path: bit j of row i is set when paths i and j split.
type splitGraph struct {
	n, words int
	bits     []uint64
}

func (g *splitGraph) row(i int) []uint64 { return g.bits[i*g.words : (i+1)*g.words] }

func (g *splitGraph) set(i, j int) {
	g.bits[i*g.words+j/64] |= 1 << (j % 64)
	g.bits[j*g.words+i/64] |= 1 << (i % 64)
}

// buildSplitGraph connects every two paths that leave a shared switch by
// different ports. Work is the number of such (switch, pair) incidences,
// far below n^2 per switch on real routings where most paths at a switch
// agree on the port toward the destination.
func buildSplitGraph(paths [][]Step, nsw int) *splitGraph {
	n := len(paths)
	g := &splitGraph{n: n, words: (n + 63) / 64}
	g.bits = make([]uint64, n*g.words)
	at := usesBySwitch(paths, nsw)
	for _, us := range at {
		if len(us) < 2 {
			continue
		}
		slices.SortFunc(us, func(a, b use) int { return int(a.out) - int(b.out) })
		if us[0].out == us[len(us)-1].out {
			continue // one port: no split here
		}
		// Pair each path with every path of a later port bucket.
		for a := 0; a < len(us); {
			b := a
			for b < len(us) && us[b].out == us[a].out {
				b++
			}
			for _, x := range us[a:b] {
				for _, y := range us[b:] {
					g.set(int(x.path), int(y.path))
				}
			}
			a = b
		}
	}
	return g
}

// color is Nienaber et al. §4.3: colors are applied one at a time to the split
// graph reduced to the still uncoloured paths. Within a round, candidates
// are taken in order of their degree in that reduced graph (largest first
// for color/L, "most split path first"; smallest first for color/S), ties
// by path order; a candidate is coloured unless a path coloured earlier in
// the round splits with it.
func color(paths [][]Step, nsw int, largestFirst bool) ([]int32, int, error) {
	n := len(paths)
	g := buildSplitGraph(paths, nsw)
	group := make([]int32, n)
	uncol := make([]uint64, g.words) // uncoloured paths
	for i := 0; i < n; i++ {
		uncol[i/64] |= 1 << (i % 64)
	}
	deg := make([]int, n)
	blocked := make([]uint64, g.words)
	cand := make([]int, 0, n)
	k := 0
	for left := n; left > 0; k++ {
		cand = cand[:0]
		for i := 0; i < n; i++ {
			if uncol[i/64]&(1<<(i%64)) == 0 {
				continue
			}
			d := 0
			for w, r := range g.row(i) {
				d += bits.OnesCount64(r & uncol[w])
			}
			deg[i] = d
			cand = append(cand, i)
		}
		slices.SortStableFunc(cand, func(a, b int) int {
			if largestFirst {
				return deg[b] - deg[a]
			}
			return deg[a] - deg[b]
		})
		clear(blocked)
		for _, i := range cand {
			if blocked[i/64]&(1<<(i%64)) != 0 {
				continue
			}
			group[i] = int32(k)
			uncol[i/64] &^= 1 << (i % 64)
			left--
			for w, r := range g.row(i) {
				blocked[w] |= r
			}
		}
	}
	return group, k, nil
}
