package program

import (
	"context"
	"errors"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// learn reads back the forwarding table of every switch this programmer
// knows nothing of but that already holds one (LinearFDBTop > 0: another SM
// or this one before a restart programmed it), so that Apply sends only the
// blocks that differ: a takeover or a restart over a healthy fabric sends
// no LFT block. A fresh switch (top 0) costs no read. A block that cannot
// be read stays unknown and is sent.
//
// At the Programmer's first Apply, a switch that shows it still holds what
// the Record says this SM wrote before a restart is not read but for one
// probe block (restoreHeld): its table is taken from the record (restored
// counts them), and the audit reads it back over the following sweeps.
// smLID is this SM's LID in the plan being applied.
func (p *Programmer) learn(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, blocks int, smLID uint16) (reads, restored int64) {
	type learned struct {
		guid uint64
		lid  uint16
		lft  []uint8
		ok   []bool
	}
	var all []*learned
	var unknown []int32 // switches holding a table this programmer did not write
	for _, node := range topo.Switches() {
		guid := topo.Nodes[node].GUID
		n := fab.Nodes[guid]
		if n == nil || n.Switch == nil || n.Switch.LinearFDBTop == 0 || !n.Ports[0].Valid || p.knownFor(guid, n) != nil {
			continue
		}
		unknown = append(unknown, node)
	}
	held := p.heldFor(len(unknown) > 0)
	p.mu.Lock()
	forgot := p.forgot
	p.mu.Unlock()
	if forgot {
		return 0, 0
	}
	unknown, restored, reads = p.restoreHeld(ctx, fab, topo, unknown, held, smLID, blocks)
	type read struct {
		l    *learned
		path mad.Path
		b    int
	}
	var todo []read
	for _, node := range unknown {
		guid := topo.Nodes[node].GUID
		n := fab.Nodes[guid]
		have := min(blocks, int(n.Switch.LinearFDBTop)/64+1)
		l := &learned{guid: guid, lid: n.Ports[0].Info.LID, lft: make([]uint8, have*64), ok: make([]bool, have)}
		all = append(all, l)
		for b := range have {
			todo = append(todo, read{l, n.Path, b})
		}
	}
	reads += int64(len(todo))
	p.C.GetAll(ctx, len(todo), func(i int) mad.Req {
		r := todo[i]
		return mad.Req{Path: r.path, Attr: smp.AttrLinearForwardingTable, Mod: uint32(r.b), Out: lftInto(r.l.lft[r.b*64:])}
	}, func(i int, err error) {
		if err == nil { // else unknown: Apply sends it
			todo[i].l.ok[todo[i].b] = true
		}
	})
	if held != nil {
		p.logger().Info("restart: forwarding tables taken from the record of the last programming (the audit reads them back over the next sweeps)",
			"switches", restored, "read_back", len(all), "lft_blocks_read", reads)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range all {
		ks := p.stateLocked(l.guid)
		ks.lid, ks.lft, ks.lftKnown = l.lid, l.lft, l.ok
		// Entries above the switch's top forward nothing, whatever the
		// block holds: they read back as unrouted.
		top := int(fab.Nodes[l.guid].Switch.LinearFDBTop)
		for lid := top + 1; lid < len(ks.lft); lid++ {
			ks.lft[lid] = plan.NoPort
		}
	}
	return reads, restored
}

// lftInto reads an LFT block into the part of a switch's table it holds
// (GetAll's Out).
type lftInto []uint8

func (d lftInto) MarshalTo([]byte) error { return errors.New("lftInto only receives") }

func (d lftInto) Unmarshal(b []byte) error {
	var blk smp.LFTBlock
	if err := blk.Unmarshal(b); err != nil {
		return err
	}
	copy(d, blk[:])
	return nil
}
