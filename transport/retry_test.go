package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Issue-17 regressions at the dispatcher: what a retry may and may not do
// when the attachment is a kernel that still holds earlier attempts.

func pendingLen(tr Transport) int {
	d := tr.(*Dispatcher)
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}

// TestRetryUsesFreshTID: no attempt reuses the TID of an earlier one (the
// kernel may still hold it), and the answer to an earlier attempt that
// arrives during a later one completes the request.
func TestRetryUsesFreshTID(t *testing.T) {
	var mu sync.Mutex
	var tids []uint32
	var first Packet
	f := newFake(func(f *fakeConn, p Packet) {
		mu.Lock()
		defer mu.Unlock()
		tids = append(tids, low32(p.MAD))
		switch len(tids) {
		case 1:
			first = p
		case 2: // the first attempt's answer turns up now
			go f.respond(first)
		}
	})
	tr := New(f, Options{Timeout: 30 * time.Millisecond, Retries: 3})
	defer tr.Close()
	resp, err := tr.Do(context.Background(), request(0x01, 0x11, 4))
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, resp, 4)
	mu.Lock()
	defer mu.Unlock()
	if len(tids) != 2 || tids[0] == tids[1] {
		t.Fatalf("attempt TIDs %#x: want two distinct", tids)
	}
	if n := pendingLen(tr); n != 0 {
		t.Fatalf("%d pending entries after Do", n)
	}
}

// TestRetrySendFailureKeepsAnswer: the retry's write fails (the kernel
// refused it) while the first attempt's answer is on its way; the request
// completes with that answer.
func TestRetrySendFailureKeepsAnswer(t *testing.T) {
	var n atomic.Int32
	var first atomic.Pointer[Packet]
	c := &failingConn{fakeConn: newFake(nil)}
	c.fail = func(p Packet) error {
		switch n.Add(1) {
		case 1:
			first.Store(&p)
			return nil
		case 2:
			c.respond(*first.Load())
			return syscall.EINVAL
		}
		return nil
	}
	tr := New(c, Options{Timeout: 30 * time.Millisecond, Retries: 2})
	defer tr.Close()
	resp, err := tr.Do(context.Background(), request(0x01, 0x11, 8))
	if err != nil {
		t.Fatalf("Do = %v; the first attempt's answer arrived", err)
	}
	checkAnswer(t, resp, 8)
}

// TestTimeoutIsErrTimeoutWithoutLeaks: whatever the retries' writes do,
// a request nobody answers ends with ErrTimeout and leaves nothing pending.
func TestTimeoutIsErrTimeoutWithoutLeaks(t *testing.T) {
	var n atomic.Int32
	c := &failingConn{fakeConn: newFake(nil)}
	c.fail = func(Packet) error {
		if n.Add(1)%2 == 0 {
			return syscall.EINVAL
		}
		return nil
	}
	tr := New(c, Options{Timeout: 10 * time.Millisecond, Retries: 3})
	defer tr.Close()
	for i := 0; i < 3; i++ {
		_, err := tr.Do(context.Background(), request(0x01, 0x11, uint32(i)))
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("Do = %v, want ErrTimeout", err)
		}
	}
	if n := pendingLen(tr); n != 0 {
		t.Fatalf("%d pending entries leaked", n)
	}
	if st := tr.Stats(); st.Timeouts != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// failingConn is a fakeConn whose Send can fail after it was handed the
// packet (the write reached the kernel, or did not).
type failingConn struct {
	*fakeConn
	fail func(p Packet) error
}

func (c *failingConn) Send(p Packet) error {
	p.MAD = append([]byte(nil), p.MAD...)
	if err := c.fail(p); err != nil {
		return err
	}
	return c.fakeConn.Send(p)
}

// lostConn is a fakeConn whose Recv reports the attachment lost once lose
// is closed.
type lostConn struct {
	*fakeConn
	lose chan struct{}
}

func (c *lostConn) Recv(ctx context.Context) (Packet, error) {
	select {
	case <-c.lose:
		return Packet{}, fmt.Errorf("fake: read: %w: %w", ErrConnLost, syscall.EIO)
	default:
	}
	select {
	case p := <-c.in:
		return p, nil
	case <-c.lose:
		return Packet{}, fmt.Errorf("fake: read: %w: %w", ErrConnLost, syscall.EIO)
	case <-ctx.Done():
		return Packet{}, ctx.Err()
	case <-c.closed:
		return Packet{}, ErrClosed
	}
}

// TestConnLostEndsTransport: a Conn that reports ErrConnLost ends the
// transport: the pending request returns at once, Done closes, Err says
// why, Unsolicited closes and later calls fail the same way.
func TestConnLostEndsTransport(t *testing.T) {
	c := &lostConn{fakeConn: newFake(nil), lose: make(chan struct{})}
	tr := New(c, Options{Timeout: time.Hour})
	defer tr.Close()
	d := tr.(*Dispatcher)
	if d.Err() != nil {
		t.Fatalf("Err = %v before anything happened", d.Err())
	}
	errc := make(chan error, 1)
	go func() { _, err := tr.Do(context.Background(), request(0x01, 0x11, 1)); errc <- err }()
	time.Sleep(10 * time.Millisecond)
	close(c.lose)
	var err error
	select {
	case err = <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("pending Do did not return")
	}
	if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrConnLost) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Do = %v", err)
	}
	select {
	case <-d.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed")
	}
	if !errors.Is(d.Err(), ErrConnLost) {
		t.Fatalf("Err = %v", d.Err())
	}
	if _, ok := <-tr.Unsolicited(); ok {
		t.Fatal("Unsolicited not closed")
	}
	if _, err := tr.Do(context.Background(), request(0x01, 0x11, 2)); !errors.Is(err, ErrConnLost) {
		t.Fatalf("later Do = %v", err)
	}
	if err := tr.Send(request(0x81, 0x11, 3)); !errors.Is(err, ErrConnLost) {
		t.Fatalf("later Send = %v", err)
	}
	if n := pendingLen(tr); n != 0 {
		t.Fatalf("%d pending entries leaked", n)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(d.Err(), ErrConnLost) {
		t.Fatalf("Err after Close = %v, want the loss still", d.Err())
	}
}

// TestCloseSetsErr: Done and Err after a plain Close.
func TestCloseSetsErr(t *testing.T) {
	tr := New(newFake(nil), Options{})
	d := tr.(*Dispatcher)
	tr.Close()
	<-d.Done()
	if !errors.Is(d.Err(), ErrClosed) || errors.Is(d.Err(), ErrConnLost) {
		t.Fatalf("Err = %v", d.Err())
	}
}

// TestStaleBounceIgnored: a bounce of an earlier attempt arriving during a
// later one does not end the later one.
func TestStaleBounceIgnored(t *testing.T) {
	var mu sync.Mutex
	var sent []Packet
	f := newFake(func(f *fakeConn, p Packet) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, p)
		if len(sent) == 2 { // attempt 1 timed out; now it comes back, then attempt 2 is answered
			f.bounces <- sent[0]
			go func() {
				time.Sleep(20 * time.Millisecond)
				f.respond(p)
			}()
		}
	})
	tr := New(f, Options{Timeout: 100 * time.Millisecond, Retries: 3})
	defer tr.Close()
	resp, err := tr.Do(context.Background(), request(0x01, 0x11, 6))
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, resp, 6)
	if st := tr.Stats(); st.Retries != 1 {
		t.Fatalf("stats %+v: the stale bounce ended the second attempt", st)
	}
}
