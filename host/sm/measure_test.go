package sm_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ibsm/ibsm/host/sm"
	"github.com/ibsm/ibsm/host/topogen"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/ibsm/ibsm/transport/netfile"
)

// spineUpDown routes Up*/Down* from the first switch without CAs (a spine
// of a fat tree), like updn with its automatic root selection.
type spineUpDown struct{ base }

func (e *spineUpDown) Route(_ context.Context, req sdk.RouteRequest) (*plan.Routes, error) {
	t := req.Topo
	root := int32(0)
	for i, node := range t.Switches() {
		hasCA := false
		for _, p := range t.Nodes[node].Ports[1:] {
			if p.Peer.Connected() && t.Nodes[p.Peer.Node].Type != topology.Switch {
				hasCA = true
				break
			}
		}
		if !hasCA {
			root = int32(i)
			break
		}
	}
	return analysistest.UpDown(t, root), nil
}

// TestMeasureTrapReroute measures a leaf-uplink LinkDown answered by the
// trap path (time from the fault to re-programmed, SMPs, LFT blocks) and
// compares the Gets of an incremental and a full discovery. Run it with
// IBSM_MEASURE=1 (not part of make test).
func TestMeasureTrapReroute(t *testing.T) {
	if os.Getenv("IBSM_MEASURE") == "" {
		t.Skip("set IBSM_MEASURE=1 to measure")
	}
	tests := []struct {
		name string
		file func(t *testing.T) *netfile.File
	}{
		{"ft2-648", func(t *testing.T) *netfile.File {
			f, err := netfile.ParseFile("../../conf/examples/ft2-648.net")
			must(t, err)
			return f
		}},
		{"ft3 radix 16", func(t *testing.T) *netfile.File {
			f, err := topogen.FatTree{Radix: 16, Levels: 3}.Generate()
			must(t, err)
			return f
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.file(t)
			fab, tr := attach(t, f)
			s := sm.New(tr, runner([]sdk.RoutingEngine{&spineUpDown{base{"updn"}}}, 1),
				sm.Options{Parallel: 64, SweepInterval: time.Hour}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			reps := make(chan *sm.Report, 4)
			done := make(chan error, 1)
			go func() {
				done <- s.Run(ctx, nil, func(r *sm.Report, err error) {
					must(t, err)
					reps <- r
				})
			}()
			defer func() { cancel(); <-done }()
			first := <-reps
			full, err := s.HeavySweep(context.Background())
			must(t, err)
			// A leaf uplink: a switch-switch link from a switch with CAs.
			var l netfile.Link
			for _, k := range f.Links() {
				if k.A.Type == topology.Switch && k.B.Type == topology.Switch {
					l = k
					break
				}
			}
			st0 := tr.Stats()
			t0 := time.Now()
			must(t, fab.LinkDown(l.A.GUID, uint8(l.PA)))
			r := <-reps
			took := time.Since(t0)
			st1 := tr.Stats()
			checkProgrammed(t, fab, s)
			t.Logf("%s: %d switches %d CAs; first heavy sweep %v (%d Gets discovery, %d Sets distribution); re-discovery of the unchanged fabric: %d Gets",
				tc.name, first.Switches, first.CAs, first.Total, first.Discovery.Gets, first.Distribution.Sets, full.Discovery.Gets)
			t.Logf("%s: LinkDown %s[%d]-%s[%d] → re-programmed in %v (sweep %v; coalesce window 50ms): traps %d, incremental %v fallback %q, update %+v",
				tc.name, l.A.Name, l.PA, l.B.Name, l.PB, took, r.Total, r.Traps, r.Incremental, r.Fallback, r.Update)
			t.Logf("%s: SMPs whole episode %d Gets %d Sets; discovery %d Gets %d Sets; distribution %d Gets %d Sets; LFT blocks %d of %d; plugin calls %d; timeouts %d",
				tc.name, st1.Gets-st0.Gets, st1.Sets-st0.Sets, r.Discovery.Gets, r.Discovery.Sets, r.Distribution.Gets, r.Distribution.Sets,
				r.Program.LFTBlocksSent, r.Program.LFTBlocksTotal, r.PluginCalls, r.Timeouts)
		})
	}
}
