package sa

import (
	"context"
	"sync"
	"testing"
	"time"

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
