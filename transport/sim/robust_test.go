package sim

import (
	"sync"
	"testing"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
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

func TestSetPortLID(t *testing.T) {
	f := netfile.New()
	sw, _ := f.AddSwitch("S", 0x10, 2)
	ca, _ := f.AddCA("H", 0x1000, 1)
	if err := f.Connect(ca, 1, sw, 1, netfile.Width4x, netfile.QDR); err != nil {
		t.Fatal(err)
	}
	fab, err := New(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		guid    uint64
		port    uint8
		lid     uint16
		wantErr bool
		psc     bool // the switch's PortStateChange afterwards
	}{
		{"CA port: silent", 0x1000, 1, 7, false, false},
		{"switch port 0: PortStateChange", 0x10, 0, 9, false, true},
		{"switch port 1 has no LID", 0x10, 1, 9, true, false},
		{"multicast LID refused", 0x1000, 1, 0xC001, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fab.byGUID[0x10].psc.Store(false)
			err := fab.SetPortLID(tc.guid, tc.port, tc.lid, 0)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if _, psc, _ := fab.SwitchInfo(0x10); psc != tc.psc {
				t.Fatalf("PortStateChange = %v, want %v", psc, tc.psc)
			}
			if tc.wantErr {
				return
			}
			if snap, _ := fab.PortInfo(tc.guid, tc.port); snap.LID != tc.lid {
				t.Fatalf("LID %d, want %d", snap.LID, tc.lid)
			}
		})
	}
}
