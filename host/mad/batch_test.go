package mad_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// plainTransport hides the Dispatcher's DoAll: SetAll then sends each Set
// through Set.
type plainTransport struct{ transport.Transport }

// TestSetAll: SetAll writes every block where Set would, reports each Set
// once with Set's errors, PortInfo Sets included, and GetAll reads the
// blocks back; over a transport with DoAll and over one without.
func TestSetAll(t *testing.T) {
	for _, batched := range []bool{true, false} {
		t.Run(map[bool]string{true: "DoAll", false: "without DoAll"}[batched], func(t *testing.T) {
			_, c, tr := lineFabric(t)
			if !batched {
				c = &mad.Client{T: plainTransport{tr}}
			}
			ctx := context.Background()
			var pi smp.PortInfo
			must(t, c.Get(ctx, mad.Path{1, 2}, smp.AttrPortInfo, 0, &pi))
			pi.PortState, pi.PortPhysicalState, pi.LinkSpeedEnabled, pi.LinkWidthEnabled = 0, 0, 0, 0 // no change
			// Blocks 0 and 1 of SW1 and SW2, SW2's port-0 PortInfo
			// unchanged, and a block down a path that leads nowhere.
			var blk [2]smp.LFTBlock
			for i := range blk[0] {
				blk[0][i], blk[1][i] = uint8(i%4+1), uint8(4-i%4)
			}
			reqs := []mad.Req{
				{Path: mad.Path{1}, Attr: smp.AttrLinearForwardingTable, Mod: 0, Val: &blk[0]},
				{Path: mad.Path{1}, Attr: smp.AttrLinearForwardingTable, Mod: 1, Val: &blk[1]},
				{Path: mad.Path{1, 2}, Attr: smp.AttrLinearForwardingTable, Mod: 0, Val: &blk[1]},
				{Path: mad.Path{1, 2}, Attr: smp.AttrLinearForwardingTable, Mod: 1, Val: &blk[0]},
				{Path: mad.Path{1, 2}, Attr: smp.AttrPortInfo, Mod: 0, Val: &pi},
				{Path: mad.Path{1, 3}, Attr: smp.AttrLinearForwardingTable, Mod: 0, Val: &blk[0]},
			}
			var mu sync.Mutex
			errs := make([]error, len(reqs))
			ends := make([]int, len(reqs))
			c.SetAll(ctx, len(reqs), func(i int) mad.Req { return reqs[i] }, func(i int, err error) {
				mu.Lock()
				defer mu.Unlock()
				errs[i] = err
				ends[i]++
			})
			for i, n := range ends {
				if n != 1 {
					t.Fatalf("Set %d ended %d times", i, n)
				}
			}
			for i, err := range errs[:5] {
				if err != nil {
					t.Fatalf("Set %d: %v", i, err)
				}
			}
			if errs[5] == nil || !strings.Contains(errs[5].Error(), "via DR [1,3]") {
				t.Fatalf("Set down a dead end: %v", errs[5])
			}
			// Read back with GetAll: each answer lands in its own Out.
			got := make([]smp.LFTBlock, 4)
			c.GetAll(ctx, 4, func(i int) mad.Req {
				return mad.Req{Path: reqs[i].Path, Attr: smp.AttrLinearForwardingTable, Mod: reqs[i].Mod, Out: &got[i]}
			}, func(i int, err error) {
				if err != nil {
					t.Errorf("reading block %d back: %v", i, err) // done may run on another goroutine
				}
			})
			for i, r := range reqs[:4] {
				if got[i] != *r.Val.(*smp.LFTBlock) {
					t.Fatalf("block %d via %s: %v", r.Mod, r.Path, got[i])
				}
			}
		})
	}
}

// TestSetAllKeys: a Set whose first candidate M_Key the switch drops is
// sent again through Set, which finds the right one; a switch that takes
// the first candidate is written in the batch.
func TestSetAllKeys(t *testing.T) {
	fab, _, tr := lineFabric(t)
	ctx := context.Background()
	must(t, fab.SetMKey(guidSW1, 0, 0x51, 2, 0))
	k := &fakeKeys{known: true, cands: map[string][]uint64{"[1]": {0x50, 0x51}, "[1,2]": {0}}}
	c := &mad.Client{T: mad.WithKeys(tr, k)}
	var blk smp.LFTBlock
	for i := range blk {
		blk[i] = 2
	}
	reqs := []mad.Req{{Path: mad.Path{1}, Attr: smp.AttrLinearForwardingTable, Mod: 0, Val: &blk}, {Path: mad.Path{1, 2}, Attr: smp.AttrLinearForwardingTable, Mod: 0, Val: &blk}}
	var mu sync.Mutex
	var errs []error
	c.SetAll(ctx, len(reqs), func(i int) mad.Req { return reqs[i] }, func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	})
	if len(errs) != 2 || errs[0] != nil || errs[1] != nil {
		t.Fatalf("errors %v", errs)
	}
	for _, r := range reqs {
		var got smp.LFTBlock
		must(t, (&mad.Client{T: tr, MKey: 0x51}).Get(ctx, r.Path, smp.AttrLinearForwardingTable, 0, &got))
		if got != blk {
			t.Fatalf("block via %s: %v", r.Path, got)
		}
	}
}

// TestSetAllKeyChange: a PortInfo Set in a batch that changes the port's
// M_Key is followed by a Get with the new key, as Set does (see
// TestKeyChangeStopsLease).
func TestSetAllKeyChange(t *testing.T) {
	fab, _, tr := lineFabric(t)
	ctx := context.Background()
	const oldKey, newKey = 0xB1, 0xB2
	must(t, fab.SetMKey(guidB, 1, oldKey, 2, 2))
	k := &fakeKeys{known: true, cands: map[string][]uint64{"[1,2,1]": {oldKey}}}
	c := &mad.Client{T: mad.WithKeys(tr, k)}
	var pi smp.PortInfo
	must(t, c.Get(ctx, mad.Path{1, 2, 1}, smp.AttrPortInfo, 0, &pi))
	pi.PortState, pi.PortPhysicalState, pi.LinkSpeedEnabled, pi.LinkWidthEnabled = 0, 0, 0, 0
	pi.MKey = newKey
	var err error
	c.SetAll(ctx, 1, func(int) mad.Req { return mad.Req{Path: mad.Path{1, 2, 1}, Attr: smp.AttrPortInfo, Val: &pi} }, func(_ int, e error) { err = e })
	must(t, err)
	if n := len(k.observed); n < 2 || k.observed[n-1] != newKey || k.methods[n-1] != smp.MethodGet {
		t.Fatalf("after the key change: observed keys %#x methods %v; want a Get with %#x last", k.observed, k.methods, newKey)
	}
}

// TestGetEach: requests that done adds while the batch runs are sent in
// the same call, each ends exactly once with its own answer (a dead end
// with its error), over DoAll and without it; a cancelled context ends
// every request, those added after it too.
func TestGetEach(t *testing.T) {
	paths := []mad.Path{{1}, {1, 2}, {1, 3}} // SW1, SW2, nowhere
	want := []uint64{guidSW1, guidSW2, 0}
	const most = 300
	for _, tc := range []struct {
		name     string
		batched  bool
		cancelAt int // cancel once this many ended (0: never)
	}{
		{"DoAll", true, 0},
		{"without DoAll", false, 0},
		{"DoAll cancelled", true, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, tr := lineFabric(t)
			if !tc.batched {
				c = &mad.Client{T: plainTransport{tr}}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			outs := []*smp.NodeInfo{new(smp.NodeInfo)}
			ends, errs := []int{0}, []error{nil}
			ended := 0
			n := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(outs)
			}
			c.GetEach(ctx, n, func(i int) mad.Req {
				mu.Lock()
				defer mu.Unlock()
				return mad.Req{Path: paths[i%3], Attr: smp.AttrNodeInfo, Out: outs[i]}
			}, func(i int, err error) {
				mu.Lock()
				defer mu.Unlock()
				ends[i]++
				errs[i] = err
				if ended++; ended == tc.cancelAt {
					cancel()
				}
				// Each answer asks two more, up to most (after a cancel too).
				for k := 0; k < 2 && len(outs) < most; k++ {
					outs, ends, errs = append(outs, new(smp.NodeInfo)), append(ends, 0), append(errs, nil)
				}
			})
			if len(outs) != most {
				t.Fatalf("%d requests asked, want %d", len(outs), most)
			}
			for i := range outs {
				switch {
				case ends[i] != 1:
					t.Fatalf("request %d ended %d times", i, ends[i])
				case tc.cancelAt > 0:
					// Early ones answered, the rest cancelled.
				case want[i%3] == 0:
					if errs[i] == nil || !strings.Contains(errs[i].Error(), "via DR [1,3]") {
						t.Fatalf("request %d down a dead end: %v", i, errs[i])
					}
				case errs[i] != nil || outs[i].NodeGUID != want[i%3]:
					t.Fatalf("request %d via %s: GUID %#x, %v", i, paths[i%3], outs[i].NodeGUID, errs[i])
				}
			}
			if tc.cancelAt > 0 && !errors.Is(errs[most-1], context.Canceled) {
				t.Fatalf("last request after the cancel: %v", errs[most-1])
			}
		})
	}
}

// TestGetAllKeyError: a batched Get that its one guessed M_Key does not
// open fails with the KeyError Get gives (discovery tells locked ports by
// it), known or not as the keys said.
func TestGetAllKeyError(t *testing.T) {
	for _, known := range []bool{false, true} {
		fab, _, tr := lineFabric(t)
		must(t, fab.SetMKey(guidSW1, 0, 0x51, 2, 0))
		k := &fakeKeys{known: known, cands: map[string][]uint64{"[1]": {0x50}}}
		c := &mad.Client{T: mad.WithKeys(tr, k)}
		var err error
		c.GetAll(context.Background(), 1, func(int) mad.Req {
			return mad.Req{Path: mad.Path{1}, Attr: smp.AttrNodeInfo, Out: new(smp.NodeInfo)}
		}, func(_ int, e error) { err = e })
		var ke *mad.KeyError
		if !errors.As(err, &ke) || ke.Known != known || !errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("known %v: %v", known, err)
		}
	}
}
