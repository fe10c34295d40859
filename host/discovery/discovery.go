// Package discovery finds the fabric with directed-route SMPs: a breadth-first
// walk from the SM's own port with many SMPs in flight, producing a Fabric
// (what the SM knows of every node and port, including each node's DR path)
// from which the immutable topology snapshot is cut.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/smp"
)

// Port is what discovery learnt of one port.
type Port struct {
	// Info is the last PortInfo read; Valid is false when it could not be read.
	Info  smp.PortInfo
	Valid bool
	GUID  uint64
	// Peer is the node GUID and port at the other end (GUID 0: none).
	PeerGUID uint64
	PeerPort uint8
}

// Node is what discovery learnt of one node.
type Node struct {
	Info smp.NodeInfo
	Desc string
	// Path is a directed route from the SM to this node.
	Path mad.Path
	// Switch is the SwitchInfo of a switch (nil for CAs).
	Switch *smp.SwitchInfo
	Ports  []Port // index = port number

	mu sync.Mutex
}

// Fabric is the result of one discovery.
type Fabric struct {
	Nodes map[uint64]*Node
	// SMGUID/SMPort name the node and port the SM is attached through.
	SMGUID uint64
	SMPort uint8
	// Warnings are SMPs that failed without stopping discovery (a lost MAD
	// after all retries, a port that did not answer).
	Warnings []string
	// SMPs is the number of SMP requests discovery made.
	SMPs int64

	// routed: every node's Path is its canonical route (reroute's) and
	// every node is reached, so that Update re-routes only what a change
	// touched. Set by Run and Update; a Fabric made otherwise is re-routed
	// whole by its first Update.
	routed bool
}

// Discoverer walks a fabric.
type Discoverer struct {
	C   *mad.Client
	Log hclog.Logger
	// OnNode, when set, hears the number of nodes found each time a new
	// one is (progress on a terminal); it must not block.
	OnNode func(found int)
}

type walk struct {
	d   *Discoverer
	ctx context.Context

	// The SMPs asked and not yet ended, the first at index base, in one
	// growing batch (mad.Client.GetEach): an answer's continuation asks
	// the next SMPs, and they join the batch in flight. A goroutine per
	// SMP (or a worker pool calling Get) cost twice the CPU per SMP on
	// the 450 k Gets of the largest fabrics.
	qmu  sync.Mutex
	asks []ask
	base int // index of asks[0]
	low  int // every ask below low has ended

	mu   sync.Mutex
	f    *Fabric
	smps atomic.Int64

	// inc is set for an incremental update (Update); nil for a full walk.
	inc *incState

	// locked lists the routes whose port answered no M_Key because its key
	// could only be guessed (mad.KeyError with Known false).
	locked []string
}

func newWalk(ctx context.Context, d *Discoverer, f *Fabric) *walk {
	return &walk{d: d, ctx: ctx, f: f}
}

// ask is one Get of the walk and what to do when it ends.
type ask struct {
	path mad.Path
	attr uint16
	mod  uint32
	out  mad.Attribute
	then func(err error) // nil once it ran
}

// ask queues a Get of attr (mod) at path into out; then runs when it
// ends (out holds the answer if err is nil). then must not block: it runs
// on the batch's goroutine, and may ask more.
func (w *walk) ask(path mad.Path, attr uint16, mod uint32, out mad.Attribute, then func(err error)) {
	w.smps.Add(1)
	w.qmu.Lock()
	w.asks = append(w.asks, ask{path, attr, mod, out, then})
	w.qmu.Unlock()
}

// drain sends what is asked, and what their answers ask, until nothing
// more is; a cancelled ctx ends it without running the continuations.
func (w *walk) drain() {
	w.d.C.GetEach(w.ctx, w.asked, w.req, w.answered)
	w.qmu.Lock()
	w.asks, w.base, w.low = nil, 0, 0 // every ask ended
	w.qmu.Unlock()
}

func (w *walk) asked() int {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	return w.base + len(w.asks)
}

func (w *walk) req(i int) mad.Req {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	a := &w.asks[i-w.base]
	return mad.Req{Path: a.path, Attr: a.attr, Mod: a.mod, Out: a.out}
}

func (w *walk) answered(i int, err error) {
	w.qmu.Lock()
	a := w.asks[i-w.base]
	w.asks[i-w.base] = ask{}
	// Drop the ended front once it is most of the list, so a walk of
	// 450 k Gets holds only what is still to answer.
	for w.low < w.base+len(w.asks) && w.asks[w.low-w.base].then == nil {
		w.low++
	}
	if k := w.low - w.base; k >= 1024 && 2*k >= len(w.asks) {
		n := copy(w.asks, w.asks[k:])
		clear(w.asks[n:])
		w.asks, w.base = w.asks[:n], w.low
	}
	w.qmu.Unlock()
	if w.ctx.Err() != nil {
		return // Run and Update return ctx's error
	}
	a.then(err)
}

// Run discovers the fabric. It fails only if the SM's own node cannot be
// read; everything else that fails is recorded in Fabric.Warnings.
func (d *Discoverer) Run(ctx context.Context) (*Fabric, error) {
	w := newWalk(ctx, d, &Fabric{Nodes: map[uint64]*Node{}})
	var ni smp.NodeInfo
	w.smps.Add(1)
	if err := d.C.Get(ctx, nil, smp.AttrNodeInfo, 0, &ni); err != nil {
		return nil, fmt.Errorf("cannot read the SM's own node (is the fabric attached?): %w", err)
	}
	w.f.SMGUID, w.f.SMPort = ni.NodeGUID, ni.LocalPortNum
	n := w.register(ni, nil)
	w.explore(n, ni.LocalPortNum)
	w.drain()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	w.f.SMPs = w.smps.Load()
	if err := w.keysSettled(); err != nil {
		return nil, err
	}
	// The walk's routes are the first its answers came back over; the
	// canonical ones do not depend on that order, and an update then
	// re-routes only the nodes behind what changed (O(nodes) once here).
	w.f.routed = w.f.reroute(nil).all
	return w.f, nil
}

// LockedError is a discovery that found ports it could not identify
// because they answer only SMPs that carry their M_Key, while the M_Keys
// say they are probably the SM's own, locked by an earlier run whose
// state was lost (host/mkey.Ring.Recovering): routing the rest would cut
// them off, so discovery fails and the tables in place stay.
type LockedError struct {
	Routes []string // directed routes to the silent ports (at most 10)
	Count  int
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%d directed routes (e.g. %s) lead to ports that answer no M_Key ibsm can derive without knowing which ports they are: they are protected at level 2 or 3, probably by an earlier run with this M_Key policy whose state directory (mkey/neighbors, mkey/guid2mkey) was lost; not routing a partial fabric, the tables in place stay. Each such port becomes readable when its M_Key lease expires, one hop further from the SM each lease period; restore the mkey directory from a backup or a standby to manage them at once",
		e.Count, strings.Join(e.Routes, " "))
}

// noteLocked records a route whose port answered no guessed M_Key.
func (w *walk) noteLocked(path mad.Path, err error) {
	var ke *mad.KeyError
	if !errors.As(err, &ke) || ke.Known {
		return
	}
	w.mu.Lock()
	w.locked = append(w.locked, path.String())
	w.mu.Unlock()
}

// keysSettled fails a full discovery that left ports locked while the
// M_Keys say it should wait for them, and tells the keys when discovery
// reached every port.
func (w *walk) keysSettled() error {
	k := w.d.C.Keys()
	if k == nil {
		return nil
	}
	if len(w.locked) == 0 {
		if s, ok := k.(interface{ Settle() }); ok {
			s.Settle()
		}
		return nil
	}
	if r, ok := k.(interface{ Recovering() bool }); ok && r.Recovering() {
		sort.Strings(w.locked)
		e := &LockedError{Count: len(w.locked), Routes: w.locked[:min(len(w.locked), 10)]}
		return e
	}
	return nil
}

func (w *walk) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	w.mu.Lock()
	w.f.Warnings = append(w.f.Warnings, msg)
	w.mu.Unlock()
	if w.d.Log != nil {
		w.d.Log.Warn("discovery", "problem", msg)
	}
}

// register records a node first seen through path; it returns nil if the
// node was already known.
func (w *walk) register(ni smp.NodeInfo, path mad.Path) *Node {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.f.Nodes[ni.NodeGUID]; ok {
		return nil
	}
	n := &Node{Info: ni, Path: path, Ports: make([]Port, int(ni.NumPorts)+1)}
	w.f.Nodes[ni.NodeGUID] = n
	if w.inc != nil {
		w.inc.owned[ni.NodeGUID] = true // w.mu held
		w.inc.mu.Lock()
		w.inc.sum.NewNodes++
		w.inc.fresh = append(w.inc.fresh, ni.NodeGUID)
		w.inc.mu.Unlock()
	}
	if w.d.OnNode != nil {
		w.d.OnNode(len(w.f.Nodes))
	}
	return n
}

// explore reads a newly found node. via is the port it was reached through
// (a CA's only known port; ignored for switches, whose ports are all read).
func (w *walk) explore(n *Node, via uint8) {
	nd := new(smp.NodeDescription)
	w.ask(n.Path, smp.AttrNodeDescription, 0, nd, func(err error) {
		if err != nil {
			w.warn("node 0x%016x: NodeDescription: %v", n.Info.NodeGUID, err)
			return
		}
		n.mu.Lock()
		n.Desc = nd.Text
		n.mu.Unlock()
	})
	if n.Info.NodeType != smp.NodeTypeSwitch {
		w.readPort(n, via, n.Path, n.Info.PortGUID)
		return
	}
	si := new(smp.SwitchInfo)
	w.ask(n.Path, smp.AttrSwitchInfo, 0, si, func(err error) {
		if err != nil {
			w.warn("switch 0x%016x: SwitchInfo: %v", n.Info.NodeGUID, err)
			return
		}
		n.mu.Lock()
		n.Switch = si
		n.mu.Unlock()
	})
	for p := 0; p <= int(n.Info.NumPorts); p++ {
		w.readPort(n, uint8(p), n.Path, n.Info.PortGUID)
	}
}

// readPort reads PortInfo of port p of n (through path) and, for a switch
// port whose link is up, probes the node behind it.
func (w *walk) readPort(n *Node, p uint8, path mad.Path, guid uint64) {
	if int(p) >= len(n.Ports) {
		w.warn("node 0x%016x: port %d beyond NumPorts %d", n.Info.NodeGUID, p, n.Info.NumPorts)
		return
	}
	if w.inc != nil && !w.inc.claim(n, p) {
		return // an update already read it
	}
	pi := new(smp.PortInfo)
	w.ask(path, smp.AttrPortInfo, uint32(p), pi, func(err error) {
		if err != nil {
			w.warn("node 0x%016x port %d: PortInfo: %v", n.Info.NodeGUID, p, err)
			return
		}
		n.mu.Lock()
		n.Ports[p].Info, n.Ports[p].Valid, n.Ports[p].GUID = *pi, true, guid
		linked := n.Ports[p].PeerGUID != 0
		n.mu.Unlock()
		if p == 0 || linked || pi.PortState < smp.PortStateInit {
			return
		}
		if n.Info.NodeType == smp.NodeTypeSwitch {
			w.probe(n, p)
		} else if len(path) == 0 {
			// The SM's own CA port: its neighbour is one hop out.
			w.probe(n, p)
		}
	})
}

// probe reads NodeInfo through port p of switch (or the SM's CA) n.
func (w *walk) probe(n *Node, p uint8) {
	path := n.Path.Extend(p)
	ni := new(smp.NodeInfo)
	w.ask(path, smp.AttrNodeInfo, 0, ni, func(err error) {
		if err != nil {
			w.noteLocked(path, err)
			if w.inc != nil {
				w.inc.fail(n, p, n.Path, "NodeInfo of the far end", err)
				return
			}
			w.warn("node 0x%016x port %d: no answer from the far end: %v", n.Info.NodeGUID, p, err)
			return
		}
		w.found(n, p, path, *ni)
	})
}

// found records the node ni that answered through port p of n (at path)
// and reads what is new there.
func (w *walk) found(n *Node, p uint8, path mad.Path, ni smp.NodeInfo) {
	if ni.NodeGUID == 0 || int(ni.LocalPortNum) > int(ni.NumPorts) || ni.LocalPortNum == 0 {
		w.warn("node 0x%016x port %d: far end sent an invalid NodeInfo (GUID 0x%016x, port %d of %d)", n.Info.NodeGUID, p, ni.NodeGUID, ni.LocalPortNum, ni.NumPorts)
		return
	}
	peer := w.register(ni, path)
	far := w.own(ni.NodeGUID)
	if int(ni.LocalPortNum) >= len(far.Ports) {
		w.warn("node 0x%016x reports port %d, earlier NumPorts %d", ni.NodeGUID, ni.LocalPortNum, len(far.Ports)-1)
		return
	}
	w.link(n, p, far, ni.LocalPortNum, ni.PortGUID)
	switch {
	case peer != nil:
		w.explore(peer, ni.LocalPortNum)
	case w.inc != nil:
		// A new link to a node the model already holds: re-read what may
		// have changed there. A switch gets all its ports read, so a
		// switch that moved is not left with stale links.
		if far.Info.NodeType == smp.NodeTypeSwitch {
			for q := 0; q < len(far.Ports); q++ {
				w.check(far, uint8(q), path)
			}
		} else {
			w.check(far, ni.LocalPortNum, path)
		}
	case far.Info.NodeType != smp.NodeTypeSwitch && !far.portValid(ni.LocalPortNum):
		// Another port of a known multi-port CA.
		w.readPort(far, ni.LocalPortNum, path, ni.PortGUID)
	}
}

// link records the cable (n, p) — (far, q). A full walk starts with no
// links; an update may find either end cabled elsewhere in the model, and
// those stale ends are cut first.
func (w *walk) link(n *Node, p uint8, far *Node, q uint8, farPortGUID uint64) {
	if w.inc != nil {
		w.inc.linkMu.Lock()
		defer w.inc.linkMu.Unlock()
		n.mu.Lock()
		known := n.Ports[p].PeerGUID == far.Info.NodeGUID && n.Ports[p].PeerPort == q
		n.mu.Unlock()
		far.mu.Lock()
		back := far.Ports[q].PeerGUID == n.Info.NodeGUID && far.Ports[q].PeerPort == p
		far.mu.Unlock()
		w.inc.touch(n, far)
		if !known {
			w.inc.count(func(s *UpdateSummary) { s.LinksUp++ })
			w.cutStale(n, p, far.Info.NodeGUID, q)
			w.cutStale(far, q, n.Info.NodeGUID, p)
		}
		if !known || !back {
			// A cable a route may now take (reroute's seeds).
			w.inc.mu.Lock()
			w.inc.made = append(w.inc.made, cable{n.Info.NodeGUID, far.Info.NodeGUID, p, q})
			w.inc.mu.Unlock()
		}
	}
	n.mu.Lock()
	n.Ports[p].PeerGUID, n.Ports[p].PeerPort = far.Info.NodeGUID, q
	n.mu.Unlock()
	far.mu.Lock()
	far.Ports[q].PeerGUID, far.Ports[q].PeerPort = n.Info.NodeGUID, p
	if far.Info.NodeType != smp.NodeTypeSwitch && far.Ports[q].GUID == 0 {
		far.Ports[q].GUID = farPortGUID
	}
	far.mu.Unlock()
}

func (n *Node) portValid(p uint8) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.Ports[p].Valid
}

// PortPath is a directed route that arrives at port q of n: a switch
// answers for any port through its own route, a CA for the port an SMP
// arrives on, so its route is the one discovery entered by or one hop on
// from the switch cabled to q.
func (f *Fabric) PortPath(n *Node, q uint8) (mad.Path, error) {
	if n.Info.NodeType == smp.NodeTypeSwitch || q == n.Info.LocalPortNum {
		return n.Path, nil
	}
	if int(q) >= len(n.Ports) {
		return nil, fmt.Errorf("node %#x has no port %d", n.Info.NodeGUID, q)
	}
	pt := &n.Ports[q]
	peer := f.Nodes[pt.PeerGUID]
	if peer == nil || peer.Switch == nil {
		return nil, fmt.Errorf("no directed route arrives at CA %#x port %d (its peer %#x is not a discovered switch); program that port from an SM on its own subnet side", n.Info.NodeGUID, q, pt.PeerGUID)
	}
	return peer.Path.Extend(pt.PeerPort), nil
}

// Topology cuts the immutable snapshot. A link counts only if both ends
// were read and agree on each other.
func (f *Fabric) Topology() (*topology.Topology, error) {
	b := topology.NewBuilder()
	for guid, n := range f.Nodes {
		if err := b.AddNode(topoNode(guid, n)); err != nil {
			return nil, err
		}
	}
	for guid, n := range f.Nodes {
		for p := range n.Ports {
			g, q, ok := f.peer(guid, n, p)
			// Record each link once, from its lower (GUID, port) end.
			if ok && (guid < g || (guid == g && uint8(p) < q)) {
				b.Link(guid, uint8(p), g, q)
			}
		}
	}
	b.SetSM(f.SMGUID, f.SMPort)
	return b.Build()
}

// PatchTopology cuts the snapshot of f from prev, the snapshot of the
// model that Update took to f with sum, re-making only the nodes the
// update changed (sum.Changed) and those in dirty (nodes whose snapshot
// may differ from prev for another reason, e.g. ports activated since prev
// was cut): O(changed) where Topology is O(fabric). An update that added
// or dropped nodes is cut whole. An error means the changes reached
// further than the nodes named: cut the snapshot whole (Topology).
func (f *Fabric) PatchTopology(prev *topology.Topology, sum UpdateSummary, dirty []uint64) (*topology.Topology, error) {
	if sum.NewNodes > 0 || sum.Dropped > 0 || len(prev.Nodes) != len(f.Nodes) {
		return f.Topology()
	}
	seen := make(map[uint64]bool, len(sum.Changed)+len(dirty))
	nodes := make([]topology.Node, 0, len(sum.Changed)+len(dirty))
	for _, guid := range append(sum.Changed[:len(sum.Changed):len(sum.Changed)], dirty...) {
		n := f.Nodes[guid]
		if seen[guid] || n == nil {
			continue
		}
		seen[guid] = true
		tn := topoNode(guid, n)
		for p := range n.Ports {
			tn.Ports[p].Peer = topology.PortRef{Node: topology.NoNode}
			if g, q, ok := f.peer(guid, n, p); ok {
				i := prev.NodeByGUID(g)
				if i == topology.NoNode {
					return nil, fmt.Errorf("node 0x%016x port %d is cabled to 0x%016x, which the previous snapshot does not hold", guid, p, g)
				}
				tn.Ports[p].Peer = topology.PortRef{Node: i, Port: q}
			}
		}
		nodes = append(nodes, tn)
	}
	return prev.Patch(nodes)
}

// topoNode is n's snapshot without links.
func topoNode(guid uint64, n *Node) topology.Node {
	tn := topology.Node{GUID: guid, Type: topology.NodeType(n.Info.NodeType), Desc: n.Desc, Ports: make([]topology.Port, len(n.Ports))}
	for p := range n.Ports {
		pt := &n.Ports[p]
		tp := &tn.Ports[p]
		tp.GUID = pt.GUID
		if n.Info.NodeType == smp.NodeTypeSwitch {
			tp.GUID = n.Info.PortGUID
		}
		if !pt.Valid {
			tp.State = topology.StateDown
			continue
		}
		tp.State = topology.PortState(pt.Info.PortState)
		tp.Width = pt.Info.LinkWidthActive
		tp.Speed = pt.Info.LinkSpeedActive
		tp.VLCap = smp.DataVLs(pt.Info.VLCap)
	}
	return tn
}

// peer returns the far end of port p of n (GUID guid) if the snapshot
// holds that link: both ends were read and agree on each other.
func (f *Fabric) peer(guid uint64, n *Node, p int) (uint64, uint8, bool) {
	pt := &n.Ports[p]
	if pt.PeerGUID == 0 || !pt.Valid {
		return 0, 0, false
	}
	far, ok := f.Nodes[pt.PeerGUID]
	if !ok || int(pt.PeerPort) >= len(far.Ports) {
		return 0, 0, false
	}
	fp := &far.Ports[pt.PeerPort]
	if !fp.Valid || fp.PeerGUID != guid || int(fp.PeerPort) != p {
		return 0, 0, false
	}
	return pt.PeerGUID, pt.PeerPort, true
}
