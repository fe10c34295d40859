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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	net, err := filepath.Abs("testdata/small.net")
	if err != nil {
		t.Fatal(err)
	}
	return benchutil.StartIBSimTest(t, benchutil.IBSimOptions{NetFile: net,
		SockName: fmt.Sprintf("ibsmtrans%d_%d", os.Getpid(), simSeq.Add(1))})
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

// drGet is a directed-route Get of attr along path (the out-port at each
// hop, as smp.NewDRGet takes it) through tr, decoded into out.
func drGet(ctx context.Context, tr transport.Transport, path []uint8, attr uint16, mod uint32, out smp.Attribute) error {
	s, err := smp.NewDRGet(attr, mod, path)
	if err != nil {
		return err
	}
	b := make([]byte, smp.MADLen)
	if err := s.EncodeTo(b); err != nil {
		return err
	}
	resp, err := tr.Do(ctx, transport.Packet{DLID: smp.PermissiveLID, MAD: b})
	if err != nil {
		return err
	}
	r, err := smp.Decode(resp.MAD)
	if err != nil {
		return err
	}
	if r.Status&smp.StatusCodeMask != 0 || r.AttrID != attr {
		return fmt.Errorf("DR %v attr %#04x: answer status %#04x attribute %#04x", path, attr, r.Status, r.AttrID)
	}
	return r.Attr(out)
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
		if err := drGet(ctx(t), tr, []uint8{1, 3}, smp.AttrNodeInfo, 0, &ni); err != nil || ni.NodeGUID != guidSW2 {
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
	if err := drGet(ctx(t), tr, []uint8{1, 1}, smp.AttrPortInfo, 0, &pi); err != nil {
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
	err := drGet(ctx(t), tr, nil, smp.AttrNodeInfo, 0, &ni)
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
