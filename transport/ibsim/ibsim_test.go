package ibsim_test

// These tests run the real ibsim (Debian ibsim-utils) on testdata/small.net:
//
//	h1 -1- sw1 -3===3- sw2 -1- h3
//	       sw1 -2- h2
//
// Each test starts its own simulator under its own IBSIM_SOCKNAME and
// kills it (process group) in Cleanup, also when the test fails.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

const (
	guidSW1 = 0x0002c90000000100
	guidSW2 = 0x0002c90000000101
	guidH1  = 0x0002c90000001000 // CAs take nports+1 GUIDs each
	guidH2  = 0x0002c90000001002
	guidH3  = 0x0002c90000001004
)

var simSeq atomic.Int64

func startSim(t testing.TB) *benchutil.IBSim {
	t.Helper()
	bin, err := exec.LookPath("ibsim")
	if err != nil {
		t.Skip("ibsim not installed (Debian package ibsim-utils; run integration/setup.sh as root)")
	}
	net, err := filepath.Abs("testdata/small.net")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sim, err := benchutil.StartIBSimWith(ctx, benchutil.IBSimOptions{
		Path: bin, NetFile: net, Dir: t.TempDir(),
		SockName: fmt.Sprintf("ibsmtrans%d_%d", os.Getpid(), simSeq.Add(1)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(sim.LogPath)
			t.Logf("ibsim log tail:\n%s", tail(string(b), 15))
		}
		sim.Stop()
	})
	return sim
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

func dial(t *testing.T, sim *benchutil.IBSim, o ibsim.Options) *ibsim.Conn {
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

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func attached(t *testing.T, sim *benchutil.IBSim) []string {
	t.Helper()
	l, err := sim.Attached(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestDialAttachment(t *testing.T) {
	sim := startSim(t)
	c := dial(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
	a := c.Attachment()
	want := ibsim.Attachment{Slot: 0, NodeID: "h1", NodeType: smp.NodeTypeCA, NumPorts: 1, NodeGUID: guidH1,
		Port: 1, PortGUID: guidH1 + 1, LID: 0, MasterSMLID: 0, PortState: smp.PortStateInit, CapabilityMask: a.CapabilityMask}
	if a != want {
		t.Errorf("attachment\n got %+v\nwant %+v", a, want)
	}
	pi, err := c.PortInfo(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if pi.CapabilityMask&smp.CapIsSM == 0 {
		t.Errorf("CapabilityMask %#x lacks IsSM after SET_ISSM 1", pi.CapabilityMask)
	}
	ps, err := c.PortState(ctx(t))
	if err != nil || ps != (ibsim.PortState{LID: 0, State: smp.PortStateInit}) {
		t.Errorf("PortState = %+v, %v", ps, err)
	}
	if g, err := c.NodeGUID(ctx(t)); err != nil || g != guidH1 {
		t.Errorf("NodeGUID = %#x, %v", g, err)
	}
	if g, err := c.GID(ctx(t)); err != nil || g != (ibsim.GID{Prefix: pi.GIDPrefix, NodeGUID: guidH1}) {
		t.Errorf("GID = %+v, %v", g, err)
	}
	if v, err := c.Vendor(ctx(t)); err != nil || v.FirmwareVersion != 1 {
		t.Errorf("Vendor = %+v, %v (ibsim reports firmware 1)", v, err)
	}
	if k, err := c.PKeys(ctx(t)); err != nil || len(k) == 0 || k[0] != 0xFFFF {
		t.Errorf("PKeys = %#x, %v", k, err)
	}
	if l := attached(t, sim); len(l) != 1 || !strings.Contains(l[0], `"h1"`) || !strings.HasSuffix(strings.TrimSpace(l[0]), "SM") {
		t.Errorf("ibsim lists clients %q, want one SM client on h1", l)
	}

	// A second SM on the same node is refused; a plain client is not.
	_, err = ibsim.Dial(ctx(t), ibsim.Options{SockName: sim.Sockname, Attach: "h1", IsSM: true, ControlTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ibsim.ErrRefused) || !strings.Contains(err.Error(), `CONNECT as SM to node "h1"`) ||
		!strings.Contains(err.Error(), "its process is alive") {
		t.Errorf("second SM client on h1: err = %v, want ErrRefused saying a live SM is there", err)
	}
	plain := dial(t, sim, ibsim.Options{Attach: "h1 mlx5_0"}) // by description
	if a := plain.Attachment(); a.NodeID != "h1" || a.Slot != 1 {
		t.Errorf("plain client attachment %+v, want node h1 slot 1", a)
	}
	if err := plain.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	sw := dial(t, sim, ibsim.Options{Attach: "sw2"})
	if a := sw.Attachment(); a.NodeType != smp.NodeTypeSwitch || a.Port != 0 || a.PortGUID != guidSW2 || a.NodeGUID != guidSW2 {
		t.Errorf("switch attachment %+v", a)
	}
	sw.Close()

	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if l := attached(t, sim); len(l) != 0 {
		t.Errorf("after Close ibsim still lists %q", l)
	}
}

func TestDialErrors(t *testing.T) {
	sim := startSim(t)
	tests := []struct {
		name string
		o    ibsim.Options
		is   error
		msg  string
	}{
		{"unknown node", ibsim.Options{Attach: "nosuch"}, ibsim.ErrRefused, "ibsim has no such node"},
		{"unknown node as SM", ibsim.Options{Attach: "nosuch", IsSM: true}, ibsim.ErrRefused, `CONNECT to node "nosuch" on @`},
		{"unexpected node", ibsim.Options{Attach: "h2", Expect: &ibsim.Expect{NodeGUID: guidH1, Port: 1}}, nil, "name it with attach"},
		{"unexpected port", ibsim.Options{Attach: "sw1", Expect: &ibsim.Expect{NodeGUID: guidSW1, Port: 1}}, nil, "port 0 of a switch"},
		{"no simulator", ibsim.Options{SockName: fmt.Sprintf("ibsmtrans%d_none", os.Getpid())}, ibsim.ErrSimulatorGone, "IBSIM_SOCKNAME="},
		{"attach too long", ibsim.Options{Attach: strings.Repeat("x", 32)}, nil, "at most 31 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.SockName == "" {
				tc.o.SockName = sim.Sockname
			}
			c, err := ibsim.Dial(ctx(t), tc.o)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want it to contain %q", err, tc.msg)
			}
		})
	}
	if l := attached(t, sim); len(l) != 0 {
		t.Errorf("failed Dials left clients %q", l)
	}
}

// TestDiscover walks the fabric with the host's discovery over transport.New.
func TestDiscover(t *testing.T) {
	sim := startSim(t)
	c := dial(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
	tr := transport.New(c, transport.Options{Window: 4, Timeout: time.Second})
	defer tr.Close()
	d := &discovery.Discoverer{C: &mad.Client{T: tr}}
	f, err := d.Run(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Warnings) > 0 {
		t.Errorf("warnings: %q", f.Warnings)
	}
	if f.SMGUID != guidH1 || f.SMPort != 1 {
		t.Errorf("SM at %#x port %d, want h1 port 1", f.SMGUID, f.SMPort)
	}
	want := map[uint64]string{guidSW1: "switch one", guidSW2: "switch two", guidH1: "h1 mlx5_0", guidH2: "h2 mlx5_0", guidH3: "h3 mlx5_0"}
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
	if n := f.Nodes[guidSW1]; n != nil && (n.Ports[3].PeerGUID != guidSW2 || n.Ports[3].PeerPort != 3) {
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
func bringUp(t *testing.T, c *mad.Client) {
	t.Helper()
	ctx := ctx(t)
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
	resp, err := tr.Do(ctx(t), transport.Packet{DLID: lid, MAD: mad})
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

// TestTraps brings the fabric up, then gets trap 128 for a console Unlink
// and trap 144 for our own SET_ISSM on reattach; LID-routed MADs bounce
// (BounceError → ErrUndeliverable) across the unlinked port.
func TestTraps(t *testing.T) {
	sim := startSim(t)
	c := dial(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
	tr := transport.New(c, transport.Options{Window: 4, Timeout: time.Second, Retries: 1})
	defer tr.Close()
	bringUp(t, &mad.Client{T: tr})
	for lid, guid := range map[uint16]uint64{1: guidH1, 2: guidSW1, 3: guidSW2, 4: guidH2, 5: guidH3} {
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
	h2 := dial(t, sim, ibsim.Options{Attach: "h2"})
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
	resp, err := trh2.Do(ctx(t), transport.Packet{DLID: 1, QP: 1, MAD: q})
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
	c2 := dial(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
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

// TestReconnect closes cleanly, reattaches as SM on the same node (which
// only works if the first SM client was disconnected) and shows ibsim still
// serves another client.
func TestReconnect(t *testing.T) {
	sim := startSim(t)
	for i := range 3 {
		c := dial(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
		tr := transport.New(c, transport.Options{})
		var ni smp.NodeInfo
		if err := (&mad.Client{T: tr}).Get(ctx(t), mad.Path{1, 3}, smp.AttrNodeInfo, 0, &ni); err != nil || ni.NodeGUID != guidSW2 {
			t.Fatalf("round %d: NodeInfo via [1,3] = %#x, %v", i, ni.NodeGUID, err)
		}
		if err := tr.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
		if a := c.Attachment(); a.Slot != 0 {
			t.Errorf("round %d: slot %d, want 0 (freed by DISCONNECT)", i, a.Slot)
		}
	}
	// SET_ISSM 0 before DISCONNECT cleared the capability bit.
	other := dial(t, sim, ibsim.Options{Attach: "h2"})
	defer other.Close()
	tr := transport.New(other, transport.Options{})
	defer tr.Close()
	var pi smp.PortInfo
	if err := (&mad.Client{T: tr}).Get(ctx(t), mad.Path{1, 1}, smp.AttrPortInfo, 0, &pi); err != nil {
		t.Fatal(err)
	}
	if pi.CapabilityMask&smp.CapIsSM != 0 {
		t.Errorf("h1 CapabilityMask %#x still has IsSM after the SM detached", pi.CapabilityMask)
	}
}

// TestDrainsWithoutConsumer sends many requests and never calls Recv: the
// reader must keep ibsim's queue to us empty, or ibsim spins and every
// other client hangs.
func TestDrainsWithoutConsumer(t *testing.T) {
	sim := startSim(t)
	c := dial(t, sim, ibsim.Options{Attach: "h1"})
	defer c.Close()
	mad := make([]byte, smp.MADLen)
	s, _ := smp.NewDRGet(smp.AttrNodeInfo, 0, []uint8{1, 3})
	s.EncodeTo(mad)
	const n = 1000    // ibsim stalls after ~210 unread replies
	base := c.Stats() // Dial's own probe
	for i := range n {
		if err := c.Send(transport.Packet{DLID: smp.PermissiveLID, MAD: mad}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	start := time.Now()
	other := dial(t, sim, ibsim.Options{Attach: "h3"}) // Dial probes the data path
	other.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("another client took %v to attach", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Received-base.Received < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := c.Stats(); st.Received-base.Received != n || st.Overruns != 0 || st.Bounced != 0 {
		t.Errorf("stats %+v, want %d received, no overruns or bounces", st, n)
	}
}

// TestSimulatorDies: once ibsim is gone, requests fail fast with
// ErrSimulatorGone and Close does not hang.
func TestSimulatorDies(t *testing.T) {
	sim := startSim(t)
	c := dial(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
	tr := transport.New(c, transport.Options{Timeout: 200 * time.Millisecond})
	sim.Stop()
	var ni smp.NodeInfo
	start := time.Now()
	err := (&mad.Client{T: tr}).Get(ctx(t), nil, smp.AttrNodeInfo, 0, &ni)
	if !errors.Is(err, ibsim.ErrSimulatorGone) {
		t.Errorf("err = %v, want ErrSimulatorGone", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("failing took %v", d)
	}
	start = time.Now()
	tr.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
}

// TestStalledConnect: a CONNECT ibsim answers only after our Dial gave up
// must not kill ibsim (it exits if it cannot reach the data socket) and
// must not leak the slot.
func TestStalledConnect(t *testing.T) {
	sim := startSim(t)
	waited := make(chan error, 1)
	go func() { waited <- sim.Console("Wait 1") }()
	time.Sleep(200 * time.Millisecond) // let the Wait start
	_, err := ibsim.Dial(ctx(t), ibsim.Options{SockName: sim.Sockname, Attach: "h1", IsSM: true, ControlTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ibsim.ErrStalled) {
		t.Errorf("Dial during Wait: err = %v, want ErrStalled", err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(attached(t, sim)) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if l := attached(t, sim); len(l) != 0 {
		t.Errorf("late CONNECT left clients %q", l)
	}
	c := dial(t, sim, ibsim.Options{Attach: "h1", IsSM: true})
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	select {
	case <-sim.Exited():
		t.Fatal("ibsim exited")
	default:
	}
}
