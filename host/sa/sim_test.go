package sa_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/ibsm/ibsm/host/pipeline"
	"github.com/ibsm/ibsm/host/sa"
	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/netfile"
	"github.com/ibsm/ibsm/transport/sim"
	"github.com/ibsm/ibsm/transport/smp"
	"github.com/zclconf/go-cty/cty"
)

// ---- in-process plugins: Up*/Down*, LIDs aligned to 2^LMC, SL = DLID mod 4 ----

type base struct{ name string }

func (b base) Info() sdk.Info            { return sdk.Info{Name: b.name, Version: "test"} }
func (b base) Schema() schema.Block      { return schema.Block{} }
func (b base) Configure(cty.Value) error { return nil }

type updn struct{ base }

func (updn) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	return analysistest.UpDown(req.Topo, 0), nil
}

type alignedLIDs struct{ base }

func (alignedLIDs) AssignLIDs(_ context.Context, req sdk.LIDRequest) (*plan.LIDPlan, error) {
	eps := req.Topo.Endpoints()
	l := &plan.LIDPlan{Ports: make([]plan.PortLID, len(eps)), Rule: plan.DLIDSpread}
	step := uint16(1) << req.LMC
	for i := range eps {
		l.Ports[i] = plan.PortLID{Base: step * uint16(i+1), LMC: req.LMC}
	}
	return l, nil
}

type slByDLID struct{ base }

func (slByDLID) AssignVLs(_ context.Context, req sdk.VLRequest) (*plan.VLPlan, error) {
	v := &plan.VLPlan{SLByDLID: make([]uint8, int(req.Realized.TopLID)+1), VLs: 1}
	for l := range v.SLByDLID {
		v.SLByDLID[l] = uint8(l % 4) // every SL maps to VL0 (Default table): acyclic under Up*/Down*
	}
	return v, nil
}

// subnet is a 2-level fat tree with ibsm (and its SA agent) on one CA and a
// client agent attached to another CA behind a different leaf.
type subnet struct {
	fab    *sim.Fabric
	sm     *sm.SM
	client transport.Transport
	// near is a CA on the SM's leaf; nearPath the DR path from near to the
	// SM's CA: [near's port, leaf port toward the SM].
	near     transport.Transport
	nearPath []uint8
	smGUID   uint64
}

func startSubnet(t *testing.T, lmc uint8) *subnet {
	t.Helper()
	f, err := topogen.FatTree{Radix: 4, Levels: 2}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	fab, err := sim.New(f, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	smNode, smPort := fab.DefaultSMPort()
	conn, err := fab.Attach(smNode, smPort)
	if err != nil {
		t.Fatal(err)
	}
	tr := transport.New(conn, transport.Options{Timeout: 100 * time.Millisecond, Window: 32})
	t.Cleanup(func() { tr.Close() })
	runner := &pipeline.Runner{
		Engines: []pipeline.Engine{{Identity: pipeline.Identity{Name: "updn"}, Impl: updn{base{"updn"}}}},
		LID:     pipeline.LIDStage{Identity: pipeline.Identity{Name: "aligned"}, Impl: alignedLIDs{base{"aligned"}}},
		VL:      pipeline.VLStage{Identity: pipeline.Identity{Name: "sl"}, Impl: slByDLID{base{"sl"}}},
		Cache:   pipeline.NewCache(""),
		Verify: func(t *topology.Topology, r *plan.Routes, l *plan.LIDPlan, v *plan.VLPlan, rz *plan.Realized) error {
			_, err := check.Check(check.Plan{Topo: t, Routes: r, LIDs: l, VLs: v, Realized: rz}, check.Options{})
			return err
		},
	}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})
	s := sm.New(tr, runner, sm.Options{LMC: lmc, SweepInterval: time.Hour, Election: sm.ElectionOptions{Priority: 7}}, log)
	s.Agent = sa.New(s, tr, sa.Options{Priority: 7}, log.Named("sa"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	up := make(chan error, 1)
	go func() {
		defer close(done)
		s.Run(ctx, nil, func(_ *sm.Report, err error) {
			select {
			case up <- err:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	if err := <-up; err != nil {
		t.Fatalf("first sweep: %v", err)
	}

	sn := &subnet{fab: fab, sm: s, smGUID: smNode}
	leafOf := map[uint64]netfile.Link{}
	for _, l := range f.Links() {
		if l.A.Type == topology.CA {
			leafOf[l.A.GUID] = l
		} else if l.B.Type == topology.CA {
			leafOf[l.B.GUID] = netfile.Link{A: l.B, PA: l.PB, B: l.A, PB: l.PA}
		}
	}
	smLink := leafOf[smNode]
	attach := func(guid uint64) transport.Transport {
		c, err := fab.Attach(guid, 1)
		if err != nil {
			t.Fatal(err)
		}
		ct := transport.New(c, transport.Options{Timeout: 200 * time.Millisecond, Retries: transport.NoRetries})
		t.Cleanup(func() { ct.Close() })
		return ct
	}
	for guid, l := range leafOf {
		switch {
		case guid == smNode:
		case l.B == smLink.B && sn.near == nil:
			sn.near, sn.nearPath = attach(guid), []uint8{uint8(l.PA), uint8(smLink.PB)}
		case l.B != smLink.B && sn.client == nil:
			sn.client = attach(guid)
		}
	}
	if sn.near == nil || sn.client == nil {
		t.Fatal("fat tree has no second CA on the SM's leaf or on another leaf")
	}
	return sn
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

func (s *subnet) smLID(t *testing.T) uint16 {
	a := s.sm.Applied()
	e := a.Topo.EndpointIndex(a.Topo.SM)
	return a.Result.LIDs.Ports[e].Base
}

// query sends an SA request from the client and returns the decoded answer.
func (s *subnet) query(t *testing.T, method uint8, attr uint16, cm uint64, data []byte) *smp.SAMAD {
	t.Helper()
	r := smp.NewSAMAD(method, attr)
	r.ComponentMask = cm
	copy(r.Data[:], data)
	b := make([]byte, smp.MADLen)
	if err := r.EncodeTo(b); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := s.client.Do(ctx, transport.Packet{DLID: s.smLID(t), QP: 1, MAD: b})
	if err != nil {
		t.Fatalf("SA query attr %#04x: %v", attr, err)
	}
	var resp smp.SAMAD
	if err := resp.Decode(p.MAD); err != nil {
		t.Fatal(err)
	}
	return &resp
}

func records(m *smp.SAMAD) int {
	if m.AttributeOffset == 0 {
		return 0
	}
	return int(m.PayloadLength-20) / (int(m.AttributeOffset) * 8)
}

func TestThroughFabric(t *testing.T) {
	s := startSubnet(t, 1)
	a := s.sm.Applied()
	topo, lids := a.Topo, a.Result.LIDs
	eps := topo.Endpoints()
	smLID := s.smLID(t)

	t.Run("NodeRecord GetTable", func(t *testing.T) {
		m := s.query(t, smp.MethodGetTable, smp.SAAttrNodeRecord, 0, nil)
		if m.Status != 0 || m.Method != smp.MethodGetTableResp || records(m) != 1 || m.RMPPFlags != 7 {
			t.Fatalf("status %#x method %#x records %d flags %d", m.Status, m.Method, records(m), m.RMPPFlags)
		}
	})
	t.Run("NodeRecord Get by LID", func(t *testing.T) {
		for i, ep := range eps {
			var req [108]byte
			binary.BigEndian.PutUint16(req[:], lids.Ports[i].Base+1) // the second LID of the range
			m := s.query(t, smp.MethodGet, smp.SAAttrNodeRecord, 1, req[:])
			var nr smp.NodeRecord
			if err := nr.Unmarshal(m.Data[:]); err != nil || m.Status != 0 {
				t.Fatalf("status %#x %v", m.Status, err)
			}
			if nr.LID != lids.Ports[i].Base || nr.NodeInfo.PortGUID != topo.Port(ep).GUID || nr.NodeInfo.NodeGUID != topo.Nodes[ep.Node].GUID ||
				nr.NodeDescription.Text != topo.Nodes[ep.Node].Desc {
				t.Fatalf("endpoint %d: %+v", i, nr)
			}
		}
	})
	t.Run("PathRecord Get per pair", func(t *testing.T) {
		// Every CA pair: the DLID the plan picks, the SL the VL plan
		// gives it, MTU/rate as the sim's ports report.
		for si, src := range eps {
			if topo.Nodes[src.Node].Type != topology.CA {
				continue
			}
			for di, dst := range eps {
				if topo.Nodes[dst.Node].Type != topology.CA {
					continue
				}
				var req [64]byte
				binary.BigEndian.PutUint64(req[8:], sa.DefaultGIDPrefix)
				binary.BigEndian.PutUint64(req[16:], topo.Port(dst).GUID)
				binary.BigEndian.PutUint64(req[24:], sa.DefaultGIDPrefix)
				binary.BigEndian.PutUint64(req[32:], topo.Port(src).GUID)
				m := s.query(t, smp.MethodGet, smp.SAAttrPathRecord, smp.PRCompSGID|smp.PRCompDGID, req[:])
				var pr smp.PathRecord
				if err := pr.Unmarshal(m.Data[:]); err != nil || m.Status != 0 {
					t.Fatalf("%d→%d: status %#x %v", si, di, m.Status, err)
				}
				want := lids.DLID(int32(si), int32(di))
				if pr.DLID != want || pr.SLID != lids.Ports[si].Base || pr.SL != uint8(want%4) || !pr.Reversible ||
					pr.PKey != 0xFFFF || pr.MTU == 0 || pr.Rate == 0 {
					t.Fatalf("%d→%d: %+v, want DLID %d SL %d", si, di, pr, want, want%4)
				}
			}
		}
	})
	t.Run("PathRecord GetTable LMC pairs", func(t *testing.T) {
		// From the client's own port to the SM's port: 2 SLIDs x 2 DLIDs = 4
		// paths, 2 fit in the 160 bytes one MAD carries without RMPP.
		var req [64]byte
		binary.BigEndian.PutUint16(req[40:], smLID)
		m := s.query(t, smp.MethodGetTable, smp.SAAttrPathRecord, smp.PRCompDLID, req[:])
		if m.Status != 0 || records(m) != 2 {
			t.Fatalf("status %#x, %d records; want 2 (of 4) in one MAD", m.Status, records(m))
		}
	})
	t.Run("PortInfoRecord of the SM port", func(t *testing.T) {
		var req [68]byte
		binary.BigEndian.PutUint16(req[:], smLID)
		m := s.query(t, smp.MethodGet, smp.SAAttrPortInfoRecord, 1, req[:])
		var r smp.PortInfoRecord
		if err := r.Unmarshal(m.Data[:]); err != nil || m.Status != 0 || r.PortInfo.LID != smLID || r.PortInfo.LMC != 1 ||
			r.PortInfo.CapabilityMask&smp.CapIsSM == 0 || r.PortInfo.PortState != smp.PortStateActive {
			t.Fatalf("status %#x: %+v %v", m.Status, r, err)
		}
	})
	t.Run("SMInfoRecord", func(t *testing.T) {
		m := s.query(t, smp.MethodGet, smp.SAAttrSMInfoRecord, 0, nil)
		var r smp.SMInfoRecord
		if err := r.Unmarshal(m.Data[:]); err != nil || m.Status != 0 || r.LID != smLID ||
			r.SMInfo.SMState != smp.SMStateMaster || r.SMInfo.Priority != 7 || r.SMInfo.GUID != topo.Port(topo.SM).GUID {
			t.Fatalf("status %#x: %+v %v", m.Status, r, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		if m := s.query(t, smp.MethodGet, smp.SAAttrNodeRecord, 0, nil); m.Status != smp.SAStatusTooManyRecords {
			t.Fatalf("Get of every NodeRecord: status %#x", m.Status)
		}
		if m := s.query(t, smp.MethodGet, smp.SAAttrNodeRecord, 1, []byte{0xBF, 0xFF}); m.Status != smp.SAStatusNoRecords {
			t.Fatalf("Get of an unused LID: status %#x", m.Status)
		}
		if m := s.query(t, smp.MethodGet, 0x0039 /* TraceRecord */, 0, nil); m.Status != smp.StatusUnsupportedMethodAttr {
			t.Fatalf("TraceRecord (not implemented): status %#x", m.Status)
		}
	})
	t.Run("SMInfo LID-routed", func(t *testing.T) {
		req := smp.NewLIDGet(smp.AttrSMInfo, 0)
		b, _ := req.Encode()
		p, err := s.client.Do(context.Background(), transport.Packet{DLID: smLID, MAD: b})
		if err != nil {
			t.Fatal(err)
		}
		checkSMInfo(t, p.MAD, topo.Port(topo.SM).GUID)
	})
	t.Run("SMInfo directed route", func(t *testing.T) {
		req, _ := smp.NewDRGet(smp.AttrSMInfo, 0, s.nearPath)
		b, _ := req.Encode()
		p, err := s.near.Do(context.Background(), transport.Packet{DLID: smp.PermissiveLID, MAD: b})
		if err != nil {
			t.Fatal(err)
		}
		checkSMInfo(t, p.MAD, topo.Port(topo.SM).GUID)
	})
}

func checkSMInfo(t *testing.T, mad []byte, guid uint64) {
	t.Helper()
	r, err := smp.Decode(mad)
	if err != nil {
		t.Fatal(err)
	}
	var si smp.SMInfo
	if err := r.Attr(&si); err != nil || r.Status != 0 || si.GUID != guid || si.SMState != smp.SMStateMaster || si.Priority != 7 || si.ActCount == 0 {
		t.Fatalf("SMInfo answer status %#x %+v %v", r.Status, si, err)
	}
}
