package sa

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// reportTransport answers the agent's Reports: with ReportResp after
// failFirst unanswered tries.
type reportTransport struct {
	fakeTransport
	failFirst int

	rmu     sync.Mutex
	reports []transport.Packet
	done    chan struct{}
}

func (r *reportTransport) Do(ctx context.Context, p transport.Packet) (transport.Packet, error) {
	r.rmu.Lock()
	r.reports = append(r.reports, p)
	n := len(r.reports)
	r.rmu.Unlock()
	if n <= r.failFirst {
		<-ctx.Done()
		return transport.Packet{}, ctx.Err()
	}
	resp := append([]byte(nil), p.MAD...)
	resp[3] = smp.MethodReportResp
	defer close(r.done)
	return transport.Packet{MAD: resp}, nil
}

func informBytes(t *testing.T, ii smp.InformInfo) []byte {
	b := make([]byte, smp.InformInfoLen)
	if err := ii.MarshalTo(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInformInfo(t *testing.T) {
	// Waits on timeouts: overlaps the package's other waiting tests.
	t.Parallel()
	rt := &reportTransport{done: make(chan struct{})}
	a := New(tinySubnet(t), rt, Options{RMPP: true}, nil)
	ft := &rt.fakeTransport
	set := func(slid uint16, ii smp.InformInfo) uint16 {
		st, _ := askFrom(t, a, ft, slid, saReq(smp.MethodSet, smp.SAAttrInformInfo, 0, 0, 0, informBytes(t, ii)))
		return st
	}
	records := func() int {
		a.inform.mu.Lock()
		defer a.inform.mu.Unlock()
		return len(a.inform.subs)
	}
	gin := smp.InformInfo{LIDRangeBegin: lidRangeAll, IsGeneric: true, Type: anyType, TrapNumber: TrapGIDInService, ProducerType: anyProducerType}
	if st, _ := askFrom(t, a, ft, 4, saReq(smp.MethodGet, smp.SAAttrInformInfo, 0, 0, 0, informBytes(t, gin))); st != smp.StatusUnsupportedMethodAttr {
		t.Fatalf("InformInfo Get: status %#04x, want 0x000C", st)
	}
	if st := set(4, gin); st != smp.SAStatusReqInvalid {
		t.Fatalf("unsubscribe with nothing subscribed: status %#04x, want ERR_REQ_INVALID", st)
	}
	gin.Subscribe, gin.QPN = true, 1
	if st := set(4, gin); st != 0 || records() != 1 {
		t.Fatalf("subscribe: status %#04x, %d subscriptions", st, records())
	}
	gin.QPN = 7
	if st := set(4, gin); st != 0 || records() != 1 {
		t.Fatalf("subscribe again (new QPN): status %#04x, %d subscriptions; want 0, 1", st, records())
	}
	bad := gin
	bad.GID[0] = 0x12
	if st := set(4, bad); st != smp.SAStatusInvalidGID {
		t.Fatalf("subscription to a foreign GID: status %#04x", st)
	}

	// InformInfoRecord lists it, named by B's GID, enum 0.
	if !a.Handle(context.Background(), transport.Packet{SLID: 2, QP: 1, MAD: saReq(smp.MethodGetTable, smp.SAAttrInformInfoRecord, 0, 0, 0, nil)}) {
		t.Fatal("not handled")
	}
	p := ft.take(t)
	var rec smp.InformInfoRecord
	if err := rec.Unmarshal(p.MAD[smp.SADataOffset:]); err != nil || rec.SubscriberGID != x(a).portGID(0x301) || rec.Info.QPN != 7 || rec.Info.TrapNumber != 64 {
		t.Fatalf("InformInfoRecord %+v %v", rec, err)
	}

	// A port enters service: B gets trap 64 with its GID on QP 7, after
	// one unanswered try.
	rt.failFirst = 1
	a.PortsInService([]uint64{0x201}, nil)
	select {
	case <-rt.done:
	case <-time.After(10 * time.Second):
		t.Fatal("no acknowledged report")
	}
	rt.rmu.Lock()
	defer rt.rmu.Unlock()
	if len(rt.reports) != 2 {
		t.Fatalf("%d reports sent, want 2 (one retry)", len(rt.reports))
	}
	r := rt.reports[1]
	var m smp.SAMAD
	var n smp.Notice
	if err := m.Decode(r.MAD); err != nil || m.Method != smp.MethodReport || m.AttrID != smp.SAAttrNotice {
		t.Fatalf("report MAD %+v %v", m.Header, err)
	}
	_ = n.Unmarshal(m.Data[:smp.NoticeLen])
	var g [16]byte
	copy(g[:], n.DataDetails[6:22])
	if r.DLID != 4 || r.QP != 7 || !n.IsGeneric || n.TrapNumber != 64 || g != x(a).portGID(0x201) || n.IssuerLID != 2 {
		t.Fatalf("report to DLID %d QP %d: notice %+v", r.DLID, r.QP, n)
	}
}

func x(a *Agent) *index { return a.current() }

func TestSubscriptionWants(t *testing.T) {
	gidA := [16]byte{0: 0xFE, 0x80, 15: 0xA}
	gidB := [16]byte{0: 0xFE, 0x80, 15: 0xB}
	n64 := smp.Notice{IsGeneric: true, Type: smp.NoticeInformational, ProducerType: smp.ProducerClassManager, TrapNumber: 64}
	all := smp.InformInfo{LIDRangeBegin: lidRangeAll, IsGeneric: true, Type: anyType, TrapNumber: anyTrapNumber, ProducerType: anyProducerType}
	with := func(f func(*smp.InformInfo)) smp.InformInfo { ii := all; f(&ii); return ii }
	for _, c := range []struct {
		name string
		ii   smp.InformInfo
		gid  [16]byte
		lid  uint16
		want bool
	}{
		{"everything", all, gidA, 7, true},
		{"that trap", with(func(i *smp.InformInfo) { i.TrapNumber = 64 }), gidA, 7, true},
		{"another trap", with(func(i *smp.InformInfo) { i.TrapNumber = 65 }), gidA, 7, false},
		{"vendor notices only", with(func(i *smp.InformInfo) { i.IsGeneric = false }), gidA, 7, false},
		{"another type", with(func(i *smp.InformInfo) { i.Type = smp.NoticeUrgent }), gidA, 7, false},
		{"another producer", with(func(i *smp.InformInfo) { i.ProducerType = smp.ProducerSwitch }), gidA, 7, false},
		{"this GID", with(func(i *smp.InformInfo) { i.GID = gidA }), gidA, 7, true},
		{"another GID", with(func(i *smp.InformInfo) { i.GID = gidB }), gidA, 7, false},
		{"one LID", with(func(i *smp.InformInfo) { i.LIDRangeBegin = 7 }), gidA, 7, true},
		{"one other LID", with(func(i *smp.InformInfo) { i.LIDRangeBegin = 8 }), gidA, 7, false},
		{"LID range", with(func(i *smp.InformInfo) { i.LIDRangeBegin, i.LIDRangeEnd = 5, 9 }), gidA, 9, true},
		{"below the range", with(func(i *smp.InformInfo) { i.LIDRangeBegin, i.LIDRangeEnd = 5, 9 }), gidA, 4, false},
	} {
		sub := subscription{info: c.ii}
		if got := sub.wants(&n64, c.gid, c.lid); got != c.want {
			t.Errorf("%s: wants %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReportDropped: a subscriber that never acknowledges gets
// reportAttempts copies, then the report is dropped and logged; multicast
// group notices (66/67) reach their subscribers.
func TestReportDropped(t *testing.T) {
	// Waits on timeouts: overlaps the package's other waiting tests.
	t.Parallel()
	rt := &reportTransport{done: make(chan struct{}), failFirst: 1 << 30}
	var logs syncBuffer
	a := New(tinySubnet(t), rt, Options{RMPP: true}, hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn}))
	mc := smp.InformInfo{LIDRangeBegin: lidRangeAll, IsGeneric: true, Subscribe: true, Type: anyType, TrapNumber: TrapMcastCreated, ProducerType: anyProducerType, QPN: 1}
	if st, _ := askFrom(t, a, &rt.fakeTransport, 4, saReq(smp.MethodSet, smp.SAAttrInformInfo, 0, 0, 0, informBytes(t, mc))); st != 0 {
		t.Fatalf("subscribe to trap 66: status %#04x", st)
	}
	a.ReportMulticastGroup(false, [16]byte{0: 0xFF}) // 67: not subscribed
	mgid := [16]byte{0: 0xFF, 1: 0x12, 2: 0x40, 3: 0x1B}
	a.ReportMulticastGroup(true, mgid)
	for end := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "report dropped"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no drop logged; log:\n%s", logs.String())
		}
	}
	rt.rmu.Lock()
	defer rt.rmu.Unlock()
	if len(rt.reports) != reportAttempts {
		t.Fatalf("%d copies sent, want %d (trap 67 has no subscriber)", len(rt.reports), reportAttempts)
	}
	var m smp.SAMAD
	var n smp.Notice
	_ = m.Decode(rt.reports[0].MAD)
	_ = n.Unmarshal(m.Data[:smp.NoticeLen])
	var g [16]byte
	copy(g[:], n.DataDetails[6:22])
	if n.TrapNumber != TrapMcastCreated || g != mgid {
		t.Fatalf("report: trap %d about %x, want 66 about %x", n.TrapNumber, g, mgid)
	}
}
