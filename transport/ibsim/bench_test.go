package ibsim_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/smp"
)

// BenchmarkWindow measures DR NodeInfo Gets (3 hops, to h3) through the
// dispatcher against a real ibsim, for several windows. ibsim is
// single-threaded, so past a few outstanding MADs only latency hiding
// helps; run with -benchtime=20000x on a quiet machine.
func BenchmarkWindow(b *testing.B) {
	for _, w := range []int{1, 2, 4, 8, 16, 32, 64} {
		b.Run(fmt.Sprintf("window=%d", w), func(b *testing.B) {
			sim := startSim(b)
			c, err := ibsim.Dial(context.Background(), ibsim.Options{SockName: sim.Sockname, Attach: "h1", IsSM: true})
			if err != nil {
				b.Fatal(err)
			}
			tr := transport.New(c, transport.Options{Window: w, Timeout: time.Second})
			defer tr.Close()
			cl := &mad.Client{T: tr}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range w {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var ni smp.NodeInfo
					for next.Add(1) <= int64(b.N) {
						if err := cl.Get(context.Background(), mad.Path{1, 3, 1}, smp.AttrNodeInfo, 0, &ni); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "MAD/s")
			if st := tr.Stats(); st.Retries != 0 {
				b.ReportMetric(float64(st.Retries), "retries")
			}
		})
	}
}
