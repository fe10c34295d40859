package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeConn is a scripted peer. Every request sent goes to onSend, which
// decides what to answer through deliver. It tracks how many distinct
// requests (by low 32 TID bits) are outstanding, i.e. sent and not yet
// answered, to check the window.
type fakeConn struct {
	in      chan Packet
	bounces chan Packet
	closed  chan struct{}
	once    sync.Once

	onSend func(f *fakeConn, p Packet)

	mu          sync.Mutex
	outstanding map[uint32]bool
	maxOut      int
	sends       int
}

func newFake(onSend func(f *fakeConn, p Packet)) *fakeConn {
	return &fakeConn{in: make(chan Packet, 4096), bounces: make(chan Packet, 64), closed: make(chan struct{}), onSend: onSend, outstanding: map[uint32]bool{}}
}

func (f *fakeConn) Send(p Packet) error {
	select {
	case <-f.closed:
		return ErrClosed
	default:
	}
	// Copy: the transport owns req.MAD and may rewrite it.
	p.MAD = append([]byte(nil), p.MAD...)
	if p.MAD[3]&0x80 == 0 {
		f.mu.Lock()
		f.sends++
		f.outstanding[low32(p.MAD)] = true
		if n := len(f.outstanding); n > f.maxOut {
			f.maxOut = n
		}
		f.mu.Unlock()
	}
	if f.onSend != nil {
		f.onSend(f, p)
	}
	return nil
}

func (f *fakeConn) Recv(ctx context.Context) (Packet, error) {
	select {
	case p := <-f.in:
		return p, nil
	case p := <-f.bounces:
		return Packet{}, &BounceError{Packet: p, Reason: "no route"}
	case <-ctx.Done():
		return Packet{}, ctx.Err()
	case <-f.closed:
		return Packet{}, ErrClosed
	}
}

func (f *fakeConn) Close() error { f.once.Do(func() { close(f.closed) }); return nil }

// respond turns req into its response, as a peer that rewrites TID bits
// 63..48 (like ibsim) would, and queues it for Recv.
func (f *fakeConn) respond(req Packet) {
	f.mu.Lock()
	delete(f.outstanding, low32(req.MAD))
	f.mu.Unlock()
	f.in <- response(req)
}

func response(req Packet) Packet {
	m := append([]byte(nil), req.MAD...)
	m[3] |= 0x80
	binary.BigEndian.PutUint16(m[8:], 0xABCD) // peer-owned top TID bits
	// Echo the request's AttrMod into the data so tests can check that
	// each caller got its own answer.
	copy(m[64:68], m[20:24])
	return Packet{DLID: req.SLID, SLID: req.DLID, MAD: m}
}

func low32(m []byte) uint32 { return uint32(binary.BigEndian.Uint64(m[8:])) }

func request(method uint8, attr uint16, mod uint32) Packet {
	m := make([]byte, 256)
	m[0], m[1], m[2], m[3] = 1, 0x81, 1, method
	binary.BigEndian.PutUint16(m[16:], attr)
	binary.BigEndian.PutUint32(m[20:], mod)
	return Packet{DLID: 0xFFFF, SLID: 0xFFFF, MAD: m}
}

func checkAnswer(t *testing.T, resp Packet, mod uint32) {
	t.Helper()
	if got := binary.BigEndian.Uint32(resp.MAD[64:]); got != mod {
		t.Fatalf("caller with AttrMod %d got the answer for %d", mod, got)
	}
	if resp.MAD[3]&0x80 == 0 {
		t.Fatal("response without R bit")
	}
}

func TestDoOutOfOrder(t *testing.T) {
	const n = 8
	var mu sync.Mutex
	var held []Packet
	f := newFake(func(f *fakeConn, p Packet) {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, p)
		if len(held) == n { // answer all, last first
			for i := n - 1; i >= 0; i-- {
				f.respond(held[i])
			}
		}
	})
	tr := New(f, Options{Window: n, Timeout: 5 * time.Second})
	defer tr.Close()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(mod uint32) {
			defer wg.Done()
			resp, err := tr.Do(context.Background(), request(0x01, 0x11, mod))
			if err != nil {
				t.Error(err)
				return
			}
			checkAnswer(t, resp, mod)
		}(uint32(i))
	}
	wg.Wait()
	st := tr.Stats()
	if st.Gets != n || st.Sent != n || st.Received != n || st.Retries != 0 || st.Unmatched != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDoRetryAfterLoss(t *testing.T) {
	// Requests are told apart by AttrMod; the first attempt of each is lost.
	seen := map[uint32][]uint32{} // AttrMod -> attempt TIDs
	var mu sync.Mutex
	f := newFake(func(f *fakeConn, p Packet) {
		mod := binary.BigEndian.Uint32(p.MAD[20:])
		mu.Lock()
		seen[mod] = append(seen[mod], low32(p.MAD))
		first := len(seen[mod]) == 1
		mu.Unlock()
		if !first {
			f.respond(p)
		}
	})
	tr := New(f, Options{Timeout: 50 * time.Millisecond, Retries: 2})
	defer tr.Close()
	for i := uint32(0); i < 5; i++ {
		resp, err := tr.Do(context.Background(), request(0x02, 0x15, i))
		if err != nil {
			t.Fatal(err)
		}
		checkAnswer(t, resp, i)
	}
	st := tr.Stats()
	if st.Sets != 5 || st.Gets != 0 || st.Retries != 5 || st.Sent != 10 || st.Timeouts != 0 {
		t.Fatalf("stats %+v", st)
	}
	for mod, tids := range seen {
		if len(tids) != 2 || tids[0] == tids[1] {
			t.Fatalf("request %d sent with TIDs %#x, want 2 attempts with distinct TIDs", mod, tids)
		}
	}
}

func TestDoTimeoutAndLateResponse(t *testing.T) {
	var last atomic.Pointer[Packet]
	f := newFake(func(f *fakeConn, p Packet) { last.Store(&p) })
	tr := New(f, Options{Timeout: 50 * time.Millisecond, Retries: NoRetries})
	defer tr.Close()
	_, err := tr.Do(context.Background(), request(0x01, 0x11, 1))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want ErrTimeout", err)
	}
	// The answer arrives after the caller gave up: it must be counted and
	// dropped, and must not complete the next request.
	f.respond(*last.Load())
	f.respond(*last.Load()) // and a duplicate
	var wg sync.WaitGroup
	wg.Add(1)
	f.onSend = func(f *fakeConn, p Packet) {
		defer wg.Done()
		f.respond(p)
	}
	resp, err := tr.Do(context.Background(), request(0x01, 0x11, 2))
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, resp, 2)
	wg.Wait()
	st := tr.Stats()
	if st.Timeouts != 1 || st.Unmatched != 2 || st.Sent != 2 || st.Received != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBounce(t *testing.T) {
	var n atomic.Int32
	f := newFake(func(f *fakeConn, p Packet) {
		if n.Add(1) == 1 {
			f.bounces <- p // the first attempt comes straight back
			return
		}
		f.respond(p)
	})
	// An hour-long timeout proves bounces end attempts without waiting.
	tr := New(f, Options{Timeout: time.Hour, Retries: 2})
	defer tr.Close()
	resp, err := tr.Do(context.Background(), request(0x01, 0x11, 9))
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, resp, 9)
	if st := tr.Stats(); st.Retries != 1 || st.Sent != 2 || st.Timeouts != 0 {
		t.Fatalf("stats %+v", st)
	}

	f.onSend = func(f *fakeConn, p Packet) { f.bounces <- p }
	_, err = tr.Do(context.Background(), request(0x01, 0x11, 10))
	if !errors.Is(err, ErrUndeliverable) {
		t.Fatalf("err %v, want ErrUndeliverable", err)
	}
	d := tr.(*Dispatcher)
	if st := tr.Stats(); st.Retries != 3 || st.Sent != 5 || st.Timeouts != 0 || d.Bounced() != 4 {
		t.Fatalf("stats %+v bounced %d", st, d.Bounced())
	}
}

func TestDuplicateResponseNotDelivered(t *testing.T) {
	f := newFake(func(f *fakeConn, p Packet) {
		f.respond(p)
		f.respond(p)
	})
	tr := New(f, Options{Timeout: time.Second})
	for i := uint32(0); i < 10; i++ {
		resp, err := tr.Do(context.Background(), request(0x01, 0x11, i))
		if err != nil {
			t.Fatal(err)
		}
		checkAnswer(t, resp, i)
	}
	defer tr.Close()
	deadline := time.Now().Add(5 * time.Second)
	for tr.Stats().Received < 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if st := tr.Stats(); st.Received != 20 || st.Unmatched != 10 {
		t.Fatalf("every duplicate must be received and unmatched: %+v", st)
	}
}

// A forged or stray response with the right TID but not answering what
// was asked is dropped; the genuine answer still completes the request.
func TestMismatchedResponseIsUnmatched(t *testing.T) {
	dr := func() Packet {
		p := request(0x01, 0x11, 7)
		p.MAD[7] = 2                                 // hop count
		p.MAD[128], p.MAD[129], p.MAD[130] = 0, 3, 5 // initial path
		return p
	}
	for _, tc := range []struct {
		name  string
		req   func() Packet
		forge func(m []byte)
	}{
		{"other attribute", func() Packet { return request(0x01, 0x11, 7) }, func(m []byte) { m[17] = 0x15 }},
		{"other class", func() Packet { return request(0x01, 0x11, 7) }, func(m []byte) { m[1] = 0x03 }},
		{"SMP with another attribute modifier", func() Packet { return request(0x01, 0x11, 7) }, func(m []byte) { m[23] = 8 }},
		{"DR SMP with another hop count", dr, func(m []byte) { m[7] = 1 }},
		{"DR SMP from another path", dr, func(m []byte) { m[130] = 6 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(func(f *fakeConn, p Packet) {
				bad := response(p)
				tc.forge(bad.MAD)
				f.in <- bad
				f.respond(p)
			})
			tr := New(f, Options{Timeout: time.Second})
			defer tr.Close()
			want := tc.req()
			resp, err := tr.Do(context.Background(), want)
			if err != nil {
				t.Fatal(err)
			}
			checkAnswer(t, resp, 7)
			// Do wrote the attempt's TID into want: the genuine answer is
			// exactly what the peer made of it.
			if string(resp.MAD) != string(response(want).MAD) {
				t.Fatal("got the forged response")
			}
			if u := tr.Stats().Unmatched; u != 1 {
				t.Fatalf("Unmatched = %d, want the forgery counted", u)
			}
		})
	}
}

// TIDs start at a random value: two dispatchers do not send the same one.
func TestTIDStartUnpredictable(t *testing.T) {
	tids := map[uint32]bool{}
	for range 8 {
		var got uint32
		f := newFake(func(f *fakeConn, p Packet) { got = low32(p.MAD); f.respond(p) })
		tr := New(f, Options{Timeout: time.Second})
		if _, err := tr.Do(context.Background(), request(0x01, 0x11, 1)); err != nil {
			t.Fatal(err)
		}
		tr.Close()
		tids[got] = true
	}
	if len(tids) < 7 {
		t.Fatalf("8 dispatchers used only %d distinct first TIDs", len(tids))
	}
}

func TestWindowRespected(t *testing.T) {
	const window, n = 4, 200
	f := newFake(func(f *fakeConn, p Packet) {
		go func() { // answer later, in no particular order
			time.Sleep(time.Duration(low32(p.MAD)%3) * time.Millisecond)
			f.respond(p)
		}()
	})
	tr := New(f, Options{Window: window, Timeout: 5 * time.Second})
	defer tr.Close()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(mod uint32) {
			defer wg.Done()
			resp, err := tr.Do(context.Background(), request(0x01, 0x11, mod))
			if err != nil {
				t.Error(err)
				return
			}
			checkAnswer(t, resp, mod)
		}(uint32(i))
	}
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxOut > window {
		t.Fatalf("%d requests outstanding, window is %d", f.maxOut, window)
	}
	if f.maxOut < 2 {
		t.Fatalf("max outstanding %d: requests were not pipelined", f.maxOut)
	}
}

func TestContextCancel(t *testing.T) {
	f := newFake(nil) // never answers
	tr := New(f, Options{Window: 1, Timeout: time.Hour})
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 2)
	go func() { _, err := tr.Do(ctx, request(0x01, 0x11, 1)); errc <- err }()
	// The second caller waits for the window slot, not for a response.
	go func() { _, err := tr.Do(ctx, request(0x01, 0x11, 2)); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	for i := 0; i < 2; i++ {
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Do did not return after cancel")
		}
	}
	// The window slot was released: another request can go out.
	f.onSend = func(f *fakeConn, p Packet) { f.respond(p) }
	if _, err := tr.Do(context.Background(), request(0x01, 0x11, 3)); err != nil {
		t.Fatal(err)
	}
}

func TestClosePending(t *testing.T) {
	f := newFake(nil)
	tr := New(f, Options{Window: 2, Timeout: time.Hour})
	errc := make(chan error, 5)
	for i := 0; i < 5; i++ { // 2 in flight, 3 waiting for the window
		go func() { _, err := tr.Do(context.Background(), request(0x01, 0x11, 1)); errc <- err }()
	}
	time.Sleep(20 * time.Millisecond)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		select {
		case err := <-errc:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("err %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Do did not return after Close")
		}
	}
	if _, err := tr.Do(context.Background(), request(0x01, 0x11, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
	if err := tr.Send(request(0x81, 0x11, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if _, ok := <-tr.Unsolicited(); ok {
		t.Fatal("Unsolicited not closed")
	}
	if err := tr.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestUnsolicited(t *testing.T) {
	f := newFake(func(f *fakeConn, p Packet) { f.respond(p) })
	tr := New(f, Options{UnsolicitedBuffer: 2, Timeout: time.Second})
	defer tr.Close()
	trap := request(0x05, 0x0002, 0) // Trap(Notice), TID 0 as ibsim sends it
	trap.MAD[1] = 0x01
	for i := 0; i < 5; i++ {
		f.in <- trap
	}
	// The receiver must not block on the full queue: a request still
	// completes while nobody reads Unsolicited.
	if _, err := tr.Do(context.Background(), request(0x01, 0x11, 1)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		p := <-tr.Unsolicited()
		if p.MAD[3] != 0x05 {
			t.Fatalf("unsolicited method %#x", p.MAD[3])
		}
	}
	if got := tr.(*Dispatcher).UnsolicitedDropped(); got != 3 {
		t.Fatalf("dropped %d, want 3", got)
	}
	if st := tr.Stats(); st.Received != 6 || st.Unmatched != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBadRequests(t *testing.T) {
	tr := New(newFake(nil), Options{})
	defer tr.Close()
	if _, err := tr.Do(context.Background(), Packet{MAD: make([]byte, 10)}); err == nil {
		t.Error("short MAD accepted")
	}
	if _, err := tr.Do(context.Background(), request(0x81, 0x11, 0)); err == nil {
		t.Error("response method accepted by Do")
	}
}

func TestConcurrentMany(t *testing.T) {
	// Random loss with retries, many goroutines; run with -race.
	var n atomic.Uint64
	f := newFake(func(f *fakeConn, p Packet) {
		if n.Add(1)%7 == 0 {
			return // lost
		}
		f.respond(p)
	})
	// Generous retries: a loaded CI machine must not turn scheduling delays
	// into failures.
	tr := New(f, Options{Window: 16, Timeout: 20 * time.Millisecond, Retries: 10})
	defer tr.Close()
	workers, per := 32, 200
	if testing.Short() {
		per = 50 // the same interleavings, a quarter of the timeouts to wait out
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				mod := uint32(w*per + i)
				method := uint8(0x01)
				if i%2 == 1 {
					method = 0x02
				}
				resp, err := tr.Do(context.Background(), request(method, 0x19, mod))
				if err != nil {
					t.Error(err)
					return
				}
				checkAnswer(t, resp, mod)
			}
		}(w)
	}
	wg.Wait()
	st := tr.Stats()
	if st.Gets != uint64(workers*per/2) || st.Sets != uint64(workers*per/2) || st.Timeouts != 0 {
		t.Fatalf("stats %+v", st)
	}
	if st.Sent != uint64(workers*per)+st.Retries {
		t.Fatalf("Sent %d != requests %d + retries %d", st.Sent, workers*per, st.Retries)
	}
}

// echoConn answers every request immediately from a ring of preallocated
// buffers (far more than the window), so the benchmark measures only the
// dispatcher's own allocations.
type echoConn struct {
	in   chan Packet
	ring [1024][256]byte
	next atomic.Uint32
}

func (e *echoConn) Send(p Packet) error {
	b := e.ring[e.next.Add(1)%uint32(len(e.ring))][:]
	copy(b, p.MAD)
	b[3] |= 0x80
	e.in <- Packet{MAD: b}
	return nil
}
func (e *echoConn) Recv(ctx context.Context) (Packet, error) {
	select {
	case p := <-e.in:
		return p, nil
	case <-ctx.Done():
		return Packet{}, ctx.Err()
	}
}
func (e *echoConn) Close() error { return nil }

func BenchmarkDo(b *testing.B) {
	// crowded: far more callers than the window, as when a sweep fans
	// millions of LFT Sets out over hundreds of goroutines.
	for _, c := range []struct {
		name string
		par  int
	}{{"few", 4}, {"crowded", 128}} {
		b.Run(c.name, func(b *testing.B) { benchDo(b, c.par) })
	}
}

func benchDo(b *testing.B, par int) {
	e := &echoConn{in: make(chan Packet, 64)}
	tr := New(e, Options{Window: 16, Timeout: time.Second})
	defer tr.Close()
	b.ReportAllocs()
	b.SetParallelism(par)
	b.RunParallel(func(pb *testing.PB) {
		req := request(0x01, 0x11, 0)
		for pb.Next() {
			if _, err := tr.Do(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
