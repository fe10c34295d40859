package sim

import (
	"sync"
	"testing"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// TestConcurrentSenders drives SMPs from several goroutines while links
// flap; run with -race it checks the per-node locking.
func TestConcurrentSenders(t *testing.T) {
	h := newHarness(t)
	h.programRoutes()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			buf := make([]byte, smp.MADLen)
			for i := 0; i < 500; i++ {
				var s *smp.SMP
				switch i % 3 {
				case 0:
					s, _ = smp.NewDRGet(smp.AttrPortInfo, uint32(i%9), []uint8{1, 3})
				case 1:
					pi := smp.PortInfo{PortState: uint8(i % 5), LID: uint16(3)}
					s, _ = smp.NewDRSet(smp.AttrPortInfo, 5, []uint8{1, 3}, nil)
					_ = s.SetAttr(&pi)
				default:
					var b smp.LFTBlock
					b[g] = uint8(i % 8)
					s, _ = smp.NewDRSet(smp.AttrLinearForwardingTable, 0, []uint8{1, 3, 5}, b[:])
				}
				_ = s.EncodeTo(buf)
				if err := h.c.Send(transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf}); err != nil {
					t.Error(err)
					return
				}
				_ = h.c.Send(transport.Packet{DLID: uint16(1 + i%6), MAD: buf[:smp.MADLen]})
			}
		}(g)
	}
	for i := 0; i < 200; i++ {
		_ = h.fab.LinkDown(gSw2, 5)
		_ = h.fab.LinkUp(gSw2, 5)
		_, _ = h.fab.LFT(gSw3)
		_, _ = h.fab.PortInfo(gSw2, 5)
	}
	wg.Wait()
	st := h.fab.Stats()
	if st.Received == 0 || st.Answered == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// FuzzSend: arbitrary bytes sent into the fabric never panic it.
func FuzzSend(f *testing.F) {
	s, _ := smp.NewDRGet(smp.AttrNodeInfo, 0, []uint8{1, 3, 5})
	b, _ := s.Encode()
	f.Add(b, uint16(smp.PermissiveLID), uint16(smp.PermissiveLID))
	l := smp.NewLIDGet(smp.AttrPortInfo, 1)
	lb, _ := l.Encode()
	f.Add(lb, uint16(5), uint16(0))
	h := newHarness(f)
	h.programRoutes()
	f.Fuzz(func(t *testing.T, mad []byte, dlid, slid uint16) {
		_ = h.c.Send(transport.Packet{DLID: dlid, SLID: slid, MAD: mad})
		for {
			if _, ok := recv(h.c); !ok {
				break
			}
		}
	})
}

// TestSwitchAttach: an agent on switch port 0 reaches its own SMA with hop
// count 0 and the fabric through the switch's ports.
func TestSwitchAttach(t *testing.T) {
	h := newHarness(t)
	c, err := h.fab.Attach(gSw2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h2 := &harness{t: t, fab: h.fab, c: c}
	for _, tc := range []struct {
		path  []uint8
		guid  uint64
		local uint8
	}{{nil, gSw2, 0}, {[]uint8{5}, gSw3, 1}, {[]uint8{3, 1}, gH1, 1}, {[]uint8{5, 2}, gH4, 1}} {
		r := h2.drGet(smp.AttrNodeInfo, 0, tc.path...)
		if r == nil {
			t.Fatalf("path %v lost", tc.path)
		}
		if ni := nodeInfo(t, r); ni.NodeGUID != tc.guid || ni.LocalPortNum != tc.local {
			t.Fatalf("path %v: %+v", tc.path, ni)
		}
	}
}
