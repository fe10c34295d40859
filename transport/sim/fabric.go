// Package sim is the embedded fabric: an in-process InfiniBand subnet built
// from a topology file (transport/netfile) whose nodes answer SMPs like real
// SMAs, keep port state, forward directed-route SMPs hop by hop and
// LID-routed MADs through the forwarding tables the SM programmed, send
// trap 128 on link changes and take faults from tests.
//
// # Use
//
//	f, _ := netfile.ParseFile("fabric.net")
//	fab, err := sim.New(f, sim.Options{})
//	guid, port := fab.DefaultSMPort()
//	conn, err := fab.Attach(guid, port) // a transport.Conn
//	tr := transport.New(conn, transport.Options{})
//
// Conn.Send processes a request synchronously in the caller's goroutine
// (walk the route, run the SMA, walk back) and queues the response for Recv;
// there is no goroutine per node and locks are per node, so concurrent
// senders scale.
//
// # Behaviour (IBA vol 1 ch. 14, with ibsim's choices where the spec leaves room)
//
//   - Linked ports start in Init/LinkUp, unlinked ones Down/Polling, switch
//     port 0 Active. LIDs are 0 unless the topology file presets them.
//   - Directed route: a hop over a port that does not exist or whose link
//     is not up (Down) drops the SMP; the requester times out.
//   - LID routing: from the sender's port, switch by switch through the
//     LFT (entries above LinearFDBTop, 0xFF, or a port that is down drop
//     the MAD), at most Options.HopLimit switches, so loops drop. A link
//     must be up (both ends at least Init: IBA lets SMPs cross Init links)
//     — ibsim is stricter and needs Active. The response is LID-routed back
//     to the request's SLID (0 = the sender's port LID), so a wrong table
//     breaks both directions.
//   - PortInfo Set honours LID, LMC, MasterSMLID, MasterSMSL, SubnetTimeOut,
//     HOQLife, GIDPrefix, OperationalVLs (≤ VLCap), PortPhysicalState
//     (3 Disabled takes the link down, 2 Polling lets it retrain) and
//     PortState: Down bounces the link (both ends retrain to Init), Armed
//     needs Init and a peer at least Init, Active needs Armed (or Active) and
//     a peer Armed or Active; anything else is status 0x001C and nothing of
//     the Set is applied.
//   - SwitchInfo.PortStateChange is set when a port goes to or from Down
//     (IBA 14.2.5.4), cleared by a Set with the bit 1; the switch then sends
//     trap 128 to its port 0 MasterSMLID, LID-routed like any MAD. Only
//     switches produce trap 128.
//   - Requests for attributes the SMA does not implement (SMInfo, Notice,
//     vendor ones) are delivered to a Conn attached at the destination port
//     if there is one (that is how traps and SMInfo reach an SM), else
//     answered with status 0x000C. VLArbitrationTable blocks are stored and
//     returned but do not arbitrate. P_Key enforcement, VL arbitration and
//     multicast forwarding are not simulated.
//   - The SMA enforces M_Keys as IBA 14.2.4 defines them (protection
//     levels, M_KeyViolations, trap 256, the lease timer): see mkey.go.
//     ibsim does not; this fabric is where M_Key protection can be shown.
package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// Options configures New. Zero values select the defaults.
type Options struct {
	// LinearFDBCap is SwitchInfo.LinearFDBCap (default 49152, LIDs 0..0xBFFF).
	LinearFDBCap int
	// HopLimit bounds LID-routed forwarding (default 64 switches).
	HopLimit int
	// RecvBuffer is the capacity of each Conn's receive queue (default
	// 65536 packets). A full queue drops further packets, counted in
	// Stats.Overruns, as a real HCA would.
	RecvBuffer int
	// Now is the clock M_Key lease periods run on (default time.Now);
	// tests pass a fake one to expire leases without waiting.
	Now func() time.Time
}

func (o Options) withDefaults() (Options, error) {
	if o.LinearFDBCap == 0 {
		o.LinearFDBCap = 49152
	}
	if o.LinearFDBCap < smp.LFTBlockLen || o.LinearFDBCap > 0xC000 || o.LinearFDBCap%smp.LFTBlockLen != 0 {
		return o, fmt.Errorf("sim: LinearFDBCap %d: want a multiple of 64 in 64..49152", o.LinearFDBCap)
	}
	if o.HopLimit <= 0 {
		o.HopLimit = 64
	}
	if o.RecvBuffer <= 0 {
		o.RecvBuffer = 65536
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// VLCap is the PortInfo.VLCap every port reports: 4 = VL0..VL7.
const VLCap = 4

// Fabric is the simulated subnet. All methods are safe for concurrent use.
type Fabric struct {
	opts   Options
	nodes  []*node
	byGUID map[uint64]*node

	drop struct {
		mu   sync.Mutex
		rate atomic.Uint64 // math.Float64bits
		rng  *rand.Rand
	}
	trapTID atomic.Uint64
	st      counters
	blocks  blockPool
	// mads holds the buffers of delivered answers the agents' transports
	// gave back (conn.Recycle), for forward to fill again.
	mads sync.Pool
}

type node struct {
	mu    sync.Mutex // guards everything mutable below except atomics
	idx   int
	typ   topology.NodeType
	guid  uint64
	sys   uint64
	vend  uint32
	dev   uint32
	desc  string
	nfp   int // number of external ports
	ports []port
	gone  atomic.Bool // RemoveNode: the node no longer answers

	// switch state
	enhanced bool
	fdbTop   atomic.Uint32
	lft      []atomic.Pointer[smp.LFTBlock] // nil block = all 0xFF
	lifeTime uint8
	psc      atomic.Bool // SwitchInfo.PortStateChange
	sl2vl    [][8]byte   // switches: [in*(nfp+1)+out]; CAs: [port]; wire format
	pkeys    map[uint32]*smp.PKeyBlock
	vlarb    map[uint16]*smp.VLArbBlock // port<<8 | block; nil block = all zero
	mft      map[uint32]*smp.MFTBlock   // mcast.go: position<<16 | block; nil = no port
}

type port struct {
	guid uint64
	// Cable, immutable after New; peer == nil for an unconnected port.
	peer     *node
	peerPort uint8
	width    uint8 // LinkWidthActive
	speed    netfile.Speed

	state    atomic.Uint32 // PortState; Down while the link is not up
	addr     atomic.Uint32 // LID | LMC<<16 (switch: port 0 only)
	cableUp  bool          // false after LinkDown/RemoveNode
	disabled bool          // PortPhysicalState Disabled set by the SM
	smLID    uint16
	smSL     uint8
	opVLs    uint8
	hoqLife  uint8
	subnetTO uint8
	gidPfx   uint64
	capMask  uint32

	// M_Key state (IBA 14.2.4). A CA port checks SMPs against its own; a
	// switch keeps one set on port 0 for the whole switch.
	mkey      uint64
	mkeyProt  uint8     // M_KeyProtectBits 0..3
	mkeyLease uint16    // M_KeyLeasePeriod in seconds; 0 = never expires
	mkeyViol  uint16    // M_KeyViolations, saturating
	leaseEnd  time.Time // lease timer running until then; zero = stopped

	attached atomic.Pointer[conn]
}

func (p *port) lid() (uint16, uint8) {
	a := p.addr.Load()
	return uint16(a), uint8(a >> 16)
}

// has reports whether dlid falls in the port's LID range [LID, LID+2^LMC).
func (p *port) has(dlid uint16) bool {
	lid, lmc := p.lid()
	return lid != 0 && dlid >= lid && uint32(dlid) < uint32(lid)+1<<lmc
}

func (p *port) up() bool { return p.state.Load() >= smp.PortStateInit }

// New builds a fabric from a topology file. Linked ports start in Init.
func New(f *netfile.File, opts Options) (*Fabric, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if f == nil || len(f.Nodes) == 0 {
		return nil, errors.New("sim: empty topology; load a net file with at least one node")
	}
	fab := &Fabric{opts: o, byGUID: make(map[uint64]*node, len(f.Nodes))}
	fab.drop.rng = rand.New(rand.NewPCG(1, 2))
	idx := make(map[*netfile.Node]*node, len(f.Nodes))
	for i, fn := range f.Nodes {
		if _, dup := fab.byGUID[fn.GUID]; dup {
			return nil, fmt.Errorf("sim: node %q: GUID 0x%016x used twice", fn.Name, fn.GUID)
		}
		n := &node{idx: i, typ: fn.Type, guid: fn.GUID, sys: fn.SysImageGUID, vend: fn.VendorID & 0xFFFFFF,
			dev: fn.DeviceID & 0xFFFF, desc: fn.Desc, nfp: fn.NumPorts(), enhanced: fn.Enhanced,
			ports: make([]port, len(fn.Ports))}
		if len(n.desc) > smp.DataLen {
			n.desc = n.desc[:smp.DataLen]
		}
		for p := range n.ports {
			pt := &n.ports[p]
			pt.guid, pt.opVLs, pt.cableUp = fn.Ports[p].GUID, 1, true
			pt.state.Store(smp.PortStateDown)
			pt.width, pt.speed = uint8(netfile.Width4x), netfile.SDR
			pt.capMask = smp.CapIsTrapSupported | smp.CapIsSLMappingSupported | smp.CapIsSystemImageGUID
			if p > 0 {
				pt.addr.Store(uint32(fn.Ports[p].LID) | uint32(fn.Ports[p].LMC)<<16)
			}
		}
		if n.typ == topology.Switch {
			n.ports[0].state.Store(smp.PortStateActive)
			n.ports[0].addr.Store(uint32(fn.LID) | uint32(fn.LMC)<<16)
			n.ports[0].capMask |= smp.CapIsNoticeSupported
			n.lft = make([]atomic.Pointer[smp.LFTBlock], o.LinearFDBCap/smp.LFTBlockLen)
			n.lifeTime = 0x13 // IBA default for switch lifetime (about 0.5 s)
			n.psc.Store(true) // switches come up with a change to report, as in ibsim
		}
		fab.nodes = append(fab.nodes, n)
		fab.byGUID[n.guid] = n
		idx[fn] = n
	}
	for _, fn := range f.Nodes {
		n := idx[fn]
		for p := 1; p < len(fn.Ports); p++ {
			fp := &fn.Ports[p]
			if fp.Peer == nil {
				continue
			}
			peer := idx[fp.Peer]
			if peer == nil || fp.PeerPort < 1 || fp.PeerPort > peer.nfp {
				return nil, fmt.Errorf("sim: %q[%d] links outside the topology", fn.Name, p)
			}
			pt := &n.ports[p]
			pt.peer, pt.peerPort, pt.width, pt.speed = peer, uint8(fp.PeerPort), uint8(fp.Width), fp.Speed
			pt.state.Store(smp.PortStateInit)
		}
	}
	return fab, nil
}

func (f *Fabric) node(guid uint64) (*node, error) {
	n := f.byGUID[guid]
	if n == nil {
		return nil, fmt.Errorf("sim: no node with GUID 0x%016x", guid)
	}
	return n, nil
}

func (f *Fabric) port(guid uint64, p uint8) (*node, *port, error) {
	n, err := f.node(guid)
	if err != nil {
		return nil, nil, err
	}
	if int(p) > n.nfp || (p == 0 && n.typ != topology.Switch) {
		return nil, nil, fmt.Errorf("sim: node 0x%016x has no port %d (ports 1..%d)", guid, p, n.nfp)
	}
	return n, &n.ports[p], nil
}

// lock2 locks a and b (which may be equal) in a global order.
func lock2(a, b *node) func() {
	if a == b || b == nil {
		a.mu.Lock()
		return a.mu.Unlock
	}
	if a.idx > b.idx {
		a, b = b, a
	}
	a.mu.Lock()
	b.mu.Lock()
	return func() { b.mu.Unlock(); a.mu.Unlock() }
}

// DefaultSMPort returns where an SM attaches when the caller has no
// preference: the first connected port of the first CA in file order, else
// port 0 of the first switch.
func (f *Fabric) DefaultSMPort() (guid uint64, port uint8) {
	for _, n := range f.nodes {
		if n.typ == topology.Switch {
			continue
		}
		for p := 1; p <= n.nfp; p++ {
			if n.ports[p].peer != nil {
				return n.guid, uint8(p)
			}
		}
	}
	for _, n := range f.nodes {
		if n.typ == topology.Switch {
			return n.guid, 0
		}
	}
	return f.nodes[0].guid, 1
}

// ---- fault injection ----

// event is a switch whose PortStateChange went up and must trap.
type events []*node

func (e *events) mark(n *node) {
	if n.typ == topology.Switch {
		n.psc.Store(true)
		*e = append(*e, n)
	}
}

// setLink takes the cable at (n, p) up or down. Callers hold both nodes' locks.
func setLinkLocked(n *node, p uint8, up bool, ev *events) {
	pt := &n.ports[p]
	peer := pt.peer
	if peer == nil {
		return
	}
	pp := &peer.ports[pt.peerPort]
	was := pt.up()
	if up {
		if !pt.cableUp || !pp.cableUp || pt.disabled || pp.disabled || n.gone.Load() || peer.gone.Load() {
			return
		}
		if was {
			return
		}
		pt.state.Store(smp.PortStateInit)
		pp.state.Store(smp.PortStateInit)
	} else {
		if !was && !pp.up() {
			return
		}
		pt.state.Store(smp.PortStateDown)
		pp.state.Store(smp.PortStateDown)
	}
	ev.mark(n)
	ev.mark(peer)
}

// LinkDown unplugs the cable at (guid, port): both ends go Down/Polling,
// switches at either end set PortStateChange and send trap 128.
func (f *Fabric) LinkDown(guid uint64, p uint8) error {
	return f.cable(guid, p, false)
}

// LinkUp plugs the cable at (guid, port) back in: both ends train to Init
// (unless an end is disabled or its node removed) and switches trap.
func (f *Fabric) LinkUp(guid uint64, p uint8) error {
	return f.cable(guid, p, true)
}

func (f *Fabric) cable(guid uint64, p uint8, up bool) error {
	n, pt, err := f.port(guid, p)
	if err != nil {
		return err
	}
	if p == 0 || pt.peer == nil {
		return fmt.Errorf("sim: node 0x%016x port %d has no cable", guid, p)
	}
	var ev events
	unlock := lock2(n, pt.peer)
	pt.cableUp = up
	pt.peer.ports[pt.peerPort].cableUp = up
	setLinkLocked(n, p, up, &ev)
	unlock()
	f.trap(ev)
	return nil
}

// RemoveNode simulates the loss of a node: all its links go down and it
// stops answering, even to an SM attached to it.
func (f *Fabric) RemoveNode(guid uint64) error {
	n, err := f.node(guid)
	if err != nil {
		return err
	}
	n.gone.Store(true)
	var ev events
	for p := 1; p <= n.nfp; p++ {
		if n.ports[p].peer == nil {
			continue
		}
		unlock := lock2(n, n.ports[p].peer)
		setLinkLocked(n, uint8(p), false, &ev)
		unlock()
	}
	// The removed switch itself cannot trap; its neighbours do.
	live := ev[:0]
	for _, s := range ev {
		if s != n {
			live = append(live, s)
		}
	}
	f.trap(live)
	return nil
}

// SetPortLID changes the LID and LMC of a CA port or of a switch's port 0
// behind the SM's back, like ibsim's Baselid console command: a switch
// sets PortStateChange (but sends no trap, as ibsim does); a CA port
// changes silently, which only an SM that re-reads CA ports notices.
func (f *Fabric) SetPortLID(guid uint64, p uint8, lid uint16, lmc uint8) error {
	n, pt, err := f.port(guid, p)
	if err != nil {
		return err
	}
	if n.typ == topology.Switch && p != 0 {
		return fmt.Errorf("sim: switch 0x%016x has its LID on port 0, not %d", guid, p)
	}
	if lid >= 0xC000 || lmc > 7 {
		return fmt.Errorf("sim: LID %d / LMC %d: want a unicast LID below 0xC000 and LMC 0..7", lid, lmc)
	}
	n.mu.Lock()
	pt.addr.Store(uint32(lid) | uint32(lmc)<<16)
	n.mu.Unlock()
	if n.typ == topology.Switch {
		n.psc.Store(true)
	}
	return nil
}

// SetMasterSMLID changes the SM LID a CA port (or a switch's port 0)
// holds, as another SM that took the port over would have set it.
func (f *Fabric) SetMasterSMLID(guid uint64, p uint8, lid uint16) error {
	n, pt, err := f.port(guid, p)
	if err != nil {
		return err
	}
	if n.typ == topology.Switch && p != 0 {
		return fmt.Errorf("sim: switch 0x%016x has its SM LID on port 0, not %d", guid, p)
	}
	n.mu.Lock()
	pt.smLID = lid
	n.mu.Unlock()
	return nil
}

// SetDropRate makes the fabric silently drop that fraction (0..1) of the
// MADs sent into it, using a generator seeded with seed.
func (f *Fabric) SetDropRate(rate float64, seed int64) error {
	if math.IsNaN(rate) || rate < 0 || rate > 1 {
		return fmt.Errorf("sim: drop rate %v: want 0..1", rate)
	}
	f.drop.mu.Lock()
	f.drop.rng = rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	f.drop.rate.Store(math.Float64bits(rate))
	f.drop.mu.Unlock()
	return nil
}

func (f *Fabric) dropOne() bool {
	r := math.Float64frombits(f.drop.rate.Load())
	if r == 0 {
		return false
	}
	f.drop.mu.Lock()
	d := f.drop.rng.Float64() < r
	f.drop.mu.Unlock()
	return d
}

// ---- read accessors for tests ----

// LFT returns a copy of the switch's linear forwarding table up to
// LinearFDBTop (0xFF = no route).
func (f *Fabric) LFT(switchGUID uint64) ([]uint8, error) {
	n, err := f.node(switchGUID)
	if err != nil {
		return nil, err
	}
	if n.typ != topology.Switch {
		return nil, fmt.Errorf("sim: node 0x%016x is a %v, not a switch", switchGUID, n.typ)
	}
	top := int(n.fdbTop.Load())
	out := make([]uint8, top+1)
	for lid := range out {
		out[lid] = n.lftEntry(uint16(lid))
	}
	return out, nil
}

func (n *node) lftEntry(lid uint16) uint8 {
	b := int(lid) / smp.LFTBlockLen
	if b >= len(n.lft) {
		return smp.LFTUnreachable
	}
	blk := n.lft[b].Load()
	if blk == nil {
		return smp.LFTUnreachable
	}
	return blk[int(lid)%smp.LFTBlockLen]
}

// PortSnapshot is what the SM programmed into a port, for tests.
type PortSnapshot struct {
	LID         uint16
	LMC         uint8
	State       uint8 // PortState
	PhysState   uint8
	MasterSMLID uint16
	OpVLs       uint8
	IsSM        bool
	// M_Key state of the port (a switch's: port 0's): the key, its
	// protection level and lease period, the violations counted and
	// whether the lease timer runs.
	MKey           uint64
	MKeyProtect    uint8
	MKeyLease      uint16
	MKeyViolations uint16
	LeaseRunning   bool
}

// PortInfo returns a snapshot of port p of node guid. For switch ports other
// than 0 the LID, LMC and MasterSMLID are port 0's.
func (f *Fabric) PortInfo(guid uint64, p uint8) (PortSnapshot, error) {
	n, pt, err := f.port(guid, p)
	if err != nil {
		return PortSnapshot{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	base := pt
	if n.typ == topology.Switch {
		base = &n.ports[0]
	}
	lid, lmc := base.lid()
	kp := mkeyHolder(n, p)
	expireLocked(kp, f.opts.Now)
	return PortSnapshot{LID: lid, LMC: lmc, State: uint8(pt.state.Load()), PhysState: physState(n, uint8(p)),
		MasterSMLID: base.smLID, OpVLs: pt.opVLs, IsSM: pt.capMask&smp.CapIsSM != 0,
		MKey: kp.mkey, MKeyProtect: kp.mkeyProt, MKeyLease: kp.mkeyLease, MKeyViolations: kp.mkeyViol,
		LeaseRunning: !kp.leaseEnd.IsZero()}, nil
}

// SL2VL returns the SL-to-VL table of a switch port pair (in, out), or of
// CA port out (in ignored), one VL per SL.
func (f *Fabric) SL2VL(guid uint64, in, out uint8) ([16]uint8, error) {
	var t smp.SL2VLTable
	n, err := f.node(guid)
	if err != nil {
		return t, err
	}
	i, ok := n.sl2vlIndex(in, out)
	if !ok {
		return t, fmt.Errorf("sim: node 0x%016x has no SL2VL table for ports %d->%d", guid, in, out)
	}
	n.mu.Lock()
	var raw [8]byte
	if n.sl2vl != nil {
		raw = n.sl2vl[i]
	}
	n.mu.Unlock()
	_ = t.Unmarshal(raw[:])
	return t, nil
}

// VLArb returns VLArbitrationTable block (1..4) of port p as last Set
// (all zero if never Set).
func (f *Fabric) VLArb(guid uint64, p, block uint8) (smp.VLArbBlock, error) {
	var b smp.VLArbBlock
	n, err := f.node(guid)
	if err != nil {
		return b, err
	}
	if int(p) > n.nfp || block < smp.VLArbLowBlock0 || block > smp.VLArbHighBlock1 {
		return b, fmt.Errorf("sim: node 0x%016x has no VLArbitrationTable block %d for port %d", guid, block, p)
	}
	n.mu.Lock()
	if t := n.vlarb[uint16(p)<<8|uint16(block)]; t != nil {
		b = *t
	}
	n.mu.Unlock()
	return b, nil
}

func (n *node) sl2vlIndex(in, out uint8) (int, bool) {
	if n.typ == topology.Switch {
		if int(in) > n.nfp || int(out) > n.nfp {
			return 0, false
		}
		return int(in)*(n.nfp+1) + int(out), true
	}
	if out < 1 || int(out) > n.nfp {
		return 0, false
	}
	return int(out), true
}

// SwitchInfo reports a switch's LinearFDBTop and PortStateChange bit.
func (f *Fabric) SwitchInfo(guid uint64) (top uint16, portStateChange bool, err error) {
	n, err := f.node(guid)
	if err != nil {
		return 0, false, err
	}
	if n.typ != topology.Switch {
		return 0, false, fmt.Errorf("sim: node 0x%016x is not a switch", guid)
	}
	return uint16(n.fdbTop.Load()), n.psc.Load(), nil
}

func physState(n *node, p uint8) uint8 {
	pt := &n.ports[p]
	switch {
	case p == 0 || pt.up():
		return smp.PhysStateLinkUp
	case pt.disabled:
		return smp.PhysStateDisabled
	}
	return smp.PhysStatePolling
}

// Load parses the topology file at path and builds a fabric from it;
// parse errors carry file:line.
func Load(path string, opts Options) (*Fabric, error) {
	f, err := netfile.ParseFile(path)
	if err != nil {
		return nil, err
	}
	return New(f, opts)
}
