package umad

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/ibsm/ibsm/transport/smp"
)

// fakeKernel emulates one open umad file the way the kernel's
// drivers/infiniband/core/user_mad.c, mad.c and mad_rmpp.c treat it (Linux
// 6.x), closely enough that a Conn which survives it survives a real HCA:
//
//   - ioctls: ENABLE_PKEY only before the first registration; an agent id
//     is written back (ids start at 7 here, so a Conn that used its own
//     index instead of the id would show); QPN other than 0/1 is EINVAL, a
//     port without QP0 refuses SMP agents with EPROTONOSUPPORT, and each
//     agent gets a global MAD client id (hi_tid, < 2^24) of its own.
//   - write: every record goes on the file's send list. The upper 32 TID
//     bits of requests (never of responses) are replaced by the agent's
//     hi_tid. A second request with the same TID and class, or a second
//     response with the same TID and class to the same destination, is
//     refused with EINVAL while the first is on the list, whether or not it
//     has a timeout (is_duplicate). An agent id nobody registered is EIO.
//   - a request with a timeout leaves the list when its response arrives —
//     after the response is queued for read (ib_mad_complete_recv runs the
//     receive handler before the send handler) — or when the kernel's timer,
//     started at send completion, runs out of retries: then it leaves the
//     list first and an ETIMEDOUT record (the request's 24-byte header, TID
//     rewritten) is queued. A send that fails on the wire leaves the list
//     with no record and no response at all (failSilently).
//   - a response leaves the list at send completion; an RMPP response
//     (kernel RMPP agent, Active flag) once every segment is acknowledged.
//     A lost DATA segment or ACK costs one of the send's retries (reset
//     whenever an ACK makes progress); with none left the send is given up
//     and an ETIMEDOUT record with the response's header is queued.
//   - read: one record per read, ENOSPC (header and first segment copied,
//     record kept) when an RMPP message does not fit; EIO once the device
//     is gone (remove), before anything queued.
type fakeKernel struct {
	mu   sync.Mutex
	cond *sync.Cond

	queue      [][]byte // the file's recv_list, as records
	closed     bool     // our descriptor was closed
	dead       bool     // agents_dead: the device was removed
	pkey       bool     // IB_USER_MAD_ENABLE_PKEY issued
	regs       []regReq
	agents     map[uint32]*kAgent
	unreg      []uint32
	writes     [][]byte // accepted records, as the kernel holds them (TID rewritten)
	ioctls     []uint32
	nextID     uint32
	nextClient uint32
	sends      []*kSend // the file's send_list

	// Knobs; set before the Conn is used.
	regErr  map[uint8]error // registration failure by class
	noSMI   bool            // the port has no QP0 (a GSI-only device)
	sendErr error           // ib_post_send_mad fails with this
	// completion is how long after a write the send completes; a
	// request's response timer starts then.
	completion time.Duration
	// handlerLag is how long after a response has been queued for read
	// its request stays on the send list (the send handler runs after
	// the receive handler).
	handlerLag time.Duration
	// ackTimeout is how long an RMPP sender waits for an ACK before it
	// retries (the kernel waits 2 s for responses sent without a timeout).
	ackTimeout time.Duration
	// loseSegment reports whether one transmission of an RMPP DATA segment
	// (or the ACK that answers it) is lost. Called under k.mu.
	loseSegment func() bool
	// fabric is called, outside the lock, for every transmission of a
	// request: the write and each kernel retry. It answers with respond,
	// fails the send with failSilently, or does nothing (lost on the wire).
	fabric func(k *fakeKernel, s *kSend)

	// Outcomes.
	maxSMPs   int      // most SMP requests in flight (written, neither answered nor given up) at once
	delivered [][]byte // RMPP messages the requester received whole
	aborted   int      // RMPP sends given up
	rejected  int      // writes refused as duplicates
}

type kAgent struct {
	id    uint32
	hiTID uint32
	req   regReq
}

// kSend is one entry of the send list.
type kSend struct {
	hdr     Header
	mad     []byte // as the kernel holds it
	resp    bool
	retries int // kernel retries left
	timer   *time.Timer
	done    bool // answered or given up (ib_mark_mad_done)
	gone    bool // off the send list
}

func (s *kSend) tid() uint64    { return binary.BigEndian.Uint64(s.mad[8:]) }
func (s *kSend) attr() uint16   { return binary.BigEndian.Uint16(s.mad[16:]) }
func (s *kSend) isSMP() bool    { return s.mad[1] == smp.ClassSMPLID || s.mad[1] == smp.ClassSMPDR }
func (s *kSend) header() []byte { return append([]byte(nil), s.mad[:smp.HeaderLen]...) }

func newFakeKernel() *fakeKernel {
	k := &fakeKernel{
		nextID: 7, nextClient: 0x4a1c0, agents: map[uint32]*kAgent{}, regErr: map[uint8]error{},
		completion: time.Millisecond, handlerLag: time.Millisecond, ackTimeout: time.Millisecond,
	}
	k.cond = sync.NewCond(&k.mu)
	return k
}

func (k *fakeKernel) Ioctl(req uint32, arg []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ioctls = append(k.ioctls, req)
	switch req {
	case ioctlEnablePKey:
		if len(k.regs) > 0 {
			return syscall.EINVAL
		}
		k.pkey = true
	case ioctlRegisterAgent:
		if k.dead {
			return syscall.EPIPE
		}
		if len(arg) != regReqLen {
			return syscall.EFAULT
		}
		r, _ := decodeRegReq(arg)
		if r.QPN > 1 {
			return syscall.EINVAL
		}
		if err := k.regErr[r.MgmtClass]; err != nil {
			return err
		}
		if r.QPN == 0 && k.noSMI {
			return syscall.EPROTONOSUPPORT
		}
		r.ID = k.nextID
		k.nextID++
		k.nextClient++
		k.regs = append(k.regs, r)
		k.agents[r.ID] = &kAgent{id: r.ID, hiTID: k.nextClient, req: r}
		binary.NativeEndian.PutUint32(arg, r.ID)
	case ioctlUnregisterAgent:
		id := binary.NativeEndian.Uint32(arg)
		if k.dead || k.agents[id] == nil {
			return syscall.EINVAL
		}
		delete(k.agents, id)
		k.unreg = append(k.unreg, id)
	default:
		return syscall.ENOTTY
	}
	return nil
}

func (k *fakeKernel) Write(b []byte) (int, error) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return 0, os.ErrClosed
	}
	if len(b) < HeaderLen+rmppHeaderEnd || !k.pkey {
		k.mu.Unlock()
		return 0, syscall.EINVAL
	}
	var h Header
	_ = h.Decode(b)
	if h.AgentID >= 32 {
		k.mu.Unlock()
		return 0, syscall.EINVAL
	}
	a := k.agents[h.AgentID]
	if k.dead || a == nil {
		k.mu.Unlock()
		return 0, syscall.EIO
	}
	m := append([]byte(nil), b[HeaderLen:]...)
	rmpp := m[1] == smp.ClassSA && a.req.RMPPVersion != 0 && m[26]&smp.RMPPFlagActive != 0
	if !rmpp && len(m) > smp.MADLen {
		k.mu.Unlock()
		return 0, syscall.EINVAL // ib_create_send_mad: too long without RMPP
	}
	s := &kSend{hdr: h, mad: m, resp: isResponse(m[3]), retries: int(h.Retries)}
	if !s.resp {
		binary.BigEndian.PutUint64(m[8:], uint64(a.hiTID)<<32|binary.BigEndian.Uint64(m[8:])&0xffffffff)
	}
	if k.isDuplicate(s) {
		k.rejected++
		k.mu.Unlock()
		return 0, syscall.EINVAL
	}
	if k.sendErr != nil {
		err := k.sendErr
		k.mu.Unlock()
		return 0, err
	}
	k.sends = append(k.sends, s)
	rec := append(append([]byte(nil), b[:HeaderLen]...), m...)
	k.writes = append(k.writes, rec)
	smps := 0
	for _, x := range k.sends {
		if !x.resp && !x.done && x.isSMP() {
			smps++
		}
	}
	k.maxSMPs = max(k.maxSMPs, smps)
	switch {
	case s.resp && rmpp:
		go k.rmppSend(s)
	case s.resp || h.TimeoutMS == 0:
		time.AfterFunc(k.completion, func() { k.complete(s) })
	default:
		s.timer = time.AfterFunc(k.completion+time.Duration(h.TimeoutMS)*time.Millisecond, func() { k.expire(s) })
	}
	fabric := k.fabric
	k.mu.Unlock()
	if !s.resp && fabric != nil {
		fabric(k, s)
	}
	return len(b), nil
}

// isDuplicate is is_duplicate in user_mad.c. Caller holds k.mu.
func (k *fakeKernel) isDuplicate(n *kSend) bool {
	for _, s := range k.sends {
		if s.tid() != n.tid() || s.mad[1] != n.mad[1] {
			continue
		}
		if !n.resp {
			if !s.resp {
				return true
			}
			continue
		}
		if s.resp && sameDestination(&n.hdr, &s.hdr) {
			return true
		}
	}
	return false
}

func sameDestination(a, b *Header) bool {
	switch {
	case !a.GRHPresent && !b.GRHPresent:
		return a.LID == b.LID
	case a.GRHPresent && b.GRHPresent:
		return a.GID == b.GID
	}
	return false
}

// dequeue takes s off the send list. Caller holds k.mu.
func (k *fakeKernel) dequeue(s *kSend) {
	if s.gone {
		return
	}
	s.gone = true
	if s.timer != nil {
		s.timer.Stop()
	}
	k.sends = slices.DeleteFunc(k.sends, func(x *kSend) bool { return x == s })
	k.cond.Broadcast()
}

// complete is a successful send completion of something that waits for
// nothing more.
func (k *fakeKernel) complete(s *kSend) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s.done = true
	k.dequeue(s)
}

// expire is the request's response timer: a kernel retry re-sends the same
// TID; with none left the send leaves the list and ETIMEDOUT is queued.
func (k *fakeKernel) expire(s *kSend) {
	k.mu.Lock()
	if s.done || s.gone || k.dead {
		k.mu.Unlock()
		return
	}
	if s.retries > 0 {
		s.retries--
		s.timer = time.AfterFunc(k.completion+time.Duration(s.hdr.TimeoutMS)*time.Millisecond, func() { k.expire(s) })
		fabric := k.fabric
		k.mu.Unlock()
		if fabric != nil {
			fabric(k, s)
		}
		return
	}
	s.done = true
	k.dequeue(s)
	h := s.hdr
	h.Status = uint32(syscall.ETIMEDOUT)
	k.pushLocked(h, s.header())
	k.mu.Unlock()
}

// respond delivers the response to s's request after delay, from slid,
// the way the kernel does if the request is still waiting: the response is
// queued for read, and handlerLag later the request leaves the send list.
// A response to a request the kernel gave up on is dropped.
func (k *fakeKernel) respond(s *kSend, delay time.Duration, slid uint16, fill func(m []byte)) {
	time.AfterFunc(delay, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if s.done || s.gone || k.dead {
			return
		}
		s.done = true
		if s.timer != nil {
			s.timer.Stop()
		}
		m := append([]byte(nil), s.mad[:smp.MADLen]...)
		m[3] |= smp.MethodResponse
		if fill != nil {
			fill(m)
		}
		k.pushLocked(Header{AgentID: s.hdr.AgentID, Length: uint32(HeaderLen + len(m)), QPN: s.hdr.QPN, LID: slid}, m)
		time.AfterFunc(k.handlerLag, func() { k.complete(s) })
	})
}

// failSilently fails s's send on the wire: it leaves the send list and the
// agent hears nothing (send_handler queues a record only for
// IB_WC_RESP_TIMEOUT_ERR).
func (k *fakeKernel) failSilently(s *kSend) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s.done = true
	k.dequeue(s)
}

// rmppSend runs the kernel's RMPP sender for a response: segments go out
// one at a time (window 1); a lost segment or ACK costs a retry and an ACK
// timeout, an ACK that makes progress restores the retries.
func (k *fakeKernel) rmppSend(s *kSend) {
	data := len(s.mad) - saHeaderEnd
	segs := max(1, (data+saSegData-1)/saSegData)
	k.mu.Lock()
	maxRetries := s.retries
	k.mu.Unlock()
	left := maxRetries
	for seg := 1; seg <= segs; {
		k.mu.Lock()
		if k.dead || s.gone {
			k.mu.Unlock()
			return
		}
		lost := k.loseSegment != nil && k.loseSegment()
		if lost && left == 0 {
			s.done = true
			k.aborted++
			k.dequeue(s)
			h := s.hdr
			h.Status = uint32(syscall.ETIMEDOUT)
			k.pushLocked(h, s.header())
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		if lost {
			left--
			time.Sleep(k.ackTimeout)
			continue
		}
		seg++
		left = maxRetries
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !s.gone {
		s.done = true
		k.delivered = append(k.delivered, s.mad)
		k.dequeue(s)
	}
}

// remove is the device going away (ib_umad_kill_port): agents_dead is set,
// readers wake up to EIO, the agents' sends are cancelled without records.
func (k *fakeKernel) remove() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
	for _, s := range slices.Clone(k.sends) {
		s.done = true
		k.dequeue(s)
	}
	k.cond.Broadcast()
}

// push queues a record for read (what recv_handler or send_handler does).
func (k *fakeKernel) push(h Header, m []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pushLocked(h, m)
}

func (k *fakeKernel) pushLocked(h Header, m []byte) {
	if k.closed || k.dead {
		return
	}
	rec := make([]byte, HeaderLen+len(m))
	_ = h.EncodeTo(rec)
	copy(rec[HeaderLen:], m)
	k.queue = append(k.queue, rec)
	k.cond.Broadcast()
}

func (k *fakeKernel) pushRaw(rec []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.queue = append(k.queue, rec)
	k.cond.Broadcast()
}

func (k *fakeKernel) Read(b []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for len(k.queue) == 0 && !k.closed && !k.dead {
		k.cond.Wait()
	}
	if k.closed {
		return 0, fmt.Errorf("read /dev/infiniband/umad0: %w", os.ErrClosed)
	}
	if k.dead {
		return 0, &os.PathError{Op: "read", Path: "/dev/infiniband/umad0", Err: syscall.EIO}
	}
	rec := k.queue[0]
	if len(b) < len(rec) {
		if len(b) < HeaderLen+smp.MADLen || len(rec) <= HeaderLen+smp.MADLen {
			return 0, syscall.EINVAL
		}
		// Too small for a reassembled RMPP message: the header (whose
		// Length says what is needed) and the first segment are copied,
		// the message stays queued.
		copy(b, rec[:HeaderLen+smp.MADLen])
		return 0, syscall.ENOSPC
	}
	k.queue = k.queue[1:]
	return copy(b, rec), nil
}

func (k *fakeKernel) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return os.ErrClosed
	}
	k.closed = true
	for _, s := range slices.Clone(k.sends) {
		s.done = true
		k.dequeue(s)
	}
	k.cond.Broadcast()
	return nil
}

func (k *fakeKernel) written() [][]byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([][]byte(nil), k.writes...)
}

// onList reports how many sends are on the send list.
func (k *fakeKernel) onList() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.sends)
}

// waitIdle waits until the send list is empty (RMPP sends finish in the
// background) or d passes; it reports whether the list emptied.
func (k *fakeKernel) waitIdle(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if k.onList() == 0 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return k.onList() == 0
}

func (k *fakeKernel) hiTID(agent uint32) uint32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if a := k.agents[agent]; a != nil {
		return a.hiTID
	}
	return 0
}

type closeRecorder struct {
	mu     sync.Mutex
	closed int
}

func (c *closeRecorder) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed++
	return nil
}
