package vl

import (
	"fmt"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Check verifies a VL plan the way a packet sees it (as ibdmchk does): for
// every source endpoint and every DLID it does not own, it walks the route
// with the source's SL, takes the VL of every hop from the SL2VL table of
// (switch, in, out), and builds one dependency graph over virtual channels
// (channel, VL). The plan is deadlock-free iff that graph is acyclic; every
// hop's VL must also be below its link's VLCap. Unlike a per-VL check it is
// exact when the VL changes along a path. Work is endpoints × LIDs × hops:
// meant for tests and experiments, not for the plugins' hot path.
func Check(f *Fabric, v *plan.VLPlan) error {
	t := f.R.Topo
	type key struct {
		node    int32
		in, out uint8
	}
	tabs := make(map[key]*[16]uint8, len(v.SL2VL))
	for i := range v.SL2VL {
		e := &v.SL2VL[i]
		tabs[key{e.Node, e.In, e.Out}] = &e.VL
	}
	vlOf := func(node int32, in, out uint8, sl uint8) uint8 {
		if x, ok := tabs[key{node, in, out}]; ok {
			return x[sl&15]
		}
		return v.Default[sl&15]
	}
	ov := make(map[[2]int32]uint8, len(v.Overrides))
	for _, o := range v.Overrides {
		ov[[2]int32{o.Src, int32(o.DLID)}] = o.SL
	}
	nv := f.Chans() * 16
	succ := make([]map[int32]struct{}, nv)
	capErr := func(c int32, vl uint8, what string) error {
		return fmt.Errorf("%s: traffic on VL%d but channel %s carries %d VLs", what, vl, f.ChanName(c), f.Cap(c))
	}
	sws := t.Switches()
	for e, ep := range t.Endpoints() {
		a := f.G.Attachment(int32(e))
		if a.Switch < 0 {
			continue
		}
		for _, lid := range f.DLIDs {
			if f.R.LIDOwner[lid]-1 == int32(e) {
				continue
			}
			sl := uint8(0)
			if int(lid) < len(v.SLByDLID) {
				sl = v.SLByDLID[lid]
			}
			if x, ok := ov[[2]int32{int32(e), int32(lid)}]; ok {
				sl = x
			}
			if !a.IsSwitch {
				vl := vlOf(ep.Node, ep.Port, ep.Port, sl)
				if int(vl) >= t.LinkVLs(ep) {
					return fmt.Errorf("CA 0x%016x/%d toward DLID %d: SL%d maps to VL%d beyond its link's %d VLs", t.Nodes[ep.Node].GUID, ep.Port, lid, sl, vl, t.LinkVLs(ep))
				}
			}
			s, in := a.Switch, a.Port
			prev := int32(-1)
			for hops := 0; ; hops++ {
				if hops > f.N {
					return fmt.Errorf("DLID %d: forwarding loop", lid)
				}
				out := f.R.LFT[s][lid]
				if out == plan.NoPort {
					break
				}
				if out == 0 {
					break
				}
				vl := vlOf(sws[s], in, out, sl)
				c := f.Chan(s, out)
				if int(vl) >= t.LinkVLs(topology.PortRef{Node: sws[s], Port: out}) {
					return capErr(c, vl, fmt.Sprintf("source %d toward DLID %d (SL%d)", e, lid, sl))
				}
				nxt := f.G.PeerSwitch(s, out)
				if nxt < 0 {
					break // delivered to a CA
				}
				vc := c*16 + int32(vl)
				if prev >= 0 {
					if succ[prev] == nil {
						succ[prev] = map[int32]struct{}{}
					}
					succ[prev][vc] = struct{}{}
				}
				prev = vc
				in = f.peerPort[c]
				s = nxt
			}
		}
	}
	// Iterative DFS for a cycle.
	color := make([]uint8, nv)
	type frame struct {
		v    int32
		next []int32
	}
	for root := int32(0); root < int32(nv); root++ {
		if color[root] != 0 || succ[root] == nil {
			continue
		}
		stack := []frame{{root, keys(succ[root])}}
		color[root] = 1
		for len(stack) > 0 {
			fr := &stack[len(stack)-1]
			if len(fr.next) == 0 {
				color[fr.v] = 2
				stack = stack[:len(stack)-1]
				continue
			}
			n := fr.next[0]
			fr.next = fr.next[1:]
			switch color[n] {
			case 1:
				return fmt.Errorf("credit loop through %s on VL%d", f.ChanName(n/16), n%16)
			case 0:
				color[n] = 1
				stack = append(stack, frame{n, keys(succ[n])})
			}
		}
	}
	return nil
}

func keys(m map[int32]struct{}) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
