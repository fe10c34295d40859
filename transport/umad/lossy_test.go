package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// lossy is the outcome of one run of the transport against a fake kernel
// that loses 1% of responses and 1% of RMPP segments and of their ACKs.
type lossy struct {
	requests, completed, timedOut, otherErrs int
	deadOrSwallowed                          int // requests the fabric never answers (expected timeouts)
	retries, leaked, rejected                int
	saAnswers, delivered, aborted            int
	kernelTimeouts, unacked                  uint64
	elapsed                                  time.Duration
}

// runLossy sends n SMPs through the default transport (window 4, 3
// retries) while saAnswers five-segment SA answers (GetTableResp, 1,000
// bytes of records) go out beside them. The fabric answers each SMP after
// 0–1 ms, loses 1% of the answers at random, delivers another 1% late
// (just after the transport's timer, before the kernel's), never answers
// one request in 100 (a dead port: every attempt times out in the kernel)
// and swallows one in 100 (every attempt fails on the wire without a word,
// as a local DR request the HCA firmware drops).
func runLossy(tb testing.TB, n, saAnswers int, seed uint64) lossy {
	const timeout = 20 * time.Millisecond
	k := newFakeKernel()
	k.completion = time.Millisecond // the kernel's timer runs 1 ms behind the transport's
	k.handlerLag = 500 * time.Microsecond
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 17))
	chance := func(p float64) bool { mu.Lock(); defer mu.Unlock(); return rng.Float64() < p }
	k.loseSegment = func() bool {
		if chance(0.01) { // the segment
			return true
		}
		return chance(0.01) // or its ACK
	}
	k.fabric = func(k *fakeKernel, s *kSend) {
		switch binary.BigEndian.Uint32(s.mad[20:]) % 100 {
		case 0: // dead port
		case 1:
			k.failSilently(s)
		default:
			mu.Lock()
			r := rng.Float64()
			d := time.Duration(rng.IntN(1000)) * time.Microsecond
			mu.Unlock()
			switch {
			case r < 0.01: // lost
			case r < 0.02: // late: after the transport's timer, before the kernel's
				k.respond(s, timeout+500*time.Microsecond, smp.PermissiveLID, nil)
			default:
				k.respond(s, d, smp.PermissiveLID, nil)
			}
		}
	}
	c, err := newConn(k, &closeRecorder{}, Options{Timeout: timeout})
	if err != nil {
		tb.Fatal(err)
	}
	tr := transport.New(c, transport.Options{Timeout: timeout, Retries: 3})
	defer tr.Close()

	var out lossy
	out.requests, out.saAnswers = n, saAnswers
	var completed, timedOut, other atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				req := mad(256, smp.ClassSMPDR, smp.MethodGet, 0)
				binary.BigEndian.PutUint16(req[16:], smp.AttrNodeInfo)
				binary.BigEndian.PutUint32(req[20:], uint32(i))
				_, err := tr.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: req})
				switch {
				case err == nil:
					completed.Add(1)
				case errors.Is(err, transport.ErrTimeout):
					timedOut.Add(1)
				default:
					other.Add(1)
					tb.Errorf("request %d: %v", i, err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the SA answering queries meanwhile
		defer wg.Done()
		for i := 0; i < saAnswers; i++ {
			resp := mad(saHeaderEnd+5*saSegData, smp.ClassSA, smp.MethodGetTableResp, uint64(0x5a000000+i))
			if err := tr.Send(transport.Packet{DLID: uint16(0x100 + i%64), QP: 1, MAD: resp}); err != nil {
				tb.Errorf("SA answer %d: %v", i, err)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	wg.Wait()
	out.elapsed = time.Since(start)
	if !k.waitIdle(10 * time.Second) {
		tb.Errorf("%d sends still on the kernel's send list", k.onList())
	}
	for i := 0; i < n; i++ {
		if i%100 < 2 {
			out.deadOrSwallowed++
		}
	}
	d := tr.(*transport.Dispatcher)
	st := d.Stats()
	out.completed, out.timedOut, out.otherErrs = int(completed.Load()), int(timedOut.Load()), int(other.Load())
	out.retries = int(st.Retries)
	out.leaked = d.Pending()
	k.mu.Lock()
	out.rejected, out.delivered, out.aborted = k.rejected, len(k.delivered), k.aborted
	k.mu.Unlock()
	cs := c.Stats()
	out.kernelTimeouts, out.unacked = cs.KernelTimeouts, cs.UnackedResponses
	return out
}

func (o lossy) check(tb testing.TB) {
	tb.Helper()
	if o.completed+o.timedOut != o.requests || o.otherErrs != 0 {
		tb.Errorf("%d requests: %d completed, %d timed out, %d failed otherwise", o.requests, o.completed, o.timedOut, o.otherErrs)
	}
	if o.timedOut < o.deadOrSwallowed {
		tb.Errorf("%d timed out, but %d were never answered", o.timedOut, o.deadOrSwallowed)
	}
	if o.leaked != 0 || o.rejected != 0 {
		tb.Errorf("%d pending entries leaked, %d writes refused as duplicate TIDs", o.leaked, o.rejected)
	}
	if o.delivered+o.aborted != o.saAnswers || int(o.unacked) != o.aborted {
		tb.Errorf("%d SA answers: %d delivered, %d aborted, %d reported unacknowledged", o.saAnswers, o.delivered, o.aborted, o.unacked)
	}
}

// TestLossyKernel is the benchmark's scenario at test size: every request
// completes or times out with ErrTimeout, nothing leaks, and the SA's
// multi-MAD answers get through 1% segment and ACK loss.
func TestLossyKernel(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 200
	}
	o := runLossy(t, n, n/10, 1)
	o.check(t)
	if o.aborted != 0 {
		t.Errorf("%d SA answers aborted by single losses", o.aborted)
	}
	t.Logf("%+v", o)
}

// BenchmarkLossyKernel runs b.N SMPs (and b.N/10 SA answers) against the
// lossy fake kernel and reports the outcome counts; run it with a fixed
// count, e.g. -benchtime=10000x.
func BenchmarkLossyKernel(b *testing.B) {
	o := runLossy(b, b.N, b.N/10, 1)
	o.check(b)
	b.ReportMetric(float64(o.completed), "completed")
	b.ReportMetric(float64(o.timedOut), "timeouts")
	b.ReportMetric(float64(o.deadOrSwallowed), "never-answered")
	b.ReportMetric(float64(o.otherErrs), "other-errors")
	b.ReportMetric(float64(o.retries), "retries")
	b.ReportMetric(float64(o.leaked), "leaked")
	b.ReportMetric(float64(o.rejected), "dup-TID-refused")
	b.ReportMetric(float64(o.delivered), "sa-delivered")
	b.ReportMetric(float64(o.aborted), "sa-aborted")
	b.ReportMetric(float64(o.kernelTimeouts), "kernel-ETIMEDOUT")
}
