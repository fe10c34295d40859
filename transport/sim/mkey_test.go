package sim

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// fakeClock is Options.Now for lease tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newKeyedHarness(t *testing.T) (*harness, *fakeClock) {
	t.Helper()
	f, err := netfile.Parse("test.net", strings.NewReader(testNet))
	if err != nil {
		t.Fatal(err)
	}
	clk := &fakeClock{t: time.Unix(1000, 0)}
	fab, err := New(f, Options{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	c, err := fab.Attach(gH1, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &harness{t: t, fab: fab, c: c}, clk
}

// keyed sends s with M_Key key over DR path and returns the response (nil:
// dropped).
func (h *harness) keyed(s *smp.SMP, key uint64) *smp.SMP {
	h.t.Helper()
	s.MKey = key
	return h.do(s, smp.PermissiveLID)
}

func (h *harness) getPI(key uint64, mod uint32, path ...uint8) (*smp.PortInfo, bool) {
	h.t.Helper()
	s, err := smp.NewDRGet(smp.AttrPortInfo, mod, path)
	if err != nil {
		h.t.Fatal(err)
	}
	r := h.keyed(s, key)
	if r == nil {
		return nil, false
	}
	var pi smp.PortInfo
	if err := r.Attr(&pi); err != nil {
		h.t.Fatal(err)
	}
	return &pi, true
}

func (h *harness) setPI(key uint64, pi *smp.PortInfo, mod uint32, path ...uint8) (*smp.PortInfo, bool) {
	h.t.Helper()
	s, err := smp.NewDRSet(smp.AttrPortInfo, mod, path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := s.SetAttr(pi); err != nil {
		h.t.Fatal(err)
	}
	r := h.keyed(s, key)
	if r == nil {
		return nil, false
	}
	var out smp.PortInfo
	if err := r.Attr(&out); err != nil {
		h.t.Fatal(err)
	}
	return &out, true
}

func (h *harness) getNI(key uint64, path ...uint8) bool {
	h.t.Helper()
	s, err := smp.NewDRGet(smp.AttrNodeInfo, 0, path)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.keyed(s, key) != nil
}

// protect gives the node at path (switch: port 0) key, level and lease
// with a PortInfo Set carrying cur, the key it holds now.
func (h *harness) protect(cur, key uint64, level uint8, lease uint16, path ...uint8) {
	h.t.Helper()
	pi, ok := h.getPI(cur, 0, path...)
	if !ok {
		h.t.Fatalf("PortInfo Get via %v with key %#x dropped", path, cur)
	}
	pi.PortState, pi.PortPhysicalState, pi.LinkSpeedEnabled, pi.LinkWidthEnabled = 0, 0, 0, 0
	pi.MKey, pi.MKeyProtectBits, pi.MKeyLeasePeriod = key, level, lease
	got, ok := h.setPI(cur, pi, 0, path...)
	if !ok || got.MKey != key || got.MKeyProtectBits != level || got.MKeyLeasePeriod != lease {
		h.t.Fatalf("keying %v: answered %v, got %+v", path, ok, got)
	}
}

// TestMKeyProtectionLevels: what a requester without the key gets at each
// protection level (IBA 14.2.4.1), on a switch (key on port 0) and a CA
// port, and what the requester with the key gets.
func TestMKeyProtectionLevels(t *testing.T) {
	const key, wrong = 0x1122334455667788, 0x0bad
	for _, tgt := range []struct {
		name string
		path []uint8
		guid uint64
		port uint8
	}{{"switch", []uint8{1}, gSw1, 0}, {"ca", []uint8{1, 2}, gH2, 1}} {
		for level := uint8(0); level <= 3; level++ {
			t.Run(tgt.name+"/level"+string(rune('0'+level)), func(t *testing.T) {
				h, _ := newKeyedHarness(t)
				h.protect(0, key, level, 0, tgt.path...)
				refused0 := h.fab.Stats().MKeyRefused

				// Gets without the key: answered at 0 and 1, dropped at 2, 3.
				wantGet := level < 2
				if got := h.getNI(wrong, tgt.path...); got != wantGet {
					t.Fatalf("NodeInfo Get with a wrong key answered = %v, want %v", got, wantGet)
				}
				pi, ok := h.getPI(0, 0, tgt.path...)
				if ok != wantGet {
					t.Fatalf("PortInfo Get without a key answered = %v, want %v", ok, wantGet)
				}
				if ok {
					want := uint64(key) // level 0 shows the key to anyone
					if level == 1 {
						want = 0
					}
					if pi.MKey != want || pi.MKeyProtectBits != level {
						t.Fatalf("PortInfo without the key shows M_Key %#x protect %d, want %#x %d", pi.MKey, pi.MKeyProtectBits, want, level)
					}
				}
				// A Set without the key is refused at every level and
				// changes nothing.
				evil := smp.PortInfo{LID: 0x77, MKey: wrong}
				if _, ok := h.setPI(wrong, &evil, 0, tgt.path...); ok {
					t.Fatal("PortInfo Set with a wrong key was answered")
				}
				snap, err := h.fab.PortInfo(tgt.guid, tgt.port)
				if err != nil {
					t.Fatal(err)
				}
				violations := uint16(1)
				if !wantGet {
					violations = 3 // the two Gets counted too
				}
				if snap.LID == 0x77 || snap.MKey != key || snap.MKeyViolations != violations {
					t.Fatalf("after a refused Set: %+v, want key %#x and %d violations", snap, uint64(key), violations)
				}
				if got := h.fab.Stats().MKeyRefused - refused0; got != uint64(violations) {
					t.Fatalf("Stats.MKeyRefused grew by %d, want %d", got, violations)
				}
				// With the key: everything answered, the key shown.
				if !h.getNI(key, tgt.path...) {
					t.Fatal("NodeInfo Get with the key dropped")
				}
				pi, ok = h.getPI(key, 0, tgt.path...)
				if !ok || pi.MKey != key || pi.MKeyViolations != violations {
					t.Fatalf("PortInfo Get with the key: %v %+v", ok, pi)
				}
				// A Set with the key and M_KeyViolations 0 clears the counter.
				pi.PortState, pi.PortPhysicalState, pi.LinkSpeedEnabled, pi.LinkWidthEnabled = 0, 0, 0, 0
				pi.MKeyViolations = 0
				if got, ok := h.setPI(key, pi, 0, tgt.path...); !ok || got.MKeyViolations != 0 {
					t.Fatalf("Set with the key: %v %+v", ok, got)
				}
			})
		}
	}
}

// TestMKeyOnlyAtDestination: a switch on the way does not check the
// directed route's M_Key; only the SMA that answers does.
func TestMKeyOnlyAtDestination(t *testing.T) {
	h, _ := newKeyedHarness(t)
	h.protect(0, 0x55, 3, 0, 1) // sw1
	if !h.getNI(0, 1, 3) {      // sw2, through sw1
		t.Fatal("NodeInfo of sw2 through a protected sw1 was dropped")
	}
	if h.getNI(0, 1) {
		t.Fatal("NodeInfo of the protected sw1 without its key was answered")
	}
	// A Set to an external port of a switch does not touch its M_Key.
	pi, _ := h.getPI(0x55, 3, 1)
	pi.PortState, pi.PortPhysicalState, pi.LinkSpeedEnabled, pi.LinkWidthEnabled = 0, 0, 0, 0
	pi.MKey, pi.MKeyProtectBits = 0x66, 0
	if _, ok := h.setPI(0x55, pi, 3, 1); !ok {
		t.Fatal("Set of sw1 port 3 with the key dropped")
	}
	if s, _ := h.fab.PortInfo(gSw1, 0); s.MKey != 0x55 || s.MKeyProtect != 3 {
		t.Fatalf("sw1 key after a port-3 Set: %+v", s)
	}
}

// TestMKeyLease: a violation starts the lease timer, a good Get stops it,
// and when it runs out the protection drops to 0 (the key stays).
func TestMKeyLease(t *testing.T) {
	h, clk := newKeyedHarness(t)
	const key = 0xfeed
	h.protect(0, key, 2, 5, 1)
	snap := func() PortSnapshot {
		s, err := h.fab.PortInfo(gSw1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if h.getNI(1, 1) {
		t.Fatal("answered without the key")
	}
	if !snap().LeaseRunning {
		t.Fatal("a violation did not start the lease timer")
	}
	clk.add(4 * time.Second)
	if !h.getNI(key, 1) {
		t.Fatal("dropped with the key")
	}
	if s := snap(); s.LeaseRunning || s.MKeyProtect != 2 {
		t.Fatalf("a good Get did not stop the timer: %+v", s)
	}
	clk.add(10 * time.Second) // no timer: nothing expires
	if s := snap(); s.MKeyProtect != 2 {
		t.Fatalf("protection dropped without a running lease: %+v", s)
	}
	h.getNI(1, 1)
	clk.add(4 * time.Second)
	h.getNI(2, 1) // a second violation does not restart the timer
	clk.add(time.Second)
	s := snap()
	if s.MKeyProtect != 0 || s.MKey != key || s.LeaseRunning || s.MKeyViolations != 3 {
		t.Fatalf("after the lease: %+v, want protect 0, key kept, 3 violations", s)
	}
	// Level 0 now: anyone reads the key.
	if pi, ok := h.getPI(0, 0, 1); !ok || pi.MKey != key {
		t.Fatalf("after the lease a Get without the key: %v %+v", ok, pi)
	}
	// Lease 0 never expires.
	h.protect(key, key, 2, 0, 1)
	h.getNI(1, 1)
	clk.add(1000 * time.Hour)
	if s := snap(); s.MKeyProtect != 2 || s.LeaseRunning {
		t.Fatalf("lease 0 expired: %+v", s)
	}
}

// TestMKeyTrap256: a refused SMP makes the port send trap 256 to its
// MasterSMLID with the offending method, attribute and key.
func TestMKeyTrap256(t *testing.T) {
	h, _ := newKeyedHarness(t)
	// h1's own port: LID 1, SM LID 1 (the agent here), keyed.
	pi, _ := h.getPI(0, 0)
	pi.PortState, pi.PortPhysicalState, pi.LinkSpeedEnabled, pi.LinkWidthEnabled = 0, 0, 0, 0
	pi.LID, pi.MasterSMLID, pi.MKey, pi.MKeyProtectBits = 1, 1, 0xabc, 1
	if _, ok := h.setPI(0, pi, 0); !ok {
		t.Fatal("keying h1 dropped")
	}
	bad := *pi
	bad.LID = 9
	s, err := smp.NewDRSet(smp.AttrPortInfo, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAttr(&bad); err != nil {
		t.Fatal(err)
	}
	s.MKey, s.TID = 0x99, 77
	buf, _ := s.Encode()
	if err := h.c.Send(transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, err := h.c.Recv(ctx)
	if err != nil {
		t.Fatalf("no trap: %v", err)
	}
	tr, err := smp.Decode(p.MAD)
	if err != nil {
		t.Fatal(err)
	}
	var n smp.Notice
	if err := tr.Attr(&n); err != nil {
		t.Fatal(err)
	}
	d, err := n.Trap256()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Method != smp.MethodTrap || n.IssuerLID != 1 || n.Type != smp.NoticeSecurity ||
		d.LID != 1 || d.Method != smp.MethodSet || d.AttrID != smp.AttrPortInfo || d.MKey != 0x99 || !d.DRNotice {
		t.Fatalf("trap %+v: %+v", n, d)
	}
	if st := h.fab.Stats(); st.Traps != 1 || st.MKeyRefused != 1 {
		t.Fatalf("Stats: %+v", st)
	}
	if _, ok := recv(h.c); ok {
		t.Fatal("the refused Set was answered")
	}
}

// TestMKeyAnotherAgent: an agent attached to another CA without the key
// cannot change a protected port; a DR Set from there is dropped.
func TestMKeyAnotherAgent(t *testing.T) {
	h, _ := newKeyedHarness(t)
	h.protect(0, 0x42, 2, 0, 1)    // sw1
	h.protect(0, 0x43, 2, 0, 1, 2) // h2
	c, err := h.fab.Attach(gH2, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rogue := &harness{t: t, fab: h.fab, c: c}
	evil := smp.PortInfo{LID: 0x99}
	for _, path := range [][]uint8{nil, {1}} { // its own port, its switch
		if _, ok := rogue.setPI(0, &evil, 0, path...); ok {
			t.Fatalf("rogue Set via %v answered", path)
		}
		if _, ok := rogue.getPI(0, 0, path...); ok {
			t.Fatalf("rogue Get via %v answered at level 2", path)
		}
	}
	for _, g := range []uint64{gSw1, gH2} {
		p := uint8(0)
		if g == gH2 {
			p = 1
		}
		if s, _ := h.fab.PortInfo(g, p); s.LID == 0x99 || s.MKeyViolations != 2 {
			t.Fatalf("%#x after the rogue: %+v", g, s)
		}
	}
	var _ transport.Conn = c
}
