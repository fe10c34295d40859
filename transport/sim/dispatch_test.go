package sim

import (
	"context"
	"errors"
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
