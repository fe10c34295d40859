package transport

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRetryBackoff: once a destination has answered late twice, each
// unanswered retry to it doubles the next one's timeout, up to 4× the
// configured one; the Conn is told each attempt's timeout (umad hands it
// to the kernel), and the error names the whole wait. A destination that
// never answered late keeps the configured timeout on every attempt.
func TestRetryBackoff(t *testing.T) {
	base := 10 * time.Millisecond
	tests := []struct {
		name string
		slow bool
		want []time.Duration
	}{
		{"never late", false, []time.Duration{base, base, base, base, base}},
		{"answered late before", true, []time.Duration{base, 2 * base, 4 * base, 4 * base, 4 * base}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []time.Duration
			// In the slow case the first request's first attempt is
			// answered when its retry goes out: late, whatever the load.
			var first *Packet
			late := tc.slow
			f := newFake(func(f *fakeConn, p Packet) {
				mu.Lock()
				defer mu.Unlock()
				if late {
					if first == nil {
						first = &p
						return
					}
					late = false
					go f.respond(*first)
					return
				}
				got = append(got, p.Timeout)
			})
			tr := New(f, Options{Timeout: base, Retries: 4})
			defer tr.Close()
			for i := 0; tc.slow && i < slowLateness; i++ {
				mu.Lock()
				first, late = nil, true
				mu.Unlock()
				if _, err := tr.Do(context.Background(), request(0x01, 0x11, 4)); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			got = nil
			mu.Unlock()
			start := time.Now()
			_, err := tr.Do(context.Background(), request(0x01, 0x11, 4))
			took := time.Since(start)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != len(tc.want) {
				t.Fatalf("%d attempts %v, want %v", len(got), got, tc.want)
			}
			var total time.Duration
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Fatalf("attempt timeouts %v, want %v", got, tc.want)
				}
				total += tc.want[i]
			}
			if took < total {
				t.Fatalf("gave up after %v, before the attempts' %v", took, total)
			}
			if !strings.Contains(err.Error(), "5 attempts in "+total.String()) {
				t.Fatalf("error %q does not name the attempts and their total wait %v", err, total)
			}
			if n := pendingLen(tr); n != 0 {
				t.Fatalf("%d pending entries after Do", n)
			}
		})
	}
}

// TestBackoffSparesSlowResponder: a port that answers every request after
// 2.5 timeouts is asked three times for each of its first two requests;
// their late answers mark it slow, and the next request is asked twice (0,
// then after one timeout; the next would wait two).
func TestBackoffSparesSlowResponder(t *testing.T) {
	base := 100 * time.Millisecond // half a timeout of margin either way, on a loaded machine too
	var mu sync.Mutex
	sends := 0
	f := newFake(func(f *fakeConn, p Packet) {
		mu.Lock()
		sends++
		mu.Unlock()
		time.AfterFunc(5*base/2, func() { f.respond(p) })
	})
	tr := New(f, Options{Timeout: base, Retries: 3})
	defer tr.Close()
	for i, want := range []int{3, 3, 2} {
		mu.Lock()
		sends = 0
		mu.Unlock()
		if _, err := tr.Do(context.Background(), request(0x01, 0x11, 4)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * base) // later answers of this request come in
		mu.Lock()
		n := sends
		mu.Unlock()
		if n != want {
			t.Fatalf("request %d: %d sends before the answer, want %d", i+1, n, want)
		}
	}
}
