package sa

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// syncBuffer is a log sink the agent's worker may write to concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func loggedAgent(t *testing.T, opts Options) (*Agent, *fakeTransport, *syncBuffer) {
	t.Helper()
	ft := &fakeTransport{}
	buf := &syncBuffer{}
	a := New(tinySubnet(t), ft, opts, hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Debug}))
	return a, ft, buf
}

// TestBadVersions: SA MADs of a class version other than 2 and SMPs of one
// other than 1 are answered with status 0x0004 (bad version), in the
// version we speak, TID kept; a base version other than 1 is dropped.
func TestBadVersions(t *testing.T) {
	a, ft, _ := loggedAgent(t, Options{})
	for _, v := range []uint8{0, 1, 3, 255} {
		req := saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, 0, nil)
		req[2] = v
		got := ask(t, a, ft, req)
		if got[2] != smp.SAClassVersion || got[3] != smp.MethodGetTableResp || binary.BigEndian.Uint16(got[4:]) != smp.StatusBadVersion ||
			!bytes.Equal(got[8:16], req[8:16]) {
			t.Errorf("SA class version %d answered %x", v, got[:24])
		}
	}
	for _, v := range []uint8{0, 2, 255} {
		lr := smp.NewLIDGet(smp.AttrSMInfo, 0)
		lr.TID = 77
		mad, _ := lr.Encode()
		mad[2] = v
		a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, MAD: mad})
		got, err := smp.Decode(ft.take(t).MAD)
		if err != nil || got.Method != smp.MethodGetResp || got.Status != smp.StatusBadVersion || got.TID != 77 || got.Data != [64]byte{} {
			t.Errorf("SMP class version %d answered %+v (%v)", v, got, err)
		}
		dr, _ := smp.NewDRGet(smp.AttrSMInfo, 0, []uint8{1, 1})
		mad, _ = dr.Encode()
		mad[2] = v
		a.Handle(context.Background(), transport.Packet{DLID: 0xFFFF, SLID: 0xFFFF, MAD: mad})
		got, err = smp.Decode(ft.take(t).MAD)
		if err != nil || !got.Direction || got.Status != smp.StatusBadVersion {
			t.Errorf("DR SMP class version %d answered %+v (%v)", v, got, err)
		}
	}
	for _, class := range []uint8{smp.ClassSA, smp.ClassSMPLID} {
		req := saReq(smp.MethodGet, smp.SAAttrClassPortInfo, 0, 0, 0, nil)
		req[0], req[1] = 2, class
		a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, QP: 1, MAD: req})
		a.wait()
		if n := ft.count(); n != 0 {
			t.Errorf("class %#x base version 2: %d answers, want none", class, n)
		}
	}
}

// TestWrongSMKey: an SA request with a non-zero SM_Key other than ours is
// discarded (C15-0.1.5) and counted; 0 and our key are answered.
func TestWrongSMKey(t *testing.T) {
	a, ft, buf := loggedAgent(t, Options{SMKey: 0xabcd})
	for _, key := range []uint64{1, 0xabce, ^uint64(0)} {
		a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, QP: 1, MAD: saReq(smp.MethodGetTable, smp.SAAttrSMInfoRecord, 0, key, 0, nil)})
	}
	a.wait()
	if n := ft.count(); n != 0 {
		t.Fatalf("%d answers to requests with a wrong SM_Key", n)
	}
	for _, key := range []uint64{0, 0xabcd} {
		if got := ask(t, a, ft, saReq(smp.MethodGetTable, smp.SAAttrSMInfoRecord, 0, key, 0, nil)); binary.BigEndian.Uint16(got[4:]) != 0 {
			t.Fatalf("SM_Key %#x: status %#x", key, binary.BigEndian.Uint16(got[4:]))
		}
	}
	if c := a.Counters(); c.SA.Dropped != 3 {
		t.Fatalf("counters %+v, want 3 SA drops", c)
	}
	a.saLimit.Flush()
	if out := buf.String(); !strings.Contains(out, `reasons="wrong SM_Key: 3"`) {
		t.Fatalf("wrong SM_Key drops not in the log:\n%s", out)
	}
}

// gate is a transport whose Send blocks until released, so requests pile
// up in the agent's queues; entered tells that a Send is blocked.
type gate struct {
	fakeTransport
	open    chan struct{}
	entered chan struct{}
}

func (g *gate) Send(p transport.Packet) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.open
	return g.fakeTransport.Send(p)
}

// TestFlood: a source over its rate loses the excess, counted and logged
// in a bounded number of lines; a second source that keeps within its rate
// loses nothing and is answered ahead of the flooder's backlog.
func TestFlood(t *testing.T) {
	g := &gate{open: make(chan struct{}), entered: make(chan struct{}, 1)}
	buf := &syncBuffer{}
	a := New(tinySubnet(t), g, Options{SARate: 500}, hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Info}))
	req := func(tid uint64) []byte {
		b := saReq(smp.MethodGet, smp.SAAttrClassPortInfo, 0, 0, 0, nil)
		binary.BigEndian.PutUint64(b[8:], tid)
		return b
	}
	const flood = 5000
	for i := 0; i < flood; i++ {
		if !a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 9, QP: 1, MAD: req(uint64(i))}) {
			t.Fatal("SA request not taken")
		}
		if i == 0 {
			// The worker holds the first in Send before the rest queue
			// (on a loaded machine it could otherwise start late).
			select {
			case <-g.entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the SA worker never took the first request")
			}
		}
	}
	// The legitimate client asks while the flooder's queue is full.
	a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, QP: 1, MAD: req(1 << 40)})
	close(g.open)
	a.wait()
	var pos = -1
	from9 := 0
	for i, p := range g.sent {
		switch p.DLID {
		case 4:
			pos = i
		case 9:
			from9++
		}
	}
	// The worker took one of LID 9's before LID 4 queued (it blocks in
	// Send), so LID 4's answer is the second or third.
	if pos < 0 || pos > 2 {
		t.Fatalf("the legitimate request was answered at position %d of %d", pos, len(g.sent))
	}
	if from9 != DefaultQueuePerSource+1 {
		t.Fatalf("flooder got %d answers, want its queue (%d) and the one in flight", from9, DefaultQueuePerSource)
	}
	c := a.Counters().SA
	if c.Dropped != flood-uint64(from9) || c.Limited != 1 {
		t.Fatalf("counters %+v", c)
	}
	a.saLimit.Flush()
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 2 {
		t.Fatalf("%d log lines for one flood, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "over rate: ") || !strings.Contains(out, "queue full: ") {
		t.Fatalf("summary lacks the reasons:\n%s", out)
	}
}

// TestSMInfoFlood: SMPs to the SM are limited per source (LID or directed
// route) at SMPRate.
func TestSMInfoFlood(t *testing.T) {
	a, ft, _ := loggedAgent(t, Options{SMPRate: 10})
	get := smp.NewLIDGet(smp.AttrSMInfo, 0)
	mad, _ := get.Encode()
	dr, _ := smp.NewDRGet(smp.AttrSMInfo, 0, []uint8{1, 1})
	drMAD, _ := dr.Encode()
	for i := 0; i < 100; i++ {
		a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, MAD: mad})
		a.Handle(context.Background(), transport.Packet{DLID: 0xFFFF, SLID: 0xFFFF, MAD: drMAD})
		a.wait()
	}
	if n := ft.count(); n != 2*20 {
		t.Fatalf("%d SMInfo answers, want a burst of 20 per source", n)
	}
	if c := a.Counters().SMP; c.Dropped != 160 || c.Limited != 2 {
		t.Fatalf("counters %+v", c)
	}
}

// TestHostileInput: random and mutated MADs through Handle never panic (a
// recovered panic logs "BUG"), every answer is a response with the
// request's TID, and nothing reaches the Elector unless it is an SMInfo
// Set.
func TestHostileInput(t *testing.T) {
	a, ft, buf := loggedAgent(t, Options{SARate: -1, SMPRate: -1, SMKey: 7})
	rng := rand.New(rand.NewSource(1))
	seeds := [][]byte{
		saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, ^uint64(0), nil),
		saReq(smp.MethodGet, smp.SAAttrNodeRecord, 0, 0, 1, []byte{0, 2}),
		saReq(smp.MethodGetTable, smp.SAAttrPortInfoRecord, 0, 7, 0, nil),
		saReq(smp.MethodGetTable, smp.SAAttrSMInfoRecord, 0, 0, 0, nil),
	}
	for _, attr := range []uint16{smp.AttrSMInfo, smp.AttrNodeInfo, 0xFF00} {
		m, _ := smp.NewLIDGet(attr, 0).Encode()
		seeds = append(seeds, m)
		d, _ := smp.NewDRGet(attr, 0, []uint8{1, 2})
		m, _ = d.Encode()
		seeds = append(seeds, m)
	}
	for i := 0; i < 20000; i++ {
		var mad []byte
		switch i % 4 {
		case 0: // random bytes, plausible header
			mad = make([]byte, rng.Intn(300))
			rng.Read(mad)
			if len(mad) > 3 {
				mad[0] = 1
				mad[1] = []byte{smp.ClassSA, smp.ClassSMPLID, smp.ClassSMPDR}[rng.Intn(3)]
			}
		default: // a valid request with bytes flipped
			mad = append([]byte(nil), seeds[rng.Intn(len(seeds))]...)
			for k := rng.Intn(6) + 1; k > 0; k-- {
				mad[rng.Intn(len(mad))] ^= byte(1 << rng.Intn(8))
			}
			if rng.Intn(8) == 0 {
				mad = mad[:rng.Intn(len(mad))]
			}
		}
		ft.mu.Lock()
		ft.sent = nil
		ft.mu.Unlock()
		a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: uint16(rng.Intn(5)), QP: 1, MAD: mad})
		a.wait()
		for _, p := range ft.sent {
			if p.MAD[3]&smp.MethodResponse == 0 || !bytes.Equal(p.MAD[8:16], mad[8:16]) || len(p.MAD) != smp.MADLen {
				t.Fatalf("input %x\nanswer %x", mad, p.MAD)
			}
		}
	}
	if strings.Contains(buf.String(), "BUG:") {
		t.Fatalf("a panic was recovered:\n%s", buf.String())
	}
}

// TestWorkerStops: an idle agent holds no goroutine.
func TestWorkerStops(t *testing.T) {
	a, ft, _ := loggedAgent(t, Options{})
	ask(t, a, ft, saReq(smp.MethodGet, smp.SAAttrClassPortInfo, 0, 0, 0, nil))
	a.wait()
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	if a.queue.running || a.queue.n != 0 || len(a.queue.bySrc) != 0 {
		t.Fatalf("after the last answer: running %v, %d queued, %d sources", a.queue.running, a.queue.n, len(a.queue.bySrc))
	}
}
