package transport

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestSetLimits: a new window bounds the requests that start after it
// (SIGHUP's mad_window), a new retry count and timeout apply to the next
// request, and OnMAD hears requests, re-sends and timeouts with their attribute.
func TestSetLimits(t *testing.T) {
	f := newFake(func(f *fakeConn, p Packet) {
		go func() {
			time.Sleep(2 * time.Millisecond)
			f.respond(p)
		}()
	})
	tr := New(f, Options{Window: 2, Timeout: 5 * time.Second}).(*Dispatcher)
	defer tr.Close()
	burst := func() int {
		f.mu.Lock()
		f.maxOut = 0
		f.mu.Unlock()
		var wg sync.WaitGroup
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func(mod uint32) {
				defer wg.Done()
				if _, err := tr.Do(context.Background(), request(0x01, 0x11, mod)); err != nil {
					t.Error(err)
				}
			}(uint32(i))
		}
		wg.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.maxOut
	}
	if got := burst(); got != 2 {
		t.Errorf("window 2: %d outstanding at most", got)
	}
	tr.SetLimits(8, 5*time.Second, 3)
	if w, _, _ := tr.Limits(); w != 8 {
		t.Errorf("Limits window %d, want 8", w)
	}
	if got := burst(); got <= 2 || got > 8 {
		t.Errorf("window 8: %d outstanding at most, want 3..8", got)
	}

	var mu sync.Mutex
	retried := map[uint16]int{}
	lossy := newFake(nil) // answers nothing
	tl := New(lossy, Options{Timeout: time.Millisecond, Retries: 1, OnMAD: func(ev MADEvent, _ uint8, attr uint16) {
		mu.Lock()
		retried[attr*10+uint16(ev)]++
		mu.Unlock()
	}}).(*Dispatcher)
	defer tl.Close()
	try := func() uint64 {
		before := tl.Stats().Sent
		if _, err := tl.Do(context.Background(), request(0x01, 0x15, 0)); !errors.Is(err, ErrTimeout) {
			t.Fatalf("unanswered request: %v", err)
		}
		return tl.Stats().Sent - before
	}
	if n := try(); n != 2 {
		t.Errorf("retries 1: %d attempts", n)
	}
	tl.SetLimits(0, time.Millisecond, 4)
	if n := try(); n != 5 {
		t.Errorf("retries 4 after SetLimits: %d attempts", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if r, s, to := retried[0x15*10+uint16(MADRequest)], retried[0x15*10+uint16(MADRetry)], retried[0x15*10+uint16(MADTimeout)]; r != 2 || s != 1+4 || to != 2 {
		t.Errorf("OnMAD for attribute 0x15: %d requests, %d re-sends, %d timeouts; want 2, 5, 2", r, s, to)
	}
}
