package sim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// conn is an attachment of an agent (normally the SM) to one port.
type conn struct {
	f    *Fabric
	n    *node
	port uint8
	ch   chan transport.Packet
	done chan struct{}
	once sync.Once
	shut atomic.Bool
	// fn, while Deliver runs, takes what deliver would queue on ch: the
	// answer to an SMP reaches the Dispatcher inside Send, on the sender's
	// goroutine, without a hand-off to the receiver's and back (two
	// goroutine switches per SMP, most of a bring-up's scheduler time).
	// fnMu makes the calls one at a time, as Deliverer promises.
	fnMu sync.Mutex
	fn   func(transport.Packet, error)
}

var (
	_ transport.Conn        = (*conn)(nil)
	_ transport.Deliverer   = (*conn)(nil)
	_ transport.BatchSender = (*conn)(nil)
)

var smpPool = sync.Pool{New: func() any { return new(smp.SMP) }}

// Attach connects an agent to port p of node guid: port 0 of a switch or a
// CA/router port 1..N, as ibsim allows. The port's CapabilityMask gets the
// IsSM bit. One Conn per port.
func (f *Fabric) Attach(guid uint64, p uint8) (transport.Conn, error) {
	n, pt, err := f.port(guid, p)
	if err != nil {
		return nil, err
	}
	if n.typ == topology.Switch && p != 0 {
		return nil, fmt.Errorf("sim: attach to switch 0x%016x at port 0 (its management port), not %d", guid, p)
	}
	c := &conn{f: f, n: n, port: p, ch: make(chan transport.Packet, f.opts.RecvBuffer), done: make(chan struct{})}
	if !pt.attached.CompareAndSwap(nil, c) {
		return nil, fmt.Errorf("sim: node 0x%016x port %d already has an attached agent; close it first", guid, p)
	}
	n.mu.Lock()
	pt.capMask |= smp.CapIsSM
	n.mu.Unlock()
	return c, nil
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.shut.Store(true)
		pt := &c.n.ports[c.port]
		pt.attached.CompareAndSwap(c, nil)
		c.n.mu.Lock()
		pt.capMask &^= smp.CapIsSM
		c.n.mu.Unlock()
		close(c.done)
	})
	return nil
}

func (c *conn) Recv(ctx context.Context) (transport.Packet, error) {
	// Queued packets win over Close so nothing already delivered is lost
	// to a race; after Close, Recv drains then reports ErrClosed.
	select {
	case p := <-c.ch:
		return p, nil
	default:
	}
	select {
	case p := <-c.ch:
		return p, nil
	case <-ctx.Done():
		return transport.Packet{}, ctx.Err()
	case <-c.done:
		return transport.Packet{}, transport.ErrClosed
	}
}

// Recycle takes back the buffer of a packet Recv returned, once its
// receiver is done with it (transport.Recycler): every buffer the fabric
// delivers is its own, so forward may fill it again.
func (c *conn) Recycle(mad []byte) {
	if len(mad) == smp.MADLen {
		c.f.mads.Put((*[smp.MADLen]byte)(mad))
	}
}

// Deliver implements transport.Deliverer: until ctx is done or the Conn
// closes, every packet for the agent goes to fn at once, from the
// goroutine whose Send (or fabric event) produced it, not to Recv. What
// was queued before Deliver goes first.
func (c *conn) Deliver(ctx context.Context, fn func(transport.Packet, error)) {
	c.fnMu.Lock()
	for len(c.ch) > 0 {
		fn(<-c.ch, nil)
	}
	c.fn = fn
	c.fnMu.Unlock()
	select {
	case <-ctx.Done():
	case <-c.done:
	}
	c.fnMu.Lock()
	c.fn = nil
	c.fnMu.Unlock()
}

// deliver hands p to the agent's Deliver, or else queues it for Recv,
// without blocking.
func (c *conn) deliver(p transport.Packet) bool {
	if c.shut.Load() {
		return false
	}
	// Under fnMu: a packet queued while Deliver starts would wait in ch
	// until it ended.
	c.fnMu.Lock()
	defer c.fnMu.Unlock()
	if c.fn != nil {
		c.fn(p, nil)
		return true
	}
	select {
	case c.ch <- p:
		return true
	default:
		c.f.st.overruns.Add(1)
		return false
	}
}

// Send injects a MAD at the attached port and, for requests the fabric
// answers, queues the response before returning. A MAD the fabric cannot
// deliver is dropped silently (the caller times out), as on real hardware;
// Send fails only on a closed Conn or a packet that is not a MAD.
func (c *conn) Send(p transport.Packet) error {
	if c.shut.Load() {
		return transport.ErrClosed
	}
	if len(p.MAD) < smp.MADLen {
		return fmt.Errorf("sim: MAD is %d bytes, want %d", len(p.MAD), smp.MADLen)
	}
	f := c.f
	f.st.received.Add(1)
	if c.n.gone.Load() {
		f.st.lost.Add(1)
		return nil
	}
	if f.dropOne() {
		f.st.dropped.Add(1)
		return nil
	}
	class := p.MAD[1]
	if class != smp.ClassSMPLID && class != smp.ClassSMPDR {
		// GMPs (SA and others) only travel between agents.
		f.routeGMP(c, p)
		return nil
	}
	s := smpPool.Get().(*smp.SMP)
	defer smpPool.Put(s)
	if err := s.Decode(p.MAD); err != nil {
		f.st.malformed.Add(1)
		return fmt.Errorf("sim: %w", err)
	}
	if s.IsResponse() {
		f.routeResponse(c, p, s)
		return nil
	}
	f.st.count(s)
	if s.IsDR() {
		f.directed(c, s)
	} else {
		f.lidRouted(c, p, s)
	}
	return nil
}

// SendBatch implements transport.BatchSender: Send for each of ps in
// turn. The fabric has no system call to save; what a batch saves is the
// sender's clock read per request (DoAll times a batch's attempts from
// one).
func (c *conn) SendBatch(ps []transport.Packet) (int, error) {
	for i, p := range ps {
		if err := c.Send(p); err != nil {
			return i, err
		}
	}
	return len(ps), nil
}
