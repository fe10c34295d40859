package program

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// Apply programs res into the fabric fab was discovered from. topo must be
// fab's snapshot (the plan's indices refer to it).
//
// Phase 1 sends LIDs, OperationalVLs, LinearFDBTop, LFT blocks, SL2VL and
// VLArbitration in one fan-out; once every Set is answered the programmer
// remembers what it wrote; phases 2 and 3 move ports Init → Armed → Active.
func (p *Programmer) Apply(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, rz *plan.Realized, vls *plan.VLPlan) (Stats, error) {
	return p.apply(ctx, fab, topo, rz, vls, nil)
}

// ApplyChanged is Apply when the caller knows that fab differs from the
// fabric the last successful Apply left (every end port with that plan's
// LID, LMC and SM LID, every live port Active) only in the nodes changed,
// and that rz gives the same end ports the same LIDs: the end ports and
// port states of the other nodes are then not looked at (at ft3-56 a
// cable event changes a few of 47,824 nodes and 311 k ports). Where the
// programmer cannot tell the same (other addressing than it wrote last,
// M_Keys, a client re-registration to ask for) it looks at every node.
func (p *Programmer) ApplyChanged(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, rz *plan.Realized, vls *plan.VLPlan, changed []uint64) (Stats, error) {
	if changed == nil {
		changed = []uint64{}
	}
	return p.apply(ctx, fab, topo, rz, vls, changed)
}

// apply is Apply; changed, when not nil, is ApplyChanged's.
func (p *Programmer) apply(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, rz *plan.Realized, vls *plan.VLPlan, changed []uint64) (Stats, error) {
	a := p.startApply(ctx, fab, topo, rz)
	if pa := p.takePrearmed(fab); pa != nil {
		a.armed = pa.ports
		a.st.StateSets += pa.sent
		a.st.Prearmed = pa.sent
	}
	need := vlsNeeded(vls)
	// The same end ports with the same LIDs as the last Apply wrote (a
	// cable event): a CA port that lost its LID (reset) shows a LID other
	// than the plan's, so lidSets finds those without a pass over every
	// known node.
	if a.sameAddr = p.sameAddressing(topo, rz.LIDs); !a.sameAddr {
		p.forgetResetCAs(fab)
	}
	p.mu.Lock()
	rereg := p.reregister
	a.enforce, p.enforce = p.enforce, nil
	p.mu.Unlock()
	if changed != nil && a.sameAddr && p.C.Keys() == nil && !rereg {
		a.only = changed
	}

	lidSets := a.lidSets()
	p.mu.Lock()
	p.looked = a.looked
	p.mu.Unlock()
	a.opVLs = p.operationalVLs(fab, need)
	opOnly := a.opVLsSets(lidSets)
	// Ports that hide their M_Key from every key ibsm knows refuse these
	// Sets; they go out anyway (a refused SMP starts the port's lease, after
	// which it can be re-keyed) but cannot fail the Apply.
	a.foreign = newForeign(p, a.keys)
	a.sendPortInfo(lidSets, &a.st.PortInfoSets)
	a.sendPortInfo(opOnly, &a.st.OpVLsSets)
	a.forwardingTables()
	own := owned{sl2vl: map[uint64][][2]uint8{}, vlarb: map[uint64][][2]uint8{}}
	a.st.SL2VLSets = p.sl2vl(ctx, a.r, fab, topo, vls, own.sl2vl)
	a.st.VLArbSets = p.vlArb(ctx, a.r, fab, a.opVLs, need, own.vlarb)
	a.foreign.wait("programming LIDs")
	if err := a.r.Wait("programming LIDs and forwarding tables"); err != nil {
		a.st.Failed = a.r.Failed()
		p.Forget() // what the switches hold is now uncertain
		return a.st, err
	}
	a.remember(own)
	moving := a.portsToMove()
	for _, state := range []uint8{smp.PortStateArmed, smp.PortStateActive} {
		if err := a.movePorts(moving, state); err != nil {
			return a.st, err
		}
	}
	return a.st, nil
}

// applyRun is what the steps of one Apply share.
type applyRun struct {
	p     *Programmer
	ctx   context.Context
	fab   *discovery.Fabric
	topo  *topology.Topology
	rz    *plan.Realized
	st    Stats
	r     *fanout.Group // phase 1's Sets
	keys  mad.Keys
	smLID uint16
	// written keeps each PortInfo as set in phase 1 or to be set by the
	// Armed Set: the state Sets rewrite every field, so they must carry the
	// new LID and OperationalVLs, not what discovery read.
	written map[portKey]*smp.PortInfo
	opVLs   map[portKey]uint8
	foreign *foreign
	// armed holds the ports Prearm moved to Armed before the plan, as
	// written: discovery read them in Init.
	armed map[portKey]*smp.PortInfo
	// sameAddr: the end ports and their LIDs are those of the last Apply
	// (sameAddressing); forgotCAs: lidSets forgot a reset CA meanwhile.
	sameAddr, forgotCAs bool
	diff                *lftDiff // forwardingTables'
	// only, when not nil, lists the nodes whose end ports and port states
	// may need Sets (ApplyChanged); looked counts the end ports looked at.
	only   []uint64
	looked int
	// enforce, when set, names the switch ports whose Active Set turns
	// partition enforcement on (EnforceOnActive).
	enforce Enforcer
}

// piSet is one PortInfo Set to send.
type piSet struct {
	path mad.Path
	pi   smp.PortInfo
}

func (p *Programmer) startApply(ctx context.Context, fab *discovery.Fabric, topo *topology.Topology, rz *plan.Realized) *applyRun {
	a := &applyRun{p: p, ctx: ctx, fab: fab, topo: topo, rz: rz, r: fanout.New(p.Parallel), written: map[portKey]*smp.PortInfo{}}
	p.mu.Lock()
	if p.known == nil {
		p.known = map[uint64]*nodeState{}
	}
	p.mu.Unlock()
	if topo.SM.Connected() {
		if i := topo.EndpointIndex(topo.SM); i >= 0 {
			a.smLID = rz.LIDs.Ports[i].Base
		}
	}
	return a
}

// lidSets returns the PortInfo Sets that give end ports their LID, LMC, SM
// LID and GID prefix (with the M_Key, client re-registration and, for a CA
// port in Init on a live link, Armed), for the ports that lack them.
func (a *applyRun) lidSets() map[portKey]*piSet {
	p, fab, topo := a.p, a.fab, a.topo
	sets := map[portKey]*piSet{}
	p.mu.Lock()
	rereg, strangersOnly := p.reregister, p.strangersOnly
	p.mu.Unlock()
	a.keys = p.C.Keys()
	var reset []uint64 // CAs whose port lost the LID this programmer gave it
	visit := func(i int, ep topology.PortRef) {
		a.looked++
		n := fab.Nodes[topo.Nodes[ep.Node].GUID]
		want := a.rz.LIDs.Ports[i]
		pt := &n.Ports[ep.Port]
		ca := n.Info.NodeType != smp.NodeTypeSwitch
		if a.sameAddr && ca && (!pt.Valid || pt.Info.LID != want.Base) {
			reset = append(reset, n.Info.NodeGUID) // given want.Base by the last Apply
		}
		if !pt.Valid {
			return
		}
		cur := &pt.Info
		rereg := rereg && (!strangersOnly || cur.MasterSMLID != a.smLID)
		keyed := a.keys == nil || a.keys.Holds(guardGUID(n, ep.Port))
		if cur.LID == want.Base && cur.LMC == want.LMC && cur.MasterSMLID == a.smLID && cur.GIDPrefix == SubnetPrefix && keyed && !(rereg && ca) {
			return
		}
		pi := *cur
		pi.LID, pi.LMC, pi.MasterSMLID, pi.GIDPrefix = want.Base, want.LMC, a.smLID, SubnetPrefix
		noChange(&pi)
		withKey(a.keys, n, ep.Port, &pi)
		if !keyed {
			a.st.Keyed++
		}
		if rereg && ca {
			a.st.Reregistered++
			pi.ClientReregister = true
		}
		// A CA port in Init on a live link is armed by this same Set: the
		// SMA applies LID and PortState together (IBA 14.2.5.6) and Armed
		// passes no data, so it need not wait for the forwarding tables.
		// Active still waits for them. One Set per CA port instead of two.
		if ca && pt.PeerGUID != 0 && cur.PortState == smp.PortStateInit {
			pi.PortState = smp.PortStateArmed
			a.st.ArmedWithLID++
		}
		sets[portKey{n.Info.NodeGUID, ep.Port}] = &piSet{n.Path, pi}
	}
	if a.only == nil {
		for i, ep := range topo.Endpoints() {
			visit(i, ep)
		}
	}
	for _, g := range a.only {
		if node := topo.NodeByGUID(g); node != topology.NoNode {
			for _, ep := range topo.NodeEndpoints(node) {
				visit(int(topo.EndpointIndex(ep)), ep)
			}
		}
	}
	if len(reset) > 0 {
		p.forgetCAs(reset)
		a.forgotCAs = true
	}
	return sets
}

// opVLsSets puts each changed OperationalVLs into the port's LID Set, else
// into its Armed Set (a port still in Init), and returns the Sets of their
// own for ports already Armed or Active.
func (a *applyRun) opVLsSets(lidSets map[portKey]*piSet) map[portKey]*piSet {
	own := map[portKey]*piSet{}
	for k, code := range a.opVLs {
		n := a.fab.Nodes[k.guid]
		info := n.Ports[k.port].Info
		if w, ok := a.armed[k]; ok {
			info = *w // Armed already: a Set of its own
		}
		if info.OperationalVLs == code && info.VLHighLimit == 0 {
			continue
		}
		if s := lidSets[k]; s != nil {
			s.pi.OperationalVLs, s.pi.VLHighLimit = code, 0
			continue
		}
		pi := info
		noChange(&pi)
		withKey(a.keys, n, k.port, &pi)
		pi.OperationalVLs, pi.VLHighLimit = code, 0
		if info.PortState >= smp.PortStateInit && info.PortState < smp.PortStateArmed {
			a.written[k] = &pi // carried by the Armed Set below
			continue
		}
		own[k] = &piSet{n.Path, pi}
	}
	return own
}

// sendPortInfo sends sets, counting them in *count.
func (a *applyRun) sendPortInfo(sets map[portKey]*piSet, count *int64) {
	ks := make([]portKey, 0, len(sets))
	for k, s := range sets {
		a.written[k] = &s.pi
		ks = append(ks, k)
	}
	atomic.AddInt64(count, int64(len(ks)))
	a.setPorts(a.r, ks, func(i int) mad.Req {
		k := ks[i]
		s := sets[k]
		return mad.Req{Path: s.path, Attr: smp.AttrPortInfo, Mod: uint32(k.port), Val: &s.pi}
	})
}

// setPorts sends the PortInfo Set req(i) of every port ks[i], errors to
// r: those of ports that hide their M_Key through Set on the foreign
// group, the rest in one SetAll batch (48 k LID Sets, 480 k state Sets on
// ft3-56: a goroutine's Set each cost twice the CPU).
func (a *applyRun) setPorts(r *fanout.Group, ks []portKey, req func(i int) mad.Req) {
	todo := make([]int32, 0, len(ks))
	for i, k := range ks {
		if g := a.foreign.pick(r, a.fab, k); g != r {
			q := req(i)
			g.Go(func() error { return a.p.C.Set(a.ctx, q.Path, q.Attr, q.Mod, q.Val, nil) })
			continue
		}
		todo = append(todo, int32(i))
	}
	a.p.C.SetAll(a.ctx, len(todo), func(i int) mad.Req { return req(int(todo[i])) }, func(_ int, err error) { r.Add(err) })
}

// forwardingTables sends each switch's LinearFDBTop (SwitchInfo) where it
// differs and the LFT blocks it is not known to hold, having first read
// back what a forgotten switch holds (learn). A switch's row that is the
// very row last written (tables realised from the last plan's share their
// unchanged rows) is not compared at all, and a row whose differences
// from the last plan's are known (lftdiff.go) only in those blocks: an
// ft3-56 cable event compared all 2.93 M blocks to send ~2,600.
func (a *applyRun) forwardingTables() {
	p, fab, topo, rz, st := a.p, a.fab, a.topo, a.rz, &a.st
	blocks := (int(rz.TopLID) + 64) / 64
	st.LFTBlocksRead, st.LFTRestored = p.learn(a.ctx, fab, topo, blocks, a.smLID)
	sw := topo.Switches()
	d := p.diffFor(rz)
	a.diff = d
	var send []uint32 // the blocks to send: switch index << blockBits | block
	paths := make([]mad.Path, len(sw))
	var blocksDone atomic.Int64
	blockDone := func(n int) {
		if p.OnBlocks != nil {
			p.OnBlocks(blocksDone.Add(int64(n)), int64(blocks*len(sw)))
		}
	}
	queue := func(s, b int) { send = append(send, uint32(s)<<blockBits|uint32(b)) }
	var compared int64
	defer func() {
		p.mu.Lock()
		p.compared = compared
		p.mu.Unlock()
	}()
	for s, node := range sw {
		guid := topo.Nodes[node].GUID
		n := fab.Nodes[guid]
		paths[s] = n.Path
		lft := rz.LFT[s]
		st.LFTBlocksTotal += int64(blocks)
		known := p.knownFor(guid, n)
		if n.Switch != nil && n.Switch.LinearFDBTop != rz.TopLID {
			si := *n.Switch
			si.LinearFDBTop = rz.TopLID
			si.PortStateChange = false
			path := n.Path
			atomic.AddInt64(&st.SwitchInfoSets, 1)
			a.r.Go(func() error { return p.C.Set(a.ctx, path, smp.AttrSwitchInfo, 0, &si, nil) })
		}
		written := known != nil && known.lftKnown == nil // every block of known.lft is what the switch holds
		lastRow := d.lastRow(s, known)
		if !lastRow {
			d.exact = false
		}
		queued := len(send)
		switch {
		case written && sameRow(known.lft, lft):
		case lastRow && d.ok:
			compared += d.differing(s, known.lft, lft, func(b int) {
				queue(s, b)
				d.noteSent(s, b)
			})
		case written && len(known.lft) == len(lft):
			// Tables realised afresh (a plan from the cache): the row in
			// runs of blocks, a block at a time only where a run differs.
			compared += diffRow(known.lft, lft, func(b int) {
				queue(s, b)
				d.noteSent(s, b)
			})
		default:
			for b := 0; b < blocks; b++ {
				if known != nil && known.blockKnown(b) {
					compared += smp.LFTBlockLen
				}
				if known == nil || !known.blockKnown(b) || !sameLFTBlock(known.lft, lft, b) {
					queue(s, b)
					d.noteSent(s, b)
				}
			}
		}
		blockDone(blocks - (len(send) - queued))
	}
	st.LFTBlocksSent += int64(len(send))
	// Millions of blocks on the largest fabrics: the transport keeps them
	// in flight itself (SetAll) rather than a goroutine each.
	p.C.SetAll(a.ctx, len(send), func(i int) mad.Req {
		s, b := int(send[i]>>blockBits), int(send[i]&(1<<blockBits-1))
		return mad.Req{Path: paths[s], Attr: smp.AttrLinearForwardingTable, Mod: uint32(b), Val: lftBlock(rz.LFT[s], b)}
	}, func(_ int, err error) {
		a.r.Add(err)
		blockDone(1)
	})
}

// diffRun is the number of blocks diffRow compares at once.
const diffRun = 16

// diffRow calls send(b) for each block b (ascending) in which rows known
// and lft (of the same length) differ and returns the entries compared.
func diffRow(known, lft []uint8, send func(b int)) int64 {
	const run = diffRun * smp.LFTBlockLen
	for lo := 0; lo < len(lft); lo += run {
		hi := min(lo+run, len(lft))
		if bytes.Equal(known[lo:hi], lft[lo:hi]) {
			continue
		}
		for b := lo / smp.LFTBlockLen; b*smp.LFTBlockLen < hi; b++ {
			if !sameLFTBlock(known, lft, b) {
				send(b)
			}
		}
	}
	return int64(len(lft))
}

// sameRow reports whether a and b are the same table in memory (a
// realised row shared by two plans): then they hold the same entries.
func sameRow(a, b []uint8) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// blockBits holds an LFT block number (at most 768 below the multicast
// LIDs) in a block to send: switch index << blockBits | block.
const blockBits = 10

// lftBlock is block b of lft (entries past its end forward nothing): the
// table's own 64 entries where it holds them all — not a copy, which was
// an allocation per LFT Set (2.9 M, 187 MB at ft3-56); nobody writes a
// block it returns — else a copy padded with NoPort.
func lftBlock(lft []uint8, b int) *smp.LFTBlock {
	lo := b * smp.LFTBlockLen
	if lo+smp.LFTBlockLen <= len(lft) {
		return (*smp.LFTBlock)(lft[lo : lo+smp.LFTBlockLen])
	}
	blk := new(smp.LFTBlock)
	n := 0
	if lo < len(lft) {
		n = copy(blk[:], lft[lo:])
	}
	for k := n; k < smp.LFTBlockLen; k++ {
		blk[k] = plan.NoPort
	}
	return blk
}

// remember records, once phase 1 succeeded, the tables as written and
// what this plan owns (what the audit reads back).
func (a *applyRun) remember(own owned) {
	p, topo, rz := a.p, a.topo, a.rz
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.reregister, p.strangersOnly, p.forgot = false, false, false
	for _, g := range p.owners {
		if ks := p.known[g]; ks != nil {
			ks.inPlan, ks.opVLs, ks.sl2vlKeys, ks.vlarbKeys = false, nil, nil, nil
		}
	}
	p.owners = p.owners[:0]
	p.rels = p.relsAfter(a.diff, rz)
	p.last = rz
	for s, node := range topo.Switches() {
		p.owners = append(p.owners, topo.Nodes[node].GUID)
		ks := p.stateLocked(topo.Nodes[node].GUID)
		// The plan's own row, not a copy (187 MB on ft3-56): a verified
		// plan's tables are never written again, and a row read back or
		// restored gets a buffer of its own (learn, restore).
		ks.lft, ks.lftKnown = rz.LFT[s], nil
		pl := rz.LIDs.Ports[topo.EndpointIndex(topology.PortRef{Node: node, Port: 0})]
		ks.lid, ks.lmc, ks.smLID, ks.top, ks.inPlan = pl.Base, pl.LMC, a.smLID, rz.TopLID, true
	}
	for k, code := range a.opVLs {
		ks := p.stateLocked(k.guid)
		if ks.opVLs == nil {
			ks.opVLs = map[uint8]uint8{}
		}
		ks.opVLs[k.port] = code
		p.owners = append(p.owners, k.guid)
	}
	own.commit(p)
	for g := range own.sl2vl {
		p.owners = append(p.owners, g)
	}
	for g := range own.vlarb {
		p.owners = append(p.owners, g)
	}
	if a.sameAddr && !a.forgotCAs {
		return // every CA's caLID is already this plan's
	}
	eps := topo.Endpoints()
	p.addr = make([]epAddr, len(eps))
	for i, ep := range eps {
		pl := rz.LIDs.Ports[i]
		p.addr[i] = epAddr{guid: topo.Nodes[ep.Node].GUID, port: ep.Port, lid: pl.Base, lmc: pl.LMC}
		if topo.Nodes[ep.Node].Type == topology.Switch {
			continue
		}
		ks := p.stateLocked(topo.Nodes[ep.Node].GUID)
		ks.caLID[ep.Port] = pl.Base
	}
}

// portMove is a port a state Set may move, with its node.
type portMove struct {
	k portKey
	n *discovery.Node
}

// portsToMove lists the ports of live links that are at least Init and
// below Active as discovered: Prearm and a LID Set only raise such a port
// to Armed, so no other port needs a state Set. One look at each port,
// without map lookups: at ft3-56 a cable event has 311 k ports, of which a
// few move.
func (a *applyRun) portsToMove() []portMove {
	var ms []portMove
	look := func(guid uint64, n *discovery.Node) {
		for q := 1; q < len(n.Ports); q++ {
			pt := &n.Ports[q]
			if st := pt.Info.PortState; st >= smp.PortStateInit && st < smp.PortStateActive && pt.Valid && pt.PeerGUID != 0 {
				ms = append(ms, portMove{portKey{guid, uint8(q)}, n})
			}
		}
	}
	if a.only == nil {
		for guid, n := range a.fab.Nodes {
			look(guid, n)
		}
	}
	for _, g := range a.only {
		if n := a.fab.Nodes[g]; n != nil {
			look(g, n)
		}
	}
	return ms
}

// movePorts moves both ends of every live link among ports that is at
// least Init and below state to state (phase 2: Armed, phase 3: Active).
func (a *applyRun) movePorts(ports []portMove, state uint8) error {
	r := fanout.New(a.p.Parallel)
	// Each port's key, node and the PortInfo its Set starts from, not the
	// Set: it is built again when it is sent, which keeps 480 k of them
	// small, and from these without the map lookups that found the
	// PortInfo (three per port and pass took 0.7 of the Apply's 8 CPU-s
	// at ft3-56).
	var ks []portKey
	var nodes []*discovery.Node
	var bases []*smp.PortInfo
	for _, m := range ports {
		if base, ok := a.stateBase(m.n, m.k, state); ok {
			ks, nodes, bases = append(ks, m.k), append(nodes, m.n), append(bases, base)
		}
	}
	atomic.AddInt64(&a.st.StateSets, int64(len(ks)))
	// Ports to turn enforcement on, and their answers (by index into ks).
	var enf []*smp.PortInfo
	if state == smp.PortStateActive && a.enforce != nil {
		if want := a.enforce.Wanted(); want != nil {
			enf = make([]*smp.PortInfo, len(ks))
			for i, k := range ks {
				if want(discovery.PortRef{GUID: k.guid, Port: k.port}) {
					enf[i] = new(smp.PortInfo)
				}
			}
		}
	}
	a.setPorts(r, ks, func(i int) mad.Req {
		q := a.stateSet(nodes[i], ks[i].port, bases[i], state)
		if enf != nil && enf[i] != nil {
			out := enf[i]
			pi := q.Val.(*smp.PortInfo)
			pi.PartitionEnforcementInbound, pi.PartitionEnforcementOutbound = true, true
			q.Out = out
		}
		return q
	})
	a.foreign.wait(fmt.Sprintf("moving ports to state %d", state))
	if err := r.Wait(fmt.Sprintf("moving ports to state %d", state)); err != nil {
		a.st.Failed = r.Failed()
		return err
	}
	var on []discovery.PortRef
	for i, out := range enf {
		if out != nil && out.PartitionEnforcementInbound && out.PartitionEnforcementOutbound {
			on = append(on, discovery.PortRef{GUID: ks[i].guid, Port: ks[i].port})
		}
	}
	if on != nil {
		a.st.Enforcing = int64(len(on))
		a.enforce.Enforced(on)
	}
	return nil
}

// stateBase returns the PortInfo a state Set of port k (of node n) starts
// from — as discovered, as Prearm armed it, or as phase 1 wrote it — if it
// is on a live link, at least Init and below state.
func (a *applyRun) stateBase(n *discovery.Node, k portKey, state uint8) (*smp.PortInfo, bool) {
	pt := &n.Ports[k.port]
	if k.port == 0 || !pt.Valid || pt.PeerGUID == 0 {
		return nil, false
	}
	cur, base := pt.Info.PortState, &pt.Info
	if w, ok := a.armed[k]; ok {
		cur, base = w.PortState, w // armed before the plan
	}
	if w, ok := a.written[k]; ok {
		cur, base = max(cur, w.PortState), w // armed by its LID Set, or a Set of OperationalVLs (no change of state)
	}
	if cur < smp.PortStateInit || cur >= state {
		return nil, false
	}
	return base, true
}

// stateSet is the PortInfo Set that moves port q of n, whose Set starts
// from base (stateBase), to state.
func (a *applyRun) stateSet(n *discovery.Node, q uint8, base *smp.PortInfo, state uint8) mad.Req {
	pi := *base
	noChange(&pi)
	withKey(a.keys, n, q, &pi)
	pi.PortState = state
	return mad.Req{Path: n.Path, Attr: smp.AttrPortInfo, Mod: uint32(q), Val: &pi}
}
