//go:build unix

package sdk_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/ibsm/ibsm/sdk/topology"
)

// serveReal serves p in-process the way a plugin binary does (plugin.Serve
// with the SDK's gRPC server options, on a unix socket in a fresh directory)
// and attaches a host-side client configured exactly like the host's
// (HostPluginSets, GRPCDialOptions). Unlike plugin.TestPluginGRPCConn it
// keeps the production message limits and flow-control windows, so the
// numbers are what the host sees. versions overrides the served protocol
// sets (nil: the current protocol).
func serveReal(tb testing.TB, p sdk.Plugin, versions map[int]plugin.PluginSet) *plugin.Client {
	tb.Helper()
	if versions == nil {
		set, err := sdk.ServerPluginSet(p, nil)
		if err != nil {
			tb.Fatal(err)
		}
		versions = map[int]plugin.PluginSet{sdk.ProtocolVersion: set}
	}
	dir, err := os.MkdirTemp("", "sdkbench")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Setenv(plugin.EnvUnixSocketDir, dir)
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  sdk.Handshake(),
		VersionedPlugins: versions,
		GRPCServer:       sdk.NewGRPCServer,
		Logger:           hclog.NewNullLogger(),
		Test:             &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed},
	})
	var cfg *plugin.ReattachConfig
	select {
	case cfg = <-reattach:
	case <-time.After(10 * time.Second):
		cancel()
		tb.Fatal("in-process plugin did not start serving within 10s")
	}
	// Reattaching skips go-plugin's version negotiation, so pick the host's
	// set for the served version here as the handshake would.
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		Plugins:          sdk.HostPluginSets()[cfg.ProtocolVersion],
		Reattach:         cfg,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
		GRPCDialOptions:  sdk.GRPCDialOptions(),
	})
	tb.Cleanup(func() {
		c.Kill()
		cancel()
		<-closed
		os.RemoveAll(dir)
	})
	return c
}

// connectReal is serveReal for the current protocol, dispensing kind.
func connectReal(tb testing.TB, p sdk.Plugin, kind sdk.Kind) *sdk.RemoteClient {
	tb.Helper()
	rpc, err := serveReal(tb, p, nil).Client()
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := rpc.Dispense(string(kind))
	if err != nil {
		tb.Fatal(err)
	}
	return raw.(*sdk.RemoteClient)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPlanes builds one plane per destination, each its own allocation as
// an engine produces them, with valid out-ports 1..maxPort.
func benchPlanes(neps, nsw, planes int, maxPort int) []plan.DestPlanes {
	out := make([]plan.DestPlanes, neps)
	for e := range out {
		out[e].Planes = make([]plan.Plane, planes)
		for k := range out[e].Planes {
			pl := make(plan.Plane, nsw)
			for s := range pl {
				pl[s] = uint8(1 + (e+s+k)%maxPort)
			}
			out[e].Planes[k] = pl
		}
	}
	return out
}

// BenchmarkPlanesOverGRPC measures the plugin protocol alone on the 3-level
// fat trees of 36- and 48-port switches (the engine does no work):
//
//   - route: one Route call; topology up, one plane per destination back
//     (21.5 MB and 87.9 MB), validated on the host.
//   - lids: one AssignLIDs call on ft3-36 with LMC 1 planes in both
//     directions (routes up, LIDPlan.Planes back: 43 MB each way).
//
// Besides ns/op, B/op and allocs/op it reports cpu-ns/op (both processes'
// work, as they share this one), so run it with -count and take medians.
func BenchmarkPlanesOverGRPC(b *testing.B) {
	for _, k := range []int{36, 48} {
		topo, err := sdktest.FatTree3(k)
		if err != nil {
			b.Fatal(err)
		}
		nsw, neps := len(topo.Switches()), len(topo.Endpoints())
		routes := &plan.Routes{Planes: benchPlanes(neps, nsw, 1, k)}
		f := &fakePlugin{kind: sdk.KindRouting, routes: func(sdk.RouteRequest) (*plan.Routes, error) { return routes, nil }}
		c := connectReal(b, f, sdk.KindRouting)
		b.Run(fmt.Sprintf("route/ft3-%d", k), func(b *testing.B) {
			benchCall(b, int64(nsw*neps), func() error {
				got, err := c.Route(context.Background(), sdk.RouteRequest{Topo: topo})
				if err == nil && len(got.Planes) != neps {
					err = fmt.Errorf("got %d destinations, want %d", len(got.Planes), neps)
				}
				return err
			})
		})
		// The same call naming the last answer: the topology goes up and
		// the plugin hashes its planes to find none changed.
		b.Run(fmt.Sprintf("route-changes/ft3-%d", k), func(b *testing.B) {
			last, err := c.Route(context.Background(), sdk.RouteRequest{Topo: topo})
			if err != nil {
				b.Fatal(err)
			}
			benchCall(b, int64(nsw*neps), func() error {
				got, err := c.Route(context.Background(), sdk.RouteRequest{Topo: topo, Since: last.Token})
				if err == nil && (got.Base != last.Token || len(got.Changed) != 0) {
					err = fmt.Errorf("got changes to %#x in %d destinations, want none to %#x", got.Base, len(got.Changed), last.Token)
				}
				last = got
				return err
			})
		})
		if k != 36 {
			continue
		}
		two := &plan.Routes{Planes: benchPlanes(neps, nsw, 2, k)}
		lids := sequentialLIDs(neps, 1)
		lids.Planes = benchPlanes(neps, nsw, 2, k)
		f.lids = func(sdk.LIDRequest) (*plan.LIDPlan, error) { return lids, nil }
		b.Run(fmt.Sprintf("lids/ft3-%d", k), func(b *testing.B) {
			benchCall(b, int64(2*2*nsw*neps), func() error {
				got, err := c.AssignLIDs(context.Background(), sdk.LIDRequest{Topo: topo, Routes: two, LMC: 1})
				if err == nil && len(got.Planes) != neps {
					err = fmt.Errorf("got %d destinations' planes, want %d", len(got.Planes), neps)
				}
				return err
			})
		})
	}
}

func benchCall(b *testing.B, bytes int64, call func() error) {
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkTopologyUpload is the host-to-plugin topology alone (a Route
// whose answer is the smallest valid one: paths form, no paths) on the
// largest full fat tree in the LID space (ft3-56, 47,824 nodes), a switch
// cable going down and up between calls: "whole" to a plugin that takes
// no patches (the host did not ask its features), "patch" to one that
// does (two nodes a call).
func BenchmarkTopologyUpload(b *testing.B) {
	base, err := sdktest.FatTree3(56)
	if err != nil {
		b.Fatal(err)
	}
	s := base.Switches()[0]
	peer := base.Nodes[s].Ports[1].Peer
	var nodes []topology.Node
	for _, r := range []topology.PortRef{{Node: s, Port: 1}, peer} {
		n := base.Nodes[r.Node]
		n.Ports = slices.Clone(n.Ports)
		n.Ports[r.Port].Peer, n.Ports[r.Port].State = topology.PortRef{Node: topology.NoNode}, topology.StateDown
		nodes = append(nodes, n)
	}
	down, err := base.Patch(nodes)
	if err != nil {
		b.Fatal(err)
	}
	topos := []*topology.Topology{base, down}
	var seen *topology.Topology
	f := &fakePlugin{kind: sdk.KindRouting, routes: func(r sdk.RouteRequest) (*plan.Routes, error) {
		seen = r.Topo
		return &plan.Routes{Paths: []plan.Path{}}, nil
	}}
	for _, patch := range []bool{false, true} {
		c := connectReal(b, f, sdk.KindRouting)
		name := "whole"
		if patch {
			name = "patch"
			if _, err := c.GetInfo(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name+"/ft3-56", func(b *testing.B) {
			i := 0
			benchCall(b, 0, func() error {
				topo := topos[i%2]
				i++
				_, err := c.Route(context.Background(), sdk.RouteRequest{Topo: topo})
				if err == nil && seen.Hash() != topo.Hash() {
					err = fmt.Errorf("plugin got another topology")
				}
				return err
			})
		})
	}
}
