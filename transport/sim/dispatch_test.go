package sim

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestWithDispatcher runs the fabric under the real Transport: concurrent
// Do calls match their responses, lost SMPs time out, traps arrive on
// Unsolicited.
func TestWithDispatcher(t *testing.T) {
	h := newHarness(t)
	h.programRoutes()
	tr := transport.New(h.c, transport.Options{Window: 8, Timeout: 20 * time.Millisecond, Retries: transport.NoRetries})
	defer tr.Close()
	ctx := context.Background()
	paths := map[uint64][]uint8{gSw1: {1}, gSw2: {1, 3}, gSw3: {1, 3, 5}, gH4: {1, 3, 5, 2}, gH3: {1, 3, 1}}
	var wg sync.WaitGroup
	for guid, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				s, _ := smp.NewDRGet(smp.AttrNodeInfo, 0, path)
				buf, _ := s.Encode()
				resp, err := tr.Do(ctx, transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf})
				if err != nil {
					t.Error(err)
					return
				}
				r, _ := smp.Decode(resp.MAD)
				if ni := nodeInfo(t, r); ni.NodeGUID != guid {
					t.Errorf("path %v answered by %#x, want %#x", path, ni.NodeGUID, guid)
					return
				}
			}
		}()
	}
	wg.Wait()
	s, _ := smp.NewDRGet(smp.AttrNodeInfo, 0, []uint8{1, 7})
	buf, _ := s.Encode()
	if _, err := tr.Do(ctx, transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf}); !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("SMP to an unconnected port: %v, want timeout", err)
	}
	if err := h.fab.LinkDown(gSw3, 2); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-tr.Unsolicited():
		if smp.PeekMethod(p.MAD) != smp.MethodTrap || smp.PeekAttrID(p.MAD) != smp.AttrNotice {
			t.Fatalf("unsolicited %#x/%#x", smp.PeekMethod(p.MAD), smp.PeekAttrID(p.MAD))
		}
	case <-time.After(time.Second):
		t.Fatal("no trap on Unsolicited")
	}
}

// nodeInfoGet is a directed-route NodeInfo Get to sw1 with TID tid.
func nodeInfoGet(t *testing.T, tid uint64) transport.Packet {
	t.Helper()
	s, err := smp.NewDRGet(smp.AttrNodeInfo, 0, []uint8{1})
	if err != nil {
		t.Fatal(err)
	}
	s.TID = tid
	buf, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf}
}

// TestDeliver: while Deliver runs, an answer reaches fn before Send
// returns, on the sender's goroutine, and none is queued for Recv; what
// was queued before Deliver goes to fn first; once Deliver returned,
// answers are queued for Recv again.
func TestDeliver(t *testing.T) {
	h := newHarness(t)
	dl := h.c.(transport.Deliverer)
	send := func(tid uint64) {
		t.Helper()
		if err := h.c.Send(nodeInfoGet(t, tid)); err != nil {
			t.Fatal(err)
		}
	}
	tidOf := func(p transport.Packet) uint64 {
		r, err := smp.Decode(p.MAD)
		if err != nil {
			t.Fatal(err)
		}
		return r.TID
	}
	send(1) // queued: nobody delivers yet
	var mu sync.Mutex
	var got []uint64
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		dl.Deliver(ctx, func(p transport.Packet, err error) {
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, tidOf(p))
			mu.Unlock()
		})
	}()
	seen := func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]uint64(nil), got...)
	}
	for deadline := time.Now().Add(5 * time.Second); len(seen()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the answer queued before Deliver never reached fn")
		}
	}
	tests := []struct {
		name string
		tid  uint64
		want []uint64
	}{
		{"queued before Deliver, first", 0, []uint64{1}},
		{"inside Send", 2, []uint64{1, 2}},
		{"the next inside Send too", 3, []uint64{1, 2, 3}},
	}
	for _, tc := range tests {
		if tc.tid != 0 {
			send(tc.tid)
		}
		if g := seen(); !slices.Equal(g, tc.want) {
			t.Fatalf("%s: fn got TIDs %v when Send returned, want %v", tc.name, g, tc.want)
		}
		if _, ok := recv(h.c); ok {
			t.Fatalf("%s: an answer was queued for Recv while Deliver ran", tc.name)
		}
	}
	cancel()
	<-ended
	send(4)
	p, ok := recv(h.c)
	if !ok || tidOf(p) != 4 {
		t.Fatalf("after Deliver returned: Recv got %v (ok %v), want the answer to TID 4", p, ok)
	}
	if g := seen(); len(g) != 3 {
		t.Fatalf("fn called after Deliver returned: %v", g)
	}
}

// TestSendBatch: SendBatch sends each packet as Send would, in order,
// and stops at the first one Send refuses, reporting how many went.
func TestSendBatch(t *testing.T) {
	good := func(tid uint64) transport.Packet { return nodeInfoGet(t, tid) }
	short := transport.Packet{MAD: make([]byte, 24)}
	tests := []struct {
		name     string
		batch    []transport.Packet
		wantSent int
		wantErr  bool
		wantTIDs []uint64
	}{
		{"all", []transport.Packet{good(1), good(2), good(3)}, 3, false, []uint64{1, 2, 3}},
		{"refused in the middle", []transport.Packet{good(1), short, good(3)}, 1, true, []uint64{1}},
		{"refused first", []transport.Packet{short, good(2)}, 0, true, nil},
		{"empty", nil, 0, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			n, err := h.c.(transport.BatchSender).SendBatch(tc.batch)
			if n != tc.wantSent || (err != nil) != tc.wantErr {
				t.Fatalf("SendBatch = %d, %v; want %d, error %v", n, err, tc.wantSent, tc.wantErr)
			}
			var tids []uint64
			for {
				p, ok := recv(h.c)
				if !ok {
					break
				}
				r, err := smp.Decode(p.MAD)
				if err != nil {
					t.Fatal(err)
				}
				tids = append(tids, r.TID)
			}
			if !slices.Equal(tids, tc.wantTIDs) {
				t.Fatalf("answers to TIDs %v, want %v", tids, tc.wantTIDs)
			}
		})
	}
}
