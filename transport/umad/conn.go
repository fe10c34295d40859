package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// device is the file-like handle under a Conn: the umad character device,
// or a fake kernel in tests.
type device interface {
	Read(b []byte) (int, error)
	Write(b []byte) (int, error)
	// Ioctl issues req with arg as its in/out buffer (nil for none).
	Ioctl(req uint32, arg []byte) error
	// Close unblocks a pending Read, which then returns an error
	// satisfying errors.Is(err, os.ErrClosed).
	Close() error
}

// Options configures Open. Zero values select the defaults.
type Options struct {
	Paths
	// Timeout is how long the kernel waits for the response to a request
	// before reporting ETIMEDOUT; pass the transport's per-attempt timeout
	// (transport.Options.Timeout, conf sm.mad_timeout). Default 200ms.
	// Requests go out with no kernel retries: the Transport retries, each
	// attempt with a fresh TID. A response after this is dropped by the
	// kernel. (Responses, which wait for nothing, go out with
	// ResponseRetries for the kernel's RMPP sender.)
	Timeout time.Duration
	// PKeyIndex is the P_Key table index requests are sent with (default
	// 0, the default partition). Responses reuse the index their request
	// arrived with.
	PKeyIndex uint16
	// RecvBuffer is how many received MADs may wait for Recv (default 256).
	RecvBuffer int
	Logger     hclog.Logger
}

func (o Options) withDefaults() Options {
	o.Paths = o.Paths.withDefaults()
	if o.Timeout <= 0 {
		o.Timeout = 200 * time.Millisecond
	}
	if o.RecvBuffer <= 0 {
		o.RecvBuffer = 256
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// ResponseRetries is the kernel retry count every response is sent with,
// as OpenSM sends everything with 3. It matters for multi-MAD (RMPP) SA
// answers: the kernel's RMPP sender spends one retry on each lost DATA
// segment or ACK (and gets them back when an ACK makes progress), so with
// none a single loss aborts the whole answer.
const ResponseRetries = 3

// The three agents a Conn registers, indexed by agentKind.
type agentKind int

const (
	agentSMPLID agentKind = iota
	agentSMPDR
	agentSA
	numAgents
)

// agentRequests are the registrations: both SMP classes on QP0 receive the
// unsolicited SMPs an SM must answer or act on (Get/Set SMInfo from other
// SMs, Trap; TrapRepress listed as OpenSM does, though the kernel routes it
// by TID); the SA agent on QP1 receives every SA request method and has
// rmpp_version 1 so that the kernel segments and reassembles multi-packet
// SA messages.
func agentRequests() [numAgents]regReq {
	var smpMask, saMask MethodMask
	smpMask.Set(smp.MethodGet, smp.MethodSet, smp.MethodTrap, smp.MethodTrapRepress)
	saMask.Set(smp.MethodGet, smp.MethodSet, smp.MethodGetTable, methodGetTraceTable, smp.MethodGetMulti, smp.MethodDelete)
	return [numAgents]regReq{
		agentSMPLID: {Methods: smpMask, QPN: qpSMI, MgmtClass: smp.ClassSMPLID, ClassVersion: smp.SMPClassVersion},
		agentSMPDR:  {Methods: smpMask, QPN: qpSMI, MgmtClass: smp.ClassSMPDR, ClassVersion: smp.SMPClassVersion},
		agentSA:     {Methods: saMask, QPN: qpGSI, MgmtClass: smp.ClassSA, ClassVersion: smp.SAClassVersion, RMPPVersion: 1},
	}
}

const methodGetTraceTable = 0x13

// Stats counts what a Conn did.
type Stats struct {
	Sent, Received uint64
	// KernelTimeouts counts requests the kernel gave up on (ETIMEDOUT);
	// the Transport has its own timer and sees them as its own timeouts.
	KernelTimeouts uint64
	// UnackedResponses counts RMPP responses (multi-MAD SA answers) the
	// kernel gave up sending after ResponseRetries lost segments or ACKs;
	// the requester saw an incomplete answer and will ask again.
	UnackedResponses uint64
	// Dropped counts records that could not be used (short, bad status).
	Dropped uint64
}

// Conn is a transport.Conn on one HCA port through its umad device. It
// holds the port's issm device open, which sets the IsSM capability bit
// (other nodes see an SM here); Close clears it.
//
// The Conn keeps no record of which TIDs the kernel holds: the kernel's
// send list refuses a request whose TID and class are still on it, and a
// response with the TID and class of one still being sent to the same
// destination (EINVAL), and the Transport never re-sends a TID (each
// attempt has a fresh one). A write the kernel refuses returns its error
// at once.
type Conn struct {
	dev       device
	issm      io.Closer
	log       hclog.Logger
	agents    [numAgents]uint32
	timeoutMS uint32
	pkeyIndex uint16
	bufs      sync.Pool

	mu sync.Mutex
	// replies remembers the non-default addressing of unsolicited
	// requests until their response is sent.
	replies map[replyKey]reply

	recv       chan recvItem
	done       chan struct{}
	closeOnce  sync.Once
	closeErr   error
	readerDone chan struct{}
	// lost is closed, after lostErr is set, when the device went away
	// (EIO: the HCA was removed or its driver reset).
	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error

	sent, received, kernelTimeouts, unacked, dropped atomic.Uint64
}

type replyKey struct {
	lid   uint16
	class uint8
	tid   uint64
}

// maxReplies bounds the reply memory; requests nobody answers would
// otherwise accumulate.
const maxReplies = 4096

type recvItem struct {
	p   transport.Packet
	err error
}

var _ transport.Conn = (*Conn)(nil)

// newConn switches dev to the 64-byte header, registers the agents and
// starts reading. On error dev and issm are left open for the caller.
func newConn(dev device, issm io.Closer, opts Options) (*Conn, error) {
	opts = opts.withDefaults()
	c := &Conn{
		dev:        dev,
		issm:       issm,
		log:        opts.Logger,
		timeoutMS:  uint32(max(1, opts.Timeout.Milliseconds())),
		pkeyIndex:  opts.PKeyIndex,
		replies:    map[replyKey]reply{},
		recv:       make(chan recvItem, opts.RecvBuffer),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
		lost:       make(chan struct{}),
	}
	c.bufs.New = func() any { b := make([]byte, 0, HeaderLen+smp.MADLen); return &b }
	if err := dev.Ioctl(ioctlEnablePKey, nil); err != nil {
		return nil, fmt.Errorf("umad: IB_USER_MAD_ENABLE_PKEY: %w (needs Linux 2.6.20 or later, before any agent is registered on this file)", err)
	}
	for k, req := range agentRequests() {
		b := req.encode()
		if err := dev.Ioctl(ioctlRegisterAgent, b); err != nil {
			return nil, fmt.Errorf("umad: registering the agent for class %#02x: %w%s", req.MgmtClass, err, registerHint(err, req))
		}
		back, _ := decodeRegReq(b)
		c.agents[k] = back.ID
	}
	c.log.Debug("umad agents registered", "smp_lid", c.agents[agentSMPLID], "smp_dr", c.agents[agentSMPDR], "sa", c.agents[agentSA])
	go c.reader()
	return c, nil
}

func (c *Conn) agentFor(class uint8) (uint32, bool) {
	switch class {
	case smp.ClassSMPLID:
		return c.agents[agentSMPLID], true
	case smp.ClassSMPDR:
		return c.agents[agentSMPDR], true
	case smp.ClassSA:
		return c.agents[agentSA], true
	}
	return 0, false
}

// registerHint says what a failed IB_USER_MAD_REGISTER_AGENT means
// (ib_umad_reg_agent, ib_register_mad_agent).
func registerHint(err error, req regReq) string {
	switch {
	case errors.Is(err, syscall.EINVAL):
		return "; another agent on this port already receives these methods (is opensm, or another ibsm, running here? stop it first)"
	case errors.Is(err, syscall.EPROTONOSUPPORT):
		if req.QPN == qpSMI {
			return "; this port has no QP0 (SMI): a RoCE port, or the GSI-only device of a multi-plane HCA (its ports have IsSMDisabled); use the SMI device"
		}
		return "; this port has no QP1 (GSI)"
	case errors.Is(err, syscall.ENOMEM):
		return "; the umad file has all 32 agents registered, or the kernel is out of memory"
	case errors.Is(err, syscall.EPIPE):
		return "; the HCA is being removed"
	}
	return ""
}

// Send implements transport.Conn. A request (no R bit) is sent with the
// kernel timeout and no kernel retries, so the kernel delivers its
// response or an ETIMEDOUT record; a response with ResponseRetries. A
// write the kernel refuses fails at once (see writeHint).
func (c *Conn) Send(p transport.Packet) error {
	if c.isClosed() {
		return transport.ErrClosed
	}
	if err := c.lostError(); err != nil {
		return err
	}
	if len(p.MAD) < smp.HeaderLen {
		return fmt.Errorf("umad: MAD of %d bytes is shorter than the %d-byte common header", len(p.MAD), smp.HeaderLen)
	}
	class, method, tid := p.MAD[1], p.MAD[3], binary.BigEndian.Uint64(p.MAD[8:])
	agent, ok := c.agentFor(class)
	if !ok {
		return fmt.Errorf("umad: management class %#02x has no agent here; this port sends SMPs (0x01, 0x81) and SA MADs (0x03)", class)
	}
	f := sendFields{agent: agent, pkeyIndex: c.pkeyIndex}
	resp := isResponse(method)
	if resp {
		f.reply = c.takeReply(replyKey{p.DLID, class, tid})
		f.retries = ResponseRetries
	} else {
		f.timeoutMS = c.timeoutMS
		if p.Timeout > 0 { // the Transport's backed-off attempt
			f.timeoutMS = uint32(max(1, p.Timeout.Milliseconds()))
		}
	}
	bp := c.bufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 4096 { // do not pin large RMPP messages in the pool
			c.bufs.Put(bp)
		}
	}()
	rec, err := encodeSend(*bp, p, f)
	if err != nil {
		return err
	}
	*bp = rec
	n, err := c.dev.Write(rec)
	if err == nil && n != len(rec) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(rec))
	}
	if err != nil {
		if c.isClosed() {
			return transport.ErrClosed
		}
		if errors.Is(err, syscall.EIO) {
			return c.lose(fmt.Errorf("write: %w", err))
		}
		return fmt.Errorf("umad: write class %#02x method %#02x TID %#x to LID %d: %w%s", class, method, tid, p.DLID, err, writeHint(err, resp))
	}
	c.sent.Add(1)
	return nil
}

// writeHint says what a refused write means (ib_umad_write). EIO is not
// here: it means the device is gone (see lose).
func writeHint(err error, resp bool) string {
	switch {
	case errors.Is(err, syscall.EINVAL) && resp:
		return " (the kernel is still sending a response with this TID and class to this destination — the requester asked again before the first answer was through — or the record's length does not fit the class)"
	case errors.Is(err, syscall.EINVAL):
		return " (a request with this TID and class is still on the kernel's send list, the directed route is invalid for this port, or the record's length does not fit the class)"
	case errors.Is(err, syscall.ENOMEM):
		return " (the kernel could not allocate the send buffer)"
	}
	return ""
}

// lose marks the device gone: the HCA was removed or its driver reset, and
// the kernel answers every read and write with EIO from now on. Reads stop,
// and Recv and Send return the error, which wraps transport.ErrConnLost so
// that the Transport ends.
func (c *Conn) lose(err error) error {
	c.lostOnce.Do(func() {
		c.lostErr = fmt.Errorf("umad: %w: %w; the HCA port was removed or reset (device unplugged, driver reloaded, firmware reset): restart ibsm once ibstat lists the port again",
			transport.ErrConnLost, err)
		close(c.lost)
	})
	return c.lostErr
}

func (c *Conn) lostError() error {
	select {
	case <-c.lost:
		return c.lostErr
	default:
		return nil
	}
}

func (c *Conn) takeReply(k replyKey) *reply {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.replies[k]
	if !ok {
		return nil
	}
	delete(c.replies, k)
	return &r
}

func (c *Conn) remember(k replyKey, r reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.replies) >= maxReplies {
		c.log.Warn("forgetting the addressing of unanswered requests", "count", len(c.replies))
		clear(c.replies)
	}
	c.replies[k] = r
}

// Recv implements transport.Conn.
func (c *Conn) Recv(ctx context.Context) (transport.Packet, error) {
	select { // queued packets win over cancellation and Close
	case it, ok := <-c.recv:
		return c.item(it, ok)
	default:
	}
	select {
	case it, ok := <-c.recv:
		return c.item(it, ok)
	case <-ctx.Done():
		return transport.Packet{}, ctx.Err()
	case <-c.done:
		return transport.Packet{}, transport.ErrClosed
	}
}

func (c *Conn) item(it recvItem, ok bool) (transport.Packet, error) {
	if !ok {
		if err := c.lostError(); err != nil {
			return transport.Packet{}, err
		}
		return transport.Packet{}, transport.ErrClosed
	}
	return it.p, it.err
}

// reader reads records until the device is closed or gone. The kernel
// returns one record per read: the header, then the MAD (a whole
// reassembled RMPP message for the SA agent). If the buffer is too small
// for an RMPP message the read fails with ENOSPC, leaves the message
// queued and puts the size needed in the header's Length. EIO means the
// device was removed (agents_dead): nothing will ever be read again.
func (c *Conn) reader() {
	defer close(c.readerDone)
	defer close(c.recv)
	buf := make([]byte, HeaderLen+smp.MADLen)
	backoff := time.Millisecond
	for {
		n, err := c.dev.Read(buf)
		if err != nil {
			if c.isClosed() || errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF) {
				return
			}
			if errors.Is(err, syscall.ENOSPC) {
				buf = c.grow(buf)
				continue
			}
			if errors.Is(err, syscall.EIO) {
				c.deliver(recvItem{err: c.lose(fmt.Errorf("read: %w", err))})
				return
			}
			if !c.deliver(recvItem{err: fmt.Errorf("umad: read: %w", err)}) {
				return
			}
			// An unexpected error must not spin.
			select {
			case <-time.After(backoff):
			case <-c.done:
				return
			}
			backoff = min(2*backoff, 100*time.Millisecond)
			continue
		}
		backoff = time.Millisecond
		p, ok := c.handle(buf[:n])
		if ok && !c.deliver(recvItem{p: p}) {
			return
		}
	}
}

func (c *Conn) grow(buf []byte) []byte {
	var h Header
	_ = h.Decode(buf)
	want := int(h.Length)
	if want <= len(buf) || want > maxRecordBytes {
		want = min(2*len(buf), maxRecordBytes)
	}
	if want <= len(buf) {
		c.log.Error("RMPP message larger than the read limit; it stays queued", "limit", maxRecordBytes)
		time.Sleep(100 * time.Millisecond)
		return buf
	}
	return make([]byte, want)
}

func (c *Conn) deliver(it recvItem) bool {
	select {
	case c.recv <- it:
		return true
	case <-c.done:
		return false
	}
}

// handle turns one record into a packet for Recv, or consumes it: a
// record with status ETIMEDOUT reports that the kernel gave up on one of
// our sends; its MAD is the send's 24-byte header. For a request that is
// the kernel's timeout, which the Transport's own timer has already seen
// (or will: both run the same timeout); for a response it is an RMPP SA
// answer abandoned after ResponseRetries lost segments or ACKs.
func (c *Conn) handle(rec []byte) (transport.Packet, bool) {
	h, mad, err := decodeRecord(rec)
	if err != nil {
		c.dropped.Add(1)
		c.log.Warn("dropping umad record", "error", err)
		return transport.Packet{}, false
	}
	if h.Status != 0 {
		if h.Status == uint32(syscall.ETIMEDOUT) && len(mad) >= smp.HeaderLen {
			tid := binary.BigEndian.Uint64(mad[8:])
			if isResponse(mad[3]) {
				c.unacked.Add(1)
				c.log.Warn("the requester did not acknowledge a multi-MAD answer; it will ask again",
					"class", mad[1], "attr", binary.BigEndian.Uint16(mad[16:]), "tid", tid, "lid", h.LID)
				return transport.Packet{}, false
			}
			c.kernelTimeouts.Add(1)
			c.log.Trace("kernel timed out a request", "class", mad[1], "tid", tid, "lid", h.LID)
			return transport.Packet{}, false
		}
		c.dropped.Add(1)
		c.log.Warn("dropping umad record with unexpected status", "status", h.Status, "agent", h.AgentID, "len", len(mad))
		return transport.Packet{}, false
	}
	c.received.Add(1)
	if len(mad) >= smp.HeaderLen {
		class, method, tid := mad[1], mad[3], binary.BigEndian.Uint64(mad[8:])
		if !isResponse(method) && (h.PKeyIndex != c.pkeyIndex || h.GRHPresent) {
			c.remember(replyKey{h.LID, class, tid}, reply{
				pkeyIndex: h.PKeyIndex, grh: h.GRHPresent, gid: h.GID, flowLabel: h.FlowLabel,
				trafficClass: h.TrafficClass, hopLimit: h.HopLimit,
			})
		}
	}
	return packetFrom(&h, mad), true
}

// Stats returns the Conn's counters.
func (c *Conn) Stats() Stats {
	return Stats{Sent: c.sent.Load(), Received: c.received.Load(),
		KernelTimeouts: c.kernelTimeouts.Load(), UnackedResponses: c.unacked.Load(), Dropped: c.dropped.Load()}
}

// Close unregisters the agents, closes the umad device (which stops the
// reader) and then the issm device, which clears the port's IsSM bit.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		var errs []error
		for _, id := range c.agents {
			b := binary.NativeEndian.AppendUint32(nil, id)
			if err := c.dev.Ioctl(ioctlUnregisterAgent, b); err != nil {
				c.log.Debug("unregistering umad agent", "agent", id, "error", err)
			}
		}
		if err := c.dev.Close(); err != nil {
			errs = append(errs, fmt.Errorf("umad: closing the umad device: %w", err))
		}
		<-c.readerDone
		if c.issm != nil {
			if err := c.issm.Close(); err != nil {
				errs = append(errs, fmt.Errorf("umad: closing the issm device: %w", err))
			}
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

func (c *Conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
