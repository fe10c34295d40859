package program

import (
	"slices"
	"weak"

	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/transport/smp"
)

// Which LFT entries a new plan can change. After a successful Apply every
// switch of its plan holds that plan's tables (Programmer.last). A cable
// event's tables are realised from an earlier answer's (plan.RealizeChanged:
// ChangedSince names the LIDs it wrote; every other entry, and every row it
// did not copy, is the earlier tables'). That earlier answer is not always
// the plan last applied: a cable that comes back restores a topology seen
// before, whose plan comes from the cache, realised afresh, and the next
// cable's tables are realised from the answer before it. So the programmer
// keeps, for the plan last applied, the blocks in which it may differ from
// a few earlier plans (weakly: this must not keep them alive), and compares
// a switch's row only at the LIDs ChangedSince names (ChangedRows: those
// of its own row) and in those blocks.
// At ft3-56 a leaf's cable changes ~1,700 LIDs in ~2,600 blocks: a few
// million entries compared instead of 2.93 M blocks (187 M entries).

// lftRel says that the plan last applied differs from the tables of to
// only in blocks (switch index << blockBits | block, ascending).
type lftRel struct {
	to     weak.Pointer[plan.Realized]
	blocks []uint32
}

// maxRels and maxRelBlocks bound what is kept: beyond them a plan is
// compared in full.
const (
	maxRels      = 4
	maxRelBlocks = 1 << 16
)

// lftDiff is one Apply's view of which entries can differ.
type lftDiff struct {
	last *plan.Realized // tables every switch of the last plan holds
	// ok: rz was realised from base's tables at lids, and last differs
	// from base at most in blocks (switch index << blockBits | block,
	// ascending).
	ok     bool
	base   *plan.Realized
	lids   []int32
	rows   *plan.RowChanges // lids per switch, when rz says (plan.Realized.ChangedRows)
	blocks []uint32
	// exact stays true while every switch is compared against last's row
	// (its known table is that row): then the blocks sent are exactly
	// where rz differs from last, and sent collects them.
	exact bool
	sent  []uint32
}

// diffFor returns what is known of how rz differs from the tables of the
// last plan applied.
func (p *Programmer) diffFor(rz *plan.Realized) *lftDiff {
	p.mu.Lock()
	last, rels := p.last, p.rels
	p.mu.Unlock()
	d := &lftDiff{last: last}
	if last == nil || len(last.LFT) != len(rz.LFT) || last.TopLID != rz.TopLID {
		return d
	}
	d.exact = true
	if lids, ok := rz.ChangedSince(last); ok {
		d.base, d.lids, d.ok = last, lids, true
		d.rows, _ = rz.ChangedRows(last)
		return d
	}
	for _, r := range rels {
		x := r.to.Value()
		if x == nil || x.TopLID != rz.TopLID {
			continue
		}
		if lids, ok := rz.ChangedSince(x); ok && (!d.ok || len(lids)+len(r.blocks) < len(d.lids)+len(d.blocks)) {
			d.base, d.lids, d.blocks, d.ok = x, lids, r.blocks, true
			d.rows, _ = rz.ChangedRows(x)
		}
	}
	return d
}

// lastRow reports whether known holds switch s's row of the last plan.
func (d *lftDiff) lastRow(s int, known *nodeState) bool {
	return d.last != nil && known != nil && known.lftKnown == nil && s < len(d.last.LFT) && sameRow(known.lft, d.last.LFT[s])
}

// differing calls send(b) for each block b (ascending, once) of switch s
// in which the row known holds (last's) and lft may differ and do, and
// returns the entries it compared. A row that is base's own (RealizeChanged
// copies only the rows it changes) differs from last's only in the blocks
// of the relation; a row it copied is compared at the LIDs it changed when
// they are few, else whole (in runs: one pass over the row moves less
// memory than a cache line per LID).
func (d *lftDiff) differing(s int, known, lft []uint8, send func(b int)) int64 {
	lo, _ := slices.BinarySearch(d.blocks, uint32(s)<<blockBits)
	hi, _ := slices.BinarySearch(d.blocks, uint32(s+1)<<blockBits)
	rel := d.blocks[lo:hi] // blocks that may differ: compared whole
	copied := !sameRow(lft, d.base.LFT[s])
	lids := d.lids
	if d.rows != nil {
		lids = d.rows.Of(s)
	}
	if copied && len(lids) > len(lft)/smp.LFTBlockLen/2 {
		return diffRow(known, lft, send)
	}
	var at []int // blocks of LIDs whose entries differ
	if copied {
		for _, lid := range lids {
			if int(lid) < len(known) && int(lid) < len(lft) && known[lid] != lft[lid] {
				if b := int(lid) / smp.LFTBlockLen; len(at) == 0 || at[len(at)-1] != b {
					at = append(at, b)
				}
			}
		}
	}
	n := int64(len(rel)) * smp.LFTBlockLen
	if copied {
		n += int64(len(lids))
	}
	for len(rel) > 0 || len(at) > 0 {
		switch {
		case len(rel) == 0 || len(at) > 0 && at[0] < int(rel[0]&(1<<blockBits-1)):
			send(at[0])
			at = at[1:]
		default:
			b := int(rel[0] & (1<<blockBits - 1))
			if len(at) > 0 && at[0] == b {
				at = at[1:]
				send(b)
			} else if !sameLFTBlock(known, lft, b) {
				send(b)
			}
			rel = rel[1:]
		}
	}
	return n
}

// noteSent records that block b of switch s, compared against last's
// row, differs.
func (d *lftDiff) noteSent(s, b int) {
	if d.exact {
		d.sent = append(d.sent, uint32(s)<<blockBits|uint32(b))
	}
}

// relsAfter returns the relations of rz, the plan now applied, to earlier
// tables: to last (the blocks sent) and, through it, to last's own; nil
// unless every switch was compared against last.
func (p *Programmer) relsAfter(d *lftDiff, rz *plan.Realized) []lftRel {
	if d.last == rz {
		return p.rels // the same tables again
	}
	if !d.exact || d.last == nil {
		return nil
	}
	slices.Sort(d.sent)
	sent := slices.Compact(d.sent)
	if len(sent) > maxRelBlocks {
		return nil
	}
	out := []lftRel{{to: weak.Make(d.last), blocks: sent}}
	for _, r := range p.rels {
		if len(out) == maxRels {
			break
		}
		if r.to.Value() == nil {
			continue
		}
		if bs := merge(r.blocks, sent); len(bs) <= maxRelBlocks {
			out = append(out, lftRel{to: r.to, blocks: bs})
		}
	}
	return out
}

// merge returns the union of two ascending lists.
func merge(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Same tells the programmer that rz holds the same tables as applied, the
// plan of its last Apply (the caller knows it from their plan keys): a
// sweep that found nothing to send. The pipeline may realise the next
// cable's tables from rz, whose rows the programmer never saw; ChangedSince
// then names their changes against rz, which this relates to what the
// switches hold. Nothing is kept when applied is not the last plan applied.
func (p *Programmer) Same(applied, rz *plan.Realized) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rz == nil || applied == nil || applied != p.last || rz == applied || rz.TopLID != applied.TopLID || len(rz.LFT) != len(applied.LFT) {
		return
	}
	rels := append([]lftRel{{to: weak.Make(rz)}}, p.rels...)
	p.rels = rels[:min(len(rels), maxRels)]
}
