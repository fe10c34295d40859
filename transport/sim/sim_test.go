package sim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/smp"
)

// testNet: h1,h2 on sw1; sw1 =2 links= sw2; h3 on sw2; sw2 - sw3 - h4.
// GUIDs follow ibsim: switches 0x200000.., CAs 0x100000 + (nports+1) each.
const testNet = `
Switch	8 "sw1"
[1]	"h1"[1]
[2]	"h2"[1]
[3]	"sw2"[3]
[4]	"sw2"[4]

Switch	8 "sw2"
[3]	"sw1"[3]
[4]	"sw1"[4]
[1]	"h3"[1]
[5]	"sw3"[1]

Switch	4 "sw3"
[1]	"sw2"[5]
[2]	"h4"[1]

Ca	1 "h1"
[1]	"sw1"[1]

Ca	2 "h2"
[1]	"sw1"[2]

Ca	1 "h3"
[1]	"sw2"[1]

Ca	1 "h4"
[1]	"sw3"[2]
`

const (
	gSw1 = 0x200000
	gSw2 = 0x200001
	gSw3 = 0x200002
	gH1  = 0x100000
	gH2  = 0x100002
	gH3  = 0x100005
	gH4  = 0x100007
)

type harness struct {
	t   testing.TB
	fab *Fabric
	c   transport.Conn
	tid uint64
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	f, err := netfile.Parse("test.net", strings.NewReader(testNet))
	if err != nil {
		t.Fatal(err)
	}
	fab, err := New(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, p := fab.DefaultSMPort()
	if g != gH1 || p != 1 {
		t.Fatalf("DefaultSMPort = %#x/%d, want h1/1", g, p)
	}
	c, err := fab.Attach(g, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &harness{t: t, fab: fab, c: c}
}

// recv returns a packet already queued (Send is synchronous), or false.
func recv(c transport.Conn) (transport.Packet, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := c.Recv(ctx)
	return p, err == nil
}

// do sends s and returns the decoded response, or nil if it was lost.
func (h *harness) do(s *smp.SMP, dlid uint16) *smp.SMP {
	h.t.Helper()
	h.tid++
	s.TID = h.tid
	buf, err := s.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	slid := uint16(0) // LID-routed: the fabric fills in the port's LID
	if s.IsDR() {
		slid = smp.PermissiveLID
	}
	if err := h.c.Send(transport.Packet{DLID: dlid, SLID: slid, MAD: buf}); err != nil {
		h.t.Fatal(err)
	}
	p, ok := recv(h.c)
	if !ok {
		return nil
	}
	r, err := smp.Decode(p.MAD)
	if err != nil {
		h.t.Fatal(err)
	}
	if r.TID != h.tid || !r.IsResponse() {
		h.t.Fatalf("got TID %d method %#x, want response to %d", r.TID, r.Method, h.tid)
	}
	return r
}

func (h *harness) drGet(attr uint16, mod uint32, path ...uint8) *smp.SMP {
	s, err := smp.NewDRGet(attr, mod, path)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.do(s, smp.PermissiveLID)
}

func (h *harness) drSet(a smp.Attribute, mod uint32, path ...uint8) *smp.SMP {
	h.t.Helper()
	s, err := smp.NewDRSet(a.AttrID(), mod, path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := s.SetAttr(a); err != nil {
		h.t.Fatal(err)
	}
	return h.do(s, smp.PermissiveLID)
}

func (h *harness) lidGet(attr uint16, mod uint32, dlid uint16) *smp.SMP {
	return h.do(smp.NewLIDGet(attr, mod), dlid)
}

func nodeInfo(t testing.TB, r *smp.SMP) smp.NodeInfo {
	t.Helper()
	var ni smp.NodeInfo
	if err := r.Attr(&ni); err != nil {
		t.Fatal(err)
	}
	return ni
}

func TestDRNodeInfo(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		name      string
		path      []uint8
		guid      uint64 // 0 = lost
		portGUID  uint64
		local     uint8
		typ       uint8
		returnLen int
	}{
		{"self", nil, gH1, gH1 + 1, 1, smp.NodeTypeCA, 0},
		{"leaf", []uint8{1}, gSw1, gSw1, 1, smp.NodeTypeSwitch, 1},
		{"2 hops", []uint8{1, 3}, gSw2, gSw2, 3, smp.NodeTypeSwitch, 2},
		{"other cable", []uint8{1, 4}, gSw2, gSw2, 4, smp.NodeTypeSwitch, 2},
		{"3 hops", []uint8{1, 3, 5}, gSw3, gSw3, 1, smp.NodeTypeSwitch, 3},
		{"CA 4 hops", []uint8{1, 3, 5, 2}, gH4, gH4 + 1, 1, smp.NodeTypeCA, 4},
		{"second port of h2", []uint8{1, 2}, gH2, gH2 + 1, 1, smp.NodeTypeCA, 2},
		{"unconnected port", []uint8{1, 7}, 0, 0, 0, 0, 0},
		{"port beyond NumPorts", []uint8{1, 9}, 0, 0, 0, 0, 0},
		{"CA has no port 2", []uint8{2}, 0, 0, 0, 0, 0},
		{"through a CA", []uint8{1, 1, 1}, 0, 0, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.drGet(smp.AttrNodeInfo, 0, c.path...)
			if c.guid == 0 {
				if r != nil {
					t.Fatalf("got a response, want the SMP dropped")
				}
				return
			}
			if r == nil {
				t.Fatal("SMP lost")
			}
			if r.Status != 0 || !r.Direction || r.Method != smp.MethodGetResp || r.HopPointer != 0 {
				t.Fatalf("status %#x D %v method %#x hp %d", r.Status, r.Direction, r.Method, r.HopPointer)
			}
			ni := nodeInfo(t, r)
			if ni.NodeGUID != c.guid || ni.PortGUID != c.portGUID || ni.LocalPortNum != c.local || ni.NodeType != c.typ {
				t.Fatalf("NodeInfo %+v", ni)
			}
		})
	}
	// ReturnPath records the arrival port at each hop.
	r := h.drGet(smp.AttrNodeInfo, 0, 1, 3, 5, 2)
	if got := r.ReturnPath[1:5]; string(got) != string([]uint8{1, 3, 1, 1}) {
		t.Fatalf("return path %v, want [1 3 1 1]", got)
	}
}

// setupLIDs gives every port a LID and points MasterSMLID at h1 (LID 1):
// h1=1 sw1=2 sw2=3 sw3=4 h4=5 h3=6.
func (h *harness) setupLIDs() {
	h.t.Helper()
	for _, c := range []struct {
		lid  uint16
		path []uint8
	}{{1, nil}, {2, []uint8{1}}, {3, []uint8{1, 3}}, {4, []uint8{1, 3, 5}}, {5, []uint8{1, 3, 5, 2}}, {6, []uint8{1, 3, 1}}} {
		pi := smp.PortInfo{LID: c.lid, MasterSMLID: 1}
		if r := h.drSet(&pi, 0, c.path...); r == nil || r.Status != 0 {
			h.t.Fatalf("PortInfo Set LID %d: %v", c.lid, r)
		}
	}
}

func (h *harness) setLFT(path []uint8, entries map[uint16]uint8, top uint16) {
	h.t.Helper()
	var b smp.LFTBlock
	for i := range b {
		b[i] = smp.LFTUnreachable
	}
	for lid, port := range entries {
		b[lid] = port
	}
	if r := h.drSet(&b, 0, path...); r == nil || r.Status != 0 {
		h.t.Fatalf("LFT Set along %v: %+v", path, r)
	}
	si := smp.SwitchInfo{LinearFDBTop: top}
	if r := h.drSet(&si, 0, path...); r == nil || r.Status != 0 {
		h.t.Fatalf("SwitchInfo Set along %v: %+v", path, r)
	}
}

func (h *harness) programRoutes() {
	h.setupLIDs()
	h.setLFT([]uint8{1}, map[uint16]uint8{1: 1, 2: 0, 3: 3, 4: 3, 5: 3, 6: 3}, 6)
	h.setLFT([]uint8{1, 3}, map[uint16]uint8{1: 3, 2: 3, 3: 0, 4: 5, 5: 5, 6: 1}, 6)
	h.setLFT([]uint8{1, 3, 5}, map[uint16]uint8{1: 1, 2: 1, 3: 1, 4: 0, 5: 2, 6: 1}, 6)
}

func TestLIDRouting(t *testing.T) {
	h := newHarness(t)
	h.programRoutes()
	lft, err := h.fab.LFT(gSw2)
	if err != nil || len(lft) != 7 || lft[4] != 5 || lft[6] != 1 {
		t.Fatalf("LFT(sw2) = %v, %v", lft, err)
	}
	for _, c := range []struct {
		dlid uint16
		guid uint64
	}{{1, gH1}, {2, gSw1}, {3, gSw2}, {4, gSw3}, {5, gH4}, {6, gH3}} {
		r := h.lidGet(smp.AttrNodeInfo, 0, c.dlid)
		if r == nil {
			t.Fatalf("LID %d: lost", c.dlid)
		}
		if g := nodeInfo(t, r).NodeGUID; g != c.guid {
			t.Errorf("LID %d answered by %#x, want %#x", c.dlid, g, c.guid)
		}
	}
	// Read back an LFT block by LID route and by DR.
	r := h.lidGet(smp.AttrLinearForwardingTable, 0, 4)
	if r == nil || r.Data[5] != 2 || r.Data[7] != smp.LFTUnreachable {
		t.Fatalf("LFT block of sw3 by LID: %+v", r)
	}
	// Wrong tables: each breaks exactly the MAD that needs the entry.
	for _, c := range []struct {
		name  string
		path  []uint8
		lft   map[uint16]uint8
		top   uint16
		dlid  uint16
		fixed map[uint16]uint8
	}{
		{"hole", []uint8{1, 3}, map[uint16]uint8{1: 3, 2: 3, 3: 0, 4: 5, 6: 1}, 6, 5, nil},
		{"loop", []uint8{1, 3}, map[uint16]uint8{1: 3, 2: 3, 3: 0, 4: 5, 5: 4, 6: 1}, 6, 5, nil},
		{"dead port", []uint8{1, 3}, map[uint16]uint8{1: 3, 2: 3, 3: 0, 4: 5, 5: 7, 6: 1}, 6, 5, nil},
		{"above LinearFDBTop", []uint8{1, 3}, map[uint16]uint8{1: 3, 2: 3, 3: 0, 4: 5, 5: 5, 6: 1}, 4, 5, nil},
		{"reverse path broken", []uint8{1, 3, 5}, map[uint16]uint8{2: 1, 3: 1, 4: 0, 5: 2, 6: 1}, 6, 5, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.setLFT(c.path, c.lft, c.top)
			before := h.fab.Stats()
			if r := h.lidGet(smp.AttrNodeInfo, 0, c.dlid); r != nil {
				t.Fatalf("LID %d answered by %#x through a broken table", c.dlid, nodeInfo(t, r).NodeGUID)
			}
			if h.fab.Stats().Lost != before.Lost+1 {
				t.Fatalf("Lost %d -> %d", before.Lost, h.fab.Stats().Lost)
			}
			h.programRoutes()
			if r := h.lidGet(smp.AttrNodeInfo, 0, c.dlid); r == nil {
				t.Fatal("restored table still loses the MAD")
			}
		})
	}
	// LFT block beyond LinearFDBCap is rejected like a real SMA.
	r = h.drGet(smp.AttrLinearForwardingTable, 768, 1)
	if r == nil || r.Status != smp.StatusInvalidField {
		t.Fatalf("block 768: %+v", r)
	}
}

// TestLMC: a port with LMC 1 answers both LIDs of its range.
func TestLMC(t *testing.T) {
	h := newHarness(t)
	h.programRoutes()
	pi := smp.PortInfo{LID: 8, LMC: 1, MasterSMLID: 1}
	if r := h.drSet(&pi, 0, 1, 3, 5, 2); r == nil || r.Status != 0 {
		t.Fatalf("set LMC: %+v", r)
	}
	h.setLFT([]uint8{1}, map[uint16]uint8{1: 1, 2: 0, 3: 3, 4: 3, 6: 3, 8: 3, 9: 4}, 9)
	h.setLFT([]uint8{1, 3}, map[uint16]uint8{1: 3, 2: 3, 3: 0, 4: 5, 6: 1, 8: 5, 9: 5}, 9)
	h.setLFT([]uint8{1, 3, 5}, map[uint16]uint8{1: 1, 2: 1, 3: 1, 4: 0, 6: 1, 8: 2, 9: 2}, 9)
	for _, c := range []struct {
		dlid uint16
		ok   bool
	}{{8, true}, {9, true}, {5, false}, {10, false}} {
		r := h.lidGet(smp.AttrNodeInfo, 0, c.dlid)
		if (r != nil) != c.ok {
			t.Fatalf("LID %d: answered %v, want %v", c.dlid, r != nil, c.ok)
		}
		if r != nil && nodeInfo(t, r).NodeGUID != gH4 {
			t.Fatalf("LID %d answered by %#x", c.dlid, nodeInfo(t, r).NodeGUID)
		}
	}
	if ps, _ := h.fab.PortInfo(gH4, 1); ps.LID != 8 || ps.LMC != 1 || ps.MasterSMLID != 1 {
		t.Fatalf("snapshot %+v", ps)
	}
}

func portState(t *testing.T, h *harness, guid uint64, port uint8) uint8 {
	t.Helper()
	ps, err := h.fab.PortInfo(guid, port)
	if err != nil {
		t.Fatal(err)
	}
	return ps.State
}

func TestPortStateMachine(t *testing.T) {
	h := newHarness(t)
	sw1, sw2 := []uint8{1}, []uint8{1, 3}
	if s := portState(t, h, gSw1, 3); s != smp.PortStateInit {
		t.Fatalf("linked port starts in %d, want Init", s)
	}
	if s := portState(t, h, gSw1, 7); s != smp.PortStateDown {
		t.Fatalf("unlinked port starts in %d, want Down", s)
	}
	steps := []struct {
		name      string
		path      []uint8
		port      uint8
		pi        smp.PortInfo
		status    uint16
		wantLocal uint8 // state of sw1[3] afterwards
		wantPeer  uint8 // state of sw2[3]
	}{
		{"Active from Init", sw1, 3, smp.PortInfo{PortState: smp.PortStateActive}, smp.StatusInvalidField, 2, 2},
		{"Init is not settable", sw1, 3, smp.PortInfo{PortState: smp.PortStateArmed + 5}, smp.StatusInvalidField, 2, 2},
		{"Arm", sw1, 3, smp.PortInfo{PortState: smp.PortStateArmed}, 0, 3, 2},
		{"Active while peer Init", sw1, 3, smp.PortInfo{PortState: smp.PortStateActive}, smp.StatusInvalidField, 3, 2},
		{"Arm peer", sw2, 3, smp.PortInfo{PortState: smp.PortStateArmed}, 0, 3, 3},
		{"Activate", sw1, 3, smp.PortInfo{PortState: smp.PortStateActive}, 0, 4, 3},
		{"Activate peer", sw2, 3, smp.PortInfo{PortState: smp.PortStateActive}, 0, 4, 4},
		{"Arm from Active", sw1, 3, smp.PortInfo{PortState: smp.PortStateArmed}, smp.StatusInvalidField, 4, 4},
		{"too many VLs, nothing applied", sw1, 3, smp.PortInfo{PortState: smp.PortStateDown, OperationalVLs: 5}, smp.StatusInvalidField, 4, 4},
		{"Down bounces the link to Init", sw1, 3, smp.PortInfo{PortState: smp.PortStateDown}, 0, 2, 2},
		{"Disable", sw1, 3, smp.PortInfo{PortPhysicalState: smp.PhysStateDisabled}, 0, 1, 1},
		{"Arm a disabled port", sw1, 3, smp.PortInfo{PortState: smp.PortStateArmed}, smp.StatusInvalidField, 1, 1},
		{"Re-enable (Polling) retrains", sw1, 3, smp.PortInfo{PortPhysicalState: smp.PhysStatePolling}, 0, 2, 2},
		{"switch port 0 cannot go Down", sw1, 0, smp.PortInfo{PortState: smp.PortStateDown}, smp.StatusInvalidField, 2, 2},
	}
	for _, c := range steps {
		r := h.drSet(&c.pi, uint32(c.port), c.path...)
		if r == nil {
			t.Fatalf("%s: lost", c.name)
		}
		if r.Status != c.status {
			t.Errorf("%s: status %#x, want %#x", c.name, r.Status, c.status)
		}
		if a, b := portState(t, h, gSw1, 3), portState(t, h, gSw2, 3); a != c.wantLocal || b != c.wantPeer {
			t.Errorf("%s: states %d/%d, want %d/%d", c.name, a, b, c.wantLocal, c.wantPeer)
		}
	}
	// The response carries the resulting PortInfo.
	r := h.drGet(smp.AttrPortInfo, 3, 1)
	var pi smp.PortInfo
	if err := r.Attr(&pi); err != nil {
		t.Fatal(err)
	}
	if pi.PortState != smp.PortStateInit || pi.PortPhysicalState != smp.PhysStateLinkUp || pi.VLCap != 4 || pi.LocalPortNum != 1 || pi.LinkWidthActive != 2 {
		t.Fatalf("PortInfo %+v", pi)
	}
	if _, psc, _ := h.fab.SwitchInfo(gSw2); !psc {
		t.Fatal("Down/up transitions must set PortStateChange")
	}
}

func TestLinkDownTrapsAndTimeouts(t *testing.T) {
	h := newHarness(t)
	h.programRoutes()
	// Clear PortStateChange everywhere (write 1 to clear).
	for _, p := range [][]uint8{{1}, {1, 3}, {1, 3, 5}} {
		si := smp.SwitchInfo{LinearFDBTop: 6, PortStateChange: true}
		if r := h.drSet(&si, 0, p...); r == nil || r.Status != 0 {
			t.Fatal("SwitchInfo set")
		}
		var got smp.SwitchInfo
		_ = h.drGet(smp.AttrSwitchInfo, 0, p...).Attr(&got)
		if got.PortStateChange || got.LinearFDBTop != 6 || got.LinearFDBCap != 49152 {
			t.Fatalf("SwitchInfo after clear: %+v", got)
		}
	}
	if err := h.fab.LinkDown(gSw2, 5); err != nil {
		t.Fatal(err)
	}
	// sw2 reaches the SM (LID 1) through its LFT: trap 128 with issuer 3.
	// sw3's own trap has no route left and is lost.
	p, ok := recv(h.c)
	if !ok {
		t.Fatal("no trap 128 delivered")
	}
	tr, err := smp.Decode(p.MAD)
	if err != nil {
		t.Fatal(err)
	}
	var n smp.Notice
	if err := tr.Attr(&n); err != nil || tr.Method != smp.MethodTrap || p.DLID != 1 || p.SLID != 3 {
		t.Fatalf("trap %+v %v dlid %d slid %d", tr, err, p.DLID, p.SLID)
	}
	if lid, err := n.Trap128(); err != nil || lid != 3 || n.IssuerLID != 3 {
		t.Fatalf("notice %+v lid %d err %v", n, lid, err)
	}
	if _, more := recv(h.c); more {
		t.Fatal("more than one trap delivered")
	}
	if r := h.drGet(smp.AttrNodeInfo, 0, 1, 3, 5); r != nil {
		t.Fatal("DR SMP crossed a link that is down")
	}
	if _, psc, _ := h.fab.SwitchInfo(gSw2); !psc {
		t.Fatal("sw2 PortStateChange not set")
	}
	st := h.fab.Stats()
	if st.Traps != 1 || st.TrapsLost != 1 {
		t.Fatalf("traps %d lost %d, want 1/1", st.Traps, st.TrapsLost)
	}
	if err := h.fab.LinkUp(gSw2, 5); err != nil {
		t.Fatal(err)
	}
	// Both ends are switches with a route to the SM now: two traps.
	issuers := map[uint16]bool{}
	for {
		p, ok := recv(h.c)
		if !ok {
			break
		}
		tr, _ := smp.Decode(p.MAD)
		issuers[p.SLID] = tr.Method == smp.MethodTrap
	}
	if len(issuers) != 2 || !issuers[3] || !issuers[4] {
		t.Fatalf("traps after LinkUp from %v, want sw2 (3) and sw3 (4)", issuers)
	}
	if r := h.drGet(smp.AttrNodeInfo, 0, 1, 3, 5); r == nil {
		t.Fatal("DR lost after LinkUp")
	}
	if s := portState(t, h, gSw3, 1); s != smp.PortStateInit {
		t.Fatalf("after LinkUp sw3[1] is %d, want Init", s)
	}
	// Node loss: sw3 goes, h4 becomes unreachable, sw2 traps again.
	if err := h.fab.RemoveNode(gSw3); err != nil {
		t.Fatal(err)
	}
	if _, ok := recv(h.c); !ok {
		t.Fatal("no trap from sw2 after RemoveNode")
	}
	if r := h.drGet(smp.AttrNodeInfo, 0, 1, 3, 5); r != nil {
		t.Fatal("removed node answered")
	}
	if err := h.fab.LinkUp(gSw2, 5); err != nil {
		t.Fatal(err)
	}
	if r := h.drGet(smp.AttrNodeInfo, 0, 1, 3, 5); r != nil {
		t.Fatal("a removed node's link came back")
	}
}

func TestDropRate(t *testing.T) {
	h := newHarness(t)
	if err := h.fab.SetDropRate(0.3, 42); err != nil {
		t.Fatal(err)
	}
	const n = 4000
	got := 0
	for i := 0; i < n; i++ {
		if h.drGet(smp.AttrNodeInfo, 0, 1, 3) != nil {
			got++
		}
	}
	st := h.fab.Stats()
	if st.Dropped+uint64(got) != n || st.Received != n {
		t.Fatalf("dropped %d + answered %d != %d (received %d)", st.Dropped, got, n, st.Received)
	}
	if frac := float64(st.Dropped) / n; frac < 0.27 || frac > 0.33 {
		t.Fatalf("dropped fraction %.3f, want about 0.3", frac)
	}
	if st.Gets != uint64(n-st.Dropped) || st.ByAttr[smp.AttrNodeInfo] != st.Gets {
		t.Fatalf("gets %d byattr %v", st.Gets, st.ByAttr)
	}
	if err := h.fab.SetDropRate(1.5, 0); err == nil {
		t.Fatal("rate 1.5 accepted")
	}
}

func TestAttributes(t *testing.T) {
	h := newHarness(t)
	// SL2VL: set on a switch port pair, read back by DR and accessor.
	tbl := smp.SL2VLTable{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7}
	if r := h.drSet(&tbl, smp.SL2VLMod(3, 5), 1, 3); r == nil || r.Status != 0 {
		t.Fatalf("SL2VL set: %+v", r)
	}
	got, err := h.fab.SL2VL(gSw2, 3, 5)
	if err != nil || got != tbl {
		t.Fatalf("SL2VL accessor %v %v", got, err)
	}
	var back smp.SL2VLTable
	if err := h.drGet(smp.AttrSLtoVLMappingTable, smp.SL2VLMod(3, 5), 1, 3).Attr(&back); err != nil || back != tbl {
		t.Fatalf("SL2VL get %v %v", back, err)
	}
	if other, _ := h.fab.SL2VL(gSw2, 5, 3); other != (smp.SL2VLTable{}) {
		t.Fatalf("other pair changed: %v", other)
	}
	// VLArbitration: a switch port's block by modifier; a CA's by the port
	// the SMP arrived on, whatever the modifier's port says.
	arb := smp.VLArbBlock{{VL: 0, Weight: 64}, {VL: 1, Weight: 64}}
	if r := h.drSet(&arb, smp.VLArbMod(4, smp.VLArbLowBlock0), 1, 3); r == nil || r.Status != 0 {
		t.Fatalf("VLArb set: %+v", r)
	}
	if b, err := h.fab.VLArb(gSw2, 4, smp.VLArbLowBlock0); err != nil || b != arb {
		t.Fatalf("VLArb accessor %v %v", b, err)
	}
	if b, _ := h.fab.VLArb(gSw2, 4, smp.VLArbHighBlock0); b != (smp.VLArbBlock{}) {
		t.Fatalf("high block changed: %v", b)
	}
	var arbBack smp.VLArbBlock
	if err := h.drGet(smp.AttrVLArbitrationTable, smp.VLArbMod(4, smp.VLArbLowBlock0), 1, 3).Attr(&arbBack); err != nil || arbBack != arb {
		t.Fatalf("VLArb get %v %v", arbBack, err)
	}
	if r := h.drSet(&arb, smp.VLArbMod(7, smp.VLArbLowBlock1)); r == nil || r.Status != 0 {
		t.Fatalf("VLArb set on the SM's CA: %+v", r)
	}
	if b, _ := h.fab.VLArb(gH1, 1, smp.VLArbLowBlock1); b != arb {
		t.Fatalf("CA VLArb not on the arrival port: %v", b)
	}
	if _, err := h.fab.VLArb(gSw2, 4, 0); err == nil {
		t.Fatal("VLArb accessor accepted block 0")
	}
	for _, c := range []struct {
		name   string
		method uint8
		attr   uint16
		mod    uint32
		path   []uint8
		status uint16
	}{
		{"NodeDescription", smp.MethodGet, smp.AttrNodeDescription, 0, []uint8{1}, 0},
		{"NodeDescription is read-only", smp.MethodSet, smp.AttrNodeDescription, 0, []uint8{1}, smp.StatusUnsupportedMethodAttr},
		{"NodeInfo Set", smp.MethodSet, smp.AttrNodeInfo, 0, nil, smp.StatusUnsupportedMethodAttr},
		{"SwitchInfo on a CA", smp.MethodGet, smp.AttrSwitchInfo, 0, nil, smp.StatusUnsupportedMethodAttr},
		{"LFT on a CA", smp.MethodGet, smp.AttrLinearForwardingTable, 0, nil, smp.StatusUnsupportedMethodAttr},
		{"PortInfo port out of range", smp.MethodGet, smp.AttrPortInfo, 9, []uint8{1}, smp.StatusInvalidField},
		{"SL2VL port out of range", smp.MethodGet, smp.AttrSLtoVLMappingTable, smp.SL2VLMod(9, 1), []uint8{1}, smp.StatusInvalidField},
		{"P_Key block 0", smp.MethodGet, smp.AttrPKeyTable, 0, nil, 0},
		{"P_Key block 2", smp.MethodGet, smp.AttrPKeyTable, 2, nil, smp.StatusInvalidField},
		{"VLArbitration block 0", smp.MethodGet, smp.AttrVLArbitrationTable, 0, []uint8{1}, smp.StatusInvalidField},
		{"VLArbitration block 5", smp.MethodGet, smp.AttrVLArbitrationTable, smp.VLArbMod(1, 5), []uint8{1}, smp.StatusInvalidField},
		{"VLArbitration port out of range", smp.MethodGet, smp.AttrVLArbitrationTable, smp.VLArbMod(9, 1), []uint8{1}, smp.StatusInvalidField},
		{"VLArbitration high block on a CA", smp.MethodGet, smp.AttrVLArbitrationTable, smp.VLArbMod(0, smp.VLArbHighBlock1), nil, 0},
		{"SMInfo with no SM there", smp.MethodGet, smp.AttrSMInfo, 0, []uint8{1, 3}, smp.StatusUnsupportedMethodAttr},
		{"unknown method", 0x04, smp.AttrNodeInfo, 0, nil, smp.StatusUnsupportedMethod},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := smp.NewDRGet(c.attr, c.mod, c.path)
			s.Method = c.method
			r := h.do(s, smp.PermissiveLID)
			if r == nil || r.Status != c.status {
				t.Fatalf("got %+v, want status %#x", r, c.status)
			}
		})
	}
	var pk smp.PKeyBlock
	_ = h.drGet(smp.AttrPKeyTable, 0).Attr(&pk)
	if pk[0] != 0xFFFF || pk[1] != 0 {
		t.Fatalf("default P_Key table %v", pk[:2])
	}
	var d smp.NodeDescription
	_ = h.drGet(smp.AttrNodeDescription, 0, 1, 3).Attr(&d)
	if d.Text != "sw2" {
		t.Fatalf("NodeDescription %q", d.Text)
	}
	if ps, _ := h.fab.PortInfo(gH1, 1); !ps.IsSM {
		t.Fatal("attached port lacks IsSM")
	}
}

// TestAgentForwarding: SMInfo reaches an agent attached at the target, and
// its answer travels back along the return path.
func TestAgentForwarding(t *testing.T) {
	h := newHarness(t)
	other, err := h.fab.Attach(gH4, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := h.fab.Attach(gH4, 1); err == nil {
		t.Fatal("second agent on one port accepted")
	}
	if _, err := h.fab.Attach(gSw1, 3); err == nil {
		t.Fatal("attach to a switch external port accepted")
	}
	s, _ := smp.NewDRGet(smp.AttrSMInfo, 0, []uint8{1, 3, 5, 2})
	s.TID = 77
	buf, _ := s.Encode()
	if err := h.c.Send(transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: buf}); err != nil {
		t.Fatal(err)
	}
	p, ok := recv(other)
	if !ok {
		t.Fatal("SMInfo not forwarded to the agent on h4")
	}
	req, _ := smp.Decode(p.MAD)
	req.TurnAround(0)
	_ = req.SetAttr(&smp.SMInfo{GUID: gH4 + 1, Priority: 3, SMState: smp.SMStateStandby})
	req.HopPointer = 0 // ibsim-style agents reply with hop pointer 0
	out, _ := req.Encode()
	if err := other.Send(transport.Packet{DLID: smp.PermissiveLID, SLID: smp.PermissiveLID, MAD: out}); err != nil {
		t.Fatal(err)
	}
	p, ok = recv(h.c)
	if !ok {
		t.Fatal("agent's SMInfo answer did not come back")
	}
	r, _ := smp.Decode(p.MAD)
	var si smp.SMInfo
	if err := r.Attr(&si); err != nil || si.GUID != gH4+1 || r.TID != 77 {
		t.Fatalf("SMInfo %+v tid %d err %v", si, r.TID, err)
	}
}

func TestLoadErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.net")
	if err := os.WriteFile(path, []byte("Switch 4 \"s\"\n[1] \"h\"[1]\n[9] \"h\"[2]\n\nCa 2 \"h\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, Options{})
	if err == nil || !strings.Contains(err.Error(), path+":3: port 9 out of range") {
		t.Fatalf("got %v, want file:line", err)
	}
	if _, err := New(netfile.New(), Options{}); err == nil {
		t.Fatal("empty fabric accepted")
	}
	if _, err := New(netfile.New(), Options{LinearFDBCap: 100}); err == nil {
		t.Fatal("LinearFDBCap 100 accepted")
	}
}
