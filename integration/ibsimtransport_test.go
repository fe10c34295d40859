package integration

// The transport/ibsim tests that need the host's MAD client or discovery:
// the real ibsim (Debian ibsim-utils) on transport/ibsim's testdata/small.net
//
//	h1 -1- sw1 -3===3- sw2 -1- h3
//	       sw1 -2- h2
//
// walked by host/discovery, brought up by hand with host/mad, and measured.
// transport/ibsim's own tests use only transport/* and the smp codec. Each
// test starts its own simulator and stops it in Cleanup.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/mad"
	"github.com/ibsm/ibsm/integration/benchutil"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/ibsim"
	"github.com/ibsm/ibsm/transport/smp"
)

// GUIDs of small.net's nodes.
const (
	smallSW1 = 0x0002c90000000100
	smallSW2 = 0x0002c90000000101
	smallH1  = 0x0002c90000001000 // CAs take nports+1 GUIDs each
	smallH2  = 0x0002c90000001002
	smallH3  = 0x0002c90000001004
)

// startSmallSim runs ibsim on small.net under a socket name of its own.
func startSmallSim(t testing.TB) *benchutil.IBSim {
	t.Helper()
	net, err := filepath.Abs("../transport/ibsim/testdata/small.net")
	if err != nil {
		t.Fatal(err)
	}
	return benchutil.StartIBSimTest(t, benchutil.IBSimOptions{NetFile: net})
}

func dialSmall(t testing.TB, sim *benchutil.IBSim, o ibsim.Options) *ibsim.Conn {
	t.Helper()
	o.SockName = sim.Sockname
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ibsim.Dial(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func smallCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestIBSimTransportDiscover walks the fabric with the host's discovery over transport.New.
func TestIBSimTransportDiscover(t *testing.T) {
	sim := startSmallSim(t)
	c := dialSmall(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
	tr := transport.New(c, transport.Options{Window: 4, Timeout: time.Second})
	defer tr.Close()
	d := &discovery.Discoverer{C: &mad.Client{T: tr}}
	f, err := d.Run(smallCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Warnings) > 0 {
		t.Errorf("warnings: %q", f.Warnings)
	}
	if f.SMGUID != smallH1 || f.SMPort != 1 {
		t.Errorf("SM at %#x port %d, want h1 port 1", f.SMGUID, f.SMPort)
	}
	want := map[uint64]string{smallSW1: "switch one", smallSW2: "switch two", smallH1: "h1 mlx5_0", smallH2: "h2 mlx5_0", smallH3: "h3 mlx5_0"}
	if len(f.Nodes) != len(want) {
		t.Errorf("discovered %d nodes, want %d", len(f.Nodes), len(want))
	}
	for g, desc := range want {
		n := f.Nodes[g]
		if n == nil {
			t.Errorf("node %#x not discovered", g)
			continue
		}
		if n.Desc != desc {
			t.Errorf("node %#x description %q, want %q", g, n.Desc, desc)
		}
	}
	if n := f.Nodes[smallSW1]; n != nil && (n.Ports[3].PeerGUID != smallSW2 || n.Ports[3].PeerPort != 3) {
		t.Errorf("sw1 port 3 peer %#x[%d], want sw2[3]", n.Ports[3].PeerGUID, n.Ports[3].PeerPort)
	}
	st := tr.Stats()
	if st.Gets == 0 || st.Retries != 0 || st.Timeouts != 0 {
		t.Errorf("transport stats %+v: want Gets and no retries or timeouts", st)
	}
}

// bringUp does by hand, with DR SMPs, what an SM does so LID routing and
// traps work: LIDs (h1 1, sw1 2, sw2 3, h2 4, h3 5) with SM LID 1, LFTs,
// LinearFDBTop and every linked port Armed then Active.
func bringUpSmall(t *testing.T, c *mad.Client) {
	t.Helper()
	ctx := smallCtx(t)
	type port struct {
		path mad.Path
		mod  uint32
		lid  uint16 // 0: a switch's external port, no LID
	}
	h1, sw1, sw2, h2, h3 := mad.Path{}, mad.Path{1}, mad.Path{1, 3}, mad.Path{1, 2}, mad.Path{1, 3, 1}
	lids := []port{{h1, 0, 1}, {sw1, 0, 2}, {sw2, 0, 3}, {h2, 0, 4}, {h3, 0, 5}}
	links := []port{{h1, 0, 0}, {sw1, 1, 0}, {sw1, 2, 0}, {sw1, 3, 0}, {sw2, 3, 0}, {sw2, 1, 0}, {h2, 0, 0}, {h3, 0, 0}}
	set := func(p port, edit func(*smp.PortInfo)) {
		var pi smp.PortInfo
		if err := c.Get(ctx, p.path, smp.AttrPortInfo, p.mod, &pi); err != nil {
			t.Fatal(err)
		}
		pi.PortState = 0 // no change
		edit(&pi)
		if err := c.Set(ctx, p.path, smp.AttrPortInfo, p.mod, &pi, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range lids {
		set(p, func(pi *smp.PortInfo) { pi.LID, pi.MasterSMLID = p.lid, 1 })
	}
	for sw, lft := range map[string][6]uint8{"sw1": {0xFF, 1, 0, 3, 2, 3}, "sw2": {0xFF, 3, 3, 0, 3, 1}} {
		path := sw1
		if sw == "sw2" {
			path = sw2
		}
		var b smp.LFTBlock
		for i := range b {
			b[i] = smp.LFTUnreachable
		}
		copy(b[:], lft[:])
		if err := c.Set(ctx, path, smp.AttrLinearForwardingTable, 0, &b, nil); err != nil {
			t.Fatal(err)
		}
		var si smp.SwitchInfo
		if err := c.Get(ctx, path, smp.AttrSwitchInfo, 0, &si); err != nil {
			t.Fatal(err)
		}
		si.LinearFDBTop = 5
		if err := c.Set(ctx, path, smp.AttrSwitchInfo, 0, &si, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, state := range []uint8{smp.PortStateArmed, smp.PortStateActive} {
		for _, p := range links {
			set(p, func(pi *smp.PortInfo) { pi.PortState = state })
		}
	}
}

func lidNodeInfo(t *testing.T, tr transport.Transport, lid uint16) (smp.NodeInfo, error) {
	t.Helper()
	mad := make([]byte, smp.MADLen)
	if err := smp.NewLIDGet(smp.AttrNodeInfo, 0).EncodeTo(mad); err != nil {
		t.Fatal(err)
	}
	var ni smp.NodeInfo
	resp, err := tr.Do(smallCtx(t), transport.Packet{DLID: lid, MAD: mad})
	if err != nil {
		return ni, err
	}
	if resp.SLID != lid {
		t.Errorf("LID-routed response from SLID %d, want %d", resp.SLID, lid)
	}
	s, err := smp.Decode(resp.MAD)
	if err != nil {
		t.Fatal(err)
	}
	return ni, s.Attr(&ni)
}

// nextTrap waits for the next Trap(Notice) on tr.Unsolicited.
func nextTrap(t *testing.T, tr transport.Transport) (transport.Packet, smp.Notice) {
	t.Helper()
	var n smp.Notice
	select {
	case p, ok := <-tr.Unsolicited():
		if !ok {
			t.Fatal("Unsolicited closed")
		}
		s, err := smp.Decode(p.MAD)
		if err != nil {
			t.Fatal(err)
		}
		if s.MgmtClass != smp.ClassSMPLID || s.Method != smp.MethodTrap || s.AttrID != smp.AttrNotice {
			t.Fatalf("unsolicited class %#x method %#x attr %#x, want a LID-routed Trap(Notice)", s.MgmtClass, s.Method, s.AttrID)
		}
		if err := s.Attr(&n); err != nil {
			t.Fatal(err)
		}
		return p, n
	case <-time.After(3 * time.Second):
		t.Fatal("no trap within 3s")
	}
	return transport.Packet{}, n
}

// TestIBSimTransportTraps brings the fabric up, then gets trap 128 for a console Unlink
// and trap 144 for our own SET_ISSM on reattach; LID-routed MADs bounce
// (BounceError → ErrUndeliverable) across the unlinked port.
func TestIBSimTransportTraps(t *testing.T) {
	sim := startSmallSim(t)
	c := dialSmall(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
	tr := transport.New(c, transport.Options{Window: 4, Timeout: time.Second, Retries: 1})
	defer tr.Close()
	bringUpSmall(t, &mad.Client{T: tr})
	for lid, guid := range map[uint16]uint64{1: smallH1, 2: smallSW1, 3: smallSW2, 4: smallH2, 5: smallH3} {
		ni, err := lidNodeInfo(t, tr, lid)
		if err != nil {
			t.Fatalf("LID %d: %v", lid, err)
		}
		if ni.NodeGUID != guid {
			t.Errorf("LID %d answered by %#x, want %#x", lid, ni.NodeGUID, guid)
		}
	}

	if err := sim.Unlink("sw2", 1); err != nil {
		t.Fatal(err)
	}
	p, n := nextTrap(t, tr)
	if lid, err := n.Trap128(); err != nil || lid != 3 || p.SLID != 3 || p.DLID != 1 {
		t.Errorf("trap: %+v (err %v) from SLID %d to DLID %d, want trap 128 from sw2 (LID 3) to 1", n, err, p.SLID, p.DLID)
	}
	start := time.Now()
	if _, err := lidNodeInfo(t, tr, 5); !errors.Is(err, transport.ErrUndeliverable) {
		t.Errorf("LID 5 behind the unlinked port: err = %v, want ErrUndeliverable", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("bounce took %v; ibsim's status 110 should end the attempt at once", d)
	}
	if err := sim.ReLink("sw2", 1); err != nil {
		t.Fatal(err)
	}
	if _, n := nextTrap(t, tr); n.TrapNumber != 128 {
		t.Errorf("after ReLink: trap %d, want 128", n.TrapNumber)
	}

	// An SA query from another node reaches the SM as an unsolicited
	// request and the SM's turned-around answer finds its way back (ibsim
	// routes it by the TID bits it wrote).
	h2 := dialSmall(t, sim, ibsim.Options{Attach: "h2"})
	trh2 := transport.New(h2, transport.Options{Timeout: time.Second, Retries: transport.NoRetries})
	defer trh2.Close()
	go func() {
		for p := range tr.Unsolicited() {
			if p.MAD[1] != smp.ClassSA {
				continue
			}
			resp := append([]byte(nil), p.MAD...)
			resp[3] |= smp.MethodResponse
			resp[64] = 0x5A // a recognisable answer
			if err := tr.Send(transport.Packet{DLID: p.SLID, QP: p.QP, MAD: resp}); err != nil {
				t.Errorf("SM answering SA: %v", err)
			}
			return
		}
	}()
	q := make([]byte, smp.MADLen)
	q[0], q[1], q[2], q[3] = 1, smp.ClassSA, smp.SAClassVersion, smp.MethodGet
	binary.BigEndian.PutUint16(q[16:], 0x0011) // NodeRecord
	resp, err := trh2.Do(smallCtx(t), transport.Packet{DLID: 1, QP: 1, MAD: q})
	if err != nil {
		t.Fatalf("SA query from h2 to the SM: %v", err)
	}
	if resp.MAD[64] != 0x5A || resp.SLID != 1 || resp.QP != 1 {
		t.Errorf("SA answer from SLID %d QP %d data %#x, want the SM's from LID 1 QP 1", resp.SLID, resp.QP, resp.MAD[64])
	}

	// Our port now has LID 1 and SM LID 1: setting IsSM again on reattach
	// makes ibsim send trap 144 to us.
	if err := tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	c2 := dialSmall(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
	tr2 := transport.New(c2, transport.Options{})
	defer tr2.Close()
	if a := c2.Attachment(); a.LID != 1 || a.MasterSMLID != 1 || a.PortState != smp.PortStateActive {
		t.Errorf("reattached at %+v, want LID 1, SM LID 1, Active", a)
	}
	p, n = nextTrap(t, tr2)
	tr144, err := n.Trap144()
	if err != nil || n.IssuerLID != 1 || tr144.CapabilityMask&smp.CapIsSM == 0 {
		t.Errorf("trap %+v (%+v, err %v), want trap 144 from LID 1 with IsSM", n, tr144, err)
	}
}

// BenchmarkIBSimWindow measures DR NodeInfo Gets (3 hops, to h3) through
// the dispatcher against a real ibsim, for several windows. ibsim is
// single-threaded, so past a few outstanding MADs only latency hiding
// helps; run with -benchtime=20000x on a quiet machine.
func BenchmarkIBSimWindow(b *testing.B) {
	for _, w := range []int{1, 2, 4, 8, 16, 32, 64} {
		b.Run(fmt.Sprintf("window=%d", w), func(b *testing.B) {
			sim := startSmallSim(b)
			c := dialSmall(b, sim, ibsim.Options{Attach: "h1", IsSM: true})
			tr := transport.New(c, transport.Options{Window: w, Timeout: time.Second})
			defer tr.Close()
			cl := &mad.Client{T: tr}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range w {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var ni smp.NodeInfo
					for next.Add(1) <= int64(b.N) {
						if err := cl.Get(context.Background(), mad.Path{1, 3, 1}, smp.AttrNodeInfo, 0, &ni); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "MAD/s")
			if st := tr.Stats(); st.Retries != 0 {
				b.ReportMetric(float64(st.Retries), "retries")
			}
		})
	}
}
