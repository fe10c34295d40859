package program

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport/smp"
)

// P_Key tables (IBA 10.9, P_KeyTable attribute 14.2.5.7: blocks of 32
// 16-bit entries, bit 15 the membership bit). Every end port (CA and
// router ports, switch port 0) gets the keys of its partitions. A switch
// external port cabled to a CA gets that CA port's keys, and its PortInfo
// PartitionEnforcementInbound/Outbound bits set, when the switch reports
// SwitchInfo.PartitionEnforcementCap > 0; a port that answers the
// enforcement Set without the bits (ibsim keeps PortInfo templates) does
// not implement enforcement: it is left alone from then on, reported once.
//
// Only blocks that differ from what the port holds are sent: what this
// programmer wrote, or, for a port it has not written since it started
// (or since the port lost its LID: a reset port holds the reset table),
// what it reads back first. So a re-sweep of an unchanged fabric, a
// restart or a takeover sends no P_KeyTable Set.

// PKeyPlan is the P_Key table of every port the SM programs.
type PKeyPlan struct {
	Members Membership
	// Tables holds, for every programmed port (end ports and enforcing
	// switch ports), its whole table (PartitionCap entries; 0 = empty).
	Tables map[discovery.PortRef][]uint16
	// Enforce lists the switch external ports that filter on P_Keys, with
	// the end port behind each.
	Enforce map[discovery.PortRef]discovery.PortRef
	// Warnings are what ResolvePartitions and the layout reported.
	Warnings []string

	byGUID map[uint64]discovery.PortRef
	ports  []*managed // what Apply programs
}

// PortKeys returns the P_Keys (with membership bit, in table order) of
// the end port with this port GUID, and whether the plan knows the port.
func (p *PKeyPlan) PortKeys(portGUID uint64) ([]uint16, bool) {
	r, ok := p.byGUID[portGUID]
	if !ok {
		return nil, false
	}
	var out []uint16
	for _, k := range p.Tables[r] {
		if k&0x7FFF != 0 {
			out = append(out, k)
		}
	}
	return out, true
}

// PKeyStats counts what one Sync did.
type PKeyStats struct {
	Ports       int   // ports whose table the plan covers
	BlocksRead  int64 // blocks read back (ports not known)
	BlocksSent  int64 // P_KeyTable Sets
	EnforceSets int64 // PortInfo Sets turning switch port enforcement on
	// EnforcedActive counts switch ports whose Active Set turned enforcement
	// on (Programmer.EnforceOnActive): no Set of its own here.
	EnforcedActive int64
}

// PKeys programs P_Key tables and remembers what each port holds.
type PKeys struct {
	C        *mad.Client
	Log      hclog.Logger
	Parallel int

	mu    sync.Mutex
	known map[discovery.PortRef]*pkeyKnown
	gen   uint64 // counts changes to known (a PKeyApply made before one is stale)
	// noEnforce: switch ports that answered an enforcement Set without
	// the bits, by the switch's port-0 LID in the plan (a reset switch is
	// tried again).
	noEnforce map[discovery.PortRef]uint16
	// noEnforceModel: switch models (vendor, device, revision) one of
	// whose ports answered the enforcement Set without the bits. Switches
	// of one model and firmware behave alike, so the rest are not tried:
	// one probe per model instead of a Get and a Set per port on every
	// start (648 of each on a 648-CA ibsim fabric).
	noEnforceModel map[switchModel]bool
}

type switchModel struct {
	vendor   uint32
	device   uint16
	revision uint32
}

func modelOf(n *discovery.Node) switchModel {
	return switchModel{n.Info.VendorID, n.Info.DeviceID, n.Info.Revision}
}

type pkeyKnown struct {
	lid   uint16   // the LID of the port whose reset resets the table (CA port, switch port 0)
	table []uint16 // what the port holds, PartitionCap entries
	// enforced: a switch port whose enforcement bits this programmer set
	// (the fabric model of an incremental sweep may predate the Set).
	enforced bool
}

// Forget drops what is known of every port: the next Sync reads back.
func (p *PKeys) Forget() {
	p.mu.Lock()
	p.known = nil
	p.gen++
	p.mu.Unlock()
}

// managed is one port Sync programs.
type managed struct {
	ref   discovery.PortRef
	n     *discovery.Node
	path  mad.Path
	size  int
	guard uint8              // the port whose LID tells a reset (CA port, 0 for switch ports)
	of    *discovery.PortRef // switch external port: the end port behind it
}

func (m *managed) mod(block int) uint32 {
	if m.n.Info.NodeType == smp.NodeTypeSwitch {
		return smp.PKeyBlockMod(m.ref.Port, uint16(block))
	}
	return smp.PKeyBlockMod(0, uint16(block)) // CAs take the arrival port
}

func (m *managed) blocks() int { return (m.size + smp.PKeyBlockLen - 1) / smp.PKeyBlockLen }

// ports lists the ports to program: every end port of mem that can be
// reached, and the enforcing switch ports in front of CA ports.
func (p *PKeys) ports(fab *discovery.Fabric, mem Membership) (out []*managed, warns []string) {
	p.mu.Lock()
	noEnf, noModel := p.noEnforce, p.noEnforceModel
	p.mu.Unlock()
	// Ports that hide their M_Key from every key ibsm has refuse Gets (at
	// protection level 2 and up) and Sets: their tables cannot be
	// programmed until ibsm re-keys them (see mkey.go).
	h, _ := p.C.Keys().(hider)
	hidden := 0
	defer func() {
		if hidden > 0 {
			warns = append(warns, fmt.Sprintf("%d ports hold an M_Key ibsm does not know: their P_Key tables are not programmed until they are re-keyed", hidden))
		}
	}()
	for _, e := range endPorts(fab) {
		n, q := e.n, e.ref.Port
		if h != nil && h.Hidden(guardGUID(n, q)) {
			hidden++
			continue
		}
		m := &managed{ref: e.ref, n: n, size: int(n.Info.PartitionCap), guard: q, path: n.Path}
		if n.Info.NodeType != smp.NodeTypeSwitch {
			path, err := fab.PortPath(n, q)
			if err != nil {
				continue // a CA port with no live link: nothing to program now
			}
			m.path = path
		}
		if m.size == 0 {
			warns = append(warns, fmt.Sprintf("port %#x/%d reports PartitionCap 0: its P_Key table is not programmed", e.ref.GUID, q))
			continue
		}
		out = append(out, m)
		if n.Info.NodeType == smp.NodeTypeSwitch {
			continue
		}
		pt := &n.Ports[q]
		sw := fab.Nodes[pt.PeerGUID]
		if sw == nil || sw.Switch == nil || sw.Switch.PartitionEnforcementCap == 0 || int(pt.PeerPort) >= len(sw.Ports) || !sw.Ports[pt.PeerPort].Valid {
			continue
		}
		ref := discovery.PortRef{GUID: pt.PeerGUID, Port: pt.PeerPort}
		if lid, ok := noEnf[ref]; ok && lid == sw.Ports[0].Info.LID || noModel[modelOf(sw)] || h != nil && h.Hidden(guardGUID(sw, 0)) {
			continue
		}
		end := e.ref
		out = append(out, &managed{ref: ref, n: sw, path: sw.Path, size: int(sw.Switch.PartitionEnforcementCap), guard: 0, of: &end})
	}
	return out, warns
}

// Plan computes the tables for mem on fab (reading back what is not
// known) without sending any Set.
func (p *PKeys) Plan(ctx context.Context, fab *discovery.Fabric, mem Membership) (*PKeyPlan, PKeyStats) {
	var st PKeyStats
	ports, warns := p.ports(fab, mem)
	p.forgetReset(fab, ports)
	st.BlocksRead = p.learn(ctx, ports)
	pl := &PKeyPlan{Members: mem, Tables: map[discovery.PortRef][]uint16{}, Enforce: map[discovery.PortRef]discovery.PortRef{},
		Warnings: warns, byGUID: map[uint64]discovery.PortRef{}}
	for _, e := range endPorts(fab) {
		pl.byGUID[e.guid] = e.ref
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var kept []*managed
	for _, m := range ports {
		want := mem[m.ref]
		if m.of != nil {
			want = mem[*m.of]
		}
		var cur []uint16
		if k := p.known[m.ref]; k != nil {
			cur = k.table
		}
		t, err := layout(cur, want, m.size)
		if err != nil {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("port %#x/%d (%q): %v; its table is not programmed (remove it from some partitions)", m.ref.GUID, m.ref.Port, m.n.Desc, err))
			continue
		}
		pl.Tables[m.ref] = t
		if m.of != nil {
			pl.Enforce[m.ref] = *m.of
		}
		kept = append(kept, m)
	}
	st.Ports, pl.ports = len(kept), kept
	sort.Strings(pl.Warnings)
	return pl, st
}

// Apply sends the blocks of pl that differ from what the ports hold, then
// turns enforcement on where pl wants it and the port does not have it.
// lid gives the LID each port will hold once the plan in force is
// programmed (what tells a later reset). pl must come from this Plan.
func (p *PKeys) Apply(ctx context.Context, pl *PKeyPlan, lid func(discovery.PortRef) uint16) (PKeyStats, error) {
	return p.ApplyPrepared(ctx, p.Prepare(pl, lid), nil)
}

// PKeyApply is what Apply decides before it sends anything: the blocks
// that differ from what the ports hold and what each port is known to
// hold once they are sent. Made while the fabric's tables are being
// programmed, it leaves Apply after them only its Sets (at ft3-56 0.2 s of
// CPU on 92 k ports with nothing to send).
type PKeyApply struct {
	pl   *PKeyPlan
	lid  func(discovery.PortRef) uint16
	gen  uint64 // PKeys.gen when made; a change to what is known since makes it stale
	send []pkeyBlock
	next []*pkeyKnown // pl.ports[i]'s record once its blocks are sent
}

type pkeyBlock struct {
	m *managed
	b int
}

// Prepare makes Apply's decisions for pl without sending anything.
func (p *PKeys) Prepare(pl *PKeyPlan, lid func(discovery.PortRef) uint16) *PKeyApply {
	a := &PKeyApply{pl: pl, lid: lid, next: make([]*pkeyKnown, len(pl.ports))}
	p.mu.Lock()
	defer p.mu.Unlock()
	a.gen = p.gen
	for i, m := range pl.ports {
		want := pl.Tables[m.ref]
		old := p.known[m.ref]
		var cur []uint16
		if old != nil {
			cur = old.table
		}
		for b := 0; b < m.blocks(); b++ {
			if cur == nil || !sameKeys(cur, want, b) {
				a.send = append(a.send, pkeyBlock{m, b})
			}
		}
		k := &pkeyKnown{lid: lid(discovery.PortRef{GUID: m.ref.GUID, Port: m.guard}), table: want}
		k.enforced = old != nil && old.lid == k.lid && old.enforced
		a.next[i] = k
	}
	return a
}

// ApplyPrepared is Apply with its decisions made by Prepare (made again if
// what is known changed since). enforcing lists switch ports whose
// enforcement bits were turned on since (Programmer.EnforceOnActive), with
// the answer showing them: they are not sent another Set.
func (p *PKeys) ApplyPrepared(ctx context.Context, a *PKeyApply, enforcing []discovery.PortRef) (PKeyStats, error) {
	p.mu.Lock()
	stale := a.gen != p.gen
	p.mu.Unlock()
	if stale {
		a = p.Prepare(a.pl, a.lid)
	}
	var st PKeyStats
	if len(enforcing) > 0 {
		on := make(map[discovery.PortRef]bool, len(enforcing))
		for _, r := range enforcing {
			on[r] = true
		}
		for i, m := range a.pl.ports {
			if m.of != nil && on[m.ref] {
				a.next[i].enforced = true
				st.EnforcedActive++
			}
		}
	}
	ports := a.pl.ports
	st.Ports = len(ports)
	r := fanout.New(p.Parallel)
	st.BlocksSent = int64(len(a.send))
	p.C.SetAll(ctx, len(a.send), func(i int) mad.Req {
		m, b := a.send[i].m, a.send[i].b
		want := a.pl.Tables[m.ref]
		var blk smp.PKeyBlock
		copy(blk[:], want[b*smp.PKeyBlockLen:min(len(want), (b+1)*smp.PKeyBlockLen)])
		return mad.Req{Path: m.path, Attr: smp.AttrPKeyTable, Mod: m.mod(b), Val: &blk}
	}, func(_ int, err error) { r.Add(err) })
	if err := r.Wait("programming P_Key tables"); err != nil {
		p.Forget() // what the ports hold is now uncertain: read back next time
		return st, err
	}
	p.mu.Lock()
	if p.known == nil {
		p.known = map[discovery.PortRef]*pkeyKnown{}
	}
	for i, m := range ports {
		p.known[m.ref] = a.next[i]
	}
	p.gen++
	p.mu.Unlock()
	return st, p.enforce(ctx, ports, a.lid, &st)
}

// enforce sets PartitionEnforcementInbound/Outbound on the switch ports
// that filter and do not report them yet.
func (p *PKeys) enforce(ctx context.Context, ports []*managed, lid func(discovery.PortRef) uint16, st *PKeyStats) error {
	var todo []*managed
	kept := map[switchModel]bool{} // a port of the model already holds the bits
	for _, m := range ports {
		if m.of == nil {
			continue
		}
		info := m.n.Ports[m.ref.Port].Info
		p.mu.Lock()
		k := p.known[m.ref]
		done := k != nil && k.enforced
		p.mu.Unlock()
		if done || info.PartitionEnforcementInbound && info.PartitionEnforcementOutbound {
			kept[modelOf(m.n)] = true
			continue
		}
		todo = append(todo, m)
	}
	// One port of each model not yet seen to keep the bits goes first;
	// the model's other ports follow only if it kept them.
	var probes, rest []*managed
	probed := map[switchModel]bool{}
	for _, m := range todo {
		if md := modelOf(m.n); !kept[md] && !probed[md] {
			probed[md] = true
			probes = append(probes, m)
			continue
		}
		rest = append(rest, m)
	}
	refused, err := p.setEnforcement(ctx, probes, st)
	if err != nil {
		return err
	}
	bad := map[switchModel]bool{}
	for _, m := range probes {
		if slices.Contains(refused, m.ref) {
			bad[modelOf(m.n)] = true
		}
	}
	var send []*managed
	for _, m := range rest {
		if bad[modelOf(m.n)] {
			refused = append(refused, m.ref)
			continue
		}
		send = append(send, m)
	}
	more, err := p.setEnforcement(ctx, send, st)
	refused = append(refused, more...)
	if len(refused) > 0 {
		p.mu.Lock()
		if p.noEnforce == nil {
			p.noEnforce = map[discovery.PortRef]uint16{}
		}
		for _, ref := range refused {
			p.noEnforce[ref] = lid(discovery.PortRef{GUID: ref.GUID})
		}
		if p.noEnforceModel == nil {
			p.noEnforceModel = map[switchModel]bool{}
		}
		for md := range bad {
			p.noEnforceModel[md] = true
		}
		p.mu.Unlock()
		sort.Slice(refused, func(i, j int) bool {
			return refused[i].GUID < refused[j].GUID || refused[i].GUID == refused[j].GUID && refused[i].Port < refused[j].Port
		})
		p.logger().Warn("switch ports report partition enforcement capability but do not keep the enforcement bits; they are left without P_Key filtering",
			"ports", len(refused), "models", len(bad), "example", fmt.Sprintf("%#x/%d", refused[0].GUID, refused[0].Port))
	}
	return err
}

// setEnforcement turns the enforcement bits on at ports and returns the
// ports that answered without them. Each port's PortInfo is read, then set
// where the bits are off, each step one batch (GetAll, SetAll): 44 k ports
// on ft3-56, a Get and a Set each through a goroutine before.
func (p *PKeys) setEnforcement(ctx context.Context, ports []*managed, st *PKeyStats) ([]discovery.PortRef, error) {
	r := fanout.New(p.Parallel)
	keys := p.C.Keys()
	// A PortInfo Set writes every field: start from what the port holds
	// now, not from the discovery that preceded this sweep's programming
	// (OperationalVLs, VLHighLimit, HOQLife). The Set's answer replaces
	// the read.
	pis := make([]smp.PortInfo, len(ports))
	ok := make([]bool, len(ports))
	p.C.GetAll(ctx, len(ports), func(i int) mad.Req {
		m := ports[i]
		return mad.Req{Path: m.path, Attr: smp.AttrPortInfo, Mod: uint32(m.ref.Port), Out: &pis[i]}
	}, func(i int, err error) {
		r.Add(err)
		ok[i] = err == nil
	})
	var set []int // indices into ports
	for i := range ports {
		if ok[i] && !enforcing(&pis[i]) {
			set = append(set, i)
		}
	}
	atomic.AddInt64(&st.EnforceSets, int64(len(set)))
	p.C.SetAll(ctx, len(set), func(j int) mad.Req {
		i := set[j]
		m := ports[i]
		pi := pis[i]
		noChange(&pi)
		withKey(keys, m.n, m.ref.Port, &pi)
		pi.PartitionEnforcementInbound, pi.PartitionEnforcementOutbound = true, true
		return mad.Req{Path: m.path, Attr: smp.AttrPortInfo, Mod: uint32(m.ref.Port), Val: &pi, Out: &pis[i]}
	}, func(j int, err error) {
		r.Add(err)
		ok[set[j]] = err == nil
	})
	var refused []discovery.PortRef
	p.mu.Lock()
	for i, m := range ports {
		switch {
		case !ok[i]:
		case !enforcing(&pis[i]):
			refused = append(refused, m.ref)
		case p.known[m.ref] != nil:
			p.known[m.ref].enforced = true
			p.gen++
		}
	}
	p.mu.Unlock()
	err := r.Wait("turning on partition enforcement")
	return refused, err
}

// enforcing reports whether pi has both partition enforcement bits on.
func enforcing(pi *smp.PortInfo) bool {
	return pi.PartitionEnforcementInbound && pi.PartitionEnforcementOutbound
}

// sameKeys reports whether block b of a and b are equal (missing entries
// are empty).
func sameKeys(a, b []uint16, blk int) bool {
	for i := blk * smp.PKeyBlockLen; i < (blk+1)*smp.PKeyBlockLen; i++ {
		var x, y uint16
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return false
		}
	}
	return true
}

// forgetReset drops what is known of ports whose guard port lost the LID
// it had when the table was written (the device was reset), or whose
// node left.
func (p *PKeys) forgetReset(fab *discovery.Fabric, ports []*managed) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ref, k := range p.known {
		n := fab.Nodes[ref.GUID]
		guard := ref.Port
		if n != nil && n.Info.NodeType == smp.NodeTypeSwitch {
			guard = 0
		}
		if n == nil || int(guard) >= len(n.Ports) || !n.Ports[guard].Valid || n.Ports[guard].Info.LID != k.lid {
			delete(p.known, ref)
			p.gen++
		}
	}
}

// learn reads the tables of the ports not known; a block that cannot be
// read stays unknown (empty) and is sent.
func (p *PKeys) learn(ctx context.Context, ports []*managed) (reads int64) {
	p.mu.Lock()
	var todo []*managed
	for _, m := range ports {
		if p.known[m.ref] == nil {
			todo = append(todo, m)
		}
	}
	p.mu.Unlock()
	if len(todo) == 0 {
		return 0
	}
	got := map[discovery.PortRef]*pkeyKnown{}
	ok := map[discovery.PortRef]bool{}
	type read struct {
		m *managed
		k *pkeyKnown
		b int
	}
	var all []read
	for _, m := range todo {
		k := &pkeyKnown{table: make([]uint16, m.size)}
		got[m.ref], ok[m.ref] = k, true
		for b := 0; b < m.blocks(); b++ {
			all = append(all, read{m, k, b})
		}
	}
	reads = int64(len(all))
	p.C.GetAll(ctx, len(all), func(i int) mad.Req {
		r := all[i]
		return mad.Req{Path: r.m.path, Attr: smp.AttrPKeyTable, Mod: r.m.mod(r.b), Out: pkeyInto(r.k.table[r.b*smp.PKeyBlockLen:])}
	}, func(i int, err error) {
		if err != nil {
			ok[all[i].m.ref] = false
		}
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known == nil {
		p.known = map[discovery.PortRef]*pkeyKnown{}
	}
	for _, m := range todo {
		if !ok[m.ref] {
			continue // unknown: every block is sent
		}
		k := got[m.ref]
		k.lid = m.n.Ports[m.guard].Info.LID
		p.known[m.ref] = k
	}
	p.gen++
	return reads
}

// pkeyInto reads a P_KeyTable block into the part of a port's table it
// holds (GetAll's Out).
type pkeyInto []uint16

func (d pkeyInto) MarshalTo([]byte) error { return errors.New("pkeyInto only receives") }

func (d pkeyInto) Unmarshal(b []byte) error {
	var blk smp.PKeyBlock
	if err := blk.Unmarshal(b); err != nil {
		return err
	}
	copy(d, blk[:])
	return nil
}

func (p *PKeys) logger() hclog.Logger {
	if p.Log == nil {
		return hclog.NewNullLogger()
	}
	return p.Log
}
