package program

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// Record is the state directory's record of what this SM last programmed
// (host/rollout keeps it). A Programmer that has one takes, at its first
// Apply, a switch's forwarding table from it instead of reading the table
// back, when the switch shows it still holds what was recorded (restorable
// says how); and it marks the record stale before it writes any table.
type Record interface {
	// Held returns what the record says the switches hold, or nil when
	// it cannot say: no record, or a programming started after the last
	// record was written (Programming's mark is still there).
	Held() (*Held, error)
	// Programming marks the record as not describing the fabric until
	// the next record is written; it returns once the mark is durable.
	// Tables are about to change.
	Programming() error
}

// Held is what the switches held when this SM last recorded its
// programming.
type Held struct {
	// SMLID is the LID the programming SM's port had: what every switch's
	// port-0 MasterSMLID was set to. Top is the LinearFDBTop every switch
	// was given.
	SMLID, Top uint16
	// Switches by node GUID.
	Switches map[uint64]HeldSwitch
	// SL2VLDefault is the SL2VL table of every switch port pair the
	// programming wrote but a switch's SL2VL does not list; NoSL2VL: it
	// wrote none (SL 0 on VL 0 only), and what the switches hold is not
	// known.
	SL2VLDefault [16]uint8
	NoSL2VL      bool
}

// switchOf returns what h holds of switch guid (h may be nil).
func (h *Held) switchOf(guid uint64) (HeldSwitch, bool) {
	if h == nil {
		return HeldSwitch{}, false
	}
	hs, ok := h.Switches[guid]
	return hs, ok
}

// HeldSwitch is one switch as programmed: its port-0 LID and LMC, its
// LFT (index = LID; the Programmer takes it over, read only) and
// the SL2VL tables of the (in, out) port pairs listed apart from the
// default.
type HeldSwitch struct {
	LID   uint16
	LMC   uint8
	LFT   []uint8
	SL2VL map[[2]uint8][16]uint8
}

// heldFor marks the record stale (tables are about to be written) and,
// at the first Apply only and when need says some switch would be read
// back, returns what the record held before (nil: nothing to restore).
// After that Apply the Programmer knows every switch it wrote.
func (p *Programmer) heldFor(need bool) *Held {
	p.mu.Lock()
	rec, first := p.Record, !p.recordRead
	p.recordRead = true
	p.mu.Unlock()
	if rec == nil {
		return nil
	}
	var h *Held
	if first && need {
		var err error
		if h, err = rec.Held(); err != nil {
			p.logger().Warn("cannot use the record of the last programming; reading the switches' forwarding tables back instead", "error", err)
			h = nil
		}
	}
	if err := rec.Programming(); err != nil {
		p.logger().Error("cannot mark the record of the last programming stale before writing tables; a restart could trust it while it is out of date: remove state_dir/programmed.gob by hand if this SM stops before its next record", "error", err)
	}
	return h
}

// restorable reports whether switch n, as just discovered, still holds
// what h records for it (hs), so its forwarding table need not be read
// back. Sufficient because:
//
//   - h is what this SM wrote and the switches acknowledged, and no
//     programming started after it was recorded (Record.Held);
//   - a switch that was reset or replaced since has lost its port-0 LID
//     and LinearFDBTop (both 0 after reset), and one that is not in the
//     record has no hs;
//   - another SM that mastered the subnet since sets its own LID as
//     MasterSMLID on every port it manages, switch port 0 included, and
//     most likely its own LIDs and LinearFDBTop;
//   - the LFT entries above LinearFDBTop forward nothing, whatever the
//     switch holds there: blocks past the recorded top are not restored.
//
// Another SM run from this same port while this one was stopped, keeping
// the LIDs the ports held, leaves all of these as they were: restoreHeld
// therefore also reads one block per switch and trusts the record only if
// every one of them is as recorded (another engine's tables differ from
// this one's nearly everywhere). What remains unseen is a change of single
// LFT blocks that leaves port 0 and LinearFDBTop alone (a tool writing
// blocks by hand): the same blind spot a running SM has between two
// audits, and the audit, which covers every switch of the plan, reads
// those blocks back and repairs them.
func restorable(n *discovery.Node, h *Held, hs HeldSwitch, smLID uint16) bool {
	if n == nil || n.Switch == nil || len(n.Ports) == 0 || !n.Ports[0].Valid || hs.LFT == nil {
		return false
	}
	pi := &n.Ports[0].Info
	return h.SMLID != 0 && h.SMLID == smLID && pi.MasterSMLID == h.SMLID &&
		pi.LID != 0 && pi.LID == hs.LID && pi.LMC == hs.LMC &&
		n.Switch.LinearFDBTop == h.Top && h.Top > 0
}

// restore takes the tables of switch guid, with ports ports, from hs:
// the LFT entries up to the recorded top are known (blocks past it are
// not, and Apply sends them; entries above the top forward nothing), and
// the SL2VL table of every port pair the programming wrote (sl2vl's
// pairs: every (in, out) with out > 0, and (in, 0) where listed). p.mu
// held.
func (p *Programmer) restore(guid uint64, ports int, h *Held, hs HeldSwitch, blocks int) {
	have := min(blocks, int(h.Top)/64+1)
	lft := hs.LFT[:min(len(hs.LFT), int(h.Top)+1)] // sameBlock reads past the end as unrouted
	known := make([]bool, have)
	for b := range known {
		known[b] = true
	}
	ks := p.stateLocked(guid)
	ks.lid, ks.lft, ks.lftKnown = hs.LID, lft, known
	if h.NoSL2VL {
		return
	}
	for in := 0; in < ports; in++ {
		for out := 0; out < ports; out++ {
			k := [2]uint8{uint8(in), uint8(out)}
			t, listed := hs.SL2VL[k]
			switch {
			case listed:
				ks.sl2vl[k] = t
			case out > 0:
				ks.sl2vl[k] = h.SL2VLDefault
			}
		}
	}
}

// restoreHeld takes from h the tables of the switches among unknown that
// are restorable and whose probe block (the one holding the switch's own
// LID, which every routing fills) reads back as recorded, and returns the
// switches left to read back whole, how many were restored and how many
// probe blocks were read. One probe that differs means the fabric is not
// what the record says (another SM programmed it): nothing is restored. A
// probe that cannot be read leaves its switch to be read back.
func (p *Programmer) restoreHeld(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, unknown []int32, h *Held, smLID uint16, blocks int) (rest []int32, restored, probes int64) {
	if h == nil {
		return unknown, 0, 0
	}
	type probe struct {
		node     int32
		hs       HeldSwitch
		block    int
		read, ok bool
	}
	var (
		all      []*probe
		mismatch atomic.Pointer[string]
	)
	r := fanout.New(p.Parallel)
	for _, node := range unknown {
		guid := topo.Nodes[node].GUID
		n := fab.Nodes[guid]
		hs, ok := h.switchOf(guid)
		if !ok || !restorable(n, h, hs, smLID) {
			rest = append(rest, node)
			continue
		}
		pr := &probe{node: node, hs: hs, block: int(hs.LID) / 64}
		all = append(all, pr)
		path := n.Path
		r.Go(func() error {
			var blk smp.LFTBlock
			if err := p.C.Get(ctx, path, smp.AttrLinearForwardingTable, uint32(pr.block), &blk); err != nil {
				return nil
			}
			pr.read = true
			want := pr.hs.LFT[:min(len(pr.hs.LFT), int(h.Top)+1)]
			if pr.ok = sameBlock(want, pr.block, &blk); !pr.ok {
				why := fmt.Sprintf("switch %#x LFT block %d", guid, pr.block)
				mismatch.CompareAndSwap(nil, &why)
			}
			return nil
		})
	}
	_ = r.Wait("reading one forwarding table block per switch")
	probes = int64(len(all))
	if why := mismatch.Load(); why != nil {
		p.logger().Warn("the fabric does not hold what the record of the last programming says (another SM ran from this port?); reading every forwarding table back", "first_difference", *why)
		for _, pr := range all {
			rest = append(rest, pr.node)
		}
		return rest, 0, probes
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range all {
		if !pr.read {
			rest = append(rest, pr.node)
			continue
		}
		guid := topo.Nodes[pr.node].GUID
		p.restore(guid, len(fab.Nodes[guid].Ports), h, pr.hs, blocks)
		restored++
	}
	return rest, restored, probes
}
