package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// fatTree3 builds the reference 3-level fat tree of k-port switches:
// k pods of k/2 leaves and k/2 aggregation switches, (k/2)^2 cores and
// k/2 CAs per leaf (k=36: 1,620 switches, 11,664 CAs). Leaf ports
// 1..k/2 go to CAs, k/2+1..k up; aggregation ports 1..k/2 down.
func fatTree3(tb testing.TB, k int) *netfile.File {
	f := netfile.New()
	h := k / 2
	guid := uint64(0x10000)
	next := func(n uint64) uint64 { g := guid; guid += n; return g }
	must := func(n *netfile.Node, err error) *netfile.Node {
		if err != nil {
			tb.Fatal(err)
		}
		return n
	}
	link := func(a *netfile.Node, pa int, b *netfile.Node, pb int) {
		if err := f.Connect(a, pa, b, pb, netfile.Width4x, netfile.EDR); err != nil {
			tb.Fatal(err)
		}
	}
	// CAs first so DefaultSMPort is a CA.
	cas := make([]*netfile.Node, 0, k*h*h)
	for i := 0; i < k*h*h; i++ {
		cas = append(cas, must(f.AddCA(fmt.Sprintf("H%d", i), next(2), 1)))
	}
	cores := make([]*netfile.Node, h*h)
	for i := range cores {
		cores[i] = must(f.AddSwitch(fmt.Sprintf("C%d", i), next(1), k))
	}
	for p := 0; p < k; p++ {
		var ls, as []*netfile.Node
		for i := 0; i < h; i++ {
			ls = append(ls, must(f.AddSwitch(fmt.Sprintf("L%d.%d", p, i), next(1), k)))
			as = append(as, must(f.AddSwitch(fmt.Sprintf("A%d.%d", p, i), next(1), k)))
		}
		for li, l := range ls {
			for j := 0; j < h; j++ {
				link(l, j+1, cas[(p*h+li)*h+j], 1)
			}
			for ai, a := range as {
				link(l, h+1+ai, a, li+1)
			}
		}
		for ai, a := range as {
			for j := 0; j < h; j++ {
				link(a, h+1+j, cores[ai*h+j], p+1)
			}
		}
	}
	return f
}

func benchFabric(b *testing.B) (*Fabric, transport.Conn) {
	f := fatTree3(b, 36)
	fab, err := New(f, Options{})
	if err != nil {
		b.Fatal(err)
	}
	g, p := fab.DefaultSMPort()
	c, err := fab.Attach(g, p)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return fab, c
}

func benchDR(b *testing.B, c transport.Conn, s *smp.SMP) {
	buf := make([]byte, smp.MADLen)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.TID = uint64(i)
		if err := s.EncodeTo(buf); err != nil {
			b.Fatal(err)
		}
		if err := c.Send(transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Recv(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDRGetPortInfo: 4-hop DR Get PortInfo in the 13,284-node fat
// tree (CA -> leaf -> aggregation -> core -> aggregation).
func BenchmarkDRGetPortInfo(b *testing.B) {
	_, c := benchFabric(b)
	s, _ := smp.NewDRGet(smp.AttrPortInfo, 5, []uint8{1, 19, 19, 2})
	benchDR(b, c, s)
}

func BenchmarkDRGetNodeInfo(b *testing.B) {
	_, c := benchFabric(b)
	s, _ := smp.NewDRGet(smp.AttrNodeInfo, 0, []uint8{1, 19, 19, 2})
	benchDR(b, c, s)
}

func BenchmarkDRSetLFTBlock(b *testing.B) {
	_, c := benchFabric(b)
	var blk smp.LFTBlock
	for i := range blk {
		blk[i] = uint8(i%36 + 1)
	}
	s, _ := smp.NewDRSet(smp.AttrLinearForwardingTable, 7, []uint8{1, 19, 19}, blk[:])
	benchDR(b, c, s)
}

// BenchmarkDRGetPortInfoParallel: concurrent senders on one attachment.
func BenchmarkDRGetPortInfoParallel(b *testing.B) {
	_, c := benchFabric(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		s, _ := smp.NewDRGet(smp.AttrPortInfo, 5, []uint8{1, 19, 19, 2})
		buf := make([]byte, smp.MADLen)
		_ = s.EncodeTo(buf)
		ctx := context.Background()
		for pb.Next() {
			if err := c.Send(transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf}); err != nil {
				b.Error(err)
				return
			}
			if _, err := c.Recv(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkLIDGetNodeInfo: LID-routed Get over 3 switches in the test fabric.
func BenchmarkLIDGetNodeInfo(b *testing.B) {
	h := newHarness(b)
	h.programRoutes()
	s := smp.NewLIDGet(smp.AttrNodeInfo, 0)
	buf := make([]byte, smp.MADLen)
	_ = s.EncodeTo(buf)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := h.c.Send(transport.Packet{DLID: 5, MAD: buf}); err != nil {
			b.Fatal(err)
		}
		if _, err := h.c.Recv(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewFatTree: building the reference fabric from a File.
func BenchmarkNewFatTree(b *testing.B) {
	f := fatTree3(b, 36)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := New(f, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFatTreeBringUp sends what an SM sends to bring the reference fat
// tree up, from one goroutine: DR NodeInfo to every node, PortInfo Get on
// every switch port, PortInfo Set (LID) on every endpoint, every LFT block
// for 13,284 LIDs (208 blocks) on every switch and a SwitchInfo Set.
// Reports SMPs and the time per full bring-up.
func BenchmarkFatTreeBringUp(b *testing.B) {
	f := fatTree3(b, 36)
	// BFS paths from the SM CA (first node) over the file's links.
	type hopPath struct {
		n    *netfile.Node
		path []uint8
	}
	paths := []hopPath{{f.Nodes[0], nil}}
	seen := map[*netfile.Node]bool{f.Nodes[0]: true}
	for i := 0; i < len(paths); i++ {
		cur := paths[i]
		if cur.n.Type != 2 && i > 0 {
			continue // CAs do not forward
		}
		for p := 1; p < len(cur.n.Ports); p++ {
			peer := cur.n.Ports[p].Peer
			if peer == nil || seen[peer] {
				continue
			}
			seen[peer] = true
			paths = append(paths, hopPath{peer, append(append([]uint8(nil), cur.path...), uint8(p))})
		}
	}
	var blk smp.LFTBlock
	for i := range blk {
		blk[i] = uint8(i%36 + 1)
	}
	const blocks = (13284 + 63) / 64
	b.ReportAllocs()
	b.ResetTimer()
	var sent int
	for it := 0; it < b.N; it++ {
		fab, err := New(f, Options{})
		if err != nil {
			b.Fatal(err)
		}
		g, p := fab.DefaultSMPort()
		c, _ := fab.Attach(g, p)
		buf := make([]byte, smp.MADLen)
		ctx := context.Background()
		s := new(smp.SMP)
		send := func() {
			sent++
			_ = s.EncodeTo(buf)
			if err := c.Send(transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf}); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Recv(ctx); err != nil {
				b.Fatal(err)
			}
		}
		for i, hp := range paths {
			_ = s.InitDR(smp.MethodGet, smp.AttrNodeInfo, 0, hp.path)
			send()
			if hp.n.Type == 2 {
				for port := 1; port < len(hp.n.Ports); port++ {
					_ = s.InitDR(smp.MethodGet, smp.AttrPortInfo, uint32(port), hp.path)
					send()
				}
			}
			pi := smp.PortInfo{LID: uint16(i + 1), MasterSMLID: 1}
			_ = s.InitDR(smp.MethodSet, smp.AttrPortInfo, 0, hp.path)
			_ = s.SetAttr(&pi)
			send()
			if hp.n.Type == 2 {
				for blkIdx := 0; blkIdx < blocks; blkIdx++ {
					_ = s.InitDR(smp.MethodSet, smp.AttrLinearForwardingTable, uint32(blkIdx), hp.path)
					_ = s.SetAttr(&blk)
					send()
				}
				si := smp.SwitchInfo{LinearFDBTop: 13284}
				_ = s.InitDR(smp.MethodSet, smp.AttrSwitchInfo, 0, hp.path)
				_ = s.SetAttr(&si)
				send()
			}
		}
		c.Close()
	}
	b.ReportMetric(float64(sent)/float64(b.N), "SMPs/op")
}
