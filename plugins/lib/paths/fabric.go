// Package paths holds the path-based routings of Nienaber, Yuan and Duan, "On
// LID Assignment in InfiniBand Networks" (ANCS 2007), and López, Flich and
// Duato, "Deadlock-free Routing in InfiniBand through Destination Renaming"
// (ICPP 2001), on Up*/Down*: a random shortest legal path per pair,
// shortest-widest, and k-shortest legal paths (Yen) followed by
// most-loaded-link-first path selection. They emit explicit per-pair paths
// (plan.Path) for a path-partitioning LID assigner.
//
// Everything works on the switch graph: endpoints (CA ports, and switch
// port 0 if asked for) hang off their switch, and all of a switch's
// endpoints share its candidate paths. Loads are counted per directed
// switch-to-switch channel; CA links are the same for every candidate of a
// pair, so they never influence a choice and are not counted.
//
// Randomness comes only from the *rand.Rand the caller passes, so a seed
// fixes the result.
package paths

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Fabric is the switch graph of a topology over links that are up, with
// every directed switch-to-switch channel numbered. Channels of switch s are
// Off[s]..Off[s+1]-1, in port order.
type Fabric struct {
	Topo *topology.Topology
	// N is the number of switches; switch i is Topo.Switches()[i].
	N int
	// Off is the CSR offset of each switch's channels (len N+1).
	Off []int32
	// Peer, Port and PeerPort describe channel c: it leaves switch From[c]
	// through Port[c] and enters switch Peer[c] through PeerPort[c].
	From     []int32
	Peer     []int32
	Port     []uint8
	PeerPort []uint8
	// Rev[c] is the channel in the opposite direction of the same cable.
	Rev []int32
	// Home[e] is the switch endpoint e hangs off (-1: not attached by a
	// link that is up); HomePort[e] the port of Home[e] that delivers to it
	// (0 for a switch's own port 0).
	Home     []int32
	HomePort []uint8
	// IsCA[e] is true for CA and router ports, false for switch port 0.
	IsCA []bool
}

// NewFabric indexes t. Loopback cables (a switch to itself) carry no route
// and are left out.
func NewFabric(t *topology.Topology) (*Fabric, error) {
	if t == nil {
		return nil, fmt.Errorf("paths: no topology")
	}
	sws := t.Switches()
	f := &Fabric{Topo: t, N: len(sws), Off: make([]int32, len(sws)+1)}
	for s, node := range sws {
		n := &t.Nodes[node]
		for p := 1; p < len(n.Ports); p++ {
			r := topology.PortRef{Node: node, Port: uint8(p)}
			if !t.IsLinkUp(r) {
				continue
			}
			pr := n.Ports[p].Peer
			ps := t.SwitchIndex(pr.Node)
			if ps < 0 || int(ps) == s {
				continue
			}
			f.From = append(f.From, int32(s))
			f.Peer = append(f.Peer, ps)
			f.Port = append(f.Port, uint8(p))
			f.PeerPort = append(f.PeerPort, pr.Port)
		}
		f.Off[s+1] = int32(len(f.Peer))
	}
	f.Rev = make([]int32, len(f.Peer))
	for c := range f.Peer {
		f.Rev[c] = -1
		q := f.Peer[c]
		for d := f.Off[q]; d < f.Off[q+1]; d++ {
			if f.Port[d] == f.PeerPort[c] {
				f.Rev[c] = d
				break
			}
		}
		if f.Rev[c] < 0 {
			return nil, fmt.Errorf("paths: link 0x%016x/%d is up on one side only; re-discover the fabric", t.Nodes[sws[f.From[c]]].GUID, f.Port[c])
		}
	}
	eps := t.Endpoints()
	f.Home = make([]int32, len(eps))
	f.HomePort = make([]uint8, len(eps))
	f.IsCA = make([]bool, len(eps))
	for e, ep := range eps {
		f.Home[e] = -1
		if s := t.SwitchIndex(ep.Node); s >= 0 {
			f.Home[e] = s
			continue
		}
		f.IsCA[e] = true
		if !t.IsLinkUp(ep) {
			continue
		}
		pr := t.Port(ep).Peer
		if s := t.SwitchIndex(pr.Node); s >= 0 {
			f.Home[e], f.HomePort[e] = s, pr.Port
		}
	}
	return f, nil
}

// Channels is the number of directed switch-to-switch channels.
func (f *Fabric) Channels() int { return len(f.Peer) }

// ChannelOf returns the channel leaving switch s through port p, or -1.
func (f *Fabric) ChannelOf(s int32, p uint8) int32 {
	for c := f.Off[s]; c < f.Off[s+1]; c++ {
		if f.Port[c] == p {
			return c
		}
	}
	return -1
}

// Endpoints lists the endpoints that take part in path routing: every CA
// port attached to a switch, plus every switch's port 0 if switches is set.
func (f *Fabric) Endpoints(switches bool) []int32 {
	var out []int32
	for e := range f.Home {
		if f.Home[e] >= 0 && (f.IsCA[e] || switches) {
			out = append(out, int32(e))
		}
	}
	return out
}

// Path turns a channel sequence from src's switch to dst's switch into the
// explicit hop list of endpoint pair (src, dst).
func (f *Fabric) Path(src, dst int32, chans []int32) plan.Path {
	sws := f.Topo.Switches()
	hops := make([]plan.Hop, len(chans)+1)
	cur, in := f.Home[src], f.HomePort[src]
	for i, c := range chans {
		hops[i] = plan.Hop{Switch: sws[cur], In: in, Out: f.Port[c]}
		cur, in = f.Peer[c], f.PeerPort[c]
	}
	hops[len(chans)] = plan.Hop{Switch: sws[cur], In: in, Out: f.HomePort[dst]}
	return plan.Path{Src: src, Dst: dst, Hops: hops}
}

// Channels returns the switch-to-switch channels path p crosses, or an
// error if a hop does not follow an up link of f.
func (f *Fabric) PathChannels(p plan.Path, buf []int32) ([]int32, error) {
	buf = buf[:0]
	for k := 0; k+1 < len(p.Hops); k++ {
		s := f.Topo.SwitchIndex(p.Hops[k].Switch)
		if s < 0 {
			return nil, fmt.Errorf("path %d->%d hop %d: node %d is not a switch", p.Src, p.Dst, k, p.Hops[k].Switch)
		}
		c := f.ChannelOf(s, p.Hops[k].Out)
		if c < 0 || f.Topo.Switches()[f.Peer[c]] != p.Hops[k+1].Switch || f.PeerPort[c] != p.Hops[k+1].In {
			return nil, fmt.Errorf("path %d->%d hop %d: port %d of node %d does not lead to hop %d", p.Src, p.Dst, k, p.Hops[k].Out, p.Hops[k].Switch, k+1)
		}
		buf = append(buf, c)
	}
	return buf, nil
}

// Loads counts, per channel, the paths crossing it (all-to-all traffic of
// equal volume per pair, the load measure of Nienaber et al. §5.2).
func (f *Fabric) Loads(ps []plan.Path) ([]int32, error) {
	load := make([]int32, f.Channels())
	var buf []int32
	for _, p := range ps {
		var err error
		if buf, err = f.PathChannels(p, buf); err != nil {
			return nil, err
		}
		for _, c := range buf {
			load[c]++
		}
	}
	return load, nil
}

// MaxLoad is the largest per-channel path count of ps.
func MaxLoad(t *topology.Topology, ps []plan.Path) (int, error) {
	f, err := NewFabric(t)
	if err != nil {
		return 0, err
	}
	load, err := f.Loads(ps)
	if err != nil {
		return 0, err
	}
	m := int32(0)
	for _, l := range load {
		m = max(m, l)
	}
	return int(m), nil
}
