package mad_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// fakeKeys hands out fixed candidates per route and records what it saw.
type fakeKeys struct {
	cands    map[string][]uint64
	known    bool
	observed []uint64 // keys of answered requests
	methods  []uint8
	hiddenIs func(pi *smp.PortInfo, key uint64) bool
}

func (f *fakeKeys) Candidates(p mad.Path) ([]uint64, bool) { return f.cands[p.String()], f.known }
func (f *fakeKeys) Observe(p mad.Path, method uint8, key uint64, r *smp.SMP) bool {
	f.observed = append(f.observed, key)
	f.methods = append(f.methods, method)
	var pi smp.PortInfo
	if f.hiddenIs != nil && r.AttrID == smp.AttrPortInfo && r.Attr(&pi) == nil {
		return f.hiddenIs(&pi, key)
	}
	return false
}
func (f *fakeKeys) Want(uint64) (mad.KeySetting, bool) { return mad.KeySetting{}, false }
func (f *fakeKeys) Holds(uint64) bool                  { return true }

// TestClientKeys: the Client puts the first candidate key in each SMP and
// tries the next only when the port dropped it (or hid its key from a
// Get); an SMP no key opens fails with a KeyError that says so.
func TestClientKeys(t *testing.T) {
	fab, _, tr := lineFabric(t)
	ctx := context.Background()
	must(t, fab.SetMKey(guidSW1, 0, 0x51, 2, 0))
	must(t, fab.SetMKey(guidB, 1, 0xB1, 1, 0))
	k := &fakeKeys{known: true, cands: map[string][]uint64{
		"[1]":     {0x50, 0x51}, // the second is SW1's
		"[1,2,1]": {0xB0, 0xB1}, // B hides its key from the first
		"[1,2]":   {0x99},       // SW2 holds no key: anything goes
	}}
	k.hiddenIs = func(pi *smp.PortInfo, key uint64) bool { return pi.MKey == 0 && pi.MKeyProtectBits >= 1 }
	keyedT := mad.WithKeys(tr, k)
	c := &mad.Client{T: keyedT}
	if c.Keys() != k {
		t.Fatal("the Client does not see the transport's keys")
	}
	var ni smp.NodeInfo
	must(t, c.Get(ctx, mad.Path{1}, smp.AttrNodeInfo, 0, &ni))
	if ni.NodeGUID != guidSW1 || len(k.observed) != 1 || k.observed[0] != 0x51 {
		t.Fatalf("SW1: %#x, observed keys %#x", ni.NodeGUID, k.observed)
	}
	k.observed = nil
	var pi smp.PortInfo
	must(t, c.Get(ctx, mad.Path{1, 2, 1}, smp.AttrPortInfo, 0, &pi))
	if pi.MKey != 0xB1 || len(k.observed) != 2 || k.observed[1] != 0xB1 {
		t.Fatalf("B: M_Key %#x, observed %#x", pi.MKey, k.observed)
	}
	k.observed = nil
	pi.PortState, pi.PortPhysicalState, pi.LinkSpeedEnabled, pi.LinkWidthEnabled = 0, 0, 0, 0
	must(t, c.Set(ctx, mad.Path{1, 2, 1}, smp.AttrPortInfo, 0, &pi, nil))
	if len(k.methods) == 0 || k.methods[len(k.methods)-1] != smp.MethodSet {
		t.Fatalf("Observe was not told the Set: %v", k.methods)
	}
	must(t, c.Get(ctx, mad.Path{1, 2}, smp.AttrNodeInfo, 0, &ni))

	// No key opens SW1: a KeyError that names the cause.
	k.cands["[1]"] = []uint64{0x1, 0x2}
	err := c.Get(ctx, mad.Path{1}, smp.AttrNodeInfo, 0, &ni)
	var ke *mad.KeyError
	if !errors.As(err, &ke) || ke.Tried != 2 || !ke.Known || !errors.Is(err, transport.ErrTimeout) || !strings.Contains(err.Error(), "guid2mkey") {
		t.Fatalf("err = %v", err)
	}
	k.known = false
	err = c.Get(ctx, mad.Path{1}, smp.AttrNodeInfo, 0, &ni)
	if !errors.As(err, &ke) || ke.Known || !strings.Contains(err.Error(), "not known yet") {
		t.Fatalf("err = %v", err)
	}

	// A Client's own Keys win over the transport's; without any, MKey.
	own := &fakeKeys{cands: map[string][]uint64{"[1]": {0x51}}}
	if (&mad.Client{T: keyedT, K: own}).Keys() != own || (&mad.Client{T: tr}).Keys() != nil {
		t.Fatal("Keys() precedence")
	}
	must(t, (&mad.Client{T: tr, MKey: 0x51}).Get(ctx, mad.Path{1}, smp.AttrNodeInfo, 0, &ni))

	// WithKeys passes Done/Err through.
	type endable interface {
		Done() <-chan struct{}
		Err() error
	}
	e := keyedT.(endable)
	if in, ok := tr.(endable); ok && (e.Done() != in.Done() || e.Err() != in.Err()) {
		t.Fatal("Done/Err not passed through")
	}
	if mad.WithKeys(tr, nil) != tr {
		t.Fatal("WithKeys(nil) wraps")
	}
}

// staleRetry delivers every PortInfo Set twice, as a transport does whose
// first answer came back after it had re-sent the same bytes: the copy
// reaches the port after the Set changed its M_Key, so it carries the old
// key and fails the check. Its answer (if any) is dropped.
type staleRetry struct{ transport.Transport }

func (s staleRetry) Do(ctx context.Context, req transport.Packet) (transport.Packet, error) {
	resp, err := s.Transport.Do(ctx, req)
	var m smp.SMP
	if err == nil && m.Decode(req.MAD) == nil && m.Method == smp.MethodSet && m.AttrID == smp.AttrPortInfo {
		s.Transport.Do(ctx, req) // the port drops it: a timeout
	}
	return resp, err
}

// TestKeyChangeStopsLease: a Set that changes a port's M_Key is followed
// by one Get with the new key, so a stale retry of the Set (old key, so a
// failed check that starts the lease timer) cannot let the lease run out
// and the protection drop while the SM holds the right key.
func TestKeyChangeStopsLease(t *testing.T) {
	now := time.Unix(1e9, 0)
	clock := func() time.Time { return now }
	fab, _, tr := lineFabricOpts(t, sim.Options{LinearFDBCap: 128, Now: clock})
	ctx := context.Background()
	const oldKey, newKey = 0xB1, 0xB2
	must(t, fab.SetMKey(guidB, 1, oldKey, 2, 2))
	k := &fakeKeys{known: true, cands: map[string][]uint64{"[1,2,1]": {oldKey}}}
	c := &mad.Client{T: mad.WithKeys(staleRetry{tr}, k)}
	var pi smp.PortInfo
	must(t, c.Get(ctx, mad.Path{1, 2, 1}, smp.AttrPortInfo, 0, &pi))
	pi.PortState, pi.PortPhysicalState, pi.LinkSpeedEnabled, pi.LinkWidthEnabled = 0, 0, 0, 0
	pi.MKey = newKey
	must(t, c.Set(ctx, mad.Path{1, 2, 1}, smp.AttrPortInfo, 0, &pi, nil))
	if n := len(k.observed); n < 2 || k.observed[n-1] != newKey || k.methods[n-1] != smp.MethodGet {
		t.Fatalf("after the key change: observed keys %#x methods %v; want a Get with %#x last", k.observed, k.methods, newKey)
	}
	now = now.Add(3 * time.Second) // past the 2 s lease
	var got smp.PortInfo
	must(t, (&mad.Client{T: tr, MKey: newKey}).Get(ctx, mad.Path{1, 2, 1}, smp.AttrPortInfo, 0, &got))
	if got.MKey != newKey || got.MKeyProtectBits != 2 {
		t.Fatalf("port B: M_Key %#x protect %d; want %#x, 2 (the lease ran out)", got.MKey, got.MKeyProtectBits, newKey)
	}
}
