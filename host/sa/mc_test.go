package sa_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/mcast"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
)

type bfsMcast struct{ base }

func (bfsMcast) RouteMulticast(_ context.Context, req sdk.MulticastRequest) ([]sdk.MulticastTree, error) {
	return sdktest.BFSMulticast(req)
}

// mcClient is an SA client on one CA port.
type mcClient struct {
	t    transport.Transport
	guid uint64 // port GUID
	at   sim.Delivery
}

// mcClients attaches to up to n CA ports nobody else uses.
func mcClients(t *testing.T, s *subnet, n int) []mcClient {
	t.Helper()
	topo := s.sm.Applied().Topo
	var out []mcClient
	for _, ep := range topo.Endpoints() {
		nd := &topo.Nodes[ep.Node]
		if nd.Type != topology.CA || nd.GUID == s.smGUID || len(out) == n {
			continue
		}
		c, err := s.fab.Attach(nd.GUID, ep.Port)
		if err != nil {
			continue // the subnet's own clients sit there
		}
		ct := transport.New(c, transport.Options{Timeout: 500 * time.Millisecond, Retries: transport.NoRetries})
		t.Cleanup(func() { ct.Close() })
		out = append(out, mcClient{t: ct, guid: topo.PortGUID(ep), at: sim.Delivery{GUID: nd.GUID, Port: ep.Port}})
	}
	if len(out) < n {
		t.Fatalf("only %d free CA ports", len(out))
	}
	return out
}

func (c mcClient) gid() [16]byte {
	var g [16]byte
	binary.BigEndian.PutUint64(g[:8], 0xFE80_0000_0000_0000)
	binary.BigEndian.PutUint64(g[8:], c.guid)
	return g
}

func (c mcClient) do(t *testing.T, s *subnet, method uint8, cm uint64, r *smp.MCMemberRecord) (*smp.SAMAD, smp.MCMemberRecord) {
	t.Helper()
	resp := c.doAttr(t, s, method, smp.SAAttrMCMemberRecord, cm, r)
	var out smp.MCMemberRecord
	_ = out.Unmarshal(resp.Data[:])
	return resp, out
}

func (c mcClient) doAttr(t *testing.T, s *subnet, method uint8, attr uint16, cm uint64, r smp.Attribute) *smp.SAMAD {
	t.Helper()
	req := smp.NewSAMAD(method, attr)
	req.ComponentMask = cm
	if err := r.MarshalTo(req.Data[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, smp.MADLen)
	if err := req.EncodeTo(b); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := c.t.Do(ctx, transport.Packet{DLID: s.smLID(t), QP: 1, MAD: b})
	if err != nil {
		t.Fatalf("SA attribute %#04x method %#x: %v", attr, method, err)
	}
	var resp smp.SAMAD
	if err := resp.Decode(p.MAD); err != nil {
		t.Fatal(err)
	}
	return &resp
}

// ipoibBroadcast is the IPv4 broadcast MGID of P_Key 0xFFFF, link scope.
var ipoibBroadcast = [16]byte{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}

const (
	createComps = smp.MCMCompMGID | smp.MCMCompPortGID | smp.MCMCompJoinState | smp.MCMCompQKey | smp.MCMCompPKey |
		smp.MCMCompSL | smp.MCMCompFlowLabel | smp.MCMCompTClass
	joinComps = smp.MCMCompMGID | smp.MCMCompPortGID | smp.MCMCompJoinState
)

func TestMCMemberRecordJoinLeave(t *testing.T) {
	s := startSubnet(t, 0)
	store := mcast.NewStore(0)
	s.sm.EnableMulticast(bfsMcast{base{"bfs"}}, store)
	cs := mcClients(t, s, 4)

	create := smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: cs[0].gid(), QKey: 0x0B1B, PKey: 0xFFFF,
		JoinState: smp.JoinFullMember, MTUSelector: 2, MTU: 4}
	resp, rec := cs[0].do(t, s, smp.MethodSet, createComps|smp.MCMCompMTU|smp.MCMCompMTUSelector, &create)
	if resp.Status != 0 || resp.Method != smp.MethodGetResp || rec.MLID != smp.MulticastLIDBase || rec.MTU != 4 || rec.QKey != 0x0B1B {
		t.Fatalf("create: status %#x method %#x record %+v", resp.Status, resp.Method, rec)
	}
	for _, c := range cs[1:3] {
		j := smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: c.gid(), QKey: 0x0B1B, JoinState: smp.JoinFullMember}
		if resp, rec := c.do(t, s, smp.MethodSet, joinComps|smp.MCMCompQKey, &j); resp.Status != 0 || rec.MLID != smp.MulticastLIDBase {
			t.Fatalf("join: status %#x record %+v", resp.Status, rec)
		}
	}
	s.sm.MulticastWait()
	members := []sim.Delivery{cs[0].at, cs[1].at, cs[2].at}
	if err := s.fab.CheckMulticastGroup(smp.MulticastLIDBase, members, members); err != nil {
		t.Fatal(err)
	}

	// MFTRecord: the SA reports the blocks the switches were given.
	mr := smp.MFTRecord{}
	mresp := cs[0].doAttr(t, s, smp.MethodGetTable, smp.SAAttrMFTRecord, 0, &mr)
	if mresp.Status != 0 || records(mresp) == 0 {
		t.Fatalf("MFTRecord GetTable: status %#x, %d records", mresp.Status, records(mresp))
	}
	if err := mr.Unmarshal(mresp.Data[:]); err != nil || mr.BlockNum != 0 || mr.Position != 0 || mr.Block[0] == 0 {
		t.Fatalf("first MFTRecord %+v %v", mr, err)
	}

	// Refusals, each with the spec's status; none changes the group.
	bad := func(name string, c mcClient, method uint8, cm uint64, r smp.MCMemberRecord, want uint16) {
		t.Helper()
		if resp, _ := c.do(t, s, method, cm, &r); resp.Status != want {
			t.Errorf("%s: status %#04x, want %#04x", name, resp.Status, want)
		}
	}
	other := cs[3]
	bad("mismatched Q_Key", other, smp.MethodSet, joinComps|smp.MCMCompQKey,
		smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: other.gid(), QKey: 0x1234, JoinState: 1}, smp.SAStatusReqInvalid)
	bad("MTU exactly 4096 in a 2048 group", other, smp.MethodSet, joinComps|smp.MCMCompMTU|smp.MCMCompMTUSelector,
		smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: other.gid(), MTUSelector: 2, MTU: 5, JoinState: 1}, smp.SAStatusReqInvalid)
	bad("no JoinState component", other, smp.MethodSet, smp.MCMCompMGID|smp.MCMCompPortGID,
		smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: other.gid(), JoinState: 1}, smp.SAStatusInsufficientComponents)
	bad("JoinState 0", other, smp.MethodSet, joinComps,
		smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: other.gid()}, smp.SAStatusReqInvalid)
	bad("create without Q_Key", other, smp.MethodSet, createComps&^smp.MCMCompQKey,
		smp.MCMemberRecord{MGID: [16]byte{0xff, 0x12, 15: 7}, PortGID: other.gid(), PKey: 0xFFFF, JoinState: 1}, smp.SAStatusInsufficientComponents)
	bad("create at less than 2.5 Gb/s (osmtest o15.0.1.8)", other, smp.MethodSet, createComps|smp.MCMCompRate|smp.MCMCompRateSelector,
		smp.MCMemberRecord{MGID: [16]byte{0xff, 0x12, 15: 7}, PortGID: other.gid(), QKey: 1, PKey: 0xFFFF, JoinState: 1, RateSelector: 1, Rate: 2}, smp.SAStatusReqInvalid)
	bad("create at a reserved rate code", other, smp.MethodSet, createComps|smp.MCMCompRate|smp.MCMCompRateSelector,
		smp.MCMemberRecord{MGID: [16]byte{0xff, 0x12, 15: 7}, PortGID: other.gid(), QKey: 1, PKey: 0xFFFF, JoinState: 1, RateSelector: 2, Rate: 1}, smp.SAStatusReqInvalid)
	bad("create by a non-member", other, smp.MethodSet, createComps,
		smp.MCMemberRecord{MGID: [16]byte{0xff, 0x12, 15: 8}, PortGID: other.gid(), PKey: 0xFFFF, JoinState: smp.JoinNonMember}, smp.SAStatusReqInvalid)
	bad("MGID not multicast", other, smp.MethodSet, createComps,
		smp.MCMemberRecord{MGID: [16]byte{0xfe, 0x80, 15: 1}, PortGID: other.gid(), PKey: 0xFFFF, JoinState: 1}, smp.SAStatusReqInvalid)
	bad("MGID with reserved flag bits", other, smp.MethodSet, createComps,
		smp.MCMemberRecord{MGID: [16]byte{0xff, 0x22, 15: 1}, PortGID: other.gid(), PKey: 0xFFFF, JoinState: 1}, smp.SAStatusReqInvalid)
	bad("MGID in the SA-assigned form, link-local", other, smp.MethodSet, createComps,
		smp.MCMemberRecord{MGID: [16]byte{0xff, 0x12, 0xa0, 0x1b, 15: 1}, PortGID: other.gid(), PKey: 0xFFFF, JoinState: 1}, smp.SAStatusReqInvalid)
	bad("unknown PortGID", other, smp.MethodSet, joinComps,
		smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: [16]byte{0xfe, 0x80, 15: 0x77}, JoinState: 1}, smp.SAStatusInvalidGID)
	bad("join for another port", other, smp.MethodSet, joinComps,
		smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: cs[0].gid(), JoinState: 1}, smp.SAStatusReqInvalid)
	bad("leave of a group one is not in", other, smp.MethodDelete, joinComps,
		smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: other.gid(), JoinState: 1}, smp.SAStatusReqInvalid)
	bad("leave of a join state one does not hold", cs[1], smp.MethodDelete, joinComps,
		smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: cs[1].gid(), JoinState: smp.JoinNonMember}, smp.SAStatusReqInvalid)
	bad("leave of an unknown group", cs[1], smp.MethodDelete, joinComps,
		smp.MCMemberRecord{MGID: [16]byte{0xff, 0x12, 15: 9}, PortGID: cs[1].gid(), JoinState: 1}, smp.SAStatusReqInvalid)
	bad("leave without MGID", cs[1], smp.MethodDelete, smp.MCMCompPortGID|smp.MCMCompJoinState,
		smp.MCMemberRecord{PortGID: cs[1].gid(), JoinState: 1}, smp.SAStatusInsufficientComponents)
	if g, _ := store.Get(ipoibBroadcast); len(g.Members) != 3 || store.Len() != 1 {
		t.Fatalf("refused requests changed the store: %d groups, members %v", store.Len(), g.Members)
	}

	// GetTable: an untrusted client sees the group once, its own
	// membership when it asks for its PortGID.
	q := smp.MCMemberRecord{MGID: ipoibBroadcast}
	if resp, _ := cs[1].do(t, s, smp.MethodGetTable, smp.MCMCompMGID, &q); resp.Status != 0 || records(resp) != 1 {
		t.Fatalf("GetTable by MGID: status %#x, %d records", resp.Status, records(resp))
	}
	q.PortGID = cs[1].gid()
	resp, rec = cs[1].do(t, s, smp.MethodGet, smp.MCMCompMGID|smp.MCMCompPortGID, &q)
	if resp.Status != 0 || rec.PortGID != cs[1].gid() || rec.JoinState != smp.JoinFullMember {
		t.Fatalf("Get own membership: status %#x record %+v", resp.Status, rec)
	}

	// PathRecord to the group: DLID is the MLID, parameters the group's.
	pr := smp.PathRecord{DGID: ipoibBroadcast, SGID: cs[1].gid()}
	data := make([]byte, smp.PathRecordLen)
	if err := pr.MarshalTo(data); err != nil {
		t.Fatal(err)
	}
	s.client = cs[1].t
	presp := s.query(t, smp.MethodGetTable, smp.SAAttrPathRecord, smp.PRCompDGID|smp.PRCompSGID, data)
	var got smp.PathRecord
	if err := got.Unmarshal(presp.Data[:]); err != nil || presp.Status != 0 || records(presp) != 1 || got.DLID != smp.MulticastLIDBase || got.MTU != 4 || got.PKey&0x7FFF != 0x7FFF {
		t.Fatalf("multicast PathRecord: status %#x, %d records, %+v", presp.Status, records(presp), got)
	}

	// A new group "less than 60 Gb/s" (osmtest o15.0.1.4) gets the
	// fastest rate below that the creator's port carries, not 56 Gb/s.
	slower := smp.MCMemberRecord{MGID: [16]byte{0xff, 0x12, 15: 10}, PortGID: cs[3].gid(), QKey: 1, PKey: 0xFFFF, JoinState: 1, RateSelector: 1, Rate: 8}
	resp, rec = cs[3].do(t, s, smp.MethodSet, createComps|smp.MCMCompRate|smp.MCMCompRateSelector, &slower)
	if uni := pathTo(t, s, cs[3], cs[0]); resp.Status != 0 || rec.Rate != uni.Rate {
		t.Fatalf("create below 60 Gb/s: status %#x rate code %d, want the port's %d", resp.Status, rec.Rate, uni.Rate)
	}
	if resp, _ := cs[3].do(t, s, smp.MethodDelete, joinComps, &slower); resp.Status != 0 {
		t.Fatalf("leave of the slower group: status %#x", resp.Status)
	}

	// A partial leave answers with the join state the port keeps.
	both := smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: cs[2].gid(), JoinState: smp.JoinNonMember}
	if resp, rec := cs[2].do(t, s, smp.MethodSet, joinComps, &both); resp.Status != 0 || rec.JoinState != smp.JoinFullMember|smp.JoinNonMember {
		t.Fatalf("adding NonMember: status %#x record %+v", resp.Status, rec)
	}
	if resp, rec := cs[2].do(t, s, smp.MethodDelete, joinComps, &both); resp.Status != 0 || rec.JoinState != smp.JoinFullMember {
		t.Fatalf("leaving NonMember: status %#x join state %#x, want the FullMember it keeps", resp.Status, rec.JoinState)
	}

	// Leaves: the last one deletes the group and its MFT entries.
	for _, c := range cs[:3] {
		l := smp.MCMemberRecord{MGID: ipoibBroadcast, PortGID: c.gid(), JoinState: smp.JoinFullMember}
		if resp, _ := c.do(t, s, smp.MethodDelete, joinComps, &l); resp.Status != 0 || resp.Method != smp.MethodDeleteResp {
			t.Fatalf("leave: status %#x method %#x", resp.Status, resp.Method)
		}
	}
	s.sm.MulticastWait()
	if store.Len() != 0 {
		t.Fatalf("%d groups left after every member left", store.Len())
	}
	if got, _, err := s.fab.ProbeMulticast(cs[0].at.GUID, cs[0].at.Port, smp.MulticastLIDBase); err != nil || len(got) != 0 {
		t.Fatalf("deleted group still delivers: %v %v", got, err)
	}
}

// 10,000 groups created through the SA all get MLIDs, trees and MFT
// entries; one more, past the MLIDs the store may hand out, is refused
// with ERR_NO_RESOURCES (0x0100) and changes nothing.
func TestMCMemberRecordManyGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 10,000 groups (make test runs it)")
	}
	const n = 10000
	s := startSubnet(t, 0)
	store := mcast.NewStore(smp.MulticastLIDBase + n - 1)
	s.sm.EnableMulticast(bfsMcast{base{"bfs"}}, store)
	cs := mcClients(t, s, 2)
	create := func(i int) uint16 {
		r := smp.MCMemberRecord{MGID: [16]byte{0xff, 0x12, 0xa0, 0x1c, 0xff, 0xff, 12: byte(i >> 24), 13: byte(i >> 16), 14: byte(i >> 8), 15: byte(i)},
			PortGID: cs[i%2].gid(), QKey: 1, PKey: 0xFFFF, JoinState: smp.JoinFullMember}
		resp, _ := cs[i%2].do(t, s, smp.MethodSet, createComps, &r)
		return resp.Status
	}
	for i := range n {
		if st := create(i); st != 0 {
			t.Fatalf("group %d: status %#x", i, st)
		}
	}
	if st := create(n); st != smp.SAStatusNoResources {
		t.Fatalf("group past the last MLID: status %#x, want ERR_NO_RESOURCES", st)
	}
	s.sm.MulticastWait()
	if store.Len() != n {
		t.Fatalf("%d groups, want %d", store.Len(), n)
	}
	for _, mlid := range []uint16{smp.MulticastLIDBase, smp.MulticastLIDBase + n/2, smp.MulticastLIDBase + n - 1} {
		g, _ := store.ByMLID(mlid)
		var owner mcClient
		for _, c := range cs {
			if _, ok := g.Members[c.guid]; ok {
				owner = c
			}
		}
		if err := s.fab.CheckMulticastGroup(mlid, []sim.Delivery{owner.at}, []sim.Delivery{owner.at}); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.sm.MulticastStats(); st.LastError != "" || st.Rejected != 0 {
		t.Fatalf("multicast stats %+v", st)
	}
}

// pathTo is the SA's PathRecord from client a to client b.
func pathTo(t *testing.T, s *subnet, a, b mcClient) smp.PathRecord {
	t.Helper()
	pr := smp.PathRecord{SGID: a.gid(), DGID: b.gid()}
	data := make([]byte, smp.PathRecordLen)
	if err := pr.MarshalTo(data); err != nil {
		t.Fatal(err)
	}
	s.client = a.t
	resp := s.query(t, smp.MethodGetTable, smp.SAAttrPathRecord, smp.PRCompDGID|smp.PRCompSGID, data)
	var got smp.PathRecord
	if err := got.Unmarshal(resp.Data[:]); err != nil || resp.Status != 0 || records(resp) == 0 {
		t.Fatalf("PathRecord: status %#x, %d records, %v", resp.Status, records(resp), err)
	}
	return got
}
