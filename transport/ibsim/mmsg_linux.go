//go:build linux && (amd64 || arm64)

package ibsim

import (
	"net"
	"syscall"
	"unsafe"

	"github.com/ibsm/ibsm/transport"
)

// mmsghdr is the kernel's struct mmsghdr (recvmmsg(2), sendmmsg(2)) on
// 64-bit Linux.
type mmsghdr struct {
	hdr syscall.Msghdr
	n   uint32
	_   [4]byte
}

// datagrams moves several datagrams per system call on a connected
// socket: recvmmsg drains what ibsim queued for us at once, sendmmsg
// writes a batch of requests. The syscall, not the kernel's datagram
// work, was a third of the host's CPU per SMP (two of them per SMP).
type datagrams struct {
	rc   syscall.RawConn
	bufs [][]byte
	iovs []syscall.Iovec
	msgs []mmsghdr
}

// newDatagrams prepares n buffers of size bytes on c.
func newDatagrams(c *net.UnixConn, n, size int) (*datagrams, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	d := &datagrams{rc: rc, bufs: make([][]byte, n), iovs: make([]syscall.Iovec, n), msgs: make([]mmsghdr, n)}
	mem := make([]byte, n*size)
	for i := range d.bufs {
		d.bufs[i] = mem[i*size : (i+1)*size : (i+1)*size]
		d.iovs[i].Base = &d.bufs[i][0]
		d.iovs[i].SetLen(size)
		d.msgs[i].hdr.Iov = &d.iovs[i]
		d.msgs[i].hdr.Iovlen = 1
	}
	return d, nil
}

// read waits for at least one datagram and returns how many it read;
// datagram i is bufs[i][:msgs[i].n]. Errors are the socket's (net.ErrClosed
// once closed).
func (d *datagrams) read() (int, error) {
	var n int
	var errno syscall.Errno
	err := d.rc.Read(func(fd uintptr) bool {
		r, _, e := syscall.Syscall6(syscall.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&d.msgs[0])), uintptr(len(d.msgs)), syscall.MSG_DONTWAIT, 0, 0)
		if e == syscall.EAGAIN || e == syscall.EINTR {
			return false // the poller wakes us when there is more
		}
		n, errno = int(r), e
		return true
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, errno
	}
	return n, nil
}

// size is datagram i's length.
func (d *datagrams) size(i int) int { return int(d.msgs[i].n) }

// write sends bufs[:k] (their iovecs say how long each is) and returns how
// many went out before an error.
func (d *datagrams) write(k int) (int, error) {
	sent := 0
	var errno syscall.Errno
	err := d.rc.Write(func(fd uintptr) bool {
		for sent < k {
			r, _, e := syscall.Syscall6(sysSendmmsg, fd, uintptr(unsafe.Pointer(&d.msgs[sent])), uintptr(k-sent), syscall.MSG_DONTWAIT, 0, 0)
			switch e {
			case 0:
				sent += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // ibsim's queue is full: wait (the write deadline bounds it)
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err != nil {
		return sent, err
	}
	if errno != 0 {
		return sent, errno
	}
	return sent, nil
}

// sendBatch writes ps with sendmmsg, writeBatch datagrams per call.
func (c *Conn) sendBatch(ps []transport.Packet) (int, error) {
	dg, _ := c.batches.Get().(*datagrams)
	if dg == nil {
		var err error
		if dg, err = newDatagrams(c.data, writeBatch, RequestLen); err != nil {
			return 0, err
		}
	}
	defer c.batches.Put(dg)
	done := 0
	for done < len(ps) {
		k := 0
		var bad error
		for ; k < len(dg.bufs) && done+k < len(ps); k++ {
			p := ps[done+k]
			h, err := header(p)
			if err == nil {
				err = MarshalRequest(dg.bufs[k], &h, p.MAD)
			}
			if err != nil {
				bad = err
				break
			}
		}
		if k > 0 {
			c.writeDeadline()
			n, err := dg.write(k)
			done += n
			if err := c.wrote(n, err); err != nil {
				return done, err
			}
		}
		if bad != nil {
			return done, bad
		}
	}
	return done, nil
}

// writeBatch is how many datagrams one sendmmsg carries at most.
const writeBatch = 64
