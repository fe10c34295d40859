package mad_test

import (
	"context"
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
