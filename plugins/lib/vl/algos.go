package vl

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/ibsm/ibsm/sdk/route"
)

// Layers is a layer per (destination, switch): for pair assigners
// (Layered, DFSSSP) the layer of the whole route from that source switch,
// for ACRO the layer of the switch's out-channel toward the destination
// (the layer can drop along a path, never rise).
type Layers struct {
	// L[d][s]; meaningless where s has no route toward d.
	L [][]uint8
	// N is the number of layers used (at least 1).
	N int
	// PerHop marks ACRO's per-channel meaning.
	PerHop bool
	// Pop[i] is ACRO's settling order of layer i's channels: every
	// dependency inside layer i goes from a channel to one settled before
	// it, so the reverse of Pop[i] is a topological order of that layer.
	Pop [][]int32
}

// LimitError says how many layers were needed and how many were available.
type LimitError struct {
	Algo      string
	Needed    int // at least this many layers
	Available int
	Why       string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: needs at least %d layers (VLs) but only %d are available (%s); use a routing with fewer channel dependency cycles, ports with more VLs (VLCap), or a deadlock-free routing engine",
		e.Algo, e.Needed, e.Available, e.Why)
}

func newLayers(f *Fabric) *Layers {
	l := &Layers{L: make([][]uint8, len(f.DLIDs)), N: 1}
	back := make([]uint8, len(f.DLIDs)*f.N)
	for d := range l.L {
		l.L[d] = back[d*f.N : (d+1)*f.N]
	}
	return l
}

// pathOf collects the channels and dependencies of route (s, d) into buf.
func pathOf(f *Fabric, s int32, d int, chans, edges []int32) ([]int32, []int32, int, error) {
	chans, edges = chans[:0], edges[:0]
	capv := 255
	err := f.Walk(s, d, func(c, e int32) {
		chans = append(chans, c)
		capv = min(capv, f.Cap(c))
		if e >= 0 {
			edges = append(edges, e)
		}
	})
	return chans, edges, capv, err
}

// Layered is LASH-style layering: every (source switch, destination) route
// goes to the lowest layer whose dependency graph stays acyclic with it and
// whose number its links can carry. max bounds the layers (VLs, SLs).
func Layered(ctx context.Context, f *Fabric, _ *Trees, max int) (*Layers, error) {
	out := newLayers(f)
	var layers []*Layer
	var chans, edges []int32
	for s := int32(0); s < int32(f.N); s++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for d := range f.DLIDs {
			if !f.Routed(s, d) {
				continue
			}
			var capv int
			var err error
			chans, edges, capv, err = pathOf(f, s, d, chans, edges)
			if err != nil {
				return nil, fmt.Errorf("layered: %w", err)
			}
			placed := false
			for k := 0; k < min(max, capv); k++ {
				if k == len(layers) {
					layers = append(layers, f.NewLayer())
				}
				ok := true
				for i, e := range edges {
					if !layers[k].Insert(e) {
						for _, r := range edges[:i] {
							layers[k].Remove(r)
						}
						ok = false
						break
					}
				}
				if ok {
					out.L[d][s] = uint8(k)
					out.N = maxInt(out.N, k+1)
					placed = true
					break
				}
			}
			if !placed {
				why := fmt.Sprintf("MaxVLs/SLs %d", max)
				if capv < max {
					why = fmt.Sprintf("a link on the route from switch 0x%016x toward DLID %d carries %d VLs", f.G.SwitchGUID(s), f.DLIDs[d], capv)
				}
				return nil, &LimitError{Algo: "layered", Needed: min(max, capv) + 1, Available: min(max, capv), Why: why}
			}
		}
	}
	return out, nil
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// DFSSSP puts every route in layer 0, then, layer by layer, finds a cycle
// and moves the routes through its weakest dependency (the one fewest
// routes use) to the next layer, until the layer is acyclic.
func DFSSSP(ctx context.Context, f *Fabric, tr *Trees, max int) (*Layers, error) {
	out := newLayers(f)
	layers := []*Layer{f.NewLayer()}
	var chans, edges []int32
	for d := range f.DLIDs {
		for s := int32(0); s < int32(f.N); s++ {
			if !f.Routed(s, d) {
				continue
			}
			var err error
			if chans, edges, _, err = pathOf(f, s, d, chans, edges); err != nil {
				return nil, fmt.Errorf("dfsssp: %w", err)
			}
			for _, e := range edges {
				layers[0].Cnt[e]++
			}
		}
	}
	// byChan lists, per channel, the destinations whose tree uses it, so
	// finding the routes through a dependency scans those only.
	nc := f.Chans()
	off := make([]int32, nc+1)
	for d := range f.DLIDs {
		for s := int32(0); s < int32(f.N); s++ {
			if t, p := f.Next(s, d); t >= 0 {
				off[f.Chan(s, p)+1]++
			}
		}
	}
	for c := 0; c < nc; c++ {
		off[c+1] += off[c]
	}
	byChan := make([]int32, off[nc])
	fill := append([]int32(nil), off[:nc]...)
	for d := range f.DLIDs {
		for s := int32(0); s < int32(f.N); s++ {
			if t, p := f.Next(s, d); t >= 0 {
				c := f.Chan(s, p)
				byChan[fill[c]] = int32(d)
				fill[c]++
			}
		}
	}
	var stack []int32
	for k := 0; k < len(layers); k++ {
		black := make([]bool, f.Chans())
		for {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			cyc := layers[k].FindCycle(black)
			if cyc == nil {
				break
			}
			if k+1 >= max {
				return nil, &LimitError{Algo: "dfsssp", Needed: max + 1, Available: max, Why: fmt.Sprintf("layer %d still has a dependency cycle through %s; MaxVLs/SLs %d", k, f.ChanName(func() int32 { _, to := f.EdgeChans(cyc[0]); return to }()), max)}
			}
			if k+1 == len(layers) {
				layers = append(layers, f.NewLayer())
			}
			weak := cyc[0]
			for _, e := range cyc[1:] {
				if layers[k].Cnt[e] < layers[k].Cnt[weak] {
					weak = e
				}
			}
			from, _ := f.EdgeChans(weak)
			ps, _ := f.ChanOf(from)
			t, _, tout := f.EdgeOf(weak)
			for _, d32 := range byChan[off[from]:off[from+1]] {
				d := int(d32)
				lid := f.DLIDs[d]
				if f.R.LFT[t][lid] != tout {
					continue
				}
				stack = append(stack[:0], ps)
				for len(stack) > 0 {
					u := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					stack = append(stack, tr.Kids(d, u)...)
					if out.L[d][u] != uint8(k) {
						continue
					}
					var capv int
					var err error
					if chans, edges, capv, err = pathOf(f, u, d, chans, edges); err != nil {
						return nil, fmt.Errorf("dfsssp: %w", err)
					}
					if k+1 >= capv {
						return nil, &LimitError{Algo: "dfsssp", Needed: k + 2, Available: capv,
							Why: fmt.Sprintf("the route from switch 0x%016x toward DLID %d must move to layer %d but a link on it carries %d VLs", f.G.SwitchGUID(u), lid, k+1, capv)}
					}
					for _, e := range edges {
						layers[k].Cnt[e]--
						layers[k+1].Cnt[e]++
					}
					out.L[d][u] = uint8(k + 1)
					out.N = maxInt(out.N, k+2)
				}
			}
		}
	}
	return out, nil
}

// ACRO is Kawano et al.'s Algorithm 1 on the realised destination trees: per
// destination a CDG that is a forest over the switches' out-channels
// (child = upstream switch); layer by layer, channels are ordered by the
// fitness sum F and a channel is settled for a destination in the current
// layer once the channel after it is settled. Channels settled late for a
// destination drop to a lower layer further along the path.
//
// The per-(switch, destination) state is kept switch-major (index
// s*destinations + d): every tree node on channel c sits at c's switch and
// its parent at c's far switch, so a channel's nodes, listed by ascending
// destination, are read as forward scans — the node's state, its weight,
// and its children as a bit mask over the switch's neighbours (the
// neighbours' weights are forward scans too). The fitness of each layer is
// summed per channel in parallel (each channel alone, in that order, so the
// sums and the plan do not depend on the workers).
func ACRO(ctx context.Context, f *Fabric, tr *Trees, max int) (*Layers, error) {
	k, widest := 0, int32(0) // most switch-to-switch ports on one switch
	for s := int32(0); s < int32(f.N); s++ {
		n := 0
		for c := f.chanBase[s]; c < f.chanBase[s+1]; c++ {
			if f.peerSw[c] >= 0 {
				n++
			}
		}
		if n > k {
			k, widest = n, s
		}
	}
	switch {
	case k <= 16:
		return acroW[uint16](ctx, f, tr, max)
	case k <= 32:
		return acroW[uint32](ctx, f, tr, max)
	case k <= 64:
		return acroW[uint64](ctx, f, tr, max)
	}
	return nil, fmt.Errorf("acro: switch 0x%016x has %d switch-to-switch ports; acro handles at most 64 — use dfsssp or layered", f.G.SwitchGUID(widest), k)
}

// kidWord holds a bit per switch-to-switch port of a switch.
type kidWord interface{ ~uint16 | ~uint32 | ~uint64 }

// neighbour is a switch-to-switch port of switch s seen from the far end:
// the channel into s (k's port toward s), the switch k, and that port.
type neighbour struct {
	in, k int32
	port  uint8
}

func acroW[W kidWord](ctx context.Context, f *Fabric, tr *Trees, max int) (*Layers, error) {
	out := newLayers(f)
	out.PerHop = true
	nd, n := len(f.DLIDs), f.N
	nc := f.Chans()
	// nbr[nOff[s]:nOff[s+1]]: s's switch-to-switch ports in port order;
	// bit i of a kid mask at s is nbr[nOff[s]+i].
	nOff := make([]int32, n+1)
	var nbr []neighbour
	for s := int32(0); s < int32(n); s++ {
		for c := f.chanBase[s] + 1; c < f.chanBase[s+1]; c++ {
			if k := f.peerSw[c]; k >= 0 {
				q := f.peerPort[c]
				nbr = append(nbr, neighbour{in: f.Chan(k, q), k: k, port: q})
			}
		}
		nOff[s+1] = int32(len(nbr))
	}
	// Per switch, its forwarding row (LID order) gives the destinations
	// each of its channels carries (CSR, ascending: count, place, fill),
	// then its in-channels' lists give its children toward each
	// destination. Every switch writes only its own entries, so each pass
	// runs over the switches in parallel.
	const block = 16 // switches per work item
	items := (n + block - 1) / block
	each := func(do func(s int32)) error {
		_, err := route.Each(ctx, items, 0, func(_, b int) error {
			for s := b * block; s < min(n, (b+1)*block); s++ {
				do(int32(s))
			}
			return nil
		})
		return err
	}
	// out-channel of s toward lid, -1 when s delivers or has no route (as
	// tr.Next).
	outChan := func(s int32, lid uint16) int32 {
		p := f.R.LFT[s][lid]
		if p == 0 || int32(p) >= f.chanBase[s+1]-f.chanBase[s] || f.peerSw[f.chanBase[s]+int32(p)] < 0 {
			return -1
		}
		return f.chanBase[s] + int32(p)
	}
	off := make([]int32, nc+1)
	if err := each(func(s int32) {
		for _, lid := range f.DLIDs {
			if c := outChan(s, lid); c >= 0 {
				off[c+1]++
			}
		}
	}); err != nil {
		return nil, err
	}
	for c := 0; c < nc; c++ {
		off[c+1] += off[c]
	}
	dests := make([]int32, off[nc])
	fill := append([]int32(nil), off[:nc]...)
	if err := each(func(s int32) {
		for d, lid := range f.DLIDs {
			if c := outChan(s, lid); c >= 0 {
				dests[fill[c]] = int32(d)
				fill[c]++
			}
		}
	}); err != nil {
		return nil, err
	}
	kidMask := make([]W, n*nd)
	if err := each(func(s int32) {
		row := kidMask[int(s)*nd : (int(s)+1)*nd]
		for i, nb := range nbr[nOff[s]:nOff[s+1]] {
			bit := W(1) << i
			for _, d := range dests[off[nb.in]:off[nb.in+1]] {
				row[d] |= bit
			}
		}
	}); err != nil {
		return nil, err
	}
	// live[c]: how many of c's destinations, at the front of its list,
	// may still be unsettled; each layer's fitness pass drops the settled
	// ones, so the serial settling scans only the rest.
	live := make([]int32, nc)
	for c := range live {
		live[c] = off[c+1] - off[c]
	}
	from := make([]int32, nc) // a channel's switch
	for c := range from {
		from[c], _ = f.ChanOf(int32(c))
	}
	// Weights, leaves first: w = 1 for a leaf, else N * sum of children.
	// Destinations are independent: 64 of them per work item, so a
	// switch's entries a worker writes share cache lines.
	w := make([]float64, nd*n)
	marked := make([]bool, nd*n)
	const dchunk = 64
	unsettled := make([]int, (nd+dchunk-1)/dchunk)
	if _, err := route.Each(ctx, len(unsettled), 0, func(_, b int) error {
		for d := b * dchunk; d < min(nd, (b+1)*dchunk); d++ {
			for _, s := range tr.Order[d] {
				kids := tr.Kids(d, s)
				x := int(s)*nd + d
				if len(kids) == 0 {
					w[x] = 1
				} else {
					var sum float64
					for _, k := range kids {
						sum += w[int(k)*nd+d]
					}
					w[x] = float64(n) * sum
				}
				if t, _ := tr.Next(d, s); t < 0 {
					marked[x] = true // delivers: its channel is settled from the start
				} else {
					unsettled[b]++
				}
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	remaining := 0
	for _, u := range unsettled {
		remaining += u
	}
	// layer[s*nd+d]: the layer (s, d) settles in, copied into out.L
	// (destination-major) at the end.
	layer := make([]uint8, nd*n)
	F := make([]float64, nc)
	h := &heap{pos: make([]int32, nc), key: F}
	const chunk = 256 // channels per fitness work item
	for i := 0; remaining > 0; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if i >= max {
			return nil, &LimitError{Algo: "acro", Needed: max + 1, Available: max, Why: fmt.Sprintf("%d (destination, channel) pairs still unsettled after %d layers; MaxVLs/SLs %d", remaining, max, max)}
		}
		// Fitness: a channel's weight for every destination where it is
		// unsettled and its parent is too.
		if _, err := route.Each(ctx, (nc+chunk-1)/chunk, 0, func(_, k int) error {
			for c := k * chunk; c < min(nc, (k+1)*chunk); c++ {
				F[c] = 0
				if off[c] == off[c+1] {
					continue
				}
				ms := marked[int(from[c])*nd : (int(from[c])+1)*nd]
				mt := marked[int(f.peerSw[c])*nd : (int(f.peerSw[c])+1)*nd]
				ws := w[int(from[c])*nd : (int(from[c])+1)*nd]
				var sum float64
				ds := dests[off[c] : off[c]+live[c]]
				j := 0
				for _, d := range ds {
					if !ms[d] {
						ds[j] = d
						j++
						if !mt[d] {
							sum += ws[d]
						}
					}
				}
				live[c] = int32(j)
				F[c] = sum
			}
			return nil
		}); err != nil {
			return nil, err
		}
		h.items = h.items[:0]
		for c := 0; c < nc; c++ {
			h.pos[c] = -1
			if off[c] != off[c+1] {
				h.push(int32(c))
			}
		}
		pop := make([]int32, 0, h.len())
		for h.len() > 0 {
			c := h.pop()
			pop = append(pop, c)
			s, t := from[c], f.peerSw[c]
			ms := marked[int(s)*nd : (int(s)+1)*nd]
			mt := marked[int(t)*nd : (int(t)+1)*nd]
			ls := layer[int(s)*nd : (int(s)+1)*nd]
			ks := kidMask[int(s)*nd : (int(s)+1)*nd]
			nbs := nbr[nOff[s]:nOff[s+1]]
			settled := false
			for _, d := range dests[off[c] : off[c]+live[c]] {
				if ms[d] || !mt[d] {
					continue
				}
				ms[d] = true
				remaining--
				ls[d] = uint8(i)
				settled = true
				// s's children toward d are unsettled (a node settles
				// after its parent): their channels lose their weight.
				for m := ks[d]; m != 0; m &= m - 1 {
					nb := nbs[bits.TrailingZeros64(uint64(m))]
					if kc := nb.in; h.pos[kc] >= 0 {
						wx := w[int(nb.k)*nd+int(d)]
						F[kc] -= wx
						if F[kc] < 0 || math.Abs(F[kc]) < 1e-9*wx {
							F[kc] = 0
						}
						h.up(h.pos[kc])
					}
				}
			}
			if settled {
				out.N = maxInt(out.N, i+1)
				if i >= f.Cap(c) {
					d := slices.IndexFunc(dests[off[c]:off[c]+live[c]], func(d int32) bool { return ls[d] == uint8(i) && ms[d] })
					return nil, &LimitError{Algo: "acro", Needed: i + 1, Available: f.Cap(c),
						Why: fmt.Sprintf("channel %s toward DLID %d is settled in layer %d but its link carries %d VLs", f.ChanName(c), f.DLIDs[dests[off[c]+int32(d)]], i, f.Cap(c))}
				}
			}
		}
		out.Pop = append(out.Pop, pop)
	}
	if err := each(func(s int32) {
		for d, x := range layer[int(s)*nd : (int(s)+1)*nd] {
			out.L[d][s] = x
		}
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// heap is a min-heap of channel ids keyed by key[], with positions for
// decrease-key. Ties go to the lower channel id, so runs are reproducible.
type heap struct {
	items []int32
	pos   []int32
	key   []float64
}

func (h *heap) len() int { return len(h.items) }

func (h *heap) less(i, j int32) bool {
	a, b := h.items[i], h.items[j]
	if h.key[a] != h.key[b] {
		return h.key[a] < h.key[b]
	}
	return a < b
}

func (h *heap) swap(i, j int32) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]] = i
	h.pos[h.items[j]] = j
}

func (h *heap) push(c int32) {
	h.items = append(h.items, c)
	h.pos[c] = int32(len(h.items) - 1)
	h.up(h.pos[c])
}

func (h *heap) up(i int32) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *heap) pop() int32 {
	c := h.items[0]
	last := int32(len(h.items) - 1)
	h.swap(0, last)
	h.items = h.items[:last]
	h.pos[c] = -1
	i := int32(0)
	n := int32(len(h.items))
	for {
		l, r := 2*i+1, 2*i+2
		m := i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.swap(i, m)
		i = m
	}
	return c
}
