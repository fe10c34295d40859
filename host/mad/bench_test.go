package mad_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/internal/fanout"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
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

// starFabric is CA A on port 1 of a hub switch whose other ports lead to
// leaves-1 leaf switches: Sets to many switches, as a sweep's are.
func starFabric(b *testing.B, leaves int) (*mad.Client, []mad.Path) {
	f := netfile.New()
	a, err := f.AddCA("A", guidA, 1)
	must(b, err)
	hub, err := f.AddSwitch("hub", 0x1000, leaves+1)
	must(b, err)
	must(b, f.Connect(a, 1, hub, 1, netfile.Width4x, netfile.EDR))
	paths := []mad.Path{{1}}
	for i := 2; i <= leaves+1; i++ {
		l, err := f.AddSwitch(fmt.Sprintf("leaf%d", i), uint64(0x1000+i), 4)
		must(b, err)
		must(b, f.Connect(hub, i, l, 1, netfile.Width4x, netfile.EDR))
		paths = append(paths, mad.Path{1, uint8(i)})
	}
	fab, err := sim.New(f, sim.Options{})
	must(b, err)
	conn, err := fab.Attach(guidA, 1)
	must(b, err)
	tr := transport.New(conn, transport.Options{Window: 16, Timeout: time.Second})
	b.Cleanup(func() { tr.Close() })
	return &mad.Client{T: tr}, paths
}

// BenchmarkSetAllStar: LFT block Sets to 36 switches in turn as one
// SetAll (a sweep's state Sets go to many destinations in turn, each
// with a few in flight).
func BenchmarkSetAllStar(b *testing.B) {
	c, paths := starFabric(b, 35)
	var blk smp.LFTBlock
	b.ReportAllocs()
	b.ResetTimer()
	c.SetAll(context.Background(), b.N, func(i int) mad.Req {
		return mad.Req{Path: paths[i%len(paths)], Attr: smp.AttrLinearForwardingTable, Mod: uint32(i / len(paths) % 16), Val: &blk}
	}, func(_ int, err error) {
		if err != nil {
			b.Fatal(err)
		}
	})
}
