// Package program pushes a verified plan into the fabric: port LIDs and the
// SM LID (PortInfo), LinearFDBTop (SwitchInfo), LFT blocks, SL2VL tables,
// then port states Armed and Active. It sends only what differs from what
// each device is known to hold: PortInfo and SwitchInfo as discovery just
// read them, LFT blocks and SL2VL tables as this programmer last wrote them.
package program

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// Stats counts what one Apply sent.
type Stats struct {
	PortInfoSets   int64
	SwitchInfoSets int64
	LFTBlocksSent  int64
	// LFTBlocksTotal is the number of blocks the plan's tables span (what a
	// full push would send).
	LFTBlocksTotal int64
	SL2VLSets      int64
	StateSets      int64
	Failed         int64
}

// Sets is the total number of Set SMPs.
func (s Stats) Sets() int64 {
	return s.PortInfoSets + s.SwitchInfoSets + s.LFTBlocksSent + s.SL2VLSets + s.StateSets
}

// Programmer remembers what it wrote to each switch.
type Programmer struct {
	C        *mad.Client
	Log      hclog.Logger
	Parallel int

	mu    sync.Mutex
	known map[uint64]*switchState // by switch node GUID
}

type switchState struct {
	lid   uint16  // port-0 LID it had when the tables were written
	lft   []uint8 // LFT as written (index = LID)
	sl2vl map[[2]uint8][16]uint8
}

// Forget drops what is known of every switch, so the next Apply writes
// every block (after a restart of the fabric, or on operator request).
func (p *Programmer) Forget() {
	p.mu.Lock()
	p.known = nil
	p.mu.Unlock()
}

// Apply programs res into the fabric fab was discovered from. topo must be
// fab's snapshot (the plan's indices refer to it).
func (p *Programmer) Apply(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, rz *plan.Realized, vls *plan.VLPlan) (Stats, error) {
	var st Stats
	r := fanout.New(p.Parallel)
	p.mu.Lock()
	if p.known == nil {
		p.known = map[uint64]*switchState{}
	}
	p.mu.Unlock()

	eps := topo.Endpoints()
	smLID := uint16(0)
	if topo.SM.Connected() {
		if i := topo.EndpointIndex(topo.SM); i >= 0 {
			smLID = rz.LIDs.Ports[i].Base
		}
	}

	// Phase 1: LIDs, LinearFDBTop, LFT blocks, SL2VL. written keeps each
	// PortInfo as set here: the state Sets below rewrite every field, so
	// they must carry the new LID, not the one discovery read.
	written := map[portKey]smp.PortInfo{}
	for i, ep := range eps {
		n := fab.Nodes[topo.Nodes[ep.Node].GUID]
		want := rz.LIDs.Ports[i]
		pt := &n.Ports[ep.Port]
		if !pt.Valid {
			continue
		}
		cur := pt.Info
		if cur.LID == want.Base && cur.LMC == want.LMC && cur.MasterSMLID == smLID {
			continue
		}
		pi := cur
		pi.LID, pi.LMC, pi.MasterSMLID = want.Base, want.LMC, smLID
		noChange(&pi)
		written[portKey{n.Info.NodeGUID, ep.Port}] = pi
		port := ep.Port
		path := n.Path
		atomic.AddInt64(&st.PortInfoSets, 1)
		r.Go(func() error {
			return p.C.Set(ctx, path, smp.AttrPortInfo, uint32(port), &pi, nil)
		})
	}
	blocks := (int(rz.TopLID) + 64) / 64
	sw := topo.Switches()
	for s, node := range sw {
		guid := topo.Nodes[node].GUID
		n := fab.Nodes[guid]
		lft := rz.LFT[s]
		st.LFTBlocksTotal += int64(blocks)
		known := p.knownFor(guid, n)
		if n.Switch != nil && n.Switch.LinearFDBTop != rz.TopLID {
			si := *n.Switch
			si.LinearFDBTop = rz.TopLID
			si.PortStateChange = false
			path := n.Path
			atomic.AddInt64(&st.SwitchInfoSets, 1)
			r.Go(func() error { return p.C.Set(ctx, path, smp.AttrSwitchInfo, 0, &si, nil) })
		}
		for b := 0; b < blocks; b++ {
			var blk smp.LFTBlock
			for k := 0; k < 64; k++ {
				lid := b*64 + k
				blk[k] = plan.NoPort
				if lid < len(lft) {
					blk[k] = lft[lid]
				}
			}
			if known != nil && sameBlock(known.lft, b, &blk) {
				continue
			}
			path, bb := n.Path, uint32(b)
			atomic.AddInt64(&st.LFTBlocksSent, 1)
			r.Go(func() error {
				return p.C.Set(ctx, path, smp.AttrLinearForwardingTable, bb, &blk, nil)
			})
		}
	}
	sl2vlSets := p.sl2vl(ctx, r, fab, topo, vls)
	st.SL2VLSets = sl2vlSets
	if err := r.Wait("programming LIDs and forwarding tables"); err != nil {
		st.Failed = r.Failed()
		p.Forget() // what the switches hold is now uncertain
		return st, err
	}
	// Remember the tables as written.
	p.mu.Lock()
	for s, node := range sw {
		ks := p.stateLocked(topo.Nodes[node].GUID)
		ks.lft = append(ks.lft[:0], rz.LFT[s]...)
		ks.lid = rz.LIDs.Ports[topo.EndpointIndex(topology.PortRef{Node: node, Port: 0})].Base
	}
	p.mu.Unlock()

	// Phase 2 and 3: Init → Armed → Active, both ends of every live link.
	for _, state := range []uint8{smp.PortStateArmed, smp.PortStateActive} {
		r := fanout.New(p.Parallel)
		for guid, n := range fab.Nodes {
			for port := range n.Ports {
				pt := &n.Ports[port]
				if port == 0 || !pt.Valid || pt.PeerGUID == 0 {
					continue
				}
				cur := pt.Info.PortState
				if cur < smp.PortStateInit || cur >= state {
					continue
				}
				pi := pt.Info
				if w, ok := written[portKey{guid, uint8(port)}]; ok {
					pi = w
				}
				noChange(&pi)
				pi.PortState = state
				path, pn := n.Path, uint32(port)
				atomic.AddInt64(&st.StateSets, 1)
				r.Go(func() error { return p.C.Set(ctx, path, smp.AttrPortInfo, pn, &pi, nil) })
			}
		}
		if err := r.Wait(fmt.Sprintf("moving ports to state %d", state)); err != nil {
			st.Failed = r.Failed()
			return st, err
		}
	}
	return st, nil
}

type portKey struct {
	guid uint64
	port uint8
}

// noChange sets the fields of a PortInfo Set that must not change anything
// but what the caller sets explicitly (IBA 14.2.5.6: 0 = no change).
func noChange(pi *smp.PortInfo) {
	pi.PortState = smp.PortStateNoChange
	pi.PortPhysicalState = smp.PhysStateNoChange
	pi.LinkDownDefaultState = 0
	pi.LinkSpeedEnabled = 0
	pi.LinkWidthEnabled = 0
}

// stateLocked returns (creating) what is known of a switch; p.mu held.
func (p *Programmer) stateLocked(guid uint64) *switchState {
	ks := p.known[guid]
	if ks == nil {
		ks = &switchState{sl2vl: map[[2]uint8][16]uint8{}}
		p.known[guid] = ks
	}
	return ks
}

// knownFor returns what the programmer wrote to a switch, or nil if that is
// no longer what the switch holds (it lost its LID: rebooted or replaced).
func (p *Programmer) knownFor(guid uint64, n *discovery.Node) *switchState {
	p.mu.Lock()
	defer p.mu.Unlock()
	ks := p.known[guid]
	if ks == nil {
		return nil
	}
	if !n.Ports[0].Valid || n.Ports[0].Info.LID != ks.lid {
		delete(p.known, guid)
		return nil
	}
	return ks
}

func sameBlock(lft []uint8, b int, blk *smp.LFTBlock) bool {
	for k := 0; k < 64; k++ {
		lid := b*64 + k
		v := plan.NoPort
		if lid < len(lft) {
			v = lft[lid]
		}
		if v != blk[k] {
			return false
		}
	}
	return true
}

// sl2vl programs the SL-to-VL tables the plan needs and returns how many
// Sets it queued. A plan that uses only SL 0 mapped to VL 0 needs no table:
// every SL2VL table maps SL 0 somewhere, and VL 0 is where the reset value
// and every plan ibsm writes put it, so nothing is sent.
func (p *Programmer) sl2vl(ctx context.Context, r *fanout.Group, fab *discovery.Fabric, topo *topology.Topology, vls *plan.VLPlan) int64 {
	if vls == nil || onlySL0(vls) {
		return 0
	}
	entries := map[[3]int32][16]uint8{}
	for _, e := range vls.SL2VL {
		entries[[3]int32{e.Node, int32(e.In), int32(e.Out)}] = e.VL
	}
	var n int64
	for _, node := range topo.Switches() {
		guid := topo.Nodes[node].GUID
		fn := fab.Nodes[guid]
		p.mu.Lock()
		ks := p.stateLocked(guid)
		p.mu.Unlock()
		np := len(fn.Ports)
		for in := 0; in < np; in++ {
			for out := 1; out < np; out++ {
				want, ok := entries[[3]int32{node, int32(in), int32(out)}]
				if !ok {
					want = vls.Default
				}
				k := [2]uint8{uint8(in), uint8(out)}
				p.mu.Lock()
				have, known := ks.sl2vl[k]
				ks.sl2vl[k] = want
				p.mu.Unlock()
				if known && have == want {
					continue
				}
				tbl := smp.SL2VLTable(want)
				path, mod := fn.Path, smp.SL2VLMod(uint8(in), uint8(out))
				n++
				r.Go(func() error { return p.C.Set(ctx, path, smp.AttrSLtoVLMappingTable, mod, &tbl, nil) })
			}
		}
	}
	return n
}

func onlySL0(v *plan.VLPlan) bool {
	for _, sl := range v.SLByDLID {
		if sl != 0 {
			return false
		}
	}
	for _, o := range v.Overrides {
		if o.SL != 0 {
			return false
		}
	}
	if v.Default[0] != 0 {
		return false
	}
	for _, e := range v.SL2VL {
		if e.VL[0] != 0 {
			return false
		}
	}
	return true
}
