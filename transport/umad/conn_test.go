package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

func openFake(t *testing.T, k *fakeKernel, opts Options) (*Conn, *closeRecorder) {
	t.Helper()
	issm := &closeRecorder{}
	c, err := newConn(k, issm, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, issm
}

func TestNewConnRegistersAgents(t *testing.T) {
	k := newFakeKernel()
	c, _ := openFake(t, k, Options{})
	if len(k.ioctls) != 4 || k.ioctls[0] != ioctlEnablePKey {
		t.Fatalf("ioctls = %#x, want ENABLE_PKEY then three registrations", k.ioctls)
	}
	want := agentRequests()
	for i, r := range k.regs {
		w := want[i]
		w.ID = r.ID
		if r != w {
			t.Errorf("registration %d = %+v, want %+v", i, r, w)
		}
	}
	if c.agents != [numAgents]uint32{7, 8, 9} {
		t.Fatalf("agent ids = %v, want the ones the kernel wrote back (7 8 9)", c.agents)
	}
}

func TestNewConnErrors(t *testing.T) {
	k := newFakeKernel()
	k.regErr[smp.ClassSA] = syscall.EINVAL
	if _, err := newConn(k, nil, Options{}); err == nil || !strings.Contains(err.Error(), "class 0x03") || !strings.Contains(err.Error(), "opensm") {
		t.Fatalf("err = %v, want the SA class and a hint about another SM", err)
	}
	k = newFakeKernel()
	k.regs = []regReq{{}} // file already used: ENABLE_PKEY fails
	if _, err := newConn(k, nil, Options{}); err == nil || !strings.Contains(err.Error(), "ENABLE_PKEY") {
		t.Fatalf("err = %v, want ENABLE_PKEY failure", err)
	}
}

// TestSendWritesRecords checks the exact record for each kind of MAD the
// SM sends, with the agent ids the kernel assigned.
func TestSendWritesRecords(t *testing.T) {
	needLittleEndian(t)
	k := newFakeKernel()
	c, _ := openFake(t, k, Options{Timeout: 150 * time.Millisecond, PKeyIndex: 0})
	dr := mad(256, smp.ClassSMPDR, smp.MethodGet, 0x10)
	lid := mad(256, smp.ClassSMPLID, smp.MethodSet, 0x11)
	repress := mad(256, smp.ClassSMPLID, smp.MethodTrapRepress, 0x12)
	for _, p := range []transport.Packet{
		{DLID: smp.PermissiveLID, MAD: dr},
		{DLID: 0x21, SL: 1, MAD: lid},
		{DLID: 0x22, MAD: repress},
	} {
		if err := c.Send(p); err != nil {
			t.Fatal(err)
		}
	}
	w := k.written()
	if len(w) != 3 {
		t.Fatalf("%d writes, want 3", len(w))
	}
	wantHdr := []string{
		// DR agent 8, 150 ms, QP0, permissive LID
		`08000000 00000000 96000000 00000000 40010000 00000000 00000000 ffff 00 00 00000000
			00000000000000000000000000000000 00000000 0000 000000000000`,
		// LID agent 7, SL 1
		`07000000 00000000 96000000 00000000 40010000 00000000 00000000 0021 01 00 00000000
			00000000000000000000000000000000 00000000 0000 000000000000`,
		// TrapRepress is a response: no timeout, 3 kernel retries
		`07000000 00000000 00000000 03000000 40010000 00000000 00000000 0022 00 00 00000000
			00000000000000000000000000000000 00000000 0000 000000000000`,
	}
	for i, rec := range w {
		diff(t, "header", rec[:HeaderLen], hexb(t, wantHdr[i]))
	}
	if s := c.Stats(); s.Sent != 3 {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestRecvDecodesKernelRecords(t *testing.T) {
	needLittleEndian(t)
	k := newFakeKernel()
	c, _ := openFake(t, k, Options{})
	// A trap from LID 0x1c, SL 0, as the kernel hands it to the LID agent
	// (7): source QP 0, Length 320.
	trap := mad(256, smp.ClassSMPLID, smp.MethodTrap, 0x55)
	rec := append(hexb(t, `07000000 00000000 00000000 00000000 40010000 00000000 00000000 001c 00 00 00000000
		00000000000000000000000000000000 00000000 0000 000000000000`), trap...)
	k.pushRaw(rec)
	// An SA query from LID 0x30, QP 1, SL 3, P_Key index 0.
	q := mad(256, smp.ClassSA, smp.MethodGetTable, 0x0003000000000001)
	rec = append(hexb(t, `09000000 00000000 00000000 00000000 40010000 00000001 00000000 0030 03 00 00000000
		00000000000000000000000000000000 00000000 0000 000000000000`), q...)
	k.pushRaw(rec)
	ctx := context.Background()
	p, err := c.Recv(ctx)
	if err != nil || p.SLID != 0x1c || p.QP != 0 || p.SL != 0 || string(p.MAD) != string(trap) {
		t.Fatalf("trap: %+v, %v", p, err)
	}
	p, err = c.Recv(ctx)
	if err != nil || p.SLID != 0x30 || p.QP != 1 || p.SL != 3 || string(p.MAD) != string(q) {
		t.Fatalf("SA query: %+v, %v", p, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Recv(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv on a cancelled context: %v", err)
	}
}

// TestResponseReusesRequestAddressing: an SA query that arrived with a
// non-default P_Key index and a GRH is answered the same way.
func TestResponseReusesRequestAddressing(t *testing.T) {
	k := newFakeKernel()
	c, _ := openFake(t, k, Options{})
	gid := [16]byte{0xfe, 0x80, 8: 0xaa, 15: 0x02}
	q := mad(256, smp.ClassSA, smp.MethodGet, 0x0004000000000005)
	k.push(Header{AgentID: 9, QPN: 1, LID: 0x40, PKeyIndex: 2, GRHPresent: true, GID: gid, FlowLabel: 7, HopLimit: 4, TrafficClass: 1}, q)
	p, err := c.Recv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp := append([]byte(nil), p.MAD...)
	resp[3] = smp.MethodGetResp
	if err := c.Send(transport.Packet{DLID: p.SLID, QP: p.QP, MAD: resp}); err != nil {
		t.Fatal(err)
	}
	// A second response with the same TID has no remembered addressing.
	// (The kernel refuses it while the first one to the same destination
	// is still on its send list.)
	k.waitIdle(time.Second)
	if err := c.Send(transport.Packet{DLID: p.SLID, MAD: resp}); err != nil {
		t.Fatal(err)
	}
	w := k.written()
	var h Header
	_ = h.Decode(w[0])
	if h.PKeyIndex != 2 || !h.GRHPresent || h.GID != gid || h.FlowLabel != 7 || h.HopLimit != 4 || h.TrafficClass != 1 ||
		h.QPN != 1 || h.QKey != QP1QKey || h.LID != 0x40 || h.TimeoutMS != 0 || h.AgentID != 9 {
		t.Fatalf("response header %+v", h)
	}
	_ = h.Decode(w[1])
	if h.PKeyIndex != 0 || h.GRHPresent {
		t.Fatalf("second response reused the addressing: %+v", h)
	}
}

// TestTransportOverUMAD runs the real dispatcher over the Conn: a DR SMP
// is answered; another is timed out by the kernel on every attempt and
// must fail with transport.ErrTimeout after the retry.
func TestTransportOverUMAD(t *testing.T) {
	k := newFakeKernel()
	const dead = 0x0015 // attribute the fabric never answers (PortInfo)
	k.fabric = func(k *fakeKernel, s *kSend) {
		if s.attr() != dead {
			k.respond(s, 0, smp.PermissiveLID, func(r []byte) { r[64] = 0xAB })
		}
	}
	timeout := 40 * time.Millisecond
	c, _ := openFake(t, k, Options{Timeout: timeout})
	tr := transport.New(c, transport.Options{Timeout: timeout, Retries: 1})
	defer tr.Close()

	req := mad(256, smp.ClassSMPDR, smp.MethodGet, 0)
	resp, err := tr.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: req})
	if err != nil {
		t.Fatal(err)
	}
	if resp.MAD[3] != smp.MethodGetResp || resp.MAD[64] != 0xAB || resp.SLID != smp.PermissiveLID {
		t.Fatalf("response %+v", resp.MAD[:8])
	}

	req = mad(256, smp.ClassSMPDR, smp.MethodGet, 0)
	binary.BigEndian.PutUint16(req[16:], dead)
	_, err = tr.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: req})
	if !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("Do = %v, want ErrTimeout", err)
	}
	if got := len(k.written()); got != 3 {
		t.Fatalf("%d writes, want 3 (one answered, two attempts timed out)", got)
	}
	deadline := time.Now().Add(2 * time.Second)
	for c.Stats().KernelTimeouts < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s := c.Stats(); s.KernelTimeouts != 2 || s.Received != 1 {
		t.Fatalf("Stats = %+v, want 2 kernel timeouts and 1 response", s)
	}
	if st := tr.Stats(); st.Timeouts != 1 || st.Retries != 1 {
		t.Fatalf("transport stats %+v", st)
	}
}

func TestRecvGrowsForRMPPMessages(t *testing.T) {
	k := newFakeKernel()
	c, _ := openFake(t, k, Options{})
	big := mad(56+3*200, smp.ClassSA, smp.MethodGetMulti, 0x1)
	k.push(Header{AgentID: 9, QPN: 1, LID: 5, Length: uint32(HeaderLen + len(big))}, big)
	small := mad(256, smp.ClassSA, smp.MethodGet, 0x2)
	k.push(Header{AgentID: 9, QPN: 1, LID: 5, Length: HeaderLen + 256}, small)
	for _, want := range [][]byte{big, small} {
		p, err := c.Recv(context.Background())
		if err != nil || string(p.MAD) != string(want) {
			t.Fatalf("Recv: %d bytes, %v; want %d bytes", len(p.MAD), err, len(want))
		}
	}
}

func TestDropsBadRecords(t *testing.T) {
	k := newFakeKernel()
	c, _ := openFake(t, k, Options{})
	k.pushRaw(make([]byte, 10))                                                       // shorter than a header
	k.push(Header{Status: uint32(syscall.EIO)}, mad(24, smp.ClassSMPLID, 1, 1))       // unknown status
	k.push(Header{Status: uint32(syscall.ETIMEDOUT)}, mad(24, smp.ClassSMPLID, 1, 1)) // consumed
	good := mad(256, smp.ClassSMPLID, smp.MethodTrap, 3)
	k.push(Header{LID: 9}, good)
	p, err := c.Recv(context.Background())
	if err != nil || string(p.MAD) != string(good) {
		t.Fatalf("Recv = %v, %v", p, err)
	}
	if s := c.Stats(); s.Dropped != 2 || s.KernelTimeouts != 1 || s.Received != 1 {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestSendErrors(t *testing.T) {
	k := newFakeKernel()
	c, _ := openFake(t, k, Options{})
	k.sendErr = syscall.EINVAL
	req := mad(256, smp.ClassSMPLID, smp.MethodGet, 0x5)
	err := c.Send(transport.Packet{DLID: 1, MAD: req})
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "TID 0x5") {
		t.Fatalf("err = %v", err)
	}
	k.sendErr = nil
	// A failed write leaves nothing on the kernel's send list: the same TID goes out at once.
	if err := c.Send(transport.Packet{DLID: 1, MAD: req}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(transport.Packet{MAD: mad(256, smp.ClassPerf, 1, 1)}); err == nil {
		t.Fatal("perf class sent")
	}
}

func TestClose(t *testing.T) {
	k := newFakeKernel()
	c, issm := openFake(t, k, Options{})
	recvErr := make(chan error, 1)
	go func() {
		_, err := c.Recv(context.Background())
		recvErr <- err
	}()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-recvErr; !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("blocked Recv returned %v, want ErrClosed", err)
	}
	if len(k.unreg) != 3 || issm.closed != 1 || !k.closed {
		t.Fatalf("unregistered %v, issm closed %d times, device closed %v", k.unreg, issm.closed, k.closed)
	}
	if err := c.Send(transport.Packet{MAD: mad(256, 1, 1, 1)}); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if _, err := c.Recv(context.Background()); !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("Recv after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
