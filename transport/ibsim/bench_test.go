package ibsim_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/smp"
)

// benchWindow is ibsim's default MAD window (the at-floor row of
// BENCHMARKS.md).
const benchWindow = 128

// benchPaths alternate one and two switch hops from h1.
var benchPaths = [][]uint8{{1}, {1, 3}}

// cpuTime is this process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the host CPU per SMP since start to the benchmark's
// metrics: on a machine of two cores the simulator and the SM share, it
// is what bounds the rate as much as the simulator does.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// reportReads adds how many datagrams one read and one write system call
// moved.
func reportReads(b *testing.B, c *ibsim.Conn) {
	st := c.Stats()
	b.ReportMetric(float64(st.Received)/float64(max(st.Reads, 1)), "dgrams/read")
	b.ReportMetric(float64(st.Sent)/float64(max(st.Writes, 1)), "dgrams/write")
}

// benchConn attaches a plain client to h1 of sim.
func benchConn(tb testing.TB, sim *benchutil.IBSim) *ibsim.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ibsim.Dial(ctx, ibsim.Options{SockName: sim.Sockname, Attach: "h1"})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func nodeInfoGet(tb testing.TB, path []uint8, buf []byte) transport.Packet {
	s, err := smp.NewDRGet(smp.AttrNodeInfo, 0, path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.EncodeTo(buf); err != nil {
		tb.Fatal(err)
	}
	return transport.Packet{DLID: smp.PermissiveLID, MAD: buf}
}

// BenchmarkRawConn is the floor's client (integration/race): NodeInfo Gets
// straight on the Conn, benchWindow in flight, answers counted by one
// reader goroutine.
func BenchmarkRawConn(b *testing.B) {
	c := benchConn(b, startSim(b))
	defer c.Close()
	reqs := make([]transport.Packet, len(benchPaths))
	for i, p := range benchPaths {
		reqs[i] = nodeInfoGet(b, p, make([]byte, smp.MADLen))
	}
	slots := make(chan struct{}, benchWindow)
	got := make(chan error, 1)
	ctx := context.Background()
	b.ResetTimer()
	start := cpuTime(b)
	go func() {
		for range b.N {
			p, err := c.Recv(ctx)
			if err != nil {
				got <- err
				return
			}
			if smp.PeekMethod(p.MAD) != smp.MethodGetResp {
				got <- err
				return
			}
			c.Recycle(p.MAD)
			<-slots
		}
		got <- nil
	}()
	buf := make([]byte, smp.MADLen)
	for i := range b.N {
		slots <- struct{}{}
		r := reqs[i%len(reqs)]
		copy(buf, r.MAD)
		smp.PutTID(buf, uint64(i+1))
		if err := c.Send(transport.Packet{DLID: r.DLID, MAD: buf}); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-got; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportCPU(b, start)
	reportReads(b, c)
}

// BenchmarkDoAll is the same Gets through the Dispatcher's DoAll, as a
// sweep sends its SMPs.
func BenchmarkDoAll(b *testing.B) {
	c := benchConn(b, startSim(b))
	tr := transport.New(c, transport.Options{Window: benchWindow})
	defer tr.Close()
	d := tr.(*transport.Dispatcher)
	b.ResetTimer()
	start := cpuTime(b)
	failed := 0
	d.DoAll(context.Background(), b.N, func(i int, buf []byte) (transport.Packet, error) {
		return nodeInfoGet(b, benchPaths[i%len(benchPaths)], buf), nil
	}, func(_ int, resp transport.Packet, err error) {
		if err != nil || smp.PeekMethod(resp.MAD) != smp.MethodGetResp {
			failed++
		}
	})
	b.StopTimer()
	reportCPU(b, start)
	reportReads(b, c)
	if failed > 0 {
		b.Fatalf("%d of %d Gets failed", failed, b.N)
	}
}
