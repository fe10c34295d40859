package ibsim_test

import (
	"context"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestSendBatchDeliver: SendBatch writes every request of a batch (more
// than one system call's worth too) in order and stops at the first it
// cannot carry, saying which; Deliver hands over every answer, and the
// answers read before it was called first.
func TestSendBatchDeliver(t *testing.T) {
	sim := startSim(t)
	cases := []struct {
		name string
		n    int
		bad  int // index of a request with DLID 0, -1 none
	}{
		{"one", 1, -1},
		{"one sendmmsg", 64, -1},
		{"several", 300, -1},
		{"bad in the middle", 200, 130},
		{"bad first", 10, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := benchConn(t, sim)
			defer c.Close()
			ps := make([]transport.Packet, tc.n)
			for i := range ps {
				ps[i] = nodeInfoGet(t, benchPaths[i%len(benchPaths)], make([]byte, smp.MADLen))
				smp.PutTID(ps[i].MAD, uint64(i+1))
			}
			if tc.bad >= 0 {
				ps[tc.bad].DLID = 0
			}
			want := tc.n
			if tc.bad >= 0 {
				n, err := c.SendBatch(ps)
				if n != tc.bad || err == nil {
					t.Fatalf("SendBatch = %d, %v; want %d and the bad request's error", n, err, tc.bad)
				}
				rest, err := c.SendBatch(ps[tc.bad+1:])
				if err != nil || rest != tc.n-tc.bad-1 {
					t.Fatalf("SendBatch of the rest = %d, %v", rest, err)
				}
				want--
			} else if n, err := c.SendBatch(ps); n != tc.n || err != nil {
				t.Fatalf("SendBatch = %d, %v; want %d", n, err, tc.n)
			}
			// Some answers are queued for Recv before Deliver starts.
			time.Sleep(20 * time.Millisecond)
			got := map[uint32]bool{}
			all := make(chan struct{})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			go func() {
				<-all
				cancel()
			}()
			c.Deliver(ctx, func(p transport.Packet, err error) {
				if err != nil || smp.PeekMethod(p.MAD) != smp.MethodGetResp {
					t.Errorf("delivered %v, method %#x", err, smp.PeekMethod(p.MAD))
					return
				}
				got[uint32(smp.PeekTID(p.MAD))] = true
				if len(got) == want {
					close(all)
				}
			})
			if len(got) != want {
				t.Fatalf("%d answers delivered, want %d", len(got), want)
			}
			if tc.bad >= 0 && got[uint32(tc.bad+1)] {
				t.Fatalf("the request SendBatch refused was answered")
			}
			if st := c.Stats(); st.Sent-1 != uint64(want) { // Dial's probe
				t.Fatalf("%d sent, want %d", st.Sent-1, want)
			}
		})
	}
}
