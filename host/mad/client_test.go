package mad_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

// GUIDs of the line fabric: CA A (port 1) - SW1 [1] ... [2] SW2 [1] - CA B.
const (
	guidA   = 0x100
	guidSW1 = 0x1
	guidSW2 = 0x2
	guidB   = 0x200
)

// lineFabric builds CA A - SW1 - SW2 - CA B with a 128-entry LFT cap, and a
// client attached at A's port 1 with a short timeout so lost SMPs fail fast.
func lineFabric(t testing.TB) (*sim.Fabric, *mad.Client, transport.Transport) {
	t.Helper()
	return lineFabricOpts(t, sim.Options{LinearFDBCap: 128})
}

func lineFabricOpts(t testing.TB, opts sim.Options) (*sim.Fabric, *mad.Client, transport.Transport) {
	t.Helper()
	f := netfile.New()
	a, err := f.AddCA("A", guidA, 1)
	must(t, err)
	s1, err := f.AddSwitch("SW1", guidSW1, 4)
	must(t, err)
	s2, err := f.AddSwitch("SW2", guidSW2, 4)
	must(t, err)
	b, err := f.AddCA("B", guidB, 1)
	must(t, err)
	must(t, f.Connect(a, 1, s1, 1, netfile.Width4x, netfile.SDR))
	must(t, f.Connect(s1, 2, s2, 2, netfile.Width4x, netfile.SDR))
	must(t, f.Connect(s2, 1, b, 1, netfile.Width4x, netfile.SDR))
	fab, err := sim.New(f, opts)
	must(t, err)
	conn, err := fab.Attach(guidA, 1)
	must(t, err)
	tr := transport.New(conn, transport.Options{Timeout: 20 * time.Millisecond, Retries: 1})
	t.Cleanup(func() { tr.Close() })
	return fab, &mad.Client{T: tr}, tr
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestGetNodeInfoAlongPaths(t *testing.T) {
	_, c, _ := lineFabric(t)
	tests := []struct {
		name     string
		path     mad.Path
		guid     uint64
		typ      uint8
		ports    uint8
		local    uint8
		portGUID uint64
	}{
		{"own node", nil, guidA, smp.NodeTypeCA, 1, 1, guidA + 1},
		{"one hop", mad.Path{1}, guidSW1, smp.NodeTypeSwitch, 4, 1, guidSW1},
		{"two hops", mad.Path{1, 2}, guidSW2, smp.NodeTypeSwitch, 4, 2, guidSW2},
		{"three hops", mad.Path{1, 2, 1}, guidB, smp.NodeTypeCA, 1, 1, guidB + 1},
		{"there and back", mad.Path{1, 2, 2}, guidSW1, smp.NodeTypeSwitch, 4, 2, guidSW1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ni smp.NodeInfo
			if err := c.Get(context.Background(), tc.path, smp.AttrNodeInfo, 0, &ni); err != nil {
				t.Fatal(err)
			}
			if ni.NodeGUID != tc.guid || ni.NodeType != tc.typ || ni.NumPorts != tc.ports || ni.LocalPortNum != tc.local || ni.PortGUID != tc.portGUID {
				t.Fatalf("NodeInfo via %s = GUID %#x type %d ports %d local %d portGUID %#x; want %#x %d %d %d %#x",
					tc.path, ni.NodeGUID, ni.NodeType, ni.NumPorts, ni.LocalPortNum, ni.PortGUID, tc.guid, tc.typ, tc.ports, tc.local, tc.portGUID)
			}
		})
	}
}

func TestSetThenGet(t *testing.T) {
	fab, c, tr := lineFabric(t)
	ctx := context.Background()

	// LFT block 1 of SW2: the Set's answer and a later Get both carry it,
	// and the fabric holds it.
	var blk smp.LFTBlock
	for i := range blk {
		blk[i] = uint8(i % 5)
	}
	var echo, back smp.LFTBlock
	must(t, c.Set(ctx, mad.Path{1, 2}, smp.AttrLinearForwardingTable, 1, &blk, &echo))
	must(t, c.Get(ctx, mad.Path{1, 2}, smp.AttrLinearForwardingTable, 1, &back))
	if echo != blk || back != blk {
		t.Fatalf("LFT block: set %v, echo %v, get %v", blk, echo, back)
	}
	// Block 0 was never written: all unreachable.
	must(t, c.Get(ctx, mad.Path{1, 2}, smp.AttrLinearForwardingTable, 0, &back))
	for i, v := range back {
		if v != smp.LFTUnreachable {
			t.Fatalf("unwritten block 0 entry %d = %d, want 0xFF", i, v)
		}
	}

	// PortInfo LID of SW1 port 0, through a read-modify-write; out may be nil.
	var pi smp.PortInfo
	must(t, c.Get(ctx, mad.Path{1}, smp.AttrPortInfo, 0, &pi))
	pi.LID, pi.PortState, pi.PortPhysicalState = 7, smp.PortStateNoChange, smp.PhysStateNoChange
	pi.LinkSpeedEnabled, pi.LinkWidthEnabled, pi.LinkDownDefaultState = 0, 0, 0
	must(t, c.Set(ctx, mad.Path{1}, smp.AttrPortInfo, 0, &pi, nil))
	snap, err := fab.PortInfo(guidSW1, 0)
	must(t, err)
	if snap.LID != 7 {
		t.Fatalf("SW1 port 0 LID after Set = %d, want 7", snap.LID)
	}
	st := tr.Stats()
	if st.Sets != 2 || st.Gets != 3 {
		t.Fatalf("transport counted %d Gets %d Sets, want 3 and 2", st.Gets, st.Sets)
	}
}

func TestStatusErrors(t *testing.T) {
	_, c, _ := lineFabric(t)
	ctx := context.Background()
	var blk smp.LFTBlock
	tests := []struct {
		name   string
		do     func() error
		status uint16
		attr   uint16
		mod    uint32
		words  string
	}{
		{"LFT block beyond LinearFDBCap", func() error {
			return c.Get(ctx, mad.Path{1}, smp.AttrLinearForwardingTable, 2, &blk)
		}, smp.StatusInvalidField, smp.AttrLinearForwardingTable, 2, "invalid attribute or modifier"},
		{"LFT Set beyond LinearFDBCap", func() error {
			return c.Set(ctx, mad.Path{1}, smp.AttrLinearForwardingTable, 100, &blk, nil)
		}, smp.StatusInvalidField, smp.AttrLinearForwardingTable, 100, "invalid attribute or modifier"},
		{"LFT of a CA", func() error {
			return c.Get(ctx, nil, smp.AttrLinearForwardingTable, 0, &blk)
		}, smp.StatusUnsupportedMethodAttr, smp.AttrLinearForwardingTable, 0, "unsupported method/attribute"},
		{"Set of read-only NodeInfo", func() error {
			var ni smp.NodeInfo
			return c.Set(ctx, mad.Path{1}, smp.AttrNodeInfo, 0, &ni, nil)
		}, smp.StatusUnsupportedMethodAttr, smp.AttrNodeInfo, 0, "unsupported method/attribute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			var me *mad.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v (%T), want *mad.Error", err, err)
			}
			if me.Status&smp.StatusCodeMask != tc.status || me.Attr != tc.attr || me.Mod != tc.mod {
				t.Fatalf("got status %#x attr %#x mod %d, want %#x %#x %d", me.Status, me.Attr, me.Mod, tc.status, tc.attr, tc.mod)
			}
			if !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("error %q does not say %q", err, tc.words)
			}
		})
	}
}

func TestPathTooLong(t *testing.T) {
	_, c, tr := lineFabric(t)
	tests := []struct{ hops int }{{smp.MaxHops + 1}, {200}}
	for _, tc := range tests {
		before := tr.Stats().Sent
		p := make(mad.Path, tc.hops)
		for i := range p {
			p[i] = 1
		}
		var ni smp.NodeInfo
		err := c.Get(context.Background(), p, smp.AttrNodeInfo, 0, &ni)
		if err == nil || !strings.Contains(err.Error(), "longer than") {
			t.Fatalf("%d hops: err = %v, want a too-long error", tc.hops, err)
		}
		if sent := tr.Stats().Sent - before; sent != 0 {
			t.Fatalf("%d hops: %d MADs sent for a path that cannot be encoded", tc.hops, sent)
		}
	}
}

func TestTimeoutThroughDeadLink(t *testing.T) {
	fab, c, tr := lineFabric(t)
	ctx := context.Background()
	var ni smp.NodeInfo
	must(t, c.Get(ctx, mad.Path{1, 2}, smp.AttrNodeInfo, 0, &ni))
	must(t, fab.LinkDown(guidSW1, 2))
	tests := []struct {
		name string
		path mad.Path
		dead bool
		// timeouts the transport counts: none for a route through one
		// found dead just before (not sent).
		timeouts uint64
	}{
		{"across the dead link", mad.Path{1, 2}, true, 1},
		{"beyond the dead link", mad.Path{1, 2, 1}, true, 0},
		{"before the dead link", mad.Path{1}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tr.Stats().Timeouts
			err := c.Get(ctx, tc.path, smp.AttrNodeInfo, 0, &ni)
			if !tc.dead {
				must(t, err)
				return
			}
			if !errors.Is(err, transport.ErrTimeout) {
				t.Fatalf("err = %v, want one wrapping transport.ErrTimeout", err)
			}
			var me *mad.Error
			if errors.As(err, &me) {
				t.Fatalf("a timeout reported as an SMP status: %v", err)
			}
			if !strings.Contains(err.Error(), tc.path.String()) {
				t.Fatalf("error %q does not name the path %s", err, tc.path)
			}
			if tc.timeouts == 1 {
				// The probe: SW1's port 2 is Down.
				waitHeld(t, c, tc.path)
			}
			if got := tr.Stats().Timeouts - before; got != tc.timeouts {
				t.Fatalf("transport counted %d timeouts, want %d", got, tc.timeouts)
			}
			if behind := errors.Is(err, mad.ErrBehindDead); behind != (tc.timeouts == 0) {
				t.Fatalf("err = %v: not sent %v, want %v", err, behind, tc.timeouts == 0)
			}
		})
	}
	// The link back up and a sweep beginning: the routes through it are
	// sent again.
	must(t, fab.LinkUp(guidSW1, 2))
	c.Forget()
	must(t, c.Get(ctx, mad.Path{1, 2}, smp.AttrNodeInfo, 0, &ni))
	must(t, c.Get(ctx, mad.Path{1, 2, 1}, smp.AttrNodeInfo, 0, &ni))
}

// TestSetAllBehindADeadLink: blocks for switches behind a cable that died
// under the push fail at once once a route through it went unanswered,
// instead of each waiting out its timeouts (the transport's window
// shrinks on them, so they went one after another).
func TestSetAllBehindADeadLink(t *testing.T) {
	const leaves, blocks = 30, 20
	f := netfile.New()
	a, err := f.AddCA("A", guidA, 1)
	must(t, err)
	hub, err := f.AddSwitch("hub", 0x1000, 4)
	must(t, err)
	mid, err := f.AddSwitch("mid", 0x2000, leaves+1)
	must(t, err)
	must(t, f.Connect(a, 1, hub, 1, netfile.Width4x, netfile.EDR))
	must(t, f.Connect(hub, 2, mid, 1, netfile.Width4x, netfile.EDR))
	var paths []mad.Path
	for i := 2; i <= leaves+1; i++ {
		l, err := f.AddSwitch(fmt.Sprintf("leaf%d", i), uint64(0x2000+i), 4)
		must(t, err)
		must(t, f.Connect(mid, i, l, 1, netfile.Width4x, netfile.EDR))
		paths = append(paths, mad.Path{1, 2, uint8(i)})
	}
	fab, err := sim.New(f, sim.Options{})
	must(t, err)
	conn, err := fab.Attach(guidA, 1)
	must(t, err)
	tr := transport.New(conn, transport.Options{Window: 16, Timeout: 20 * time.Millisecond, Retries: 1})
	t.Cleanup(func() { tr.Close() })
	c := &mad.Client{T: tr}
	ctx := context.Background()
	var blk smp.LFTBlock
	push := func() (failed, behind int) {
		c.SetAll(ctx, leaves*blocks, func(i int) mad.Req {
			return mad.Req{Path: paths[i%leaves], Attr: smp.AttrLinearForwardingTable, Mod: uint32(i / leaves), Val: &blk}
		}, func(_ int, err error) {
			if err != nil {
				failed++
				if !errors.Is(err, transport.ErrTimeout) {
					t.Errorf("err = %v, want a timeout", err)
				}
			}
			if errors.Is(err, mad.ErrBehindDead) {
				behind++
			}
		})
		return failed, behind
	}
	must(t, fab.LinkDown(0x1000, 2))
	before := tr.Stats().Timeouts
	failed, behind := push()
	waitHeld(t, c, mad.Path{1, 2})
	timeouts := tr.Stats().Timeouts - before
	// What was in flight when the first timeout came times out; the
	// probe that follows finds the mid switch's route dead, and the rest
	// is not sent.
	if failed != leaves*blocks || behind < failed-4*16 || timeouts > 4*16 {
		t.Fatalf("%d of %d Sets failed, %d not sent, %d timeouts; want all failed, at most a few windows' worth (16) sent", failed, leaves*blocks, behind, timeouts)
	}
	var ni smp.NodeInfo
	if err := c.Get(ctx, mad.Path{1, 2}, smp.AttrNodeInfo, 0, &ni); !errors.Is(err, mad.ErrBehindDead) {
		t.Fatalf("the dead link's far switch: err = %v, want one not sent", err)
	}
	if err := c.Get(ctx, mad.Path{1}, smp.AttrNodeInfo, 0, &ni); err != nil {
		t.Fatalf("the switch before the dead link: %v", err)
	}
	must(t, fab.LinkUp(0x1000, 2))
	c.Forget() // as a sweep begins
	must(t, c.Get(ctx, mad.Path{1, 2}, smp.AttrNodeInfo, 0, &ni))
	if failed, _ := push(); failed != 0 {
		t.Fatalf("after the link came back: %d Sets failed", failed)
	}
}

func TestPath(t *testing.T) {
	tests := []struct {
		p    mad.Path
		ext  uint8
		want string
	}{
		{nil, 3, "[3]"},
		{mad.Path{1}, 2, "[1,2]"},
		{mad.Path{1, 2, 33}, 254, "[1,2,33,254]"},
	}
	for _, tc := range tests {
		orig := tc.p.String()
		q := tc.p.Extend(tc.ext)
		if q.String() != tc.want {
			t.Fatalf("%s.Extend(%d) = %s, want %s", orig, tc.ext, q, tc.want)
		}
		if tc.p.String() != orig {
			t.Fatalf("Extend modified its receiver: %s → %s", orig, tc.p)
		}
	}
	// Extending a path that has spare capacity must not alias its siblings.
	base := make(mad.Path, 1, 8)
	base[0] = 1
	a, b := base.Extend(2), base.Extend(3)
	if a[1] != 2 || b[1] != 3 {
		t.Fatalf("sibling paths alias: %s %s", a, b)
	}
}

// loseAttr loses every SMP of one attribute: the route answers the rest
// (counted in others).
type loseAttr struct {
	transport.Transport
	attr   uint16
	others *atomic.Int64
}

func (l loseAttr) Do(ctx context.Context, req transport.Packet) (transport.Packet, error) {
	var m smp.SMP
	if m.Decode(req.MAD) == nil && m.AttrID == l.attr {
		return transport.Packet{}, transport.ErrTimeout
	}
	resp, err := l.Transport.Do(ctx, req)
	l.others.Add(1)
	return resp, err
}

// TestLostSMPHoldsNothing: an SMP lost on every attempt over a route whose
// ports the probe finds up holds nothing dead.
func TestLostSMPHoldsNothing(t *testing.T) {
	_, _, tr := lineFabric(t)
	var probes atomic.Int64
	c := &mad.Client{T: loseAttr{tr, smp.AttrSwitchInfo, &probes}}
	ctx := context.Background()
	var si smp.SwitchInfo
	if err := c.Get(ctx, mad.Path{1, 2}, smp.AttrSwitchInfo, 0, &si); !errors.Is(err, transport.ErrTimeout) || errors.Is(err, mad.ErrBehindDead) {
		t.Fatalf("err = %v, want a timeout of the SMP sent", err)
	}
	// The probe asks SW1 (route [1]) for its port 2: up.
	for deadline := time.Now().Add(5 * time.Second); probes.Load() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no probe Get in 5 s")
		}
	}
	if c.Held(mad.Path{1, 2}) {
		t.Fatal("a route that answered its probe is held dead")
	}
	var ni smp.NodeInfo
	for _, p := range []mad.Path{{1, 2}, {1, 2, 1}} {
		if err := c.Get(ctx, p, smp.AttrNodeInfo, 0, &ni); err != nil {
			t.Fatalf("route %s after a lost SMP: %v", p, err)
		}
	}
}

// waitHeld waits for the probe that follows a timeout over p to hold it
// dead.
func waitHeld(t *testing.T, c *mad.Client, p mad.Path) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !c.Held(p); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("route %s not held dead 5 s after its timeout", p)
		}
	}
}

// holdProbe holds the first PortInfo Get over route at until released: a
// probe in flight.
type holdProbe struct {
	transport.Transport
	at       mad.Path
	inFlight chan struct{}
	release  chan struct{}
	once     *sync.Once
}

func (h holdProbe) Do(ctx context.Context, req transport.Packet) (transport.Packet, error) {
	var m smp.SMP
	if m.Decode(req.MAD) == nil && m.AttrID == smp.AttrPortInfo && int(m.HopCount) == len(h.at) {
		h.once.Do(func() { close(h.inFlight); <-h.release })
	}
	return h.Transport.Do(ctx, req)
}

// TestForgetUnderAProbe: a probe that began before a sweep did (Forget)
// holds nothing when its answer comes after: the sweep may have seen the
// cable come back.
func TestForgetUnderAProbe(t *testing.T) {
	fab, _, tr := lineFabric(t)
	h := holdProbe{tr, mad.Path{1}, make(chan struct{}), make(chan struct{}), new(sync.Once)}
	c := &mad.Client{T: h}
	ctx := context.Background()
	must(t, fab.LinkDown(guidSW1, 2))
	var ni smp.NodeInfo
	if err := c.Get(ctx, mad.Path{1, 2}, smp.AttrNodeInfo, 0, &ni); !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	<-h.inFlight // the probe asks SW1 for its port 2
	c.Forget()
	close(h.release) // and hears it is Down
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if c.Held(mad.Path{1, 2}) {
			t.Fatal("a probe begun before Forget held its route after it")
		}
	}
}

// TestDeadRouteTrial: a route held dead gets one SMP through once its hold
// has run out, so a cable back up is found without a sweep's Forget (a
// standby SM's polls of the master are no sweep).
func TestDeadRouteTrial(t *testing.T) {
	fab, c, _ := lineFabric(t)
	ctx := context.Background()
	must(t, fab.LinkDown(guidSW1, 2))
	var ni smp.NodeInfo
	if err := c.Get(ctx, mad.Path{1, 2}, smp.AttrNodeInfo, 0, &ni); !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	waitHeld(t, c, mad.Path{1, 2})
	must(t, fab.LinkUp(guidSW1, 2))
	start := time.Now()
	for {
		err := c.Get(ctx, mad.Path{1, 2, 1}, smp.AttrNodeInfo, 0, &ni)
		if err == nil {
			break
		}
		if !errors.Is(err, mad.ErrBehindDead) || time.Since(start) > 5*time.Second {
			t.Fatalf("%v after the link came back: %v", time.Since(start), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
