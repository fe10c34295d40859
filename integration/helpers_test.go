package integration

// Helpers more than one end-to-end test file uses.

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/app"
	"github.com/ibsm/ibsm/host/sa"
	"github.com/ibsm/ibsm/transport"
	"github.com/ibsm/ibsm/transport/smp"
)

// saPaths asks the SA at smLID, from endpoint client's own port (a second
// agent on the embedded fabric), for every PathRecord from slid to the port
// whose GUID is dst (its GID with the SA's default prefix).
func saPaths(t *testing.T, a *app.App, client int32, smLID, slid uint16, dst uint64) []smp.PathRecord {
	t.Helper()
	topo := a.SM.Applied().Topo
	ref := topo.Endpoints()[client]
	conn, err := a.Sim.Attach(topo.Nodes[ref.Node].GUID, ref.Port)
	if err != nil {
		t.Fatal(err)
	}
	ct := transport.New(conn, transport.Options{Timeout: 500 * time.Millisecond, Retries: transport.NoRetries})
	defer ct.Close()
	var req smp.PathRecord
	req.SLID = slid
	binary.BigEndian.PutUint64(req.DGID[:8], sa.DefaultGIDPrefix) // SA's prefix unless the SM port reports another
	binary.BigEndian.PutUint64(req.DGID[8:], dst)
	m := smp.NewSAMAD(smp.MethodGetTable, smp.SAAttrPathRecord)
	m.ComponentMask = smp.PRCompSLID | smp.PRCompDGID
	if err := req.MarshalTo(m.Data[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, smp.MADLen)
	if err := m.EncodeTo(b); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := ct.Do(ctx, transport.Packet{DLID: smLID, QP: 1, MAD: b})
	if err != nil {
		t.Fatalf("SA PathRecord GetTable: %v", err)
	}
	var resp smp.SAMAD
	if err := resp.Decode(p.MAD); err != nil {
		t.Fatal(err)
	}
	if resp.Status != 0 || resp.AttributeOffset == 0 {
		t.Fatalf("SA status %#x, attribute offset %d", resp.Status, resp.AttributeOffset)
	}
	stride := int(resp.AttributeOffset) * 8
	n := int(resp.PayloadLength-20) / stride
	out := make([]smp.PathRecord, n)
	for i := range out {
		if err := out[i].Unmarshal(resp.Data[i*stride:]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
