package mad_test

import (
	"context"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// BenchmarkSetFanout is the shape of a sweep's distribution: LFT block Sets
// to the line fabric's two switches from 256 fanout workers over a window
// of 16 (ns/op is per Set, everything between the programmer and the
// simulated switch included).
func BenchmarkSetFanout(b *testing.B) {
	_, c, tr := lineFabric(b)
	tr.(*transport.Dispatcher).SetLimits(16, time.Second, 3)
	paths := []mad.Path{{1}, {1, 2}}
	var blk smp.LFTBlock
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	g := fanout.New(256)
	for i := range b.N {
		path := paths[i%2]
		g.Go(func() error { return c.Set(ctx, path, smp.AttrLinearForwardingTable, 0, &blk, nil) })
	}
	if err := g.Wait("LFT Sets"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSetAll is BenchmarkSetFanout's Sets as one SetAll batch (the
// transport's DoAll: no goroutine per Set).
func BenchmarkSetAll(b *testing.B) {
	_, c, tr := lineFabric(b)
	tr.(*transport.Dispatcher).SetLimits(16, time.Second, 3)
	paths := []mad.Path{{1}, {1, 2}}
	var blk smp.LFTBlock
	b.ReportAllocs()
	b.ResetTimer()
	c.SetAll(context.Background(), b.N, func(i int) mad.Req {
		return mad.Req{Path: paths[i%2], Attr: smp.AttrLinearForwardingTable, Val: &blk}
	}, func(_ int, err error) {
		if err != nil {
			b.Fatal(err)
		}
	})
}
