package umad

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// fakeKernel emulates the umad file of drivers/infiniband/core/user_mad.c
// closely enough to drive a Conn: ioctls (ENABLE_PKEY must come first,
// agent ids are written back), one record per read with ENOSPC for short
// buffers, and a send list that rejects a second request with the same
// TID and class while the first is outstanding.
type fakeKernel struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   [][]byte // records for Read
	closed  bool
	pkey    bool
	regs    []regReq
	unreg   []uint32
	writes  [][]byte
	ioctls  []uint32
	nextID  uint32
	sendErr error
	regErr  map[uint8]error // registration failure by class
	// outstanding requests, as the kernel's send list: TID (with the
	// agent's hi_tid) and class.
	outstanding map[[2]uint64]bool
	// answer, if set, is called for every written request (outside the
	// lock) and may queue records.
	answer func(k *fakeKernel, h Header, mad []byte)
}

func newFakeKernel() *fakeKernel {
	k := &fakeKernel{nextID: 7, outstanding: map[[2]uint64]bool{}, regErr: map[uint8]error{}}
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
		if len(arg) != regReqLen {
			return syscall.EFAULT
		}
		r, _ := decodeRegReq(arg)
		if err := k.regErr[r.MgmtClass]; err != nil {
			return err
		}
		r.ID = k.nextID
		k.nextID++
		k.regs = append(k.regs, r)
		binary.NativeEndian.PutUint32(arg, r.ID)
	case ioctlUnregisterAgent:
		k.unreg = append(k.unreg, binary.NativeEndian.Uint32(arg))
	default:
		return syscall.ENOTTY
	}
	return nil
}

func (k *fakeKernel) hiTID(agent uint32) uint64 { return uint64(agent+1) << 32 }

func (k *fakeKernel) Write(b []byte) (int, error) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return 0, os.ErrClosed
	}
	if k.sendErr != nil {
		k.mu.Unlock()
		return 0, k.sendErr
	}
	if !k.pkey || len(b) < HeaderLen+36 {
		k.mu.Unlock()
		return 0, syscall.EINVAL
	}
	rec := append([]byte(nil), b...)
	var h Header
	_ = h.Decode(rec)
	m := rec[HeaderLen:]
	if !isResponse(m[3]) {
		// The kernel stamps its agent's hi_tid into requests.
		tid := binary.BigEndian.Uint64(m[8:])&0xffffffff | k.hiTID(h.AgentID)
		binary.BigEndian.PutUint64(m[8:], tid)
		key := [2]uint64{tid, uint64(m[1])}
		if h.TimeoutMS > 0 {
			if k.outstanding[key] {
				k.mu.Unlock()
				return 0, syscall.EINVAL // is_duplicate
			}
			k.outstanding[key] = true
		}
	}
	k.writes = append(k.writes, rec)
	answer := k.answer
	k.mu.Unlock()
	if answer != nil {
		answer(k, h, m)
	}
	return len(b), nil
}

// respond queues a response record for request mad (as the kernel does
// when the reply arrives: it completes the send and queues the MAD).
func (k *fakeKernel) respond(req Header, reqMAD []byte, slid uint16, fill func(m []byte)) {
	m := append([]byte(nil), reqMAD[:256]...)
	m[3] |= 0x80
	if fill != nil {
		fill(m)
	}
	h := Header{AgentID: req.AgentID, Length: uint32(HeaderLen + len(m)), QPN: req.QPN, LID: slid}
	k.mu.Lock()
	delete(k.outstanding, [2]uint64{binary.BigEndian.Uint64(m[8:]), uint64(m[1])})
	k.mu.Unlock()
	k.push(h, m)
}

// timeout queues the ETIMEDOUT record for request mad after d: the
// request's 24-byte header, as send_handler does.
func (k *fakeKernel) timeout(req Header, reqMAD []byte, d time.Duration) {
	hdr := append([]byte(nil), reqMAD[:24]...)
	time.AfterFunc(d, func() {
		k.mu.Lock()
		delete(k.outstanding, [2]uint64{binary.BigEndian.Uint64(hdr[8:]), uint64(hdr[1])})
		k.mu.Unlock()
		req.Status = uint32(syscall.ETIMEDOUT)
		k.push(req, hdr)
	})
}

func (k *fakeKernel) push(h Header, m []byte) {
	rec := make([]byte, HeaderLen+len(m))
	_ = h.EncodeTo(rec)
	copy(rec[HeaderLen:], m)
	k.pushRaw(rec)
}

func (k *fakeKernel) pushRaw(rec []byte) {
	k.mu.Lock()
	k.queue = append(k.queue, rec)
	k.mu.Unlock()
	k.cond.Broadcast()
}

func (k *fakeKernel) Read(b []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for len(k.queue) == 0 && !k.closed {
		k.cond.Wait()
	}
	if k.closed {
		return 0, fmt.Errorf("read /dev/infiniband/umad0: %w", os.ErrClosed)
	}
	rec := k.queue[0]
	if len(b) < len(rec) {
		if len(b) < HeaderLen+256 {
			return 0, syscall.EINVAL
		}
		// Too small for a reassembled RMPP message: the header (whose
		// Length says what is needed) and the first segment are copied,
		// the message stays queued.
		copy(b, rec[:HeaderLen+256])
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
	k.cond.Broadcast()
	return nil
}

func (k *fakeKernel) written() [][]byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([][]byte(nil), k.writes...)
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
