package sa

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/discovery"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// ---- a hand-built three-node subnet ----
//
//	CA A (0x200, port GUID 0x201) port 1 ── port 1 switch S (0x100) port 2 ── port 1 CA B (0x300, 0x301)
//
// Endpoints: 0 = S/0 (LID 1), 1 = A/1 (LIDs 2-3, LMC 1), 2 = B/1 (LIDs 4-5).
// A uses DLID 5 toward B (override); SL by DLID 4→3, 5→1; src B → DLID 2 SL 5.
// The SM sits on A/1.

type fakeSource struct {
	ap  *sm.Applied
	fab *discovery.Fabric
}

func (f *fakeSource) Applied() *sm.Applied      { return f.ap }
func (f *fakeSource) Fabric() *discovery.Fabric { return f.fab }

type fakeTransport struct {
	mu   sync.Mutex
	sent []transport.Packet
}

func (f *fakeTransport) Do(context.Context, transport.Packet) (transport.Packet, error) {
	panic("the agent never sends requests")
}
func (f *fakeTransport) Unsolicited() <-chan transport.Packet { return nil }
func (f *fakeTransport) Send(p transport.Packet) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p.MAD = append([]byte(nil), p.MAD...)
	f.sent = append(f.sent, p)
	return nil
}
func (f *fakeTransport) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sent)
}
func (f *fakeTransport) Stats() transport.Stats { return transport.Stats{Sent: 42} }
func (f *fakeTransport) Close() error           { return nil }

// take returns the one answer the agent sent, waiting for its worker.
func (f *fakeTransport) take(t *testing.T) transport.Packet {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && f.count() == 0; {
		time.Sleep(time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sent) != 1 {
		t.Fatalf("agent sent %d packets, want 1", len(f.sent))
	}
	p := f.sent[0]
	f.sent = nil
	return p
}

func tinySubnet(t testing.TB) *fakeSource {
	t.Helper()
	b := topology.NewBuilder()
	up := topology.Port{State: topology.StateActive, Width: smp.LinkWidth4X, Speed: 4, VLCap: 1}
	sw := topology.Node{GUID: 0x100, Type: topology.Switch, Desc: "sw", Ports: []topology.Port{{GUID: 0x100}, up, up, {}, {}}}
	for i := range sw.Ports {
		sw.Ports[i].GUID = 0x100
	}
	a := topology.Node{GUID: 0x200, Type: topology.CA, Desc: "hostA", Ports: []topology.Port{{}, up}}
	a.Ports[1].GUID = 0x201
	bb := topology.Node{GUID: 0x300, Type: topology.CA, Desc: "hostB", Ports: []topology.Port{{}, up}}
	bb.Ports[1].GUID = 0x301
	for _, n := range []topology.Node{sw, a, bb} {
		if err := b.AddNode(n); err != nil {
			t.Fatal(err)
		}
	}
	b.Link(0x100, 1, 0x200, 1)
	b.Link(0x100, 2, 0x300, 1)
	b.SetSM(0x200, 1)
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	routes := &plan.Routes{Planes: []plan.DestPlanes{{Planes: []plan.Plane{{0}}}, {Planes: []plan.Plane{{1}}}, {Planes: []plan.Plane{{2}}}}}
	lids := &plan.LIDPlan{
		Ports:     []plan.PortLID{{Base: 1}, {Base: 2, LMC: 1}, {Base: 4, LMC: 1}},
		Overrides: []plan.DLIDOverride{{Src: 1, Dst: 2, Offset: 1}},
	}
	rz, err := plan.Realize(topo, routes, lids)
	if err != nil {
		t.Fatal(err)
	}
	vls := &plan.VLPlan{SLByDLID: []uint8{0, 0, 0, 0, 3, 1}, Overrides: []plan.SLOverride{{Src: 2, DLID: 2, SL: 5}}, VLs: 1}

	pi := func(state, mtu uint8, cap uint32) discovery.Port {
		return discovery.Port{Valid: true, Info: smp.PortInfo{
			GIDPrefix: DefaultGIDPrefix, CapabilityMask: cap, LinkWidthActive: smp.LinkWidth4X, LinkSpeedActive: 4,
			PortState: state, PortPhysicalState: smp.PhysStateLinkUp, MTUCap: mtu, VLCap: 1, LMC: 0,
		}}
	}
	swPorts := []discovery.Port{pi(4, 5, 0), pi(4, 5, 0), pi(4, 5, 0), pi(1, 5, 0), pi(1, 5, 0)}
	aPorts := []discovery.Port{{}, pi(2, 4, smp.CapIsSM)}
	aPorts[1].Info.MKey = 0x1234
	aPorts[1].GUID = 0x201
	bPorts := []discovery.Port{{}, pi(4, 5, 0)}
	bPorts[1].GUID = 0x301
	ni := func(typ, nports uint8, guid, pguid uint64, local uint8) smp.NodeInfo {
		return smp.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: typ, NumPorts: nports, SystemImageGUID: guid,
			NodeGUID: guid, PortGUID: pguid, PartitionCap: 64, DeviceID: 0x1003, LocalPortNum: local, VendorID: 0x2c9}
	}
	fab := &discovery.Fabric{SMGUID: 0x200, SMPort: 1, Nodes: map[uint64]*discovery.Node{
		0x100: {Info: ni(smp.NodeTypeSwitch, 4, 0x100, 0x100, 1), Desc: "sw", Ports: swPorts},
		0x200: {Info: ni(smp.NodeTypeCA, 1, 0x200, 0x201, 1), Desc: "hostA", Ports: aPorts},
		0x300: {Info: ni(smp.NodeTypeCA, 1, 0x300, 0x301, 1), Desc: "hostB", Ports: bPorts},
	}}
	res := &pipeline.Result{Engine: "test", Routes: routes, LIDs: lids, VLs: vls, Realized: rz}
	return &fakeSource{ap: &sm.Applied{Topo: topo, Result: res}, fab: fab}
}

// hexb parses a hex dump (spaces, newlines and '|' ignored), zero-padded to n.
func hexb(t testing.TB, s string, n int) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad test vector: %v", err)
	}
	if len(b) > n {
		t.Fatalf("vector is %d bytes, want at most %d", len(b), n)
	}
	return append(b, make([]byte, n-len(b))...)
}

func diff(t *testing.T, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("first difference at byte %d (len got %d want %d)\ngot  %x\nwant %x", i, len(got), len(want), got, want)
		}
	}
	t.Fatalf("got %d bytes, want %d\ngot  %x", len(got), len(want), got)
}

// saReq builds an SA request MAD: header, SM_Key, component mask, data.
func saReq(method uint8, attr uint16, mod uint32, smKey, cm uint64, data []byte) []byte {
	r := smp.NewSAMAD(method, attr)
	r.TID = 0x0001_0000_1234_5678 // top bits as ibsim writes them: must come back
	r.AttrMod, r.SMKey, r.ComponentMask = mod, smKey, cm
	copy(r.Data[:], data)
	b := make([]byte, smp.MADLen)
	if err := r.EncodeTo(b); err != nil {
		panic(err)
	}
	return b
}

func newAgent(t *testing.T, src Source, opts Options) (*Agent, *fakeTransport) {
	ft := &fakeTransport{}
	return New(src, ft, opts, hclog.NewNullLogger()), ft
}

// ask sends one request from LID 4 (CA B) and returns the single answer.
func ask(t *testing.T, a *Agent, ft *fakeTransport, mad []byte) []byte {
	t.Helper()
	if !a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, QP: 1, MAD: mad}) {
		t.Fatal("Handle did not take an SA MAD")
	}
	p := ft.take(t)
	if p.DLID != 4 || p.SLID != 0 || p.QP != 1 {
		t.Fatalf("answer addressed to DLID %d SLID %d QP %d, want 4, 0 (ours), 1", p.DLID, p.SLID, p.QP)
	}
	return p.MAD
}

const hdr = "0001000012345678" // the request TID

func gid(guid string) string { return "fe80000000000000" + guid }

func TestByteVectors(t *testing.T) {
	src := tinySubnet(t)
	var pathReq [64]byte
	copy(pathReq[8:], hexb(t, gid("0000000000000301"), 16))
	copy(pathReq[24:], hexb(t, gid("0000000000000201"), 16))
	var nodeReq [108]byte
	nodeReq[1] = 3 // LID 3: A's second LID
	pathAB := "0000000000000000" + gid("0000000000000301") + gid("0000000000000201") +
		"0005 0002 00000000 00 80 ffff 0001 84 87 92 00 000000000000"
	for _, tc := range []struct {
		name string
		opts Options
		req  []byte
		want string
		n    int
	}{{
		// SGID/DGID Get: the plan's DLID (override: 5), base SLID, SL of DLID 5
		// (1), MTU 2048 (A's cap) exactly, 40 Gb/s (code 7), lifetime 18.
		name: "PathRecord Get by GID",
		req:  saReq(smp.MethodGet, smp.SAAttrPathRecord, 0, 0, smp.PRCompSGID|smp.PRCompDGID, pathReq[:]),
		want: "01030281 0000 0000" + hdr + "0035 0000 00000000" + "00000000 00000000 00000000" +
			"0000000000000000 0008 0000 000000000000000c" + pathAB,
		n: 256,
	}, {
		// GetTable without RMPP: 4 paths (2 DLIDs x 2 SLIDs), 2 fit in the
		// 160 bytes umad2sim delivers; RMPP header Active|First|Last, no
		// response time, segment 1, PayloadLength 20+128.
		name: "PathRecord GetTable truncated",
		req:  saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, smp.PRCompSGID|smp.PRCompDGID, pathReq[:]),
		want: "01030292 0000 0000" + hdr + "0035 0000 00000000" + "0101ff00 00000001 00000094" +
			"0000000000000000 0008 0000 000000000000000c" + pathAB +
			strings.Replace(pathAB, "0005 0002", "0005 0003", 1),
		n: 256,
	}, {
		name: "PathRecord GetTable with RMPP",
		opts: Options{RMPP: true},
		req:  saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, smp.PRCompSGID|smp.PRCompDGID, pathReq[:]),
		want: "01030292 0000 0000" + hdr + "0035 0000 00000000" + "0101ff00 00000001 00000114" +
			"0000000000000000 0008 0000 000000000000000c" + pathAB +
			strings.Replace(pathAB, "0005 0002", "0005 0003", 1) +
			strings.Replace(strings.Replace(pathAB, "0005 0002", "0004 0002", 1), "0001 84 87 92 00", "0003 84 87 92 01", 1) +
			strings.Replace(strings.Replace(pathAB, "0005 0002", "0004 0003", 1), "0001 84 87 92 00", "0003 84 87 92 01", 1),
		n: 56 + 4*64,
	}, {
		// LID 3 lies in A's range: A's record, LID = base 2, PortGUID and
		// local port of that port, description as read.
		name: "NodeRecord Get by LID",
		req:  saReq(smp.MethodGet, smp.SAAttrNodeRecord, 0, 0, 1, nodeReq[:]),
		want: "01030281 0000 0000" + hdr + "0011 0000 00000000" + "00000000 00000000 00000000" +
			"0000000000000000 000e 0000 0000000000000001" +
			"0002 0000 01010101 0000000000000200 0000000000000200 0000000000000201 0040 1003 00000000 01 0002c9" +
			hex.EncodeToString([]byte("hostA")),
		n: 256,
	}, {
		// SMInfoRecord: our LID 2, port GUID 0x201, ActCount = transport
		// sends (42), priority 5, MASTER; SM_Key hidden from untrusted
		// requesters.
		name: "SMInfoRecord GetTable",
		opts: Options{Priority: 5, SMKey: 0xabcd},
		req:  saReq(smp.MethodGetTable, smp.SAAttrSMInfoRecord, 0, 0, 0, nil),
		want: "01030292 0000 0000" + hdr + "0018 0000 00000000" + "0101ff00 00000001 00000034" +
			"0000000000000000 0004 0000 0000000000000000" +
			"0002 0000 0000000000000201 0000000000000000 0000002a 53",
		n: 256,
	}, {
		name: "SMInfoRecord GetTable trusted",
		opts: Options{Priority: 5, SMKey: 0xabcd},
		req:  saReq(smp.MethodGetTable, smp.SAAttrSMInfoRecord, 0, 0xabcd, 0, nil),
		want: "01030292 0000 0000" + hdr + "0018 0000 00000000" + "0101ff00 00000001 00000034" +
			"0000000000000000 0004 0000 0000000000000000" +
			"0002 0000 0000000000000201 000000000000abcd 0000002a 53",
		n: 256,
	}, {
		name: "ClassPortInfo",
		req:  saReq(smp.MethodGet, smp.SAAttrClassPortInfo, 0, 0, 0, nil),
		want: "01030281 0000 0000" + hdr + "0001 0000 00000000" + "00000000 00000000 00000000" +
			"0000000000000000 0009 0000 0000000000000000" + "0102 0000 00000012",
		n: 256,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			a, ft := newAgent(t, src, tc.opts)
			got := ask(t, a, ft, tc.req)
			diff(t, got, hexb(t, tc.want, tc.n))
			if l := smp.RMPPMessageLen(got); got[3] == smp.MethodGetTableResp && l != 36+int(binary.BigEndian.Uint32(got[32:])) {
				t.Fatalf("RMPPMessageLen %d disagrees with PayloadLength", l)
			}
		})
	}
}

// TestStatuses: every refusal carries the right status, the request's TID,
// attribute and component mask, and no data.
func TestStatuses(t *testing.T) {
	src := tinySubnet(t)
	lid := func(l uint16) []byte { return []byte{byte(l >> 8), byte(l)} }
	badVersion := saReq(smp.MethodGet, smp.SAAttrNodeRecord, 0, 0, 0, nil)
	badVersion[2] = 1
	var unknownGID [64]byte
	copy(unknownGID[8:], hexb(t, gid("00000000deadbeef"), 16))
	var otherPrefix [64]byte
	copy(otherPrefix[8:], hexb(t, "fec0000000000000 0000000000000301", 16))
	for _, tc := range []struct {
		name   string
		src    Source
		req    []byte
		method uint8
		status uint16
	}{
		{"Get matching several", src, saReq(smp.MethodGet, smp.SAAttrNodeRecord, 0, 0, 0, nil), 0x81, smp.SAStatusTooManyRecords},
		{"Get matching none", src, saReq(smp.MethodGet, smp.SAAttrNodeRecord, 0, 0, 1, lid(99)), 0x81, smp.SAStatusNoRecords},
		{"PathRecord Get world", src, saReq(smp.MethodGet, smp.SAAttrPathRecord, 0, 0, 0, nil), 0x81, smp.SAStatusTooManyRecords},
		{"PathRecord unknown DGID", src, saReq(smp.MethodGet, smp.SAAttrPathRecord, 0, 0, smp.PRCompDGID, unknownGID[:]), 0x81, smp.SAStatusInvalidGID},
		{"PathRecord foreign prefix", src, saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, smp.PRCompDGID, otherPrefix[:]), 0x92, smp.SAStatusInvalidGID},
		{"component mask beyond record", src, saReq(smp.MethodGetTable, smp.SAAttrSMInfoRecord, 0, 0, 1<<7, nil), 0x92, smp.SAStatusReqInvalid},
		{"unsupported attribute", src, saReq(smp.MethodGet, 0x0039 /* TraceRecord */, 0, 0, 0, nil), 0x81, smp.StatusUnsupportedMethodAttr},
		{"GetTable of ClassPortInfo", src, saReq(smp.MethodGetTable, smp.SAAttrClassPortInfo, 0, 0, 0, nil), 0x92, smp.StatusUnsupportedMethodAttr},
		{"Set", src, saReq(smp.MethodSet, smp.SAAttrNodeRecord, 0, 0, 0, nil), 0x81, smp.StatusUnsupportedMethodAttr},
		{"Delete", src, saReq(smp.MethodDelete, smp.SAAttrPathRecord, 0, 0, 0, nil), 0x95, smp.StatusUnsupportedMethodAttr},
		{"undefined method", src, saReq(0x10, smp.SAAttrNodeRecord, 0, 0, 0, nil), 0x90, smp.StatusUnsupportedMethod},
		{"class version 1", src, badVersion, 0x81, smp.StatusBadVersion},
		{"before the first plan", &fakeSource{}, saReq(smp.MethodGetTable, smp.SAAttrNodeRecord, 0, 0, 0, nil), 0x92, smp.StatusBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ft := newAgent(t, tc.src, Options{})
			got := ask(t, a, ft, tc.req)
			want := append([]byte(nil), tc.req[:24]...)
			want[2] = smp.SAClassVersion // we answer in the version we speak
			want[3] = tc.method
			binary.BigEndian.PutUint16(want[4:], tc.status)
			want = append(want, make([]byte, 232)...)
			copy(want[48:56], tc.req[48:56]) // component mask echoed
			diff(t, got, want)
		})
	}
}

// TestTableContents checks record selection without byte vectors.
func TestTableContents(t *testing.T) {
	src := tinySubnet(t)
	count := func(t *testing.T, opts Options, req []byte) (int, []byte) {
		t.Helper()
		a, ft := newAgent(t, src, opts)
		got := ask(t, a, ft, req)
		if st := binary.BigEndian.Uint16(got[4:]); st != 0 {
			t.Fatalf("status %#04x", st)
		}
		n := (smp.RMPPMessageLen(got) - smp.SADataOffset) / (int(binary.BigEndian.Uint16(got[44:])) * 8)
		return n, got
	}
	rmpp := Options{RMPP: true}
	t.Run("NodeRecord all", func(t *testing.T) {
		if n, _ := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrNodeRecord, 0, 0, 0, nil)); n != 3 {
			t.Fatalf("%d NodeRecords, want 3", n)
		}
		if n, _ := count(t, Options{}, saReq(smp.MethodGetTable, smp.SAAttrNodeRecord, 0, 0, 0, nil)); n != 1 {
			t.Fatalf("%d NodeRecords in one MAD, want 1", n)
		}
	})
	t.Run("NodeRecord by NodeType", func(t *testing.T) {
		var r [108]byte
		r[6] = smp.NodeTypeSwitch
		n, got := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrNodeRecord, 0, 0, 1<<4, r[:]))
		if n != 1 || got[56+1] != 1 {
			t.Fatalf("%d records, first LID %d; want the switch (LID 1)", n, got[57])
		}
	})
	t.Run("NodeRecord by description", func(t *testing.T) {
		var r [108]byte
		copy(r[44:], "hostB")
		n, got := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrNodeRecord, 0, 0, 1<<14, r[:]))
		if n != 1 || got[57] != 4 {
			t.Fatalf("%d records, LID %d; want hostB at 4", n, got[57])
		}
	})
	t.Run("PortInfoRecord switch ports", func(t *testing.T) {
		// All 5 ports of the switch (LID 1), endport LID 1 each; port 0
		// carries the programmed LID and MasterSMLID.
		n, got := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPortInfoRecord, 0, 0, 1, []byte{0, 1}))
		if n != 5 {
			t.Fatalf("%d PortInfoRecords, want 5", n)
		}
		var r smp.PortInfoRecord
		if err := r.Unmarshal(got[56:]); err != nil || r.EndportLID != 1 || r.PortNum != 0 || r.PortInfo.LID != 1 || r.PortInfo.MasterSMLID != 2 {
			t.Fatalf("port 0 record %+v %v", r, err)
		}
	})
	t.Run("PortInfoRecord isSM (saquery -s)", func(t *testing.T) {
		var r [68]byte
		binary.BigEndian.PutUint32(r[24:], smp.CapIsSM)
		n, got := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPortInfoRecord, 1<<31, 0, 1<<7, r[:]))
		var pr smp.PortInfoRecord
		if err := pr.Unmarshal(got[56:]); n != 1 || err != nil || pr.EndportLID != 2 || pr.PortInfo.LMC != 1 ||
			pr.PortInfo.PortState != smp.PortStateActive || pr.PortInfo.MKey != 0 {
			t.Fatalf("%d records, first %+v (%v); want A's port: LID 2, LMC 1, Active, M_Key hidden", n, pr, err)
		}
		// Without bit 31 the mask must equal exactly: A has only IsSM too.
		binary.BigEndian.PutUint32(r[24:], smp.CapIsSM|smp.CapIsTrapSupported)
		if n, _ := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPortInfoRecord, 0, 0, 1<<7, r[:])); n != 0 {
			t.Fatalf("exact CapabilityMask match found %d records, want 0", n)
		}
	})
	t.Run("PathRecord by LIDs", func(t *testing.T) {
		// saquery --src-to-dst 4:3 sends SLID, DLID and NumbPath 0x7f.
		var r [64]byte
		binary.BigEndian.PutUint16(r[40:], 3)
		binary.BigEndian.PutUint16(r[42:], 4)
		r[49] = 0x7f
		n, got := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, smp.PRCompSLID|smp.PRCompDLID|smp.PRCompNumbPath, r[:]))
		var pr smp.PathRecord
		if err := pr.Unmarshal(got[56:]); n != 1 || err != nil || pr.DLID != 3 || pr.SLID != 4 || pr.SL != 0 || pr.Preference != 1 {
			t.Fatalf("%d records, first %+v (%v)", n, pr, err)
		}
		// B → A by base LID: the SL override (src B, DLID 2 → SL 5).
		binary.BigEndian.PutUint16(r[40:], 2)
		_, got = count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, smp.PRCompSLID|smp.PRCompDLID, r[:]))
		if err := pr.Unmarshal(got[56:]); err != nil || pr.SL != 5 || pr.Preference != 0 {
			t.Fatalf("B→A record %+v, want SL 5 preference 0", pr)
		}
	})
	t.Run("PathRecord world and selectors", func(t *testing.T) {
		// 3 endpoints with 1, 2, 2 LIDs: (1+2+2)^2 = 25 LID pairs, all routed.
		if n, _ := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, 0, nil)); n != 25 {
			t.Fatalf("%d paths, want 25", n)
		}
		// NumbPath 1: one per port pair.
		var r [64]byte
		r[49] = 1
		if n, _ := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, smp.PRCompNumbPath, r[:])); n != 9 {
			t.Fatalf("%d paths with NumbPath 1, want 9", n)
		}
		// MTU > 2048 excludes every path through A (MTUCap 2048): S↔B only,
		// S/0→S/0 (MTU of S/0: 4096) and B→B: 1+2*2+2*2 = 9 pairs... counted:
		// S→S 1, S→B 2, B→S 2, B→B 4.
		r[54] = 0<<6 | smp.MTU2048
		if n, _ := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, smp.PRCompMTU|smp.PRCompMTUSelector, r[:])); n != 9 {
			t.Fatalf("%d paths with MTU > 2048, want 9", n)
		}
		// MTU < 4096 on A→B reports 2048; exactly 1024 reports 1024.
		copy(r[8:], hexb(t, gid("0000000000000301"), 16))
		copy(r[24:], hexb(t, gid("0000000000000201"), 16))
		gidMask := uint64(smp.PRCompSGID | smp.PRCompDGID | smp.PRCompMTU | smp.PRCompMTUSelector)
		for _, c := range []struct{ sel, mtu, want uint8 }{{1, smp.MTU4096, smp.MTU2048}, {1, smp.MTU2048, smp.MTU1024}, {2, smp.MTU1024, smp.MTU1024}} {
			r[54] = c.sel<<6 | c.mtu
			_, got := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, gidMask, r[:]))
			if got[56+54]&0x3F != c.want {
				t.Fatalf("selector %d MTU %d: got MTU %d, want %d", c.sel, c.mtu, got[56+54]&0x3F, c.want)
			}
		}
		// SL fixed to something else than the plan's: no path.
		r[53] = 7
		if n, _ := count(t, rmpp, saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, smp.PRCompSGID|smp.PRCompDGID|smp.PRCompSL, r[:])); n != 0 {
			t.Fatalf("%d paths with SL 7, want 0", n)
		}
	})
}

func TestRates(t *testing.T) {
	for _, c := range []struct {
		lanes, speed, ext uint8
		code              uint8
	}{
		{smp.LinkWidth1X, 1, 0, 2}, {smp.LinkWidth4X, 1, 0, 3}, {smp.LinkWidth4X, 2, 0, 6}, {smp.LinkWidth4X, 4, 0, 7},
		{smp.LinkWidth12X, 4, 0, 10}, {smp.LinkWidth4X, 4, 1, 12}, {smp.LinkWidth4X, 4, 2, 16}, {smp.LinkWidth4X, 0, 4, 17},
		{smp.LinkWidth4X, 0, 8, 21}, {smp.LinkWidth2X, 0, 8, 17}, {smp.LinkWidth1X, 0, 1, 11},
	} {
		if got := rateCode(lanes(c.lanes) * laneRate(c.speed, c.ext)); got != c.code {
			t.Errorf("width %#x speed %d ext %d: rate code %d, want %d", c.lanes, c.speed, c.ext, got, c.code)
		}
	}
	if rateBelow(rateOf(3)) != 5 || rateBelow(rateOf(2)) != 0 {
		t.Fatalf("rateBelow(10G) = %d, rateBelow(2.5G) = %d", rateBelow(rateOf(3)), rateBelow(rateOf(2)))
	}
}

// TestSMInfoSMP: LID-routed and directed-route SubnGet(SMInfo) are turned
// around with our SMInfo; a Set is answered the same; other attributes get
// "unsupported".
func TestSMInfoSMP(t *testing.T) {
	src := tinySubnet(t)
	a, ft := newAgent(t, src, Options{Priority: 3})
	lr := smp.NewLIDGet(smp.AttrSMInfo, 0)
	lr.TID = 0x0002_0000_0000_0007
	mad, _ := lr.Encode()
	if !a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, MAD: mad}) {
		t.Fatal("SMInfo not handled")
	}
	p := ft.take(t)
	want := hexb(t, "01010181 0000 0000 0002000000000007 0020 0000 00000000", 256)
	copy(want[64:], hexb(t, "0000000000000201 0000000000000000 0000002a 33", 21))
	if p.DLID != 4 {
		t.Fatalf("answer to DLID %d", p.DLID)
	}
	diff(t, p.MAD, want)

	dr, _ := smp.NewDRGet(smp.AttrSMInfo, 0, []uint8{1, 1})
	dr.TID = 9
	dr.HopPointer = 3 // as the embedded fabric delivers it (ibsim: 0); kept as is
	dr.ReturnPath[1], dr.ReturnPath[2] = 2, 1
	mad, _ = dr.Encode()
	a.Handle(context.Background(), transport.Packet{DLID: 0xFFFF, SLID: 0xFFFF, MAD: mad})
	p = ft.take(t)
	got, err := smp.Decode(p.MAD)
	if err != nil || p.DLID != 0xFFFF || p.SLID != 0xFFFF || !got.Direction || got.Method != smp.MethodGetResp ||
		got.HopPointer != 3 || got.HopCount != 2 || got.ReturnPath[1] != 2 || got.Status != 0 {
		t.Fatalf("DR answer %+v to %d/%d (%v)", got, p.DLID, p.SLID, err)
	}
	var si smp.SMInfo
	if err := got.Attr(&si); err != nil || si.GUID != 0x201 || si.SMState != smp.SMStateMaster || si.Priority != 3 {
		t.Fatalf("SMInfo %+v %v", si, err)
	}

	set, _ := smp.NewLIDSet(smp.AttrSMInfo, 1, nil)
	mad, _ = set.Encode()
	a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, MAD: mad})
	if got, _ := smp.Decode(ft.take(t).MAD); got.Method != smp.MethodGetResp || got.Status != 0 || got.Data[20] != 0x33 {
		t.Fatalf("Set answer %+v", got)
	}

	other := smp.NewLIDGet(smp.AttrNodeInfo, 0)
	mad, _ = other.Encode()
	a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, MAD: mad})
	if got, _ := smp.Decode(ft.take(t).MAD); got.Status != smp.StatusUnsupportedMethodAttr {
		t.Fatalf("NodeInfo answered with status %#x", got.Status)
	}

	trap := smp.NewLIDGet(smp.AttrNotice, 0)
	trap.Method = smp.MethodTrap
	mad, _ = trap.Encode()
	if a.Handle(context.Background(), transport.Packet{DLID: 2, SLID: 4, MAD: mad}) {
		t.Fatal("a trap was taken by the agent")
	}
}

// TestIndexReuse: the index is built once per plan and rebuilt when the
// plan changes.
func TestIndexReuse(t *testing.T) {
	src := tinySubnet(t)
	a, _ := newAgent(t, src, Options{})
	x1 := a.current()
	if x1 == nil || a.current() != x1 {
		t.Fatal("index not cached")
	}
	ap := *src.ap
	src.ap = &ap
	if x2 := a.current(); x2 == x1 || x2 == nil {
		t.Fatal("index not rebuilt for a new plan")
	}
}

// FuzzHandle: no input makes Handle panic (the recover in Handle is not
// exercised: handle is called directly), and every answer is a MAD the
// transports accept.
func FuzzHandle(f *testing.F) {
	var pr [64]byte
	copy(pr[8:], hexb(f, gid("0000000000000301"), 16))
	f.Add(saReq(smp.MethodGet, smp.SAAttrPathRecord, 0, 0, smp.PRCompDGID, pr[:]), true)
	f.Add(saReq(smp.MethodGetTable, smp.SAAttrPathRecord, 0, 0, 0xFFFF, pr[:]), false)
	f.Add(saReq(smp.MethodGetTable, smp.SAAttrNodeRecord, 0, 0, 1<<14, nil), true)
	f.Add(saReq(smp.MethodGetTable, smp.SAAttrPortInfoRecord, 1<<31, 0, 1<<7, nil), false)
	f.Add(saReq(smp.MethodGet, smp.SAAttrSMInfoRecord, 0, 0, 1, []byte{0, 2}), false)
	sm, _ := smp.NewLIDGet(smp.AttrSMInfo, 0).Encode()
	f.Add(sm, false)
	dr, _ := smp.NewDRGet(smp.AttrSMInfo, 0, []uint8{1, 2, 3})
	b, _ := dr.Encode()
	f.Add(b, true)
	f.Add([]byte{1, 3, 2}, false)
	// Every attribute this SA knows, with every method, an empty record
	// and all component-mask bits: each handler meets hostile input.
	for id := range queryKinds {
		for _, m := range []uint8{smp.MethodGet, smp.MethodGetTable, smp.MethodSet, smp.MethodDelete, smp.MethodGetMulti} {
			f.Add(saReq(m, id, 0, 0, ^uint64(0), nil), false)
			f.Add(saReq(m, id, 0, 7, 0, nil), true)
			f.Add(saReq(m, id, 1<<31, 0, 0x5555, []byte{0, 2, 0, 0, 0, 1, 0xff, 0xff}), true)
		}
	}
	src := tinySubnet(f)
	f.Fuzz(func(t *testing.T, mad []byte, rmpp bool) {
		ft := &fakeTransport{}
		a := New(src, ft, Options{RMPP: rmpp, SMKey: 7}, hclog.NewNullLogger())
		a.handle(transport.Packet{DLID: 2, SLID: 4, QP: 1, MAD: mad})
		for _, p := range ft.sent {
			if len(p.MAD) < smp.SADataOffset || (!rmpp && len(p.MAD) != smp.MADLen) {
				t.Fatalf("answer of %d bytes", len(p.MAD))
			}
			if p.MAD[3]&smp.MethodResponse == 0 {
				t.Fatalf("answer without the R bit: %x", p.MAD[:24])
			}
			if !bytes.Equal(p.MAD[8:16], mad[8:16]) {
				t.Fatal("answer does not carry the request TID")
			}
		}
	})
}
