package analysis

import (
	"fmt"
	"math"
	"sort"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
)

// Port status of a switch port, precomputed once.
const (
	portOK uint8 = iota
	portUnconnected
	portDown
)

// swLink is where a switch port leads, in four bytes: following an LFT
// entry reads one small table where three tables took three cache misses
// (ft3-56 has 223,440 switch ports, and every (LID, switch) follows one).
type swLink struct {
	sw1  uint16 // peer switch index + 1 when the link is up, else 0
	port uint8  // the peer's port number (set whenever the port is cabled)
	stat uint8  // portOK, portUnconnected or portDown
}

// sw is the peer switch index, or -1 when the port does not lead to a
// switch over an up link.
func (l swLink) sw() int32 { return int32(l.sw1) - 1 }

// tmplOwner marks a hop template whose LIDs arrive only if deliver owns
// them; the LFT entry's byte of a hop word is free for it.
const tmplOwner = 1 << 24

// Fields of fabric.srcs.
const (
	srcCAs        = 0xff
	srcSelf       = 1 << 8
	srcCountShift = 16
)

// maxSwitches is what swLink can index: every switch holds a LID, so a
// fabric in the unicast LID space has fewer.
const maxSwitches = 1<<16 - 1

type dlidOv struct {
	src int32
	off uint8
}

type slOv struct {
	src int32
	sl  uint8
}

// fabric is the read-only, flattened view of topology, LIDs and VLs that the
// per-LID workers share.
type fabric struct {
	topo *topology.Topology
	r    *plan.Realized
	lids *plan.LIDPlan
	vls  *plan.VLPlan

	nsw    int
	swNode []int32
	np     []uint8
	swEp   []int32 // switch index -> endpoint index of its port 0

	// Per switch port, flattened at portBase[s]+port (port 0..np).
	portBase []int32
	link     []swLink
	peerEp   []int32 // endpoint index of a non-switch peer when the link is up, else -1
	// hopTmpl is each port's hop word without its LFT entry: where an
	// entry arrives only for one endpoint's LIDs (port 0: the switch's
	// own, a port up to a CA: the CA's), tmplOwner is set, deliver
	// names that endpoint and the code is the failure for other LIDs.
	hopTmpl []uint32
	deliver []int32
	// leanNext is, per switch and LFT entry, the offset of the next
	// switch's entries in worker.block (its index times chunkLIDs) when
	// the entry's port leads to a switch over an up link, -1 when it
	// delivers to an endpoint (port 0, a CA's port), else leanBad.
	leanNext [][256]int32

	// Channels: switch out-ports are portBase[s]+p; CA out-ports follow.
	nSwPorts int
	nChan    int
	caChan   []int32 // endpoint -> channel of a CA endpoint's out-port, -1 for switches
	chanEp   []int32 // channel-nSwPorts -> CA endpoint

	// CDG edge index of (switch, in, out): edgeBase[s] + in*(np+1) + out.
	edgeBase []int
	nEdges   int
	// narrow: no switch has more than 63 ports, so a channel's successor
	// out-ports fit one word (worker.chans).
	narrow bool

	eps     []topology.PortRef
	isCA    []bool
	epSw    []int32 // switch endpoint: its switch; CA: attached switch (link up) or -1
	epIn    []uint8 // CA: port number at the attached switch
	nCA     int
	caCount []int32 // CAs attached per switch
	caStart []int32 // CSR of CA endpoints per switch
	caList  []int32
	orphans []int32 // CA endpoints without an up link to a switch
	lmcs    []uint8 // distinct LMC values present, ascending
	nc      int     // number of (LMC, offset) classes: 2^(maxLMC+1)-1
	caClass []int32 // nsw*nc: CAs at switch selecting offset k of an LMC-L range
	// classTotal[c] sums caClass over the switches; swClassTotal[c] counts
	// the switches whose port-0 endpoint selects class c.
	classTotal, swClassTotal []int64
	// srcs[c*nsw+s] packs what plainLID needs of switch s's sources
	// toward a LID of class c: its CAs of the class (srcCAs), its port 0
	// (srcSelf) and all its CAs (from srcCountShift on).
	srcs []uint32
	// allArrive is stArrive for every switch (worker.arrived copies it).
	allArrive []uint8
	spread    bool
	dlidOvs   map[int32][]dlidOv // by destination endpoint
	dlidOvAt  map[[2]int32]uint8 // (src, dst) -> offset
	slOvs     map[uint16][]slOv  // by DLID
	slOvAt    map[slKey]uint8    // (src, dlid) -> SL
	lidList   []uint16           // assigned LIDs, ascending

	// SL2VL: tables[0] is VLPlan.Default; tabIdx[edge] picks the table of a
	// switch port pair (nil when the plan lists no switch entries); caTab
	// maps a CA endpoint to its table.
	tables []([16]uint8)
	tabIdx []uint32 // a plan may hold more than 65,535 distinct tables (acro: 110,330 on 1,000 switches)
	caTab  map[int32]uint32
	// caVLs[channel*16+sl] is the set of VLs SL sl gets on a switch
	// out-channel over every CA in-port of the switch but the out-port
	// itself: the first-hop VLs when all its CAs send (set with tabIdx).
	caVLs []uint16
}

type slKey struct {
	src  int32
	dlid uint16
}

func cls(l, k uint8) int { return (1 << l) - 1 + int(k) }

// offset is the DLID offset endpoint src selects toward a range of LMC l
// under the plan's rule, before overrides.
func (f *fabric) offset(src int32, l uint8) uint8 {
	if !f.spread {
		return 0
	}
	return uint8(int(src) % (1 << l))
}

// selected is the offset src uses toward dst, overrides included.
func (f *fabric) selected(src, dst int32) uint8 {
	if o, ok := f.dlidOvAt[[2]int32{src, dst}]; ok {
		return o
	}
	return f.offset(src, f.lids.Ports[dst].LMC)
}

func (f *fabric) guid(node int32) uint64 { return f.topo.Nodes[node].GUID }

func (f *fabric) epName(e int32) string {
	p := f.eps[e]
	return fmt.Sprintf("0x%016x/%d", f.guid(p.Node), p.Port)
}

func (f *fabric) swName(s int32) string { return fmt.Sprintf("0x%016x", f.guid(f.swNode[s])) }

func (f *fabric) chanName(c int) string {
	if c < f.nSwPorts {
		s := sort.Search(f.nsw, func(i int) bool { return int(f.portBase[i+1]) > c }) // portBase has nsw+1 entries
		return fmt.Sprintf("0x%016x/%d", f.guid(f.swNode[s]), c-int(f.portBase[s]))
	}
	return f.epName(f.chanEp[c-f.nSwPorts])
}

// chanOwner returns the node and port of a channel's out-port.
func (f *fabric) chanPort(c int) topology.PortRef {
	if c < f.nSwPorts {
		s := sort.Search(f.nsw, func(i int) bool { return int(f.portBase[i+1]) > c })
		return topology.PortRef{Node: f.swNode[s], Port: uint8(c - int(f.portBase[s]))}
	}
	return f.eps[f.chanEp[c-f.nSwPorts]]
}

// newFabric validates the shapes it indexes and flattens the inputs.
func newFabric(r *plan.Realized, vls *plan.VLPlan) (*fabric, error) {
	if r == nil || r.Topo == nil || r.LIDs == nil {
		return nil, fmt.Errorf("analysis: realised plan without topology or LID plan; realise routes with plan.Realize first")
	}
	t := r.Topo
	f := &fabric{topo: t, r: r, lids: r.LIDs, vls: vls, eps: t.Endpoints()}
	sws := t.Switches()
	f.nsw = len(sws)
	if f.nsw > maxSwitches {
		return nil, fmt.Errorf("analysis: %d switches, more than the %d the unicast LID space can address", f.nsw, maxSwitches)
	}
	f.swNode = sws
	if len(r.LFT) != f.nsw {
		return nil, fmt.Errorf("analysis: %d forwarding tables for %d switches", len(r.LFT), f.nsw)
	}
	for s, row := range r.LFT {
		if len(row) != int(r.TopLID)+1 {
			return nil, fmt.Errorf("analysis: switch 0x%016x LFT has %d entries, want TopLID+1 = %d", t.Nodes[sws[s]].GUID, len(row), int(r.TopLID)+1)
		}
	}
	if len(r.LIDOwner) != int(r.TopLID)+1 {
		return nil, fmt.Errorf("analysis: LID owner table has %d entries, want TopLID+1 = %d", len(r.LIDOwner), int(r.TopLID)+1)
	}
	if len(f.lids.Ports) != len(f.eps) {
		return nil, fmt.Errorf("analysis: LID plan has %d ports, topology has %d endpoints", len(f.lids.Ports), len(f.eps))
	}
	f.spread = f.lids.Rule == plan.DLIDSpread

	// Switch ports.
	f.np = make([]uint8, f.nsw)
	f.swEp = make([]int32, f.nsw)
	f.portBase = make([]int32, f.nsw+1)
	f.edgeBase = make([]int, f.nsw+1)
	for s, n := range sws {
		f.np[s] = uint8(t.Nodes[n].NumPorts())
		f.portBase[s+1] = f.portBase[s] + int32(f.np[s]) + 1
		w := int(f.np[s]) + 1
		f.edgeBase[s+1] = f.edgeBase[s] + w*w
		f.swEp[s] = t.EndpointIndex(topology.PortRef{Node: n, Port: 0})
	}
	f.nEdges = f.edgeBase[f.nsw]
	f.narrow = true
	for _, n := range f.np {
		f.narrow = f.narrow && n < 64
	}
	f.nSwPorts = int(f.portBase[f.nsw])
	np := f.nSwPorts
	f.link = make([]swLink, np)
	f.peerEp = make([]int32, np)
	f.hopTmpl, f.deliver = make([]uint32, np), make([]int32, np)
	for s, n := range sws {
		for p := 0; p <= int(f.np[s]); p++ {
			i := int(f.portBase[s]) + p
			l := &f.link[i]
			f.peerEp[i] = -1
			ref := topology.PortRef{Node: n, Port: uint8(p)}
			port := t.Port(ref)
			switch {
			case p == 0 || !port.Peer.Connected():
				l.stat = portUnconnected
				continue
			case !t.IsLinkUp(ref):
				l.stat = portDown
			}
			l.port = port.Peer.Port
			if l.stat != portOK {
				continue
			}
			if ps := t.SwitchIndex(port.Peer.Node); ps >= 0 {
				l.sw1 = uint16(ps + 1)
			} else {
				f.peerEp[i] = t.EndpointIndex(port.Peer)
			}
		}
	}
	for s := range f.nsw {
		for p := 0; p <= int(f.np[s]); p++ {
			i := int(f.portBase[s]) + p
			l := f.link[i]
			f.deliver[i] = -1
			switch {
			case p == 0:
				f.hopTmpl[i], f.deliver[i] = tmplOwner|uint32(fPort0)<<16, f.swEp[s]
			case l.sw1 != 0:
				f.hopTmpl[i] = uint32(l.sw1) | uint32(l.port)<<16
			case l.stat == portUnconnected:
				f.hopTmpl[i] = uint32(fUnconnected) << 16
			case l.stat == portDown:
				f.hopTmpl[i] = uint32(fDown) << 16
			default:
				f.hopTmpl[i], f.deliver[i] = tmplOwner|uint32(fWrongPort)<<16, f.peerEp[i]
			}
		}
	}

	// Endpoints.
	ne := len(f.eps)
	f.isCA = make([]bool, ne)
	f.epSw = make([]int32, ne)
	f.epIn = make([]uint8, ne)
	f.caChan = make([]int32, ne)
	f.caCount = make([]int32, f.nsw)
	nch := np
	var maxLMC uint8
	seenLMC := [8]bool{}
	for e, ref := range f.eps {
		pl := f.lids.Ports[e]
		if pl.LMC > 7 {
			return nil, fmt.Errorf("analysis: endpoint %s has LMC %d > 7", f.epName(int32(e)), pl.LMC)
		}
		seenLMC[pl.LMC] = true
		maxLMC = max(maxLMC, pl.LMC)
		f.caChan[e] = -1
		if s := t.SwitchIndex(ref.Node); s >= 0 {
			f.epSw[e] = s
			continue
		}
		f.isCA[e] = true
		f.nCA++
		f.caChan[e] = int32(nch)
		f.chanEp = append(f.chanEp, int32(e))
		nch++
		f.epSw[e] = -1
		peer := t.Port(ref).Peer
		if peer.Connected() && t.IsLinkUp(ref) {
			if s := t.SwitchIndex(peer.Node); s >= 0 {
				f.epSw[e] = s
				f.epIn[e] = peer.Port
				f.caCount[s]++
				continue
			}
		}
		f.orphans = append(f.orphans, int32(e))
	}
	f.nChan = nch
	for l := range seenLMC {
		if seenLMC[l] {
			f.lmcs = append(f.lmcs, uint8(l))
		}
	}
	f.caStart = make([]int32, f.nsw+1)
	for s := range f.nsw {
		f.caStart[s+1] = f.caStart[s] + f.caCount[s]
	}
	f.caList = make([]int32, f.caStart[f.nsw])
	fill := append([]int32(nil), f.caStart[:f.nsw]...)
	for e := range f.eps {
		if f.isCA[e] && f.epSw[e] >= 0 {
			s := f.epSw[e]
			f.caList[fill[s]] = int32(e)
			fill[s]++
		}
	}
	f.nc = (1 << (maxLMC + 1)) - 1
	f.caClass = make([]int32, f.nsw*f.nc)
	f.classTotal, f.swClassTotal = make([]int64, f.nc), make([]int64, f.nc)
	for e := range f.eps {
		if !f.isCA[e] || f.epSw[e] < 0 {
			continue
		}
		for _, l := range f.lmcs {
			c := cls(l, f.offset(int32(e), l))
			f.caClass[int(f.epSw[e])*f.nc+c]++
			f.classTotal[c]++
		}
	}
	f.allArrive = make([]uint8, f.nsw)
	for s := range f.allArrive {
		f.allArrive[s] = stArrive
	}
	f.srcs = make([]uint32, f.nc*f.nsw)
	for s := range f.nsw {
		for c := range f.nc {
			// At most 255 ports, so the counts fit their 8 bits.
			f.srcs[c*f.nsw+s] = uint32(f.caClass[s*f.nc+c]) | uint32(f.caCount[s])<<srcCountShift
		}
		for _, l := range f.lmcs {
			c := cls(l, f.offset(f.swEp[s], l))
			f.swClassTotal[c]++
			f.srcs[c*f.nsw+s] |= srcSelf
		}
	}

	// Assigned LIDs, checked against the plan so a tampered owner table
	// cannot send a worker out of range.
	for lid := 1; lid <= int(r.TopLID); lid++ {
		o := r.LIDOwner[lid]
		if o == 0 {
			continue
		}
		if int(o) > ne {
			return nil, fmt.Errorf("analysis: LID %d owned by endpoint %d of %d", lid, o-1, ne)
		}
		if !f.lids.Ports[o-1].Contains(uint16(lid)) {
			return nil, fmt.Errorf("analysis: LID %d owner table names endpoint %s, whose range is %d/%d", lid, f.epName(o-1), f.lids.Ports[o-1].Base, f.lids.Ports[o-1].LMC)
		}
		f.lidList = append(f.lidList, uint16(lid))
	}

	// Every endpoint's whole range must be in the owner table, or its pairs
	// would silently drop out of the counts.
	for e, p := range f.lids.Ports {
		for k := 0; k < p.Count(); k++ {
			lid := int(p.Base) + k
			if p.Base == 0 || lid > int(r.TopLID) || r.LIDOwner[lid] != int32(e)+1 {
				return nil, fmt.Errorf("analysis: endpoint %s LID %d (base %d, LMC %d) is missing from the realised owner table; realise the plan again", f.epName(int32(e)), lid, p.Base, p.LMC)
			}
		}
	}

	// Overrides.
	f.dlidOvs = map[int32][]dlidOv{}
	f.dlidOvAt = map[[2]int32]uint8{}
	for _, o := range f.lids.Overrides {
		if o.Src < 0 || int(o.Src) >= ne || o.Dst < 0 || int(o.Dst) >= ne {
			return nil, fmt.Errorf("analysis: DLID override %d->%d names an endpoint out of range (0..%d)", o.Src, o.Dst, ne-1)
		}
		if int(o.Offset) >= f.lids.Ports[o.Dst].Count() {
			return nil, fmt.Errorf("analysis: DLID override %s->%s offset %d outside LMC %d", f.epName(o.Src), f.epName(o.Dst), o.Offset, f.lids.Ports[o.Dst].LMC)
		}
		if o.Src == o.Dst {
			continue
		}
		f.dlidOvAt[[2]int32{o.Src, o.Dst}] = o.Offset // the last override of a pair wins
	}
	for k, off := range f.dlidOvAt {
		f.dlidOvs[k[1]] = append(f.dlidOvs[k[1]], dlidOv{k[0], off})
	}
	for _, l := range f.dlidOvs {
		sort.Slice(l, func(i, j int) bool { return l[i].src < l[j].src })
	}

	f.tables = [][16]uint8{{}}
	f.slOvs = map[uint16][]slOv{}
	f.slOvAt = map[slKey]uint8{}
	if vls != nil {
		f.tables[0] = vls.Default
		for _, o := range vls.Overrides {
			if o.Src < 0 || int(o.Src) >= ne {
				return nil, fmt.Errorf("analysis: SL override names endpoint %d of %d", o.Src, ne)
			}
			if o.SL > 15 {
				return nil, fmt.Errorf("analysis: SL override %s DLID %d has SL %d > 15", f.epName(o.Src), o.DLID, o.SL)
			}
			f.slOvAt[slKey{o.Src, o.DLID}] = o.SL
		}
		for k, sl := range f.slOvAt {
			f.slOvs[k.dlid] = append(f.slOvs[k.dlid], slOv{k.src, sl})
		}
		for _, l := range f.slOvs {
			sort.Slice(l, func(i, j int) bool { return l[i].src < l[j].src })
		}
		for lid, sl := range vls.SLByDLID {
			if sl > 15 {
				return nil, fmt.Errorf("analysis: SL %d for DLID %d > 15", sl, lid)
			}
		}
		if err := f.indexSL2VL(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *fabric) indexSL2VL() error {
	dedup := map[[16]uint8]uint32{f.tables[0]: 0}
	idx := func(v [16]uint8) (uint32, error) {
		if i, ok := dedup[v]; ok {
			return i, nil
		}
		if uint64(len(f.tables)) >= math.MaxUint32 {
			return 0, fmt.Errorf("analysis: more than %d distinct SL2VL tables", uint32(math.MaxUint32))
		}
		i := uint32(len(f.tables))
		f.tables = append(f.tables, v)
		dedup[v] = i
		return i, nil
	}
	f.caTab = map[int32]uint32{}
	for _, en := range f.vls.SL2VL {
		if en.Node < 0 || int(en.Node) >= len(f.topo.Nodes) {
			return fmt.Errorf("analysis: SL2VL entry names node %d of %d", en.Node, len(f.topo.Nodes))
		}
		n := &f.topo.Nodes[en.Node]
		if int(en.In) >= len(n.Ports) || int(en.Out) >= len(n.Ports) {
			return fmt.Errorf("analysis: SL2VL entry 0x%016x in %d out %d: port beyond %d", n.GUID, en.In, en.Out, n.NumPorts())
		}
		ti, err := idx(en.VL)
		if err != nil {
			return err
		}
		s := f.topo.SwitchIndex(en.Node)
		if s < 0 {
			e := f.topo.EndpointIndex(topology.PortRef{Node: en.Node, Port: en.Out})
			if e < 0 || en.In != en.Out {
				return fmt.Errorf("analysis: SL2VL entry for CA 0x%016x in %d out %d: a CA port has one table, with in = out = a cabled port", n.GUID, en.In, en.Out)
			}
			f.caTab[e] = ti
			continue
		}
		if f.tabIdx == nil {
			f.tabIdx = make([]uint32, f.nEdges)
		}
		f.tabIdx[f.edgeBase[s]+int(en.In)*(int(f.np[s])+1)+int(en.Out)] = ti
	}
	if f.tabIdx == nil {
		return nil
	}
	f.caVLs = make([]uint16, f.nSwPorts*16)
	for s := int32(0); s < int32(f.nsw); s++ {
		pb := int(f.portBase[s])
		for _, e := range f.caList[f.caStart[s]:f.caStart[s+1]] {
			in := f.epIn[e]
			for out := 1; out <= int(f.np[s]); out++ {
				if out == int(in) {
					continue // a CA does not send to itself
				}
				tab := &f.tables[f.tabIdx[f.edgeBase[s]+int(in)*(int(f.np[s])+1)+out]]
				for sl := range 16 {
					f.caVLs[(pb+out)*16+sl] |= 1 << (tab[sl] & 15)
				}
			}
		}
	}
	return nil
}

// vl is the VL a packet with SL sl gets at switch s from in to out.
func (f *fabric) vl(s int32, in, out, sl uint8) uint8 {
	if f.tabIdx == nil {
		return f.tables[0][sl&15]
	}
	return f.tables[f.tabIdx[f.edgeBase[s]+int(in)*(int(f.np[s])+1)+int(out)]][sl&15]
}

func (f *fabric) caVL(e int32, sl uint8) uint8 {
	if t, ok := f.caTab[e]; ok {
		return f.tables[t][sl&15]
	}
	return f.tables[0][sl&15]
}

// sl is the default SL for DLID (overrides are handled per source).
func (f *fabric) sl(dlid uint16) uint8 {
	if f.vls != nil && int(dlid) < len(f.vls.SLByDLID) {
		return f.vls.SLByDLID[dlid]
	}
	return 0
}
