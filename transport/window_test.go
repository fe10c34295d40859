package transport

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// to makes req a one-hop directed-route SMP out of port.
func to(req Packet, port byte) Packet {
	req.MAD[drHopCount] = 1
	req.MAD[drInitPath+1] = port
	return req
}

// TestWindowShrinksUnderLoss: a peer that drops what arrives while it
// already serves 6 requests (a switch without flow control) drives the
// window down from its ceiling of 64, and every request still completes.
func TestWindowShrinksUnderLoss(t *testing.T) {
	var serving atomic.Int32
	f := newFake(func(f *fakeConn, p Packet) {
		if serving.Add(1) > 6 {
			serving.Add(-1)
			return // dropped
		}
		go func() {
			time.Sleep(time.Millisecond)
			serving.Add(-1)
			f.respond(p)
		}()
	})
	tr := New(f, Options{Window: 64, Timeout: 20 * time.Millisecond, Retries: 20}).(*Dispatcher)
	defer tr.Close()
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if _, err := tr.Do(context.Background(), to(request(0x01, 0x11, uint32(i)), byte(1+g%8))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if w := tr.Window(); w >= 64 {
		t.Errorf("window still %d after %d retries", w, tr.Stats().Retries)
	}
	t.Logf("window %d of 64 after 1,280 requests, %d retries", tr.Window(), tr.Stats().Retries)
}

// TestWindowDeadDestination: a destination that never answers shrinks
// only its own window, to windowFloor requests; the overall window stays
// open and requests elsewhere keep flowing; once one of its requests
// failed on every attempt, the next get one attempt instead of all.
func TestWindowDeadDestination(t *testing.T) {
	f := newFake(func(f *fakeConn, p Packet) {
		if p.MAD[drInitPath+1] == 1 {
			return // the dead switch
		}
		go func() { time.Sleep(time.Millisecond); f.respond(p) }()
	})
	tr := New(f, Options{Window: 8, Timeout: 30 * time.Millisecond, Retries: 1}).(*Dispatcher)
	defer tr.Close()
	var wg sync.WaitGroup
	deadStart := time.Now()
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				if _, err := tr.Do(context.Background(), to(request(0x01, 0x11, uint32(i)), 1)); !errors.Is(err, ErrTimeout) {
					t.Errorf("dead destination: %v", err)
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the dead switch's window has been cut
	start := time.Now()
	var live sync.WaitGroup
	for g := 0; g < 8; g++ {
		live.Add(1)
		go func() {
			defer live.Done()
			for i := 0; i < 50; i++ {
				if _, err := tr.Do(context.Background(), to(request(0x01, 0x11, uint32(i)), 2)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	live.Wait()
	took := time.Since(start)
	wg.Wait()
	// 64 requests of 2 × 30 ms, windowFloor at a time, would take 1 s; of
	// one attempt, 0.5 s.
	if d := time.Since(deadStart); d > 2*time.Second {
		t.Errorf("64 requests to a dead switch took %v: they should get one attempt while it is down", d)
	}
	win := tr.lim.Load().win
	win.mu.Lock()
	dead := win.dests[destOf(to(request(0x01, 0x11, 0), 1))]
	all := win.all.limit()
	win.mu.Unlock()
	if dead == nil || dead.w.limit() != windowFloor {
		t.Errorf("dead destination's window: %+v, want %d", dead, windowFloor)
	}
	if all != 8 {
		t.Errorf("overall window %d, want 8: one dead switch must not throttle the rest", all)
	}
	// 400 answers of 1 ms over 7 free slots take about 60 ms; a window
	// the dead switch could fill would hold them 60 ms per slot and turn.
	if took > time.Second {
		t.Errorf("400 requests beside a dead switch took %v", took)
	}
	t.Logf("400 requests beside a dead switch took %v", took)
}

func TestDestOf(t *testing.T) {
	a, b := to(request(0x01, 0x11, 0), 3), to(request(0x01, 0x11, 7), 3)
	c := to(request(0x01, 0x11, 0), 4)
	if destOf(a) != destOf(b) || destOf(a) == destOf(c) {
		t.Error("requests to one port must share a destination, to another must not")
	}
	lid := Packet{DLID: 9, MAD: make([]byte, 256)}
	lid.MAD[1] = classSMPLID
	if destOf(lid) != (destKey{lid: 9}) {
		t.Errorf("LID-routed: %+v", destOf(lid))
	}
}

// TestWindowQueueBehindStuckHead: a waiter whose destination stays full
// heads the queue while hundreds of others are granted past it; the queue
// keeps its order, does not grow with the grants, and the stuck waiter is
// granted once its destination frees.
func TestWindowQueueBehindStuckHead(t *testing.T) {
	ctx, done := context.Background(), make(chan struct{})
	a, b := destKey{lid: 1}, destKey{lid: 2}
	w := newWindow(2)
	if _, err := w.acquire(ctx, done, a); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.dests[a].w.cur = 1 // a's window cut to one: its next request waits
	w.mu.Unlock()
	if _, err := w.acquire(ctx, done, b); err != nil {
		t.Fatal(err)
	}
	waitFor := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; {
			w.mu.Lock()
			n := 0
			for _, x := range w.waiters[w.whead:] {
				if x != nil {
					n++
				}
			}
			w.mu.Unlock()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d waiting, want %d", n, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	stuck := make(chan error, 1)
	go func() { _, err := w.acquire(ctx, done, a); stuck <- err }()
	waitFor(1)
	for i := range 300 {
		got := make(chan error, 1)
		go func() { _, err := w.acquire(ctx, done, b); got <- err }()
		waitFor(2)
		w.release(b, true, false)
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			w.mu.Lock()
			n := len(w.waiters)
			w.mu.Unlock()
			if n > 8 {
				t.Fatalf("after %d grants past a stuck head the queue holds %d slots", i+1, n)
			}
		}
	}
	select {
	case err := <-stuck:
		t.Fatalf("stuck waiter granted while its destination was full: %v", err)
	default:
	}
	w.release(a, true, false)
	if err := <-stuck; err != nil {
		t.Fatal(err)
	}
}
