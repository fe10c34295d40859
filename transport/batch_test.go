package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDoAll: DoAll ends every request exactly once, with its own answer,
// through lost first attempts, bounces, a dead destination, failing builds,
// a cancelled context and a closed transport, and never has more than the
// window in flight.
func TestDoAll(t *testing.T) {
	const n = 600
	type outcome struct {
		calls int
		err   error
		mod   uint32
	}
	cases := []struct {
		name string
		// onSend answers (or not) one attempt; first is whether it is the
		// request's first attempt.
		onSend func(f *fakeConn, p Packet, first bool)
		// buildErr, if set, fails the build of request i.
		buildErr func(i int) error
		// stop ends the run early after this many ends: "cancel" or "close".
		stopAfter int
		stop      string
		check     func(t *testing.T, i int, o outcome, st Stats)
		// refuse, if set, makes the Conn refuse to send a request.
		refuse func(p Packet) bool
	}{
		{"all answered", func(f *fakeConn, p Packet, _ bool) { f.respond(p) }, nil, 0, "",
			func(t *testing.T, i int, o outcome, st Stats) {
				if o.err != nil {
					t.Fatalf("request %d: %v", i, o.err)
				}
			}, nil},
		{"every third first attempt lost", func(f *fakeConn, p Packet, first bool) {
			if first && mod(p)%3 == 0 {
				return
			}
			f.respond(p)
		}, nil, 0, "", func(t *testing.T, i int, o outcome, st Stats) {
			if o.err != nil {
				t.Fatalf("request %d: %v", i, o.err)
			}
			if st.Retries != n/3 {
				t.Fatalf("%d retries, want %d", st.Retries, n/3)
			}
		}, nil},
		{"every fifth first attempt bounced", func(f *fakeConn, p Packet, first bool) {
			if first && mod(p)%5 == 0 {
				f.bounces <- p
				return
			}
			f.respond(p)
		}, nil, 0, "", func(t *testing.T, i int, o outcome, st Stats) {
			if o.err != nil {
				t.Fatalf("request %d: %v", i, o.err)
			}
		}, nil},
		{"dead destination", func(f *fakeConn, p Packet, _ bool) {
			if mod(p)%100 == 7 {
				return
			}
			f.respond(p)
		}, nil, 0, "", func(t *testing.T, i int, o outcome, st Stats) {
			if i%100 != 7 {
				if o.err != nil {
					t.Fatalf("request %d: %v", i, o.err)
				}
				return
			}
			if !errors.Is(o.err, ErrTimeout) || !strings.Contains(o.err.Error(), "no answer after") {
				t.Fatalf("request %d to the dead destination: %v", i, o.err)
			}
		}, nil},
		{"builds failing", func(f *fakeConn, p Packet, _ bool) { f.respond(p) }, func(i int) error {
			if i%50 == 0 {
				return errors.New("no path")
			}
			return nil
		}, 0, "", func(t *testing.T, i int, o outcome, st Stats) {
			if (i%50 == 0) != (o.err != nil) {
				t.Fatalf("request %d: %v", i, o.err)
			}
		}, nil},
		{"every seventh refused by the Conn", func(f *fakeConn, p Packet, _ bool) { f.respond(p) }, nil, 0, "",
			func(t *testing.T, i int, o outcome, st Stats) {
				if (i%7 == 0) != errors.Is(o.err, errRefused) || (i%7 != 0 && o.err != nil) {
					t.Fatalf("request %d: %v", i, o.err)
				}
			}, func(p Packet) bool { return mod(p)%7 == 0 }},
		{"cancelled", func(f *fakeConn, p Packet, _ bool) {
			go func() { time.Sleep(100 * time.Microsecond); f.respond(p) }()
		}, nil, 100, "cancel", func(t *testing.T, i int, o outcome, st Stats) {
			if o.err != nil && !errors.Is(o.err, context.Canceled) {
				t.Fatalf("request %d: %v", i, o.err)
			}
		}, nil},
		{"closed", func(f *fakeConn, p Packet, _ bool) {
			go func() { time.Sleep(100 * time.Microsecond); f.respond(p) }()
		}, nil, 100, "close", func(t *testing.T, i int, o outcome, st Stats) {
			if o.err != nil && !errors.Is(o.err, ErrClosed) {
				t.Fatalf("request %d: %v", i, o.err)
			}
		}, nil},
	}
	for _, tc := range cases {
		for _, fl := range flavours {
			t.Run(tc.name+"/"+fl.name, func(t *testing.T) {
				var mu sync.Mutex
				seen := map[uint32]bool{}
				f := newFake(func(f *fakeConn, p Packet) {
					m := mod(p)
					mu.Lock()
					first := !seen[m]
					seen[m] = true
					mu.Unlock()
					// Spread over destinations: port = mod % 100, so the dead
					// one is a destination of its own.
					tc.onSend(f, p, first)
				})
				c := fl.wrap(&sendConn{fakeConn: f, refuse: tc.refuse})
				tr := New(c, Options{Window: 8, Timeout: 20 * time.Millisecond, Retries: 2}).(*Dispatcher)
				defer tr.Close()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				out := make([]outcome, n)
				ended := 0
				tr.DoAll(ctx, n, func(i int, buf []byte) (Packet, error) {
					if tc.buildErr != nil {
						if err := tc.buildErr(i); err != nil {
							return Packet{}, err
						}
					}
					return drSet(i, 100, buf), nil
				}, func(i int, resp Packet, err error) {
					o := &out[i]
					o.calls++
					o.err = err
					if err == nil {
						o.mod = binary.BigEndian.Uint32(resp.MAD[64:])
					}
					if ended++; ended == tc.stopAfter {
						switch tc.stop {
						case "cancel":
							cancel()
						case "close":
							tr.Close()
						}
					}
				})
				st := tr.Stats()
				for i, o := range out {
					if o.calls != 1 {
						t.Fatalf("request %d ended %d times", i, o.calls)
					}
					if o.err == nil && o.mod != uint32(i) {
						t.Fatalf("request %d got the answer to %d", i, o.mod)
					}
					tc.check(t, i, o, st)
				}
				// The fake counts a lost attempt as outstanding for good.
				if lossless := tc.name == "all answered" || tc.name == "builds failing"; lossless && f.maxOut > 8 {
					t.Fatalf("%d requests in flight, window 8", f.maxOut)
				}
				if b, ok := c.(*batchConn); ok && b.largest < 2 {
					t.Fatalf("largest batch %d: the window's first 8 requests go out in one", b.largest)
				}
			})
		}
	}
}

var errRefused = errors.New("refused")

// sendConn is a fakeConn whose Send refuses what refuse says.
type sendConn struct {
	*fakeConn
	refuse func(p Packet) bool
}

func (c *sendConn) Send(p Packet) error {
	if c.refuse != nil && c.refuse(p) {
		return errRefused
	}
	return c.fakeConn.Send(p)
}

// batchConn takes requests in batches (BatchSender) and hands packets to
// the Dispatcher from its own goroutine (Deliverer).
type batchConn struct {
	*sendConn
	largest int
}

func (c *batchConn) SendBatch(ps []Packet) (int, error) {
	c.largest = max(c.largest, len(ps)) // DoAll's goroutine only
	for i, p := range ps {
		if err := c.Send(p); err != nil {
			return i, err
		}
	}
	return len(ps), nil
}

func (c *batchConn) Deliver(ctx context.Context, fn func(Packet, error)) {
	for {
		p, err := c.Recv(ctx)
		if err != nil && asBounce(err) == nil {
			return
		}
		fn(p, err)
	}
}

// flavours are the Conns DoAll is tested over: one that sends one request
// at a time and is read by Recv, one that takes batches and delivers.
var flavours = []struct {
	name string
	wrap func(c *sendConn) Conn
}{
	{"one by one", func(c *sendConn) Conn { return c }},
	{"batched", func(c *sendConn) Conn { return &batchConn{sendConn: c} }},
}

func mod(p Packet) uint32 { return binary.BigEndian.Uint32(p.MAD[20:]) }

// drSet is DoAll's request i written into buf: a Set with modifier i, one
// hop out of port i%dests, so requests spread over dests destinations.
func drSet(i, dests int, buf []byte) Packet {
	req := request(0x02, 0x19, uint32(i))
	req.MAD[drHopCount], req.MAD[drInitPath+1] = 1, byte(i%dests)
	copy(buf, req.MAD)
	req.MAD = buf
	return req
}

// recyclingConn is a fakeConn that takes answer buffers back.
type recyclingConn struct {
	*fakeConn
	mu    sync.Mutex
	seen  map[*byte]bool // answers done has seen
	back  map[*byte]int  // buffers given back
	early int            // given back before done saw them
}

func (r *recyclingConn) Recycle(mad []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seen[&mad[0]] {
		r.early++
	}
	r.back[&mad[0]]++
}

// TestDoAllRecycles: a Conn that is a Recycler gets back the buffer of
// every answer DoAll handed to done, once, after done returned, and none
// of a request that got no answer.
func TestDoAllRecycles(t *testing.T) {
	const n = 300
	r := &recyclingConn{seen: map[*byte]bool{}, back: map[*byte]int{}}
	r.fakeConn = newFake(func(f *fakeConn, p Packet) {
		if mod(p)%10 != 3 { // destination 3 is dead
			f.respond(p)
		}
	})
	tr := New(r, Options{Window: 8, Timeout: 10 * time.Millisecond, Retries: 1}).(*Dispatcher)
	defer tr.Close()
	answered := 0
	tr.DoAll(context.Background(), n, func(i int, buf []byte) (Packet, error) {
		return drSet(i, 10, buf), nil
	}, func(i int, resp Packet, err error) {
		if (err == nil) != (i%10 != 3) {
			t.Errorf("request %d: %v", i, err)
		}
		if err != nil {
			return
		}
		answered++
		r.mu.Lock()
		r.seen[&resp.MAD[0]] = true
		r.mu.Unlock()
	})
	if answered != n-n/10 || len(r.back) != answered || r.early != 0 {
		t.Fatalf("%d answered, %d buffers given back (%d before done saw them)", answered, len(r.back), r.early)
	}
	for _, k := range r.back {
		if k != 1 {
			t.Fatalf("a buffer given back %d times", k)
		}
	}
}
