// Package ibsim attaches to a running ibsim (the linux-rdma InfiniBand
// fabric simulator) over its own socket protocol, in pure Go: no cgo, no
// libumad2sim preload. A Conn is a transport.Conn; wrap it with
// transport.New for TID matching, windows and retries.
//
// The protocol (abstract unix datagram sockets named after IBSIM_SOCKNAME,
// an 80-byte control channel and 288-byte data datagrams) and the ways a
// client can stall or kill the simulator are described in
// /work/shared/notes/ibsim-protocol.md. This package obeys them:
//
//   - the data socket <base>:in<id> is bound before CONNECT and kept until
//     ibsim answered it (ibsim exits if it cannot connect to that name), so
//     a CONNECT that timed out is disowned to a goroutine that disconnects
//     it when the late answer comes;
//   - the data socket is connected to ibsim's out<k> once CONNECT names k:
//     unconnected, the kernel caps our queue at net.unix.max_dgram_qlen
//     (10) and ibsim spins, freezing the fabric, whenever we lag 10
//     replies behind (observed: windows of 16+ lost whole windows of MADs
//     on a loaded machine);
//   - a dedicated goroutine reads the data socket at all times and never
//     blocks on the consumer (overruns are dropped and counted), because
//     ibsim busy-waits, freezing the whole fabric, on a client whose queue
//     is full;
//   - writes carry deadlines, and a vanished simulator turns into
//     ErrSimulatorGone rather than hangs;
//   - Close clears IsSM before DISCONNECT (DISCONNECT alone leaves the
//     IsSM capability bit set) and keeps draining until DISCONNECT is
//     answered;
//   - a refused CONNECT (ibsim's reply is a bare ERROR) is explained: Dial
//     retries with less (no SM flag, then the default node) to tell an
//     unknown node, full client slots and an SM already registered on the
//     node apart. ibsim keeps a client killed without DISCONNECT (kill -9),
//     slot and SM flag included, until a write to it fails; Dial sends the
//     registered SM an SMInfo query, which makes ibsim drop a dead one, and
//     then attaches in its place.
package ibsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// DefaultSockName is ibsim's socket base name when IBSIM_SOCKNAME is unset.
const DefaultSockName = "sim"

// Options configure Dial. Zero values select the defaults.
type Options struct {
	// SockName is ibsim's IBSIM_SOCKNAME (default "sim").
	SockName string
	// Attach is the node id or node description to attach to; "" is
	// ibsim's default port (the first port of the first node). ibsim
	// attaches to port 1 of a CA or router and to port 0 of a switch.
	Attach string
	// IsSM registers this client as the node's subnet manager: CONNECT
	// with issm=1, then SET_ISSM 1, so traps, SMInfo and SA requests
	// addressed to the node arrive on Recv. One SM client per node.
	IsSM bool
	// Expect, when set, is the node and port the caller means to sit on;
	// Dial fails if ibsim attached it elsewhere.
	Expect *Expect
	// ControlTimeout bounds each control exchange (default 2s).
	ControlTimeout time.Duration
	// SendTimeout bounds each data write (default 1s). ibsim's queue for
	// us only fills when the simulator is stalled.
	SendTimeout time.Duration
	// RecvBuffer is how many received packets wait for Recv before further
	// ones are dropped (default 4096).
	RecvBuffer int
	// Logger receives connection events (default: discard).
	Logger hclog.Logger
}

// Expect names a node (by GUID) and port.
type Expect struct {
	NodeGUID uint64
	Port     uint8
}

func (o Options) withDefaults() Options {
	if o.SockName == "" {
		o.SockName = DefaultSockName
	}
	if o.ControlTimeout <= 0 {
		o.ControlTimeout = 2 * time.Second
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = time.Second
	}
	if o.RecvBuffer <= 0 {
		o.RecvBuffer = 4096
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// Attachment describes the port ibsim attached us to.
type Attachment struct {
	// Slot is ibsim's client index (0..9); it is what ibsim writes into
	// TID bits 63..48 of our requests.
	Slot uint32
	// NodeID is ibsim's canonical id of the node (its topology name).
	NodeID   string
	NodeType uint8 // smp.NodeTypeCA, NodeTypeSwitch, NodeTypeRouter
	NumPorts uint8
	NodeGUID uint64
	// Port is the port number: 0 on a switch, 1 on a CA or router.
	Port     uint8
	PortGUID uint64
	// LID, MasterSMLID, PortState and CapabilityMask are as of Dial (see
	// Conn.PortInfo for fresh values).
	LID            uint16
	MasterSMLID    uint16
	PortState      uint8
	CapabilityMask uint32
}

// ErrSimulatorGone is returned (wrapped) when ibsim's sockets no longer
// exist: the simulator exited or was restarted.
var ErrSimulatorGone = errors.New("ibsim is not running")

// ErrRefused is returned (wrapped) when ibsim answered a control request
// with ERROR; for CONNECT the error says why (see Dial).
var ErrRefused = errors.New("ibsim refused the request")

// ErrStalled is returned (wrapped) when ibsim did not take or answer a
// message in time.
var ErrStalled = errors.New("ibsim did not respond")

// Conn is an attachment to ibsim. It implements transport.Conn; Send may be
// called concurrently, Recv from one goroutine.
type Conn struct {
	opts Options
	log  hclog.Logger
	base string
	id   uint32
	slot uint32
	att  Attachment

	ctl, data *net.UnixConn
	srv, out  *net.UnixAddr

	// mads holds MAD buffers the transport gave back (Recycle) for the
	// read loop to copy the next packets into.
	mads sync.Pool

	ctlMu    sync.Mutex
	ctlStale bool // a control reply may still be in flight
	issmSet  bool // under ctlMu

	in      chan item
	earlyMu sync.Mutex
	early   []item // packets read while Dial probed, before Recv existed
	// deliver, while set (Deliver), takes each packet from the read loop
	// instead of in; deliverMu is held while one is handed over.
	deliverMu sync.Mutex
	deliver   func(transport.Packet, error)

	done       chan struct{}
	closeOnce  sync.Once
	closeErr   error
	readerDone chan struct{}
	goneMu     sync.Mutex
	gone       error

	bufs sync.Pool
	// batches holds *datagrams for SendBatch; wdeadline is the data
	// socket's write deadline (unix ns, writeDeadline).
	batches   sync.Pool
	wdeadline atomic.Int64

	sent, received, bounced, malformed, overruns atomic.Uint64
	reads, writes                                atomic.Uint64
}

type item struct {
	p      transport.Packet
	status uint32
}

var (
	_ transport.Conn      = (*Conn)(nil)
	_ transport.Deliverer = (*Conn)(nil)
)

// abs is an abstract socket address. ibsim's names include a trailing NUL
// in the address length; Go turns the leading '@' into the first NUL.
func abs(name string) *net.UnixAddr {
	return &net.UnixAddr{Name: "@" + name + "\x00", Net: "unixgram"}
}

// maxBaseLen keeps "<base>:ctl<10 digits>" plus two NULs inside sun_path.
const maxBaseLen = 108 - 2 - len(":ctl") - 10

// Dial attaches to ibsim. On error nothing is left connected.
//
// ibsim answers a refused CONNECT with a bare ERROR, for one of three
// reasons: the node is unknown, all MaxClients client slots are taken, or
// (IsSM) another SM client is registered on that node. Dial finds out which
// by asking for less (see diagnoseRefusal) and says how to clear it. A
// registration left behind by an SM that died without detaching (kill -9)
// is cleared on the way: ibsim drops a client only when a write to it
// fails, so Dial makes ibsim write to it and then attaches.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	o = o.withDefaults()
	if len(o.SockName) > maxBaseLen || strings.ContainsAny(o.SockName, "\x00/") {
		return nil, fmt.Errorf("ibsim: socket name %q must be 1..%d bytes without '/' or NUL (it is IBSIM_SOCKNAME)", o.SockName, maxBaseLen)
	}
	if len(o.Attach) > NodeIDLen-1 || strings.ContainsRune(o.Attach, 0) {
		return nil, fmt.Errorf("ibsim: attach %q must be a node id or description of at most %d bytes", o.Attach, NodeIDLen-1)
	}
	c, err := open(ctx, o)
	if errors.Is(err, errConnectRefused) {
		c, err = diagnoseRefusal(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	if err := c.setup(ctx); err != nil {
		if cerr := c.Close(); cerr != nil {
			c.log.Warn("detaching after a failed attach", "error", cerr)
		}
		return nil, err
	}
	return c, nil
}

// errConnectRefused is open's error for a CONNECT ibsim answered with
// ERROR; Dial replaces it with the reason.
var errConnectRefused = errors.New("ibsim answered CONNECT with ERROR")

// open binds our sockets, sends CONNECT and connects the data socket to the
// slot ibsim assigned; the reader runs, nothing else is asked yet.
func open(ctx context.Context, o Options) (*Conn, error) {
	c := &Conn{
		opts:       o,
		log:        o.Logger,
		base:       o.SockName,
		srv:        abs(o.SockName + ":ctl"),
		in:         make(chan item, o.RecvBuffer),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	c.bufs.New = func() any { return new([RequestLen]byte) }
	if err := c.bind(); err != nil {
		return nil, err
	}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	c.out = abs(fmt.Sprintf("%s:out%d", c.base, c.slot))
	if err := c.connectData(); err != nil {
		// ibsim already connected out<k> to us: a failed write to us
		// frees the slot, but say how to recover if it does not.
		c.closeSockets()
		return nil, fmt.Errorf("ibsim: connecting our data socket to @%s:out%d: %w (ibsim keeps slot %d until a write to us fails or its console command X frees it)",
			c.base, c.slot, err, c.slot)
	}
	go c.readLoop()
	return c, nil
}

// diagnoseRefusal runs after ibsim refused o's CONNECT. ibsim checks, in
// this order, for a free slot, for the node, and (issm) for an SM client
// already registered on the node; its ERROR reply does not say which
// failed, so we ask for less: the same node without issm, then the default
// node. Each probe is a full attachment, detached again at once.
//
// If only the SM registration is in the way, we ask its holder for SMInfo
// through ibsim. A holder that died without DISCONNECT (kill -9) keeps its
// slot and its SM flag until ibsim fails to write to its vanished socket;
// our query makes ibsim try, so it drops the dead client, and a second
// CONNECT then succeeds. A live holder gets the query (and usually
// answers), so the second CONNECT is refused again and we say who is
// there.
func diagnoseRefusal(ctx context.Context, o Options) (*Conn, error) {
	quiet := o
	quiet.IsSM, quiet.Logger = false, hclog.NewNullLogger()
	where := "ibsim's default node (the first port of the first node in its topology)"
	if o.Attach != "" {
		where = fmt.Sprintf("node %q", o.Attach)
	}
	if o.IsSM {
		p, err := open(ctx, quiet)
		switch {
		case err == nil:
			node := p.att.NodeID
			// ibsim handles one client's packets in order, so once our own
			// NodeInfo comes back it has tried to deliver the SMInfo query.
			err := p.sendSMInfoQuery()
			if err == nil {
				_, err = p.probe(ctx)
			}
			if err != nil {
				p.Close()
				return nil, fmt.Errorf("ibsim refused to register us as the SM on %s, and querying the SM client there failed: %w", nodeName(node, o.Attach), err)
			}
			c, err := open(ctx, o)
			if err == nil {
				p.Close()
				o.Logger.Warn("ibsim kept the SM registration of a client that exited without detaching (killed?); it dropped that client when we sent it an SMInfo query, and we took its place",
					"socket", o.SockName, "node", node)
				return c, nil
			}
			answered := p.awaitSMInfo(ctx)
			p.Close()
			if !errors.Is(err, errConnectRefused) {
				return nil, err
			}
			how := "ibsim delivered an SMInfo query to it, so its process is alive (ibsim drops a dead client when a write to it fails)"
			if answered {
				how = "it answered our SMInfo query"
			}
			return nil, fmt.Errorf("%w: CONNECT as SM to %s on @%s: another SM client is attached there, and %s. ibsim allows one SM client per node: stop that SM (ibsm or OpenSM under umad2sim), attach this one to another node (fabric attach = \"<node id>\"), or detach it with ibsim's console command X <slot> (Attached lists the slots)",
				ErrRefused, nodeName(node, o.Attach), o.SockName, how)
		case !errors.Is(err, errConnectRefused):
			return nil, err
		}
	}
	if o.Attach != "" {
		def := quiet
		def.Attach = ""
		p, err := open(ctx, def)
		switch {
		case err == nil:
			p.Close()
			return nil, fmt.Errorf("%w: CONNECT to node %q on @%s: ibsim has no such node; name a node by its id or description as the topology file quotes them (for example a \"Ca\" or \"Switch\" line's first quoted name)",
				ErrRefused, o.Attach, o.SockName)
		case !errors.Is(err, errConnectRefused):
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: CONNECT to %s on @%s: all %d of ibsim's client slots are in use. ibsim frees a slot on DISCONNECT, when a write to a dead client fails, or with its console command X <slot>; a client killed without detaching keeps its slot until then. List them with the console command Attached and free dead ones with X, stop other clients, or restart ibsim",
		ErrRefused, where, o.SockName, MaxClients)
}

func nodeName(canonical, asked string) string {
	if asked != "" && asked != canonical {
		return fmt.Sprintf("node %q (%q)", canonical, asked)
	}
	return fmt.Sprintf("node %q", canonical)
}

// smInfoTID marks diagnoseRefusal's SMInfo query.
const smInfoTID = 0x0000_7fff_fffe_0002

// sendSMInfoQuery sends a directed-route SubnGet(SMInfo) with no hops:
// ibsim has no SMInfo handler, so it forwards the query to the SM client
// registered on our own port, if any, and bounces it (status 110) if none.
func (c *Conn) sendSMInfoQuery() error {
	s, err := smp.NewDRGet(smp.AttrSMInfo, 0, nil)
	if err != nil {
		return err
	}
	s.TID = smInfoTID
	mad := make([]byte, MADLen)
	if err := s.EncodeTo(mad); err != nil {
		return err
	}
	h := Header{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, Length: MADLen}
	return c.send(&h, mad)
}

// awaitSMInfo reports whether a GetResp to sendSMInfoQuery arrives within
// ControlTimeout.
func (c *Conn) awaitSMInfo(ctx context.Context) bool {
	isAnswer := func(it item) bool {
		m := it.p.MAD
		return uint32(smp.PeekTID(m)) == smInfoTID&0xffffffff && smp.PeekAttrID(m) == smp.AttrSMInfo &&
			it.status == 0 && smp.PeekMethod(m) == smp.MethodGetResp
	}
	c.earlyMu.Lock()
	for _, it := range c.early {
		if isAnswer(it) {
			c.earlyMu.Unlock()
			return true
		}
	}
	c.earlyMu.Unlock()
	t := time.NewTimer(c.opts.ControlTimeout)
	defer t.Stop()
	for {
		select {
		case it := <-c.in:
			if isAnswer(it) {
				return true
			}
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// randomID picks a socket id above any pid (pid_max <= 2^22), so we never
// collide with umad2sim clients, which use their pid.
func randomID() uint32 {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return 1<<22 + binary.LittleEndian.Uint32(b[:])%(1<<31-1-1<<22)
}

// bind creates our control socket and data socket under a fresh id.
func (c *Conn) bind() error {
	var lastErr error
	for range 8 {
		id := randomID()
		ctl, err := net.ListenUnixgram("unixgram", abs(fmt.Sprintf("%s:ctl%d", c.base, id)))
		if err != nil {
			lastErr = err
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			break
		}
		data, err := net.ListenUnixgram("unixgram", abs(fmt.Sprintf("%s:in%d", c.base, id)))
		if err != nil {
			ctl.Close()
			lastErr = err
			if errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			break
		}
		c.id, c.ctl, c.data = id, ctl, data
		return nil
	}
	return fmt.Errorf("ibsim: binding our sockets under @%s: %w", c.base, lastErr)
}

// connect sends CONNECT and waits for the slot ibsim assigns.
func (c *Conn) connect(ctx context.Context) error {
	var pl [ClientInfoLen]byte
	ci := ClientInfo{ID: c.id, IsSM: c.opts.IsSM, NodeID: c.opts.Attach}
	if err := ci.MarshalTo(pl[:]); err != nil {
		c.closeSockets()
		return err
	}
	req := newCtl(0, CtlConnect, pl[:])
	var b [CtlLen]byte
	_ = req.MarshalTo(b[:])
	c.ctl.SetWriteDeadline(time.Now().Add(c.opts.ControlTimeout))
	if _, err := c.ctl.WriteToUnix(b[:], c.srv); err != nil {
		c.closeSockets()
		if isGone(err) {
			return fmt.Errorf("%w: nothing listens on @%s:ctl (%v); start ibsim with IBSIM_SOCKNAME=%s, or set the fabric's socket to the name ibsim runs under",
				ErrSimulatorGone, c.base, errno(err), c.base)
		}
		return fmt.Errorf("ibsim: sending CONNECT to @%s:ctl: %w", c.base, err)
	}
	r, err := c.readCtl(ctx, CtlConnect)
	if err != nil {
		if errors.Is(err, ErrRefused) {
			// ibsim connects to our data socket only on success.
			c.closeSockets()
			return errConnectRefused
		}
		// ibsim may still process the CONNECT and would exit if our data
		// socket were gone by then: keep it until we know.
		go c.disownConnect()
		return fmt.Errorf("ibsim: CONNECT on @%s:ctl: %w", c.base, err)
	}
	var got ClientInfo
	if err := got.Unmarshal(r.Data[:]); err != nil || got.ID >= MaxClients {
		// ibsim connected something we cannot name; without the slot we
		// cannot DISCONNECT, so say so loudly.
		c.closeSockets()
		return fmt.Errorf("ibsim: CONNECT reply carries client slot %d (decode error %v); ibsim keeps that slot until its console command X frees it", got.ID, err)
	}
	c.slot = got.ID
	c.att.Slot, c.att.NodeID = got.ID, got.NodeID
	return nil
}

// connectData connects our data socket to ibsim's out<k>, which ibsim has
// connected to us. Mutually connected, ibsim's writes to us are bounded by
// its send buffer (~200 replies); unconnected, the kernel would also apply
// net.unix.max_dgram_qlen (10) to our queue, and ibsim busy-waits, freezing
// the fabric, whenever our reader lags 10 datagrams behind.
func (c *Conn) connectData() error {
	rc, err := c.data.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cerr = syscall.Connect(int(fd), &syscall.SockaddrUnix{Name: c.out.Name})
	}); err != nil {
		return err
	}
	return cerr
}

// readCtl waits for the reply of type want on the control socket.
func (c *Conn) readCtl(ctx context.Context, want CtlType) (Ctl, error) {
	deadline := time.Now().Add(c.opts.ControlTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.ctl.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.ctl.SetReadDeadline(time.Now()) })
	defer stop()
	var b [2 * CtlLen]byte
	for {
		n, err := c.ctl.Read(b[:])
		if err != nil {
			if ctx.Err() != nil {
				return Ctl{}, fmt.Errorf("waiting for the %s reply: %w", want, ctx.Err())
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return Ctl{}, fmt.Errorf("%w: no %s reply within %v; the simulator is stalled (a console Wait, a full output pipe, or a client that stopped reading its socket)",
					ErrStalled, want, c.opts.ControlTimeout)
			}
			return Ctl{}, fmt.Errorf("reading the %s reply: %w", want, err)
		}
		var r Ctl
		if r.Unmarshal(b[:n]) != nil {
			continue // not from ibsim
		}
		switch r.Type {
		case want:
			return r, nil
		case CtlError:
			return r, fmt.Errorf("%w: %s", ErrRefused, want)
		}
		// A late reply to an earlier request that timed out: skip it.
		c.log.Debug("skipping stale control reply", "type", r.Type, "want", want)
	}
}

// disownConnect keeps both sockets of a CONNECT that timed out until
// ibsim answers it (then disconnects the slot) or is seen to be gone.
func (c *Conn) disownConnect() {
	defer c.closeSockets()
	const grace = 5 * time.Minute
	end := time.Now().Add(grace)
	var b [2 * CtlLen]byte
	for time.Now().Before(end) {
		c.ctl.SetReadDeadline(time.Now().Add(time.Second))
		n, err := c.ctl.Read(b[:])
		if err == nil {
			var r Ctl
			if r.Unmarshal(b[:n]) != nil {
				continue
			}
			switch r.Type {
			case CtlError:
				return
			case CtlConnect:
				var ci ClientInfo
				if ci.Unmarshal(r.Data[:]) == nil && ci.ID < MaxClients {
					d := newCtl(ci.ID, CtlDisconnect, nil)
					var db [CtlLen]byte
					_ = d.MarshalTo(db[:])
					c.ctl.SetWriteDeadline(time.Now().Add(c.opts.ControlTimeout))
					_, _ = c.ctl.WriteToUnix(db[:], c.srv)
					c.ctl.SetReadDeadline(time.Now().Add(c.opts.ControlTimeout))
					_, _ = c.ctl.Read(b[:])
					c.log.Info("disconnected a CONNECT that was answered late", "slot", ci.ID)
				}
				return
			}
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
		// A datagram of the wrong size is dropped by ibsim unanswered; it
		// only tells us whether ibsim's control socket still exists.
		c.ctl.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.ctl.WriteToUnix([]byte{0}, c.srv); err != nil && isGone(err) {
			return
		}
	}
	c.log.Warn("gave up waiting for ibsim to answer a CONNECT", "waited", grace)
}

// setup reads what we are attached to, checks it and registers as SM.
func (c *Conn) setup(ctx context.Context) error {
	r, err := c.control(ctx, CtlGetNodeInfo, nil)
	if err != nil {
		return err
	}
	var ni smp.NodeInfo
	if err := ni.Unmarshal(r.Data[:smp.NodeInfoLen]); err != nil {
		return fmt.Errorf("ibsim: GET_NODEINFO reply: %w", err)
	}
	pi, err := c.PortInfo(ctx)
	if err != nil {
		return err
	}
	self, err := c.probe(ctx)
	if err != nil {
		return err
	}
	a := &c.att
	a.NodeType, a.NumPorts, a.NodeGUID = ni.NodeType, ni.NumPorts, ni.NodeGUID
	a.Port, a.PortGUID = self.LocalPortNum, self.PortGUID
	if ni.NodeType == smp.NodeTypeSwitch {
		a.Port = 0 // the SMA port; NodeInfo names the ingress port
	}
	a.LID, a.MasterSMLID, a.PortState, a.CapabilityMask = pi.LID, pi.MasterSMLID, pi.PortState, pi.CapabilityMask
	if e := c.opts.Expect; e != nil && (e.NodeGUID != a.NodeGUID || e.Port != a.Port) {
		return fmt.Errorf("ibsim attached us to %q (node GUID %#016x port %d), not node %#016x port %d; ibsim picks the node by name, so name it with attach (its topology node id) instead, and it always uses port 1 of a CA or port 0 of a switch",
			a.NodeID, a.NodeGUID, a.Port, e.NodeGUID, e.Port)
	}
	if c.opts.IsSM {
		if err := c.SetIsSM(ctx, true); err != nil {
			return err
		}
	}
	c.log.Info("attached to ibsim", "socket", c.base, "slot", a.Slot, "node", a.NodeID,
		"node_guid", fmt.Sprintf("%#016x", a.NodeGUID), "port", a.Port,
		"port_guid", fmt.Sprintf("%#016x", a.PortGUID), "lid", a.LID, "sm", c.opts.IsSM)
	return nil
}

// probeTID marks Dial's own NodeInfo query; no dispatcher is running yet.
const probeTID = 0x0000_7fff_fffe_0001

// probe reads our own NodeInfo over the data path: it proves ibsim talks
// to our data socket and yields the real port GUID and number.
func (c *Conn) probe(ctx context.Context) (smp.NodeInfo, error) {
	var ni smp.NodeInfo
	s, err := smp.NewDRGet(smp.AttrNodeInfo, 0, nil)
	if err != nil {
		return ni, err
	}
	s.TID = probeTID
	mad := make([]byte, MADLen)
	if err := s.EncodeTo(mad); err != nil {
		return ni, err
	}
	h := Header{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, Length: MADLen}
	if err := c.send(&h, mad); err != nil {
		return ni, err
	}
	t := time.NewTimer(c.opts.ControlTimeout)
	defer t.Stop()
	for {
		select {
		case it := <-c.in:
			m := it.p.MAD
			if uint32(smp.PeekTID(m)) != probeTID&0xffffffff || smp.PeekAttrID(m) != smp.AttrNodeInfo || smp.PeekClass(m) != smp.ClassSMPDR {
				c.earlyMu.Lock()
				c.early = append(c.early, it)
				c.earlyMu.Unlock()
				continue
			}
			if it.status != 0 {
				return ni, fmt.Errorf("ibsim bounced a NodeInfo query to our own node (status %d)", it.status)
			}
			var r smp.SMP
			if err := r.Decode(m); err != nil {
				return ni, fmt.Errorf("ibsim: own NodeInfo reply: %w", err)
			}
			if r.Status&smp.StatusCodeMask != 0 {
				return ni, fmt.Errorf("ibsim: own NodeInfo reply has status %#04x", r.Status)
			}
			return ni, r.Attr(&ni)
		case <-t.C:
			return ni, fmt.Errorf("%w: no answer to a NodeInfo query to our own node on @%s:out%d within %v",
				ErrStalled, c.base, c.slot, c.opts.ControlTimeout)
		case <-ctx.Done():
			return ni, ctx.Err()
		}
	}
}

// Attachment describes the port we are attached to, as of Dial.
func (c *Conn) Attachment() Attachment { return c.att }

// control sends one control request and returns ibsim's reply.
func (c *Conn) control(ctx context.Context, t CtlType, payload []byte) (Ctl, error) {
	if c.isClosed() && t != CtlSetIsSM && t != CtlDisconnect {
		return Ctl{}, transport.ErrClosed
	}
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	return c.controlLocked(ctx, t, payload)
}

func (c *Conn) controlLocked(ctx context.Context, t CtlType, payload []byte) (Ctl, error) {
	if err := c.goneErr(); err != nil {
		return Ctl{}, err
	}
	if c.ctlStale {
		c.drainCtl()
	}
	req := newCtl(c.slot, t, payload)
	var b [CtlLen]byte
	_ = req.MarshalTo(b[:])
	c.ctl.SetWriteDeadline(time.Now().Add(c.opts.ControlTimeout))
	if _, err := c.ctl.WriteToUnix(b[:], c.srv); err != nil {
		return Ctl{}, c.writeErr(err, "@"+c.base+":ctl", t.String())
	}
	r, err := c.readCtl(ctx, t)
	if err != nil && !errors.Is(err, ErrRefused) {
		c.ctlStale = true
	}
	if err != nil {
		return r, fmt.Errorf("ibsim: %w", err)
	}
	return r, nil
}

// drainCtl discards replies to requests that timed out.
func (c *Conn) drainCtl() {
	var b [2 * CtlLen]byte
	c.ctl.SetReadDeadline(time.Now())
	for {
		if _, err := c.ctl.Read(b[:]); err != nil {
			break
		}
	}
	c.ctlStale = false
}

// PortInfo reads the attached port's current PortInfo from ibsim.
func (c *Conn) PortInfo(ctx context.Context) (smp.PortInfo, error) {
	var pi smp.PortInfo
	r, err := c.control(ctx, CtlGetPortInfo, []byte{0}) // 0 = our port
	if err != nil {
		return pi, err
	}
	if err := pi.Unmarshal(r.Data[:smp.PortInfoLen]); err != nil {
		return pi, fmt.Errorf("ibsim: GET_PORTINFO reply: %w", err)
	}
	return pi, nil
}

// PortState reads the attached port's LID and state.
func (c *Conn) PortState(ctx context.Context) (PortState, error) {
	var ps PortState
	r, err := c.control(ctx, CtlGetPort, nil)
	if err != nil {
		return ps, err
	}
	return ps, ps.Unmarshal(r.Data[:])
}

// Vendor reads the attached node's vendor, device and revision.
func (c *Conn) Vendor(ctx context.Context) (Vendor, error) {
	var v Vendor
	r, err := c.control(ctx, CtlGetVendor, nil)
	if err != nil {
		return v, err
	}
	return v, v.Unmarshal(r.Data[:])
}

// GID reads the attached port's GID prefix and ibsim's node GUID.
func (c *Conn) GID(ctx context.Context) (GID, error) {
	var g GID
	r, err := c.control(ctx, CtlGetGID, nil)
	if err != nil {
		return g, err
	}
	return g, g.Unmarshal(r.Data[:])
}

// NodeGUID reads the attached node's GUID.
func (c *Conn) NodeGUID(ctx context.Context) (uint64, error) {
	r, err := c.control(ctx, CtlGetGUID, nil)
	if err != nil {
		return 0, err
	}
	return host.Uint64(r.Data[:]), nil
}

// PKeys reads the attached port's P_Key table (non-zero entries).
func (c *Conn) PKeys(ctx context.Context) ([]uint16, error) {
	r, err := c.control(ctx, CtlGetPKeys, nil)
	if err != nil {
		return nil, err
	}
	return PKeys(r.Data[:])
}

// SetIsSM sets or clears our SM flag and the port's IsSM capability bit.
// Setting it on a port that has a LID and an SM LID makes ibsim send a
// trap 144 (capability mask change), which arrives on Recv.
func (c *Conn) SetIsSM(ctx context.Context, on bool) error {
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	if _, err := c.controlLocked(ctx, CtlSetIsSM, issmPayload(on)); err != nil {
		return err
	}
	c.issmSet = on
	return nil
}

// Send implements transport.Conn. DR SMPs (DLID 0xFFFF) get SLID 0xFFFF as
// ibsim requires; LID-routed packets with SLID 0 get our port's LID from
// ibsim. The source QP is 0 for SMPs and 1 for everything else.
func (c *Conn) Send(p transport.Packet) error {
	if err := c.usable(); err != nil {
		return err
	}
	h, err := header(p)
	if err != nil {
		return err
	}
	return c.send(&h, p.MAD)
}

// SendBatch implements transport.BatchSender: on 64-bit Linux one
// sendmmsg(2) per batch.
func (c *Conn) SendBatch(ps []transport.Packet) (int, error) {
	if err := c.usable(); err != nil {
		return 0, err
	}
	return c.sendBatch(ps)
}

func (c *Conn) usable() error {
	if c.isClosed() {
		return transport.ErrClosed
	}
	return c.goneErr()
}

// header is the sim header that carries p.
func header(p transport.Packet) (Header, error) {
	if len(p.MAD) < 24 {
		return Header{}, fmt.Errorf("ibsim: MAD is %d bytes, shorter than its 24-byte header", len(p.MAD))
	}
	class := p.MAD[1]
	h := Header{DLID: p.DLID, SLID: p.SLID, DQP: p.QP, SQP: 1, Length: uint64(smp.RMPPMessageLen(p.MAD))}
	if class == smp.ClassSMPLID || class == smp.ClassSMPDR {
		h.SQP = 0
	}
	switch {
	case p.DLID == 0:
		return h, fmt.Errorf("ibsim: DLID 0 is invalid; use %#04x for a directed-route SMP or the destination's LID", smp.PermissiveLID)
	case p.DLID == smp.PermissiveLID:
		h.SLID = smp.PermissiveLID
	case class == smp.ClassSMPDR:
		return h, fmt.Errorf("ibsim: directed-route SMP with DLID %d; ibsim routes DR only with DLID %#04x (no combined LID/DR routing)", p.DLID, smp.PermissiveLID)
	}
	return h, nil
}

// writeDeadline arms the data socket's write deadline when less than
// half of SendTimeout is left of it: a write waits between SendTimeout/2
// and SendTimeout for a stalled ibsim, and the timer is not reset per MAD
// (it was 2 % of a bring-up's host CPU).
func (c *Conn) writeDeadline() {
	now := time.Now()
	if c.wdeadline.Load()-now.UnixNano() >= int64(c.opts.SendTimeout/2) {
		return
	}
	d := now.Add(c.opts.SendTimeout)
	c.data.SetWriteDeadline(d)
	c.wdeadline.Store(d.UnixNano())
}

// wrote counts one write of n MADs to ibsim; err (if any) is the write's.
func (c *Conn) wrote(n int, err error) error {
	c.writes.Add(1)
	c.sent.Add(uint64(n))
	if err == nil {
		return nil
	}
	if c.isClosed() && errors.Is(err, net.ErrClosed) {
		return transport.ErrClosed
	}
	return c.writeErr(err, c.out.Name[1:len(c.out.Name)-1], "a MAD")
}

func (c *Conn) send(h *Header, mad []byte) error {
	buf := c.bufs.Get().(*[RequestLen]byte)
	defer c.bufs.Put(buf)
	if err := MarshalRequest(buf[:], h, mad); err != nil {
		return err
	}
	c.writeDeadline()
	_, err := c.data.Write(buf[:]) // connected to out<k>
	if err != nil {
		return c.wrote(0, err)
	}
	return c.wrote(1, nil)
}

// writeErr turns a socket write error into one that says what to do.
func (c *Conn) writeErr(err error, to, what string) error {
	switch {
	case isGone(err):
		e := fmt.Errorf("%w: sending %s to @%s failed (%v); the simulator exited or was restarted: restart it, then reattach",
			ErrSimulatorGone, what, strings.TrimPrefix(to, "@"), errno(err))
		c.setGone(e)
		return e
	case errors.Is(err, syscall.EPERM):
		e := fmt.Errorf("%w: ibsim no longer connects client slot %d to us (EPERM): it dropped this client (console command X, or a failed write to us); reattach",
			ErrSimulatorGone, c.slot)
		c.setGone(e)
		return e
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: ibsim did not take %s within %v; the simulator is stalled (a console Wait, a full output pipe, or a client not reading its socket)",
			ErrStalled, what, c.opts.SendTimeout)
	}
	return fmt.Errorf("ibsim: sending %s: %w", what, err)
}

func isGone(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTCONN)
}

func errno(err error) error {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return err
}

func (c *Conn) setGone(err error) {
	c.goneMu.Lock()
	first := c.gone == nil
	if first {
		c.gone = err
	}
	c.goneMu.Unlock()
	if first {
		c.log.Error("lost ibsim", "error", err)
	}
}

func (c *Conn) goneErr() error {
	c.goneMu.Lock()
	defer c.goneMu.Unlock()
	return c.gone
}

// copyMAD copies a received MAD into a buffer of its own, one given back
// if there is one.
func (c *Conn) copyMAD(mad []byte) []byte {
	if len(mad) == MADLen {
		if b, ok := c.mads.Get().(*[MADLen]byte); ok {
			copy(b[:], mad)
			return b[:]
		}
	}
	return bytes.Clone(mad)
}

// Recycle takes back the buffer of a packet Recv returned once its
// receiver is done with it (transport.Recycler): each is a copy of the
// Conn's own, so the read loop may fill it again.
func (c *Conn) Recycle(mad []byte) {
	if len(mad) == MADLen {
		c.mads.Put((*[MADLen]byte)(mad))
	}
}

// readLoop drains the data socket for the Conn's whole life, up to
// readBatch datagrams per system call. It must never block on the
// consumer: ibsim spins, stalling every client, while our socket is full.
func (c *Conn) readLoop() {
	defer close(c.readerDone)
	// one spare byte reveals oversize datagrams
	dg, err := newDatagrams(c.data, readBatch, RequestLen+1)
	if err != nil {
		c.log.Error("cannot read from ibsim", "error", err)
		return
	}
	for {
		n, err := dg.read()
		c.reads.Add(1)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			c.log.Warn("reading from ibsim failed", "error", err)
			select {
			case <-c.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		c.deliverMu.Lock()
		for i := range n {
			c.take(dg.bufs[i][:dg.size(i)])
		}
		c.deliverMu.Unlock()
	}
}

// readBatch is how many datagrams one read takes at most: about a MAD
// window's answers (ibsim's default window is 128).
const readBatch = 64

// take hands one datagram to deliver or queues it for Recv (caller holds
// deliverMu).
func (c *Conn) take(b []byte) {
	c.received.Add(1)
	h, mad, err := UnmarshalRequest(b)
	if err != nil {
		c.malformed.Add(1)
		c.log.Debug("dropping malformed datagram", "error", err)
		return
	}
	it := item{
		p:      transport.Packet{DLID: h.DLID, SLID: h.SLID, QP: h.SQP, MAD: c.copyMAD(mad)},
		status: h.Status,
	}
	if h.Status != 0 {
		c.bounced.Add(1)
	}
	if c.deliver != nil {
		c.deliver(it.result())
		return
	}
	select {
	case c.in <- it:
	default:
		if n := c.overruns.Add(1); n&(n-1) == 0 { // log at powers of two
			c.log.Warn("receive queue full, dropping packets from ibsim", "dropped", n, "capacity", cap(c.in))
		}
	}
}

// Deliver implements transport.Deliverer: the read loop hands each packet
// to fn, those that already wait for Recv first, until ctx is done or the
// Conn closes. fn must not block: ibsim stalls while our socket is full.
func (c *Conn) Deliver(ctx context.Context, fn func(transport.Packet, error)) {
	c.deliverMu.Lock()
	c.earlyMu.Lock()
	early := c.early
	c.early = nil
	c.earlyMu.Unlock()
	for _, it := range early {
		fn(it.result())
	}
	for len(c.in) > 0 {
		fn((<-c.in).result())
	}
	c.deliver = fn
	c.deliverMu.Unlock()
	select {
	case <-ctx.Done():
	case <-c.done:
	}
	c.deliverMu.Lock()
	c.deliver = nil
	c.deliverMu.Unlock()
}

// Recv implements transport.Conn. A packet ibsim handed back undelivered
// comes as a *transport.BounceError.
func (c *Conn) Recv(ctx context.Context) (transport.Packet, error) {
	c.earlyMu.Lock()
	if len(c.early) > 0 {
		it := c.early[0]
		c.early = c.early[1:]
		c.earlyMu.Unlock()
		return it.result()
	}
	c.earlyMu.Unlock()
	select {
	case it := <-c.in:
		return it.result()
	default:
	}
	select {
	case it := <-c.in:
		return it.result()
	case <-ctx.Done():
		return transport.Packet{}, ctx.Err()
	case <-c.done:
		return transport.Packet{}, transport.ErrClosed
	}
}

func (it item) result() (transport.Packet, error) {
	if it.status == 0 {
		return it.p, nil
	}
	reason := "ibsim status 110: no route, a link down, an injected error, or no client to deliver to"
	if it.status != StatusBounced {
		reason = fmt.Sprintf("ibsim status %d", it.status)
	}
	return transport.Packet{}, &transport.BounceError{Packet: it.p, Reason: reason}
}

// Stats counts datagrams.
type Stats struct {
	Sent, Received uint64
	// Bounced counts datagrams ibsim handed back undelivered.
	Bounced uint64
	// Malformed counts datagrams of the wrong size; Overruns counts
	// packets dropped because Recv fell RecvBuffer packets behind.
	Malformed, Overruns uint64
	// Reads and Writes count the system calls that moved them (several
	// datagrams each where recvmmsg and sendmmsg exist).
	Reads, Writes uint64
}

// Stats returns the Conn's counters.
func (c *Conn) Stats() Stats {
	return Stats{Sent: c.sent.Load(), Received: c.received.Load(), Bounced: c.bounced.Load(),
		Malformed: c.malformed.Load(), Overruns: c.overruns.Load(), Reads: c.reads.Load(), Writes: c.writes.Load()}
}

func (c *Conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Close detaches: SET_ISSM 0 if we set it (DISCONNECT does not clear the
// capability bit), then DISCONNECT, reading the data socket until both are
// answered. If ibsim is gone or stalled Close still releases everything and
// reports why the goodbye was incomplete.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		var errs []error
		ctx := context.Background()
		c.ctlMu.Lock()
		if c.goneErr() == nil {
			if c.issmSet {
				if _, err := c.controlLocked(ctx, CtlSetIsSM, issmPayload(false)); err != nil {
					errs = append(errs, fmt.Errorf("clearing IsSM: %w", err))
				} else {
					c.issmSet = false
				}
			}
			if _, err := c.controlLocked(ctx, CtlDisconnect, nil); err != nil {
				errs = append(errs, fmt.Errorf("DISCONNECT of slot %d: %w", c.slot, err))
			}
		}
		c.ctlMu.Unlock()
		c.closeSockets()
		<-c.readerDone
		if len(errs) > 0 {
			c.closeErr = errors.Join(errs...)
			c.log.Warn("detached from ibsim uncleanly", "error", c.closeErr)
		} else {
			c.log.Debug("detached from ibsim", "slot", c.slot)
		}
	})
	return c.closeErr
}

func (c *Conn) closeSockets() {
	c.data.Close()
	c.ctl.Close()
}
