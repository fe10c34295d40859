package program

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/transport/smp"
)

// The audit reads back, a share at a time, what the last successful Apply
// programmed and repairs what differs: tables and settings changed behind
// the SM's back (another SM, a tool, a firmware bug) that no trap and no
// PortStateChange report. Its items, in one rotation that covers them all:
// per switch of the plan its port-0 PortInfo (LID, LMC, MasterSMLID, and
// the M_Key fields when M_Keys are managed), its SwitchInfo (LinearFDBTop)
// and every LFT block the plan spans; per linked port the OperationalVLs a
// multi-VL plan set; every SL2VL table and VLArbitration block the plan
// programmed; when M_Keys are managed, each programmed CA port's M_Key,
// M_KeyProtectBits and M_KeyLeasePeriod (a lease that ran out leaves
// protection 0: the audit puts it back). CA port LIDs are not items: the
// sweep loop's CA check reads them.
//
// The expected value is always what this Programmer believes it wrote (its
// known state), never a re-computation. A repair re-sends that one
// attribute (one block, one table, one PortInfo) and changes nothing else,
// not even the known state, which it restores.

// AuditStats counts what the audit did since the Programmer was made.
type AuditStats struct {
	// Reads is how many SMPs read an item back; ReadFailures those that
	// got no valid answer (timeouts: not differences, the item is read
	// again next rotation).
	Reads, ReadFailures uint64
	// Differences is how many items held something other than what was
	// programmed; Repaired how many of them a Set put back (its answer
	// confirmed); RepairFailures those whose Set failed or was not taken
	// (found again next rotation).
	Differences, Repaired, RepairFailures uint64
	// Resets counts switches found with port-0 LID 0 (reset: their tables
	// are gone too), handed back to the sweep loop to re-program whole.
	Resets uint64
	// Rotations is how many times the audit went round every item.
	Rotations uint64
	// Items is how many items one rotation covers for the plan in force;
	// Cursor where the next audit starts (0..Items-1).
	Items, Cursor int
}

// AuditReport is what one Audit call did.
type AuditReport struct {
	Reads, ReadFailures, Differences, Repaired, RepairFailures int
	// Reset lists the switches whose port 0 lost its LID (LID 0: the
	// switch was reset and its LFT, SwitchInfo and SL2VL tables with it).
	// The audit does not patch them block by block: the caller re-reads
	// them, and the next Apply, seeing the lost LID, rewrites them whole.
	Reset []uint64
	// Wrapped is set when this call finished a rotation.
	Wrapped bool
	// Items is the rotation's size.
	Items int
	// Stopped is set when a read failed and the call stopped there: a
	// read that times out is most likely a path through a cable or
	// switch that is gone, and the next ones over it would each wait for
	// every retry (minutes at ft3-56's budget), holding up the sweep that
	// must find the change. The items not read are first in the next call.
	Stopped bool
	// FirstFailure is the first read failure's error (nil for none).
	FirstFailure error
}

// logOneByOne is how many differences one Audit call logs one by one; the
// rest are summed up in one line.
const logOneByOne = 20

type itemKind uint8

const (
	itemPort0      itemKind = iota // switch port 0 PortInfo: LID, LMC, MasterSMLID
	itemSwitchInfo                 // LinearFDBTop
	itemLFT                        // one LFT block
	itemOpVLs                      // a port's OperationalVLs (multi-VL plans)
	itemSL2VL                      // one SL-to-VL table
	itemVLArb                      // one VLArbitration block
	itemMKey                       // a CA port's M_Key fields (M_Keys managed)
)

// item is one thing the audit reads back.
type item struct {
	guid uint64
	kind itemKind
	// a, b: the port (itemOpVLs), the (in, out) ports (itemSL2VL), the
	// (port, block) (itemVLArb); block: the LFT block.
	a, b  uint8
	block int
}

// auditNode is one node's share of the rotation.
type auditNode struct {
	guid         uint64
	sw           bool // switch of the plan: port 0, SwitchInfo, blocks
	blocks       int
	opVLs        []uint8
	mkey         []uint8 // CA ports whose M_Key fields are audited
	sl2vl, vlarb [][2]uint8
	first        int // rotation index of its first item
}

func (n *auditNode) count() int {
	c := n.blocks + len(n.opVLs) + len(n.mkey) + len(n.sl2vl) + len(n.vlarb)
	if n.sw {
		c += 2
	}
	return c
}

// item returns the node's i-th item (0 <= i < count()).
func (n *auditNode) item(i int) item {
	it := item{guid: n.guid}
	if n.sw {
		switch {
		case i == 0:
			it.kind = itemPort0
			return it
		case i == 1:
			it.kind = itemSwitchInfo
			return it
		case i < 2+n.blocks:
			it.kind, it.block = itemLFT, i-2
			return it
		}
		i -= 2 + n.blocks
	}
	if i < len(n.opVLs) {
		it.kind, it.a = itemOpVLs, n.opVLs[i]
		return it
	}
	i -= len(n.opVLs)
	if i < len(n.mkey) {
		it.kind, it.a = itemMKey, n.mkey[i]
		return it
	}
	i -= len(n.mkey)
	if i < len(n.sl2vl) {
		it.kind, it.a, it.b = itemSL2VL, n.sl2vl[i][0], n.sl2vl[i][1]
		return it
	}
	i -= len(n.sl2vl)
	it.kind, it.a, it.b = itemVLArb, n.vlarb[i][0], n.vlarb[i][1]
	return it
}

// auditor is the audit's rotation and counters. Audit calls are
// serialised by mu; the counters are read at any time.
type auditor struct {
	mu     sync.Mutex
	gen    uint64
	fab    *discovery.Fabric
	built  bool
	nodes  []auditNode
	total  int
	cursor int

	reads, readFailures, differences, repaired, repairFailures, resets, rotations atomic.Uint64
	items, at                                                                     atomic.Int64
}

// owned collects, during an Apply, the SL2VL tables and VLArbitration
// blocks it programmed or found in place, by node.
type owned struct {
	sl2vl, vlarb map[uint64][][2]uint8
}

// commit records o in the known state; p.mu held.
func (o owned) commit(p *Programmer) {
	less := func(a, b [2]uint8) int {
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		return int(a[1]) - int(b[1])
	}
	for g, keys := range o.sl2vl {
		slices.SortFunc(keys, less)
		p.stateLocked(g).sl2vlKeys = keys
	}
	for g, keys := range o.vlarb {
		slices.SortFunc(keys, less)
		p.stateLocked(g).vlarbKeys = keys
	}
}

// AuditStats returns the audit's counters.
func (p *Programmer) AuditStats() AuditStats {
	a := &p.aud
	return AuditStats{
		Reads: a.reads.Load(), ReadFailures: a.readFailures.Load(),
		Differences: a.differences.Load(), Repaired: a.repaired.Load(), RepairFailures: a.repairFailures.Load(),
		Resets: a.resets.Load(), Rotations: a.rotations.Load(),
		Items: int(a.items.Load()), Cursor: int(a.at.Load()),
	}
}

// rebuild lays out the rotation over what the known state owns on the
// nodes of fab, in node GUID order. a.mu held.
func (p *Programmer) rebuild(fab *discovery.Fabric) {
	a := &p.aud
	keyed := p.C.Keys() != nil
	p.mu.Lock()
	a.gen, a.fab, a.built = p.gen, fab, true
	a.nodes = a.nodes[:0]
	guids := make([]uint64, 0, len(p.known))
	for g := range p.known {
		guids = append(guids, g)
	}
	sort.Slice(guids, func(i, j int) bool { return guids[i] < guids[j] })
	total := 0
	for _, g := range guids {
		ks, n := p.known[g], fab.Nodes[g]
		if n == nil {
			continue
		}
		an := auditNode{guid: g, sl2vl: ks.sl2vlKeys, vlarb: ks.vlarbKeys, first: total}
		if ks.inPlan && n.Switch != nil {
			an.sw, an.blocks = true, (int(ks.top)+smp.LFTBlockLen)/smp.LFTBlockLen
		}
		for q := range ks.opVLs {
			an.opVLs = append(an.opVLs, q)
		}
		slices.Sort(an.opVLs)
		if keyed && n.Switch == nil {
			for q := range ks.caLID {
				an.mkey = append(an.mkey, q)
			}
			slices.Sort(an.mkey)
		}
		if c := an.count(); c > 0 {
			a.nodes = append(a.nodes, an)
			total += c
		}
	}
	p.mu.Unlock()
	a.total = total
	if total > 0 {
		a.cursor %= total
	} else {
		a.cursor = 0
	}
	a.items.Store(int64(total))
	a.at.Store(int64(a.cursor))
}

// item returns rotation item i. a.mu held.
func (a *auditor) item(i int) item {
	k := sort.Search(len(a.nodes), func(k int) bool { return a.nodes[k].first > i }) - 1
	return a.nodes[k].item(i - a.nodes[k].first)
}

// Audit reads back the next budget items of the rotation (fewer if the
// rotation is shorter: no item is read twice in one call) over the
// directed routes of fab, the fabric as the sweep loop last knew it, and
// repairs those that differ from what was programmed. budget bounds the
// reads; each difference costs one more SMP, its repair. Run it on the
// goroutine that calls Apply.
func (p *Programmer) Audit(ctx context.Context, fab *discovery.Fabric, budget int) AuditReport {
	var rep AuditReport
	if budget <= 0 || fab == nil {
		return rep
	}
	a := &p.aud
	a.mu.Lock()
	defer a.mu.Unlock()
	p.mu.Lock()
	stale := !a.built || a.gen != p.gen || a.fab != fab
	p.mu.Unlock()
	if stale {
		p.rebuild(fab)
	}
	rep.Items = a.total
	if a.total == 0 {
		return rep
	}
	var (
		mu     sync.Mutex
		reads  []*probe
		logged int
		more   int
	)
	// The first read failure stops the call: probes not yet sent are
	// skipped, those in flight cancelled (see AuditReport.Stopped).
	actx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	g := fanout.New(p.Parallel)
	n := min(budget, a.total)
	start, wrapK, k := a.cursor, -1, 0
	for ; k < n && actx.Err() == nil; k++ {
		it := a.item(a.cursor)
		if a.cursor++; a.cursor == a.total {
			a.cursor = 0
			rep.Wrapped, wrapK = true, k
		}
		pr := p.probeFor(fab, it)
		if pr == nil {
			continue // no longer known or no route to it
		}
		pr.k = k
		reads = append(reads, pr)
		g.Go(func() error {
			if actx.Err() != nil {
				pr.skipped = true
				return nil
			}
			pr.run(actx, p.C)
			if pr.readErr != nil {
				if context.Cause(actx) != nil && ctx.Err() == nil {
					pr.skipped, pr.readErr = true, nil // cancelled by another's failure
				} else {
					stop(pr.readErr)
				}
				return nil
			}
			if pr.diff == "" || pr.reset {
				return nil
			}
			mu.Lock()
			log := logged < logOneByOne
			if log {
				logged++
			} else {
				more++
			}
			mu.Unlock()
			if log {
				p.logDiff(pr)
			}
			return nil
		})
	}
	g.Wait("audit")
	if cause := context.Cause(actx); cause != nil && ctx.Err() == nil {
		rep.Stopped, rep.FirstFailure = true, cause
		// The next call starts at the first item not read, so the
		// rotation is complete only if that is past its end.
		resume := k
		for _, pr := range reads {
			if pr.skipped {
				resume = pr.k
				break
			}
		}
		a.cursor = (start + resume) % a.total
		if resume <= wrapK {
			rep.Wrapped = false
		}
	}
	for _, pr := range reads {
		if pr.skipped {
			continue
		}
		rep.Reads++
		switch {
		case pr.readErr != nil:
			rep.ReadFailures++
		case pr.reset:
			rep.Differences++
			rep.Reset = append(rep.Reset, pr.it.guid)
		case pr.diff != "":
			rep.Differences++
			if pr.fixErr == nil {
				rep.Repaired++
			} else {
				rep.RepairFailures++
			}
		}
	}
	if more > 0 {
		p.logger().Warn("audit: more differences from what was programmed repaired (not logged one by one)", "count", more)
	}
	for _, pr := range reads {
		if pr.reset {
			p.logger().Warn("audit: switch port 0 lost its LID (reset?); handing it to a sweep to re-program it whole",
				"node", fmt.Sprintf("%#016x", pr.it.guid), "programmed_lid", pr.lid, "path", pr.path.String())
		}
	}
	if rep.Wrapped {
		a.rotations.Add(1)
	}
	a.reads.Add(uint64(rep.Reads))
	a.readFailures.Add(uint64(rep.ReadFailures))
	a.differences.Add(uint64(rep.Differences))
	a.repaired.Add(uint64(rep.Repaired))
	a.repairFailures.Add(uint64(rep.RepairFailures))
	a.resets.Add(uint64(len(rep.Reset)))
	a.at.Store(int64(a.cursor))
	return rep
}

func (p *Programmer) logDiff(pr *probe) {
	kv := []any{"node", fmt.Sprintf("%#016x", pr.it.guid), "lid", pr.lid, "path", pr.path.String(), "what", pr.what, "differs", pr.diff}
	if pr.it.kind == itemLFT {
		kv = append(kv, "block", pr.it.block)
	}
	if pr.fixErr != nil {
		p.logger().Warn("audit: found a difference from what was programmed; repair failed (retried next rotation)", append(kv, "error", pr.fixErr)...)
		return
	}
	p.logger().Warn("audit: repaired a difference from what was programmed", kv...)
}

// probe is one item's read, comparison and repair.
type probe struct {
	it   item
	what string // e.g. "LFT block 3 (LIDs 192-255)"
	lid  uint16 // the node's LID as programmed (0 if unknown)
	path mad.Path
	attr uint16
	mod  uint32
	// got receives the read (and the repair's answer); differs compares
	// it with what was programmed ("" if equal); fix returns the Set
	// payload built from got.
	got     mad.Attribute
	differs func() string
	fix     func() mad.Attribute
	// zeroLID reports whether got shows a switch port 0 without a LID.
	zeroLID func() bool

	readErr, fixErr error
	diff            string
	reset           bool
	// k is the item's place in the call's share of the rotation;
	// skipped: not read, because another read of the call failed first.
	k       int
	skipped bool
}

// run reads the item, and if it differs re-sends what was programmed and
// checks the answer.
func (pr *probe) run(ctx context.Context, c *mad.Client) {
	if pr.readErr = c.Get(ctx, pr.path, pr.attr, pr.mod, pr.got); pr.readErr != nil {
		return
	}
	if pr.diff = pr.differs(); pr.diff == "" {
		return
	}
	if pr.zeroLID != nil && pr.zeroLID() {
		pr.reset = true
		return
	}
	if err := c.Set(ctx, pr.path, pr.attr, pr.mod, pr.fix(), pr.got); err != nil {
		pr.fixErr = err
		return
	}
	if d := pr.differs(); d != "" {
		pr.fixErr = fmt.Errorf("the Set was answered but the device still differs: %s", d)
	}
}

// probeFor builds the probe of it from the known state, or nil if the
// node is no longer known or has no route.
func (p *Programmer) probeFor(fab *discovery.Fabric, it item) *probe {
	n := fab.Nodes[it.guid]
	if n == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ks := p.known[it.guid]
	if ks == nil {
		return nil
	}
	pr := &probe{it: it, path: n.Path}
	if n.Switch != nil {
		pr.lid = ks.lid
	} else if len(ks.caLID) > 0 {
		pr.lid = ks.caLID[n.Info.LocalPortNum]
	}
	switch it.kind {
	case itemPort0:
		lid, lmc, smLID := ks.lid, ks.lmc, ks.smLID
		keys := p.C.Keys()
		var got smp.PortInfo
		pr.what, pr.attr, pr.mod, pr.got = "port 0 PortInfo", smp.AttrPortInfo, 0, &got
		pr.differs = func() string {
			d := keyDiff(keys, n, 0, &got)
			if got.LID == lid && got.LMC == lmc && got.MasterSMLID == smLID && d == "" {
				return ""
			}
			if d != "" {
				d = "; " + d
			}
			return fmt.Sprintf("LID %d LMC %d SM LID %d, programmed LID %d LMC %d SM LID %d%s", got.LID, got.LMC, got.MasterSMLID, lid, lmc, smLID, d)
		}
		pr.zeroLID = func() bool { return got.LID == 0 }
		pr.fix = func() mad.Attribute {
			pi := got
			noChange(&pi)
			pi.LID, pi.LMC, pi.MasterSMLID = lid, lmc, smLID
			withKey(keys, n, 0, &pi)
			return &pi
		}
	case itemMKey:
		keys := p.C.Keys()
		if keys == nil {
			return nil
		}
		path, err := fab.PortPath(n, it.a)
		if err != nil {
			return nil
		}
		q := it.a
		pr.path = path
		if l, ok := ks.caLID[q]; ok {
			pr.lid = l
		}
		var got smp.PortInfo
		pr.what, pr.attr, pr.mod, pr.got = fmt.Sprintf("port %d M_Key", q), smp.AttrPortInfo, 0, &got
		pr.differs = func() string { return keyDiff(keys, n, q, &got) }
		pr.fix = func() mad.Attribute {
			pi := got
			noChange(&pi)
			withKey(keys, n, q, &pi)
			return &pi
		}
	case itemSwitchInfo:
		top := ks.top
		var got smp.SwitchInfo
		pr.what, pr.attr, pr.got = "SwitchInfo", smp.AttrSwitchInfo, &got
		pr.differs = func() string {
			if got.LinearFDBTop == top {
				return ""
			}
			return fmt.Sprintf("LinearFDBTop %d, programmed %d", got.LinearFDBTop, top)
		}
		pr.fix = func() mad.Attribute {
			si := got
			si.LinearFDBTop, si.PortStateChange = top, false // false: leave the bit alone
			return &si
		}
	case itemLFT:
		var want smp.LFTBlock
		base := it.block * smp.LFTBlockLen
		valid := 0 // entries up to LinearFDBTop; the rest is not compared
		for k := range want {
			want[k] = plan.NoPort
			if base+k < len(ks.lft) {
				want[k] = ks.lft[base+k]
				valid = k + 1
			}
		}
		var got smp.LFTBlock
		pr.what = fmt.Sprintf("LFT block %d (LIDs %d-%d)", it.block, base, base+smp.LFTBlockLen-1)
		pr.attr, pr.mod, pr.got = smp.AttrLinearForwardingTable, uint32(it.block), &got
		pr.differs = func() string {
			n, first := 0, -1
			for k := 0; k < valid; k++ {
				if got[k] != want[k] {
					if n++; first < 0 {
						first = k
					}
				}
			}
			if n == 0 {
				return ""
			}
			return fmt.Sprintf("%d entries, first LID %d: port %d, programmed %d", n, base+first, got[first], want[first])
		}
		pr.fix = func() mad.Attribute { w := want; return &w }
	case itemOpVLs:
		code := ks.opVLs[it.a]
		var got smp.PortInfo
		pr.what, pr.attr, pr.mod, pr.got = fmt.Sprintf("port %d OperationalVLs", it.a), smp.AttrPortInfo, uint32(it.a), &got
		pr.differs = func() string {
			// A port not Armed or Active retrains or is down: the
			// sweep loop re-programs it on its way up.
			if got.PortState < smp.PortStateArmed || got.PortState > smp.PortStateActive || (got.OperationalVLs == code && got.VLHighLimit == 0) {
				return ""
			}
			return fmt.Sprintf("OperationalVLs %d VLHighLimit %d, programmed %d and 0", got.OperationalVLs, got.VLHighLimit, code)
		}
		pr.fix = func() mad.Attribute {
			pi := got
			noChange(&pi)
			pi.OperationalVLs, pi.VLHighLimit = code, 0
			return &pi
		}
	case itemSL2VL:
		k := [2]uint8{it.a, it.b}
		want, ok := ks.sl2vl[k]
		if !ok {
			return nil
		}
		pr.attr, pr.mod = smp.AttrSLtoVLMappingTable, smp.SL2VLMod(it.a, it.b)
		pr.what = fmt.Sprintf("SL2VL table %d->%d", it.a, it.b)
		if n.Switch == nil {
			path, err := fab.PortPath(n, it.a)
			if err != nil {
				return nil
			}
			pr.path, pr.mod, pr.what = path, 0, fmt.Sprintf("port %d SL2VL table", it.a)
		}
		var got smp.SL2VLTable
		pr.got = &got
		pr.differs = func() string {
			if [16]uint8(got) == want {
				return ""
			}
			return fmt.Sprintf("%v, programmed %v", [16]uint8(got), want)
		}
		pr.fix = func() mad.Attribute { t := smp.SL2VLTable(want); return &t }
	case itemVLArb:
		k := [2]uint8{it.a, it.b}
		want, ok := ks.vlarb[k]
		if !ok {
			return nil
		}
		pr.attr, pr.mod = smp.AttrVLArbitrationTable, smp.VLArbMod(it.a, it.b)
		pr.what = fmt.Sprintf("port %d VLArbitration block %d", it.a, it.b)
		if n.Switch == nil {
			path, err := fab.PortPath(n, it.a)
			if err != nil {
				return nil
			}
			pr.path = path
		}
		var got smp.VLArbBlock
		pr.got = &got
		pr.differs = func() string {
			if got == want {
				return ""
			}
			return fmt.Sprintf("%v, programmed %v", got, want)
		}
		pr.fix = func() mad.Attribute { b := want; return &b }
	}
	return pr
}
