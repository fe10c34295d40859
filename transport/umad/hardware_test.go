package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// The tests in this file are the issue-17 regressions: each drives the
// Conn and the real dispatcher against the fake kernel where it behaves as
// user_mad.c/mad.c do and today's transport did not expect.

// TestResponseAtTheRetryEdge (problem 1): the response to the first
// attempt arrives just after the transport's timer fired but before the
// kernel's (which starts at send completion), and the kernel releases the
// request from its send list only after it has queued the response. A
// retry written in that window with the same TID is refused with EINVAL;
// the request must still complete with the response that arrived.
//
// The kernel's own timer is set far past the response (a long send
// completion), so that on a loaded machine (-race, other jobs) a late
// timer callback cannot expire the request before the response is queued:
// that would be a lost answer, not the edge under test.
func TestResponseAtTheRetryEdge(t *testing.T) {
	const timeout = 50 * time.Millisecond
	k := newFakeKernel()
	k.completion = 200 * time.Millisecond // the kernel's timer runs until 250ms
	k.handlerLag = 200 * time.Millisecond // the request stays on the list until 260ms
	var n atomic.Int32
	k.fabric = func(k *fakeKernel, s *kSend) {
		if n.Add(1) == 1 {
			k.respond(s, 60*time.Millisecond, smp.PermissiveLID, func(m []byte) { m[64] = 0x5a })
		}
	}
	c, _ := openFake(t, k, Options{Timeout: timeout})
	tr := transport.New(c, transport.Options{Timeout: timeout, Retries: 2})
	defer tr.Close()
	resp, err := tr.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: mad(256, smp.ClassSMPDR, smp.MethodGet, 0)})
	if err != nil {
		t.Fatalf("Do = %v; the response had arrived", err)
	}
	if resp.MAD[64] != 0x5a {
		t.Fatalf("response data %#x", resp.MAD[64])
	}
	k.mu.Lock()
	rejected := k.rejected
	k.mu.Unlock()
	if rejected != 0 {
		t.Fatalf("the kernel refused %d writes as duplicate TIDs", rejected)
	}
}

// TestSilentSendFailure (problem 1): a send that fails on the wire leaves
// the kernel's send list with no record and no response. The request must
// end with transport.ErrTimeout after its attempts, and nothing may stay
// claimed: the same TID can be written again at once.
func TestSilentSendFailure(t *testing.T) {
	const timeout = 30 * time.Millisecond
	k := newFakeKernel()
	k.fabric = func(k *fakeKernel, s *kSend) { k.failSilently(s) }
	c, _ := openFake(t, k, Options{Timeout: timeout})
	tr := transport.New(c, transport.Options{Timeout: timeout, Retries: 1})
	defer tr.Close()
	req := mad(256, smp.ClassSMPDR, smp.MethodGet, 0)
	_, err := tr.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: req})
	if !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("Do = %v, want ErrTimeout", err)
	}
	if w := len(k.written()); w != 2 {
		t.Fatalf("%d writes, want 2 attempts", w)
	}
	// Nothing in the Conn still waits for the kernel to let go of the
	// TID the last attempt used: the kernel already has.
	k.fabric = nil
	if err := c.Send(transport.Packet{DLID: smp.PermissiveLID, MAD: req}); err != nil {
		t.Fatalf("re-sending the last attempt's TID: %v", err)
	}
}

// TestRetriesNeverReuseAHeldTID (problem 1): no attempt is written with a
// TID the kernel still holds, so the kernel never refuses one; lost
// responses, late responses and kernel timeouts mixed.
func TestRetriesNeverReuseAHeldTID(t *testing.T) {
	const timeout = 20 * time.Millisecond
	k := newFakeKernel()
	k.completion = 5 * time.Millisecond
	var n atomic.Int32
	k.fabric = func(k *fakeKernel, s *kSend) {
		switch n.Add(1) % 4 {
		case 0: // lost
		case 1:
			k.respond(s, 0, smp.PermissiveLID, nil)
		case 2: // late: after the transport's timer, before the kernel's
			k.respond(s, timeout+2*time.Millisecond, smp.PermissiveLID, nil)
		case 3:
			k.failSilently(s)
		}
	}
	c, _ := openFake(t, k, Options{Timeout: timeout})
	tr := transport.New(c, transport.Options{Window: 4, Timeout: timeout, Retries: 3})
	defer tr.Close()
	var wg sync.WaitGroup
	var other atomic.Int32
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				_, err := tr.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: mad(256, smp.ClassSMPDR, smp.MethodGet, 0)})
				if err != nil && !errors.Is(err, transport.ErrTimeout) {
					other.Add(1)
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.rejected != 0 || other.Load() != 0 {
		t.Fatalf("%d writes refused as duplicates, %d requests failed with something other than a timeout", k.rejected, other.Load())
	}
}

// TestSAAnswerSurvivesLostSegment (problem 2): one lost RMPP segment (or
// its ACK) must not abort a multi-MAD SA answer; the kernel retries it if
// the send asked for retries.
func TestSAAnswerSurvivesLostSegment(t *testing.T) {
	k := newFakeKernel()
	var n atomic.Int32
	k.loseSegment = func() bool { return n.Add(1) == 2 } // the second transmission
	c, _ := openFake(t, k, Options{})
	resp := mad(saHeaderEnd+3*saSegData, smp.ClassSA, smp.MethodGetTableResp, 0x0003000000000042)
	if err := c.Send(transport.Packet{DLID: 0x33, QP: 1, MAD: resp}); err != nil {
		t.Fatal(err)
	}
	if !k.waitIdle(5 * time.Second) {
		t.Fatal("the RMPP send never finished")
	}
	k.mu.Lock()
	delivered, aborted := len(k.delivered), k.aborted
	k.mu.Unlock()
	if delivered != 1 || aborted != 0 {
		t.Fatalf("delivered %d, aborted %d: one lost segment aborted the SA answer", delivered, aborted)
	}
	var h Header
	_ = h.Decode(k.written()[0])
	if h.Retries < 3 {
		t.Fatalf("SA answer sent with %d kernel retries, want at least 3", h.Retries)
	}
}

// TestDefaultWindowSuitsSwitches (problem 3): with the default options at
// most 4 SMPs are in flight, as OpenSM's max_wire_smps; switch management
// traffic has no flow control.
func TestDefaultWindowSuitsSwitches(t *testing.T) {
	k := newFakeKernel()
	k.fabric = func(k *fakeKernel, s *kSend) { k.respond(s, 2*time.Millisecond, smp.PermissiveLID, nil) }
	c, _ := openFake(t, k, Options{Timeout: time.Second})
	tr := transport.New(c, transport.Options{Timeout: time.Second})
	defer tr.Close()
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := tr.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: mad(256, smp.ClassSMPDR, smp.MethodGet, 0)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.maxSMPs > 4 {
		t.Fatalf("%d SMPs in flight with the default window; want at most 4", k.maxSMPs)
	}
}

// TestDeviceRemovalEndsTransport (problem 4): after the HCA is removed the
// kernel answers every read with EIO. The transport must end: a request
// waiting for an answer returns at once with an error that says so (and is
// ErrClosed for callers that stop on it), Unsolicited closes, and later
// requests fail the same way instead of the reader retrying forever.
func TestDeviceRemovalEndsTransport(t *testing.T) {
	k := newFakeKernel()
	c, _ := openFake(t, k, Options{Timeout: time.Hour})
	tr := transport.New(c, transport.Options{Timeout: time.Hour})
	defer tr.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := tr.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: mad(256, smp.ClassSMPDR, smp.MethodGet, 0)})
		errc <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(k.written()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	k.remove()
	var err error
	select {
	case err = <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("a request waiting for an answer did not return after the device was removed")
	}
	if !errors.Is(err, transport.ErrClosed) || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("Do = %v, want ErrClosed wrapping EIO and saying the device was removed", err)
	}
	select {
	case _, ok := <-tr.Unsolicited():
		if ok {
			t.Fatal("unexpected unsolicited packet")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Unsolicited not closed after the device was removed")
	}
	_, err = tr.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: mad(256, smp.ClassSMPDR, smp.MethodGet, 0)})
	if !errors.Is(err, transport.ErrClosed) || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("Do after removal = %v", err)
	}
	// What the SM selects on to report the loss and exit.
	d := tr.(*transport.Dispatcher)
	select {
	case <-d.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed")
	}
	if err := d.Err(); !errors.Is(err, transport.ErrConnLost) || !strings.Contains(err.Error(), "/dev/infiniband/umad0") {
		t.Fatalf("Err = %v", err)
	}
	t.Logf("the SM reports: %v", d.Err())
}

// TestErrorHints (problem 5): errors name what the kernel meant.
func TestErrorHints(t *testing.T) {
	k := newFakeKernel()
	k.noSMI = true
	_, err := newConn(k, nil, Options{})
	if !errors.Is(err, syscall.EPROTONOSUPPORT) || !strings.Contains(err.Error(), "QP0") || strings.Contains(err.Error(), "opensm") {
		t.Fatalf("registration on a port without QP0: %v", err)
	}

	// A second request with a TID the kernel still holds: refused at once,
	// and the error says why.
	k = newFakeKernel()
	c, _ := openFake(t, k, Options{Timeout: time.Hour})
	req := mad(256, smp.ClassSMPLID, smp.MethodGet, 0x77)
	if err := c.Send(transport.Packet{DLID: 4, MAD: req}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Send(transport.Packet{DLID: 4, MAD: req}) }()
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a duplicate TID blocked Send")
	}
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "TID") || !strings.Contains(err.Error(), "send list") {
		t.Fatalf("duplicate request: %v", err)
	}

	// A write after removal.
	k.remove()
	err = c.Send(transport.Packet{DLID: 4, MAD: mad(256, smp.ClassSMPLID, smp.MethodGet, 0x78)})
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("write after removal: %v", err)
	}
}

// TestKernelTIDRewrite (problem 5): the kernel replaces the whole upper 32
// TID bits of requests with its MAD client id and leaves responses alone;
// matching on the low 32 bits survives it.
func TestKernelTIDRewrite(t *testing.T) {
	k := newFakeKernel()
	k.fabric = func(k *fakeKernel, s *kSend) { k.respond(s, 0, 5, nil) }
	c, _ := openFake(t, k, Options{Timeout: time.Second})
	tr := transport.New(c, transport.Options{Timeout: time.Second})
	defer tr.Close()
	req := mad(256, smp.ClassSMPLID, smp.MethodGet, 0)
	resp, err := tr.Do(context.Background(), transport.Packet{DLID: 5, MAD: req})
	if err != nil {
		t.Fatal(err)
	}
	got := binary.BigEndian.Uint64(resp.MAD[8:])
	if got>>32 != uint64(k.hiTID(c.agents[agentSMPLID])) || uint32(got) != uint32(binary.BigEndian.Uint64(req[8:])) {
		t.Fatalf("response TID %#x", got)
	}
	answer := mad(256, smp.ClassSMPLID, smp.MethodGetResp, 0xdeadbeef00000001)
	if err := tr.Send(transport.Packet{DLID: 6, MAD: answer}); err != nil {
		t.Fatal(err)
	}
	w := k.written()
	if tid := binary.BigEndian.Uint64(w[len(w)-1][HeaderLen+8:]); tid != 0xdeadbeef00000001 {
		t.Fatalf("response TID rewritten to %#x", tid)
	}
}

// TestSAAnswerGivenUp: an SA answer whose segments keep getting lost is
// given up after ResponseRetries; the kernel's ETIMEDOUT record for it
// (the response's header) is counted apart from request timeouts.
func TestSAAnswerGivenUp(t *testing.T) {
	k := newFakeKernel()
	var n atomic.Int32
	k.loseSegment = func() bool { n.Add(1); return true }
	c, _ := openFake(t, k, Options{})
	resp := mad(saHeaderEnd+2*saSegData, smp.ClassSA, smp.MethodGetTableResp, 0x0003000000000043)
	if err := c.Send(transport.Packet{DLID: 0x34, QP: 1, MAD: resp}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().UnackedResponses == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if s := c.Stats(); s.UnackedResponses != 1 || s.KernelTimeouts != 0 || s.Dropped != 0 {
		t.Fatalf("Stats = %+v, want one unacknowledged response", s)
	}
	if got := n.Load(); got != ResponseRetries+1 {
		t.Fatalf("%d transmissions of the first segment, want %d", got, ResponseRetries+1)
	}
}
