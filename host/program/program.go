// Package program pushes a verified plan into the fabric: port LIDs and the
// SM LID (PortInfo), LinearFDBTop (SwitchInfo), LFT blocks, SL2VL tables
// (switch port pairs and CA ports), and for plans using more than one data
// VL the ports' OperationalVLs (PortInfo) and VLArbitration tables, then
// port states Armed and Active. It sends only what differs from what each
// device is known to hold: PortInfo and SwitchInfo as discovery just read
// them, LFT blocks, SL2VL and VLArbitration tables as this programmer last
// wrote them.
//
// OperationalVLs goes out, as OpenSM does, before the port is Armed: in the
// LID Set of an end port, else in the Armed Set of a port still in Init;
// only a port already Armed or Active gets a Set of its own (some hardware
// ignores an OperationalVLs change on an Active port; the link then needs
// a bounce, which this package does not force).
package program

import (
	"bytes"
	"context"
	"fmt"
	"sync"

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
	// LFTBlocksRead counts blocks read back from switches that held tables
	// this programmer had not written (a takeover, a restart).
	LFTBlocksRead int64
	// LFTRestored counts switches whose tables were taken from the Record
	// of this SM's last programming instead of being read back (a
	// restart over a fabric that still holds them).
	LFTRestored int64
	SL2VLSets   int64
	// VLArbSets counts VLArbitrationTable blocks sent.
	VLArbSets int64
	// OpVLsSets counts PortInfo Sets sent only to change OperationalVLs
	// (ports already Armed or Active); OperationalVLs carried in a LID or
	// state Set is not counted here.
	OpVLsSets int64
	StateSets int64
	// Prearmed counts the state Sets (in StateSets) Prearm sent before the
	// plan: switch ports moved Init → Armed while the plan was computed.
	Prearmed int64
	// ArmedWithLID counts CA ports whose LID Set (counted in PortInfoSets)
	// also moved them Init → Armed, saving a state Set each.
	ArmedWithLID int64
	Failed       int64
	// Reregistered counts CA ports asked to re-register (in PortInfo Sets
	// counted above).
	Reregistered int64
	// Keyed counts PortInfo Sets (counted above) that changed a port's
	// M_Key, protection bits or lease period: the port did not hold what
	// the M_Key policy wants.
	Keyed int64
	// Enforcing counts the switch ports whose Active Set (counted in
	// StateSets) turned partition enforcement on, as EnforceOnActive
	// asked, and whose answer shows both bits kept (Enforcer.Enforced
	// hears them).
	Enforcing int64
}

// Sets is the total number of Set SMPs.
func (s Stats) Sets() int64 {
	return s.PortInfoSets + s.SwitchInfoSets + s.LFTBlocksSent + s.SL2VLSets + s.VLArbSets + s.OpVLsSets + s.StateSets
}

// Programmer remembers what it wrote to each node.
type Programmer struct {
	C        *mad.Client
	Log      hclog.Logger
	Parallel int
	// OnBlocks, when set, hears how many of the plan's LFT blocks are
	// done (written, or unchanged and skipped) of all it spans, as they
	// complete (progress on a terminal); it must not block.
	OnBlocks func(done, total int64)
	// Record, when set, is the record of what this SM last programmed
	// (restore.go): the first Apply restores from it what a restart would
	// otherwise read back, and every Apply marks it stale before writing.
	Record Record

	mu    sync.Mutex
	known map[uint64]*nodeState // by node GUID
	// gen counts changes of known (each Apply, each Forget): the audit
	// rebuilds its rotation when it moves.
	gen uint64

	aud auditor

	// reregister: the next Apply sets ClientReregister on every CA port
	// (this SM just became master: clients must re-register their SA
	// subscriptions and multicast joins with it); with strangersOnly, only
	// on those whose MasterSMLID is not this SM's.
	reregister, strangersOnly bool
	// enforce: EnforceOnActive's, for the next Apply.
	enforce Enforcer
	// forgot: Forget was called; the next Apply writes every block blind.
	forgot bool
	// recordRead: Record is consulted no more (the first Apply did, or
	// Forget came first).
	recordRead bool
	// armed: what the last Prearm armed, for the Apply that follows it.
	armed *prearmed
	// last is the plan whose tables the last successful Apply wrote (its
	// rows are known's): the next plan's tables, when realised from them
	// (plan.RealizeChanged), differ only in the LIDs it names.
	last *plan.Realized
	// rels: the blocks in which last differs from earlier tables
	// (lftdiff.go).
	rels []lftRel
	// compared counts the LFT entries the last Apply compared with what
	// the switches are known to hold: a cable event's work, which should
	// follow what changed.
	compared int64
	// looked counts the end ports the last Apply looked at for LIDs.
	looked int
	// addr lists the end ports of the last successful Apply's topology,
	// in order, with their LIDs: each CA among them holds that LID in its
	// caLID while addr is set (nil once a CA's state is forgotten).
	addr []epAddr
	// owners are the nodes whose state says the last Apply's plan owns
	// something on them (inPlan, opVLs, SL2VL or VLArbitration keys).
	owners []uint64
}

// epAddr is one end port of a plan and the LIDs it was given.
type epAddr struct {
	guid uint64
	port uint8
	lmc  uint8
	lid  uint16
}

// sameAddressing reports whether topo's end ports and lids are those the
// last successful Apply wrote, in the same order.
func (p *Programmer) sameAddressing(topo *topology.Topology, lids *plan.LIDPlan) bool {
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	eps := topo.Endpoints()
	if addr == nil || len(addr) != len(eps) || len(lids.Ports) != len(eps) {
		return false
	}
	for i, ep := range eps {
		pl, a := lids.Ports[i], addr[i]
		if a.lid != pl.Base || a.lmc != pl.LMC || a.port != ep.Port || a.guid != topo.Nodes[ep.Node].GUID {
			return false
		}
	}
	return true
}

// Enforcer is what EnforceOnActive asks about partition enforcement.
type Enforcer interface {
	// Wanted tells which switch ports' Active Sets turn the enforcement
	// bits on (nil: none). It is called once, when those Sets are built,
	// and may wait for the P_Key plan.
	Wanted() func(discovery.PortRef) bool
	// Enforced hears the ports whose answer showed both bits.
	Enforced(ports []discovery.PortRef)
}

// EnforceOnActive has the next Apply set PartitionEnforcementInbound and
// Outbound in the Active Set of the switch ports e wants: a separate Get
// and Set per port after programming (88 k SMPs on ft3-56) otherwise.
func (p *Programmer) EnforceOnActive(e Enforcer) {
	p.mu.Lock()
	p.enforce = e
	p.mu.Unlock()
}

// Reregister makes the next Apply ask every CA port's clients to
// re-register (PortInfo ClientReregister, IBA 14.4.11).
func (p *Programmer) Reregister() {
	p.mu.Lock()
	p.reregister, p.strangersOnly = true, false
	p.mu.Unlock()
}

// ReregisterStrangers is Reregister for the CA ports whose MasterSMLID is
// not this SM's LID: an SM that restored its SA state (the registrations
// of its last term) need not ask the ports it served to register again,
// only those another SM, or none, served.
func (p *Programmer) ReregisterStrangers() {
	p.mu.Lock()
	p.reregister, p.strangersOnly = true, true
	p.mu.Unlock()
}

type nodeState struct {
	lid uint16  // switches: port-0 LID it had when the tables were written
	lft []uint8 // LFT as written (index = LID); read only (may be the plan's own row)
	// lftKnown, when set, says which 64-LID blocks of lft were read back
	// (learn); blocks past it, or false in it, are not known. nil: every
	// block of lft was written by this programmer.
	lftKnown []bool
	sl2vl    map[[2]uint8][16]uint8
	vlarb    map[[2]uint8]smp.VLArbBlock // (port, block)
	// caLID is, for CAs, each programmed port's LID once written: a port
	// that lost it was reset and holds reset tables again.
	caLID map[uint8]uint16

	// What the last successful Apply owns on this node, which the audit
	// reads back. inPlan: a switch of that plan, whose port-0 LID, LMC
	// and MasterSMLID (lid, lmc, smLID), LinearFDBTop (top) and LFT
	// blocks are the plan's.
	inPlan bool
	lmc    uint8
	smLID  uint16
	top    uint16
	// opVLs is each linked port's OperationalVLs code (plans with more
	// than one data VL); sl2vlKeys and vlarbKeys the tables it programmed
	// (or found already programmed), sorted.
	opVLs     map[uint8]uint8
	sl2vlKeys [][2]uint8
	vlarbKeys [][2]uint8
}

// Forget drops what is known of every switch, so the next Apply writes
// every block (after a restart of the fabric, or on operator request).
func (p *Programmer) Forget() {
	p.mu.Lock()
	p.known, p.last, p.rels, p.addr, p.owners = nil, nil, nil, nil, nil
	p.forgot = true // no read-back either: the next Apply pushes everything
	p.recordRead = true
	p.gen++
	p.mu.Unlock()
}

type portKey struct {
	guid uint64
	port uint8
}

// SubnetPrefix is the GIDPrefix every end port is given with its LID
// (PortInfo, IBA 14.2.5.6: the SM sets it; ports may reset it to 0, and a
// client's port GID is this prefix and its GUID): the link-local prefix,
// OpenSM's default subnet_prefix.
const SubnetPrefix = 0xFE80_0000_0000_0000

// noChange sets the fields of a PortInfo Set that must not change anything
// but what the caller sets explicitly (IBA 14.2.5.6: 0 = no change).
func noChange(pi *smp.PortInfo) {
	pi.PortState = smp.PortStateNoChange
	pi.PortPhysicalState = smp.PhysStateNoChange
	pi.LinkDownDefaultState = 0
	pi.LinkSpeedEnabled = 0
	pi.LinkWidthEnabled = 0
	pi.ClientReregister = false // asked for once, explicitly
}

// stateLocked returns (creating) what is known of a switch; p.mu held.
func (p *Programmer) stateLocked(guid uint64) *nodeState {
	ks := p.known[guid]
	if ks == nil {
		ks = &nodeState{sl2vl: map[[2]uint8][16]uint8{}, vlarb: map[[2]uint8]smp.VLArbBlock{}, caLID: map[uint8]uint16{}}
		p.known[guid] = ks
	}
	return ks
}

// knownFor returns what the programmer wrote to a switch, or nil if that is
// no longer what the switch holds (it lost its LID: rebooted or replaced).
func (p *Programmer) knownFor(guid uint64, n *discovery.Node) *nodeState {
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

// blockKnown reports whether block b of lft is what the switch holds.
func (ks *nodeState) blockKnown(b int) bool {
	return ks.lftKnown == nil || (b < len(ks.lftKnown) && ks.lftKnown[b])
}

// sameLFTBlock reports whether block b is the same in tables known and
// lft (past either's end: NoPort). Whole blocks are compared in place: a
// re-route compares all 2.93 M blocks of ft3-56 to send the few that
// changed, and building each as a block first took 0.2 s of it.
func sameLFTBlock(known, lft []uint8, b int) bool {
	if hi := (b + 1) * smp.LFTBlockLen; hi <= len(known) && hi <= len(lft) {
		return bytes.Equal(known[hi-smp.LFTBlockLen:hi], lft[hi-smp.LFTBlockLen:hi])
	}
	return sameBlock(known, b, lftBlock(lft, b))
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
// Sets it queued: every (in, out) pair of every switch, the (in, 0) pairs
// the plan lists for switch port 0, and each linked CA port (the plan's
// entry for (node, port, port), else the default). A plan that uses only
// SL 0 mapped to VL 0 needs no table: every SL2VL table maps SL 0
// somewhere, and VL 0 is where the reset value and every plan ibsm writes
// put it, so nothing is sent.
func (p *Programmer) sl2vl(ctx context.Context, r *fanout.Group, fab *discovery.Fabric, topo *topology.Topology, vls *plan.VLPlan, own map[uint64][][2]uint8) int64 {
	if vls == nil || onlySL0(vls) {
		return 0
	}
	entries := map[[3]int32][16]uint8{}
	for _, e := range vls.SL2VL {
		entries[[3]int32{e.Node, int32(e.In), int32(e.Out)}] = e.VL
	}
	table := func(node int32, in, out int) [16]uint8 {
		if t, ok := entries[[3]int32{node, int32(in), int32(out)}]; ok {
			return t
		}
		return vls.Default
	}
	var n int64
	// send queues table want for key k of node guid unless it holds it.
	send := func(guid uint64, k [2]uint8, want [16]uint8, path mad.Path, mod uint32) {
		p.mu.Lock()
		ks := p.stateLocked(guid)
		have, known := ks.sl2vl[k]
		ks.sl2vl[k] = want
		p.mu.Unlock()
		own[guid] = append(own[guid], k)
		if known && have == want {
			return
		}
		tbl := smp.SL2VLTable(want)
		n++
		r.Go(func() error { return p.C.Set(ctx, path, smp.AttrSLtoVLMappingTable, mod, &tbl, nil) })
	}
	for node := range topo.Nodes {
		guid := topo.Nodes[node].GUID
		fn := fab.Nodes[guid]
		if fn == nil {
			continue
		}
		np := len(fn.Ports)
		if topo.Nodes[node].Type != topology.Switch {
			for q := 1; q < np; q++ {
				if !fn.Ports[q].Valid || fn.Ports[q].PeerGUID == 0 {
					continue
				}
				path, err := fab.PortPath(fn, uint8(q))
				if err != nil {
					p.logger().Warn("CA port SL2VL table not programmed", "error", err)
					continue
				}
				// CAs ignore the modifier: the table is the arrival port's.
				send(guid, [2]uint8{uint8(q), uint8(q)}, table(int32(node), q, q), path, 0)
			}
			continue
		}
		for in := 0; in < np; in++ {
			for out := 0; out < np; out++ {
				if _, listed := entries[[3]int32{int32(node), int32(in), 0}]; out == 0 && !listed {
					continue
				}
				send(guid, [2]uint8{uint8(in), uint8(out)}, table(int32(node), in, out), fn.Path, smp.SL2VLMod(uint8(in), uint8(out)))
			}
		}
	}
	return n
}

// vlsNeeded is the number of data VLs a plan's SL2VL tables reach: 1 for
// no plan or an SL0-only plan, else one more than the highest VL below 15
// (VL 15 in an SL2VL table drops the packet) and at least the plan's VLs.
func vlsNeeded(v *plan.VLPlan) int {
	if v == nil || onlySL0(v) {
		return 1
	}
	need := max(v.VLs, 1)
	use := func(t [16]uint8) {
		for _, vl := range t {
			if vl < 15 {
				need = max(need, int(vl)+1)
			}
		}
	}
	use(v.Default)
	for _, e := range v.SL2VL {
		use(e.VL)
	}
	return min(need, 15)
}

// opVLsCode is the smallest OperationalVLs/VLCap code (IBA 14.2.5.6:
// 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14) holding n data VLs.
func opVLsCode(n int) uint8 {
	for c := uint8(1); c < 5; c++ {
		if int(smp.DataVLs(c)) >= n {
			return c
		}
	}
	return 5
}

// operationalVLs returns the OperationalVLs code for every linked port when
// the plan needs more than one data VL (nil otherwise: one VL is what every
// port runs after reset, and a single-VL plan leaves ports alone). The code
// is what the plan needs, capped at the port's and its peer's VLCap; a cap
// below the need is logged, since traffic on the missing VLs is dropped.
func (p *Programmer) operationalVLs(fab *discovery.Fabric, need int) map[portKey]uint8 {
	if need <= 1 {
		return nil
	}
	want := opVLsCode(need)
	out := map[portKey]uint8{}
	short := 0
	var example string
	for guid, n := range fab.Nodes {
		for q := 1; q < len(n.Ports); q++ {
			pt := &n.Ports[q]
			if !pt.Valid || pt.PeerGUID == 0 {
				continue
			}
			capCode := pt.Info.VLCap
			if peer := fab.Nodes[pt.PeerGUID]; peer != nil && int(pt.PeerPort) < len(peer.Ports) && peer.Ports[pt.PeerPort].Valid {
				capCode = min(capCode, peer.Ports[pt.PeerPort].Info.VLCap)
			}
			if capCode < 1 || capCode > 5 {
				p.logger().Warn("port reports a reserved VLCap; OperationalVLs left as is", "node", fmt.Sprintf("%#x", guid), "port", q, "vlcap", capCode)
				continue
			}
			code := min(want, capCode)
			if code < want {
				if short++; example == "" {
					example = fmt.Sprintf("%#x/%d (VLCap %d with its peer)", guid, q, capCode)
				}
			}
			out[portKey{guid, uint8(q)}] = code
		}
	}
	if short > 0 {
		p.logger().Warn("links support fewer data VLs than the plan uses; packets on the missing VLs will be dropped: choose a VL assigner limit at most the fabric's VLCap",
			"plan_vls", need, "short_ports", short, "example", example)
	}
	return out
}

// vlArbWeight is each data VL's weight in the low-priority table, in units
// of 64 bytes: one 4 KiB packet per turn, equal for every VL.
const vlArbWeight = 64

// vlArb programs, for each port in opVLs, the low-priority VLArbitration
// table with one equal-weight entry per operational data VL and an empty
// high-priority table (VLHighLimit 0 is set with OperationalVLs), sending
// only blocks that differ from what was last written. It returns how many
// Sets it queued.
func (p *Programmer) vlArb(ctx context.Context, r *fanout.Group, fab *discovery.Fabric, opVLs map[portKey]uint8, need int, own map[uint64][][2]uint8) int64 {
	if need <= 1 {
		return 0
	}
	var n int64
	for k, code := range opVLs {
		fn := fab.Nodes[k.guid]
		info := &fn.Ports[k.port].Info
		path := fn.Path
		if fn.Switch == nil {
			var err error
			if path, err = fab.PortPath(fn, k.port); err != nil {
				p.logger().Warn("CA port VLArbitration table not programmed", "error", err)
				continue
			}
		}
		vls := int(smp.DataVLs(code))
		if int(info.VLArbitrationLowCap) < vls {
			p.logger().Warn("port's low-priority VLArbitration table is shorter than its data VLs; the VLs beyond it get no bandwidth",
				"node", fmt.Sprintf("%#x", k.guid), "port", k.port, "low_cap", info.VLArbitrationLowCap, "vls", vls)
		}
		var low [2 * smp.VLArbBlockLen]smp.VLArbEntry
		for vl := 0; vl < min(vls, int(info.VLArbitrationLowCap), len(low)); vl++ {
			low[vl] = smp.VLArbEntry{VL: uint8(vl), Weight: vlArbWeight}
		}
		blocks := func(capacity uint8, first uint8, entries *[2 * smp.VLArbBlockLen]smp.VLArbEntry) {
			for b := 0; b*smp.VLArbBlockLen < int(capacity) && b < 2; b++ {
				var blk smp.VLArbBlock
				if entries != nil {
					copy(blk[:], entries[b*smp.VLArbBlockLen:])
				}
				key := [2]uint8{k.port, first + uint8(b)}
				p.mu.Lock()
				ks := p.stateLocked(k.guid)
				have, known := ks.vlarb[key]
				ks.vlarb[key] = blk
				p.mu.Unlock()
				own[k.guid] = append(own[k.guid], key)
				if known && have == blk {
					continue
				}
				mod := smp.VLArbMod(k.port, first+uint8(b))
				n++
				r.Go(func() error { return p.C.Set(ctx, path, smp.AttrVLArbitrationTable, mod, &blk, nil) })
			}
		}
		blocks(info.VLArbitrationLowCap, smp.VLArbLowBlock0, &low)
		blocks(info.VLArbitrationHighCap, smp.VLArbHighBlock0, nil)
	}
	return n
}

// forgetResetCAs drops what is known of CAs that left the fabric or whose
// ports lost the LID they were given (reset: their tables are reset too).
func (p *Programmer) forgetResetCAs(fab *discovery.Fabric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for guid, ks := range p.known {
		n := fab.Nodes[guid]
		if n != nil && n.Switch != nil {
			continue // knownFor checks switches
		}
		if n == nil {
			p.forgetLocked(guid)
			continue
		}
		for q, lid := range ks.caLID {
			if int(q) >= len(n.Ports) || !n.Ports[q].Valid || n.Ports[q].Info.LID != lid {
				p.forgetLocked(guid)
				break
			}
		}
	}
}

// forgetCAs drops what is known of the CAs guids (reset).
func (p *Programmer) forgetCAs(guids []uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range guids {
		p.forgetLocked(g)
	}
}

// forgetLocked drops what is known of a CA; p.mu held. Its caLID goes
// with it, so addr no longer says what every CA holds.
func (p *Programmer) forgetLocked(guid uint64) {
	if _, ok := p.known[guid]; ok {
		delete(p.known, guid)
		p.addr = nil
	}
}

func (p *Programmer) logger() hclog.Logger {
	if p.Log == nil {
		return hclog.NewNullLogger()
	}
	return p.Log
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
