// Package sdktest is the conformance kit a plugin author runs against a
// plugin: either the built binary (RunRoutingEngine and friends launch it
// through the same handshake the host uses) or an implementation in-process
// (RoutingEngine and friends serve it over a real gRPC connection). Both go
// through the wire protocol, so encoding mistakes are caught too.
//
// Every plan the plugin returns is checked by the host's own verifier
// (sdk/check, the code the host runs before it programs a plan; CheckPlan),
// after the kit's structural checks that name the plugin's mistake in its
// own terms. A plan that passes the kit passes the host's checks, and a
// plan the host would refuse fails the kit with the host's message.
package sdktest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/analysis/analysistest"
	"github.com/ibsm/ibsm/sdk/check"
	"github.com/ibsm/ibsm/sdk/plan"
	"github.com/ibsm/ibsm/sdk/testfab"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
)

// Options tune a conformance run. The zero value is a sensible default.
type Options struct {
	// Config is sent to Configure; default: the schema's defaults.
	Config cty.Value
	// LMC for routing and LID assignment (default 0).
	LMC uint8
	// Timeout bounds every call (default 30 s).
	Timeout time.Duration
	// Fabrics replaces the built-in test fabrics.
	Fabrics map[string]*topology.Topology
	// SwitchToSwitch is the host's routing.switch_to_switch policy the
	// plans are checked under (default check.SwitchRequired: every
	// switch->switch pair must arrive).
	SwitchToSwitch check.SwitchPolicy
	// SingleVL makes the kit require a routing engine's routes to be
	// deadlock-free on one VL (the channel dependency graph of the
	// realised tables acyclic), as the host requires when no VL assigner
	// follows the engine. Without it, a routing engine's routes are
	// checked for delivery and loops, and deadlock freedom is left to the
	// VL assigner.
	SingleVL bool
}

// BuiltinFabrics are the fabrics every plugin is checked on: a two-level fat
// tree, a ring and a random graph, all connected.
func BuiltinFabrics() (map[string]*topology.Topology, error) {
	out := map[string]*topology.Topology{}
	var err error
	if out["fattree2"], err = FatTree2(6, 3, 4); err != nil {
		return nil, err
	}
	if out["ring"], err = Ring(5, 2); err != nil {
		return nil, err
	}
	if out["random"], err = Random(42, 12, 8, 2); err != nil {
		return nil, err
	}
	return out, nil
}

// launch starts a plugin binary the way the host does and returns its client.
func launch(t testing.TB, path string, kind sdk.Kind) *sdk.RemoteClient {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "sdktest")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), plugin.EnvUnixSocketDir+"="+dir)
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake(),
		VersionedPlugins: sdk.HostPluginSets(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Warn, Output: os.Stderr}),
		StartTimeout:     15 * time.Second,
		GRPCDialOptions:  sdk.GRPCDialOptions(),
	})
	t.Cleanup(func() { c.Kill(); os.RemoveAll(dir) })
	proto, err := c.Client()
	if err != nil {
		t.Fatalf("starting plugin %s: %v", path, err)
	}
	raw, err := proto.Dispense(string(kind))
	if err != nil {
		t.Fatalf("dispensing %s from %s: %v", kind, path, err)
	}
	return raw.(*sdk.RemoteClient)
}

// InProcess serves impl over a real gRPC connection inside the test and
// returns the host-side client for kind. The server is stopped before the
// client is closed at cleanup: the other order races two GRPCServer.Stop
// calls inside go-plugin.
func InProcess(t testing.TB, impl sdk.Plugin, kind sdk.Kind) *sdk.RemoteClient {
	t.Helper()
	set, err := sdk.ServerPluginSet(impl, nil)
	if err != nil {
		t.Fatal(err)
	}
	client, server := plugin.TestPluginGRPCConn(t, false, set)
	t.Cleanup(func() { server.Stop(); client.Close() })
	raw, err := client.Dispense(string(kind))
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*sdk.RemoteClient)
}

// setup checks Info and Schema, configures the plugin and returns the fabrics.
func setup(t testing.TB, c *sdk.RemoteClient, kind sdk.Kind, opts *Options) (context.Context, map[string]*topology.Topology) {
	t.Helper()
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	t.Cleanup(cancel)
	info, err := c.GetInfo(ctx)
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if info.Kind != kind {
		t.Fatalf("Info().Kind = %q, want %q", info.Kind, kind)
	}
	if info.Name == "" || info.Version == "" {
		t.Errorf("Info() = %+v: name and version must be set", info)
	}
	sch, err := c.GetSchema(ctx)
	if err != nil {
		t.Fatalf("GetSchema: %v", err)
	}
	cfg := opts.Config
	if cfg == cty.NilVal {
		cfg = sch.Defaults()
	}
	if err := c.Configure(ctx, cfg); err != nil {
		t.Fatalf("Configure(%#v): %v", cfg, err)
	}
	fabrics := opts.Fabrics
	if fabrics == nil {
		if fabrics, err = BuiltinFabrics(); err != nil {
			t.Fatal(err)
		}
	}
	return ctx, fabrics
}

// RunRoutingEngine checks the routing engine binary at path.
func RunRoutingEngine(t *testing.T, path string, opts Options) {
	checkRouting(t, launch(t, path, sdk.KindRouting), opts)
}

// RoutingEngine checks a routing engine implementation in-process.
func RoutingEngine(t *testing.T, impl sdk.RoutingEngine, opts Options) {
	checkRouting(t, InProcess(t, impl, sdk.KindRouting), opts)
}

func checkRouting(t *testing.T, c *sdk.RemoteClient, opts Options) {
	ctx, fabrics := setup(t, c, sdk.KindRouting, &opts)
	info, err := c.GetInfo(ctx)
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if info.HasCapability(sdk.CapStablePlanes) {
		t.Run(sdk.CapStablePlanes, func(t *testing.T) {
			if err := stablePlanes(ctx, c, opts.LMC); err != nil {
				t.Fatal(err)
			}
		})
	}
	for name, topo := range fabrics {
		t.Run(name, func(t *testing.T) {
			r, err := c.Route(ctx, sdk.RouteRequest{Topo: topo, LMC: opts.LMC})
			if err != nil {
				t.Fatalf("Route: %v", err)
			}
			if err := CheckRoutes(topo, r); err != nil {
				t.Fatal(err)
			}
			if !r.IsPlanes() {
				return // paths are numbered by a LID assigner before the host can check them
			}
			if err := planesFit(r, opts.LMC); err != nil {
				t.Fatal(err)
			}
			l := analysistest.SequentialLIDs(topo, opts.LMC, plan.DLIDBase)
			if err := CheckPlan(check.Plan{Topo: topo, Routes: r, LIDs: l}, opts, !opts.SingleVL); err != nil {
				t.Fatalf("the host refuses the routes (with sequential LIDs): %v", err)
			}
		})
	}
}

// stablePlanes: for an engine that declares sdk.CapStablePlanes, the
// answer of changes to a fat tree with one cable cut (RouteRequest.Since
// naming the answer for the whole tree), as changed planes and as edits
// of the earlier planes (RouteRequest.Edits), applied to that answer
// gives the engine's whole answer for the cut tree: the SDK, which then
// hashes only the planes that are not the previous answer's own and
// diffs the changed ones against that answer's, missed no change.
func stablePlanes(ctx context.Context, c *sdk.RemoteClient, lmc uint8) error {
	whole, err := FatTree2(6, 3, 4)
	if err != nil {
		return err
	}
	cut, err := cutFirstSwitchCable(whole)
	if err != nil {
		return err
	}
	first, err := c.Route(ctx, sdk.RouteRequest{Topo: whole, LMC: lmc})
	if err != nil {
		return fmt.Errorf("route call: %w", err)
	}
	if !first.IsPlanes() {
		return fmt.Errorf("the plugin declares %s but answered paths", sdk.CapStablePlanes)
	}
	changes, err := c.Route(ctx, sdk.RouteRequest{Topo: cut, LMC: lmc, Since: first.Token})
	if err != nil {
		return fmt.Errorf("route call (a cable cut, changes since the first answer): %w", err)
	}
	again, err := c.Route(ctx, sdk.RouteRequest{Topo: cut, LMC: lmc})
	if err != nil {
		return fmt.Errorf("route call (a cable cut, whole): %w", err)
	}
	edits, err := c.Route(ctx, sdk.RouteRequest{Topo: cut, LMC: lmc, Since: first.Token, Edits: true})
	if err != nil {
		return fmt.Errorf("route call (a cable cut, edits since the first answer): %w", err)
	}
	for _, ans := range []struct {
		how string
		r   *plan.Routes
	}{{"changes", changes}, {"edits", edits}} {
		got, err := ApplyChanges(first.Planes, ans.r)
		if err != nil {
			return fmt.Errorf("the answer of %s after a cable cut: %w", ans.how, err)
		}
		for e := range again.Planes {
			if !slices.EqualFunc(got[e].Planes, again.Planes[e].Planes, func(a, b plan.Plane) bool { return slices.Equal(a, b) }) {
				return fmt.Errorf("the plugin declares %s but its answer of %s after a cable cut misses destination %d (it wrote to planes it had returned?): drop the capability or copy planes before changing them", sdk.CapStablePlanes, ans.how, e)
			}
		}
	}
	return nil
}

// ApplyChanges returns the whole planes a route answer stands for, given
// the planes of the earlier answer it may name (prev): for an answer of
// changes (r.Base set, the request's RouteRequest.Since) prev's planes
// with the changed destinations' replaced, whole or by applying r.Edits;
// for any other answer r.Planes. Neither prev nor r is modified (edited
// destinations get copies of prev's planes).
func ApplyChanges(prev []plan.DestPlanes, r *plan.Routes) ([]plan.DestPlanes, error) {
	if r.Base == 0 {
		return r.Planes, nil
	}
	if len(prev) != len(r.Planes) {
		return nil, fmt.Errorf("changes to %d destinations' planes, the earlier answer has %d", len(r.Planes), len(prev))
	}
	out := slices.Clone(prev)
	if r.Edits == nil {
		for _, e := range r.Changed {
			if e < 0 || int(e) >= len(out) {
				return nil, fmt.Errorf("changed destination %d out of range (%d destinations)", e, len(out))
			}
			out[e] = r.Planes[e]
		}
		return out, nil
	}
	copied := make([]bool, len(out))
	for i, ed := range r.Edits {
		if ed.Dest < 0 || int(ed.Dest) >= len(out) {
			return nil, fmt.Errorf("edit %d: destination %d out of range (%d destinations)", i, ed.Dest, len(out))
		}
		if !copied[ed.Dest] {
			was := prev[ed.Dest].Planes
			d := plan.DestPlanes{Planes: make([]plan.Plane, len(was))}
			for k, pl := range was {
				d.Planes[k] = slices.Clone(pl)
			}
			out[ed.Dest], copied[ed.Dest] = d, true
		}
		planes := out[ed.Dest].Planes
		if int(ed.Plane) >= len(planes) {
			return nil, fmt.Errorf("edit %d: destination %d plane %d, the earlier answer has %d planes", i, ed.Dest, ed.Plane, len(planes))
		}
		if ed.Switch < 0 || int(ed.Switch) >= len(planes[ed.Plane]) {
			return nil, fmt.Errorf("edit %d: destination %d plane %d: switch %d out of range (%d switches)", i, ed.Dest, ed.Plane, ed.Switch, len(planes[ed.Plane]))
		}
		planes[ed.Plane][ed.Switch] = ed.Port
	}
	return out, nil
}

// RunLIDAssigner checks the LID assigner binary at path.
func RunLIDAssigner(t *testing.T, path string, opts Options) {
	checkLIDs(t, launch(t, path, sdk.KindLIDAssign), opts)
}

// LIDAssigner checks a LID assigner implementation in-process.
func LIDAssigner(t *testing.T, impl sdk.LIDAssigner, opts Options) {
	checkLIDs(t, InProcess(t, impl, sdk.KindLIDAssign), opts)
}

func checkLIDs(t *testing.T, c *sdk.RemoteClient, opts Options) {
	ctx, fabrics := setup(t, c, sdk.KindLIDAssign, &opts)
	info, err := c.GetInfo(ctx)
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if info.HasCapability(sdk.CapEndpointsOnly) {
		t.Run("endpoints-only", func(t *testing.T) { checkEndpointsOnly(t, ctx, c, info, opts) })
	}
	for name, topo := range fabrics {
		t.Run(name, func(t *testing.T) {
			routes := BFSRoutes(topo)
			l, err := c.AssignLIDs(ctx, sdk.LIDRequest{Topo: topo, Routes: routes, LMC: opts.LMC})
			if err != nil {
				t.Fatalf("AssignLIDs: %v", err)
			}
			if err := CheckLIDs(topo, routes, l, opts.LMC); err != nil {
				t.Fatal(err)
			}
			if err := CheckPlan(check.Plan{Topo: topo, Routes: routes, LIDs: l}, opts, true); err != nil {
				t.Fatalf("the host refuses the LID plan: %v", err)
			}
		})
	}
}

// checkEndpointsOnly: an assigner that declares sdk.CapEndpointsOnly
// gives a ring and the same ring with one cable cut the same plan.
func checkEndpointsOnly(t *testing.T, ctx context.Context, c *sdk.RemoteClient, info sdk.Info, opts Options) {
	if !info.HasCapability(sdk.CapRoutesUnread) {
		t.Fatalf("the plugin declares %s without %s", sdk.CapEndpointsOnly, sdk.CapRoutesUnread)
	}
	var plans [2]*plan.LIDPlan
	for i, cut := range []bool{false, true} {
		topo, err := ringCut(6, 2, cut)
		if err != nil {
			t.Fatal(err)
		}
		prev := map[uint64]uint16{topo.PortGUID(topo.Endpoints()[3]): 40 << opts.LMC}
		if plans[i], err = c.AssignLIDs(ctx, sdk.LIDRequest{Topo: topo, Routes: BFSRoutes(topo), LMC: opts.LMC, Previous: prev}); err != nil {
			t.Fatalf("AssignLIDs: %v", err)
		}
	}
	if !slices.Equal(plans[0].Ports, plans[1].Ports) {
		t.Fatalf("the plugin declares %s but numbers a ring and the ring with a cable cut differently:\n%v\n%v", sdk.CapEndpointsOnly, plans[0].Ports, plans[1].Ports)
	}
}

// RunVLAssigner checks the VL assigner binary at path.
func RunVLAssigner(t *testing.T, path string, opts Options) {
	checkVLs(t, launch(t, path, sdk.KindVLAssign), opts)
}

// VLAssigner checks a VL assigner implementation in-process.
func VLAssigner(t *testing.T, impl sdk.VLAssigner, opts Options) {
	checkVLs(t, InProcess(t, impl, sdk.KindVLAssign), opts)
}

func checkVLs(t *testing.T, c *sdk.RemoteClient, opts Options) {
	ctx, fabrics := setup(t, c, sdk.KindVLAssign, &opts)
	info, err := c.GetInfo(ctx)
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	oneVL := info.HasCapability(sdk.CapOneVL)
	for name, topo := range fabrics {
		t.Run(name, func(t *testing.T) {
			routes := BFSRoutes(topo)
			lids := testfab.SequentialLIDs(topo, 0)
			maxVLs := 4
			v, err := c.AssignVLs(ctx, sdk.VLRequest{Topo: topo, Routes: routes, LIDs: lids, MaxVLs: maxVLs})
			if err != nil {
				t.Fatalf("AssignVLs: %v", err)
			}
			if err := CheckVLs(topo, v, maxVLs); err != nil {
				t.Fatal(err)
			}
			if oneVL && !v.IsOneVL() {
				t.Fatalf("the plugin declares %s but answered %+v: answer plan.OneVL() or drop the capability (the host takes plan.OneVL() without asking once its check passes)", sdk.CapOneVL, v)
			}
			if err := CheckPlan(check.Plan{Topo: topo, Routes: routes, LIDs: lids, VLs: v}, opts, false); err != nil {
				t.Fatalf("the host refuses the VL plan: %v", err)
			}
		})
	}
}

// CheckPlan runs the host's verifier (sdk/check) on p under opts'
// switch_to_switch policy and returns its error unchanged: the message an
// operator would see in the host's log. routesOnly skips the VL checks
// (per-VL channel dependency graphs, VLCap), as the host does when it
// checks routes before a VL assigner has run.
func CheckPlan(p check.Plan, opts Options, routesOnly bool) error {
	_, err := check.Check(p, check.Options{SwitchToSwitch: opts.SwitchToSwitch, RoutesOnly: routesOnly})
	return err
}

// planesFit checks that no destination has more planes than the 2^lmc
// LIDs that can carry them.
func planesFit(r *plan.Routes, lmc uint8) error {
	for e, d := range r.Planes {
		if len(d.Planes) > 1<<lmc {
			return fmt.Errorf("destination %d has %d planes but LMC %d gives it %d LIDs: return at most 2^LMC planes (RouteRequest.LMC)", e, len(d.Planes), lmc, 1<<lmc)
		}
	}
	return nil
}

// CheckRoutes checks planes structurally on a connected fabric: every
// switch has a route to every destination, the destination's switch uses
// port 0 for itself or the port cabled to the destination CA, every hop
// leaves through an up link to a switch, and every walk arrives without a
// loop. Path-form routes are checked for contiguous hops.
func CheckRoutes(t *topology.Topology, r *plan.Routes) error {
	sw := t.Switches()
	eps := t.Endpoints()
	if !r.IsPlanes() {
		return checkPaths(t, r)
	}
	if len(r.Planes) != len(eps) {
		return fmt.Errorf("%d destinations, want %d", len(r.Planes), len(eps))
	}
	for e, ep := range eps {
		dstSw, dstPort := ep.Node, uint8(0)
		if t.Nodes[ep.Node].Type != topology.Switch {
			peer := t.Port(ep).Peer
			if t.Nodes[peer.Node].Type != topology.Switch {
				continue // CA cabled to a CA: no switch route needed
			}
			dstSw, dstPort = peer.Node, peer.Port
		}
		if len(r.Planes[e].Planes) == 0 {
			return fmt.Errorf("destination %d has no plane", e)
		}
		for k, pl := range r.Planes[e].Planes {
			if len(pl) != len(sw) {
				return fmt.Errorf("destination %d plane %d has %d entries, want %d", e, k, len(pl), len(sw))
			}
			if got := pl[t.SwitchIndex(dstSw)]; got != dstPort {
				return fmt.Errorf("destination %d plane %d: its switch 0x%016x uses port %d, want %d", e, k, t.Nodes[dstSw].GUID, got, dstPort)
			}
			for s, start := range sw {
				cur := start
				for hops := 0; cur != dstSw; hops++ {
					if hops > len(sw) {
						return fmt.Errorf("destination %d plane %d: walk from switch 0x%016x loops", e, k, t.Nodes[start].GUID)
					}
					out := pl[t.SwitchIndex(cur)]
					if out == plan.NoPort {
						return fmt.Errorf("destination %d plane %d: switch 0x%016x (walk from switch %d) has no route on a connected fabric", e, k, t.Nodes[cur].GUID, s)
					}
					ref := topology.PortRef{Node: cur, Port: out}
					if out == 0 || int(out) >= len(t.Nodes[cur].Ports) || !t.IsLinkUp(ref) {
						return fmt.Errorf("destination %d plane %d: switch 0x%016x routes to port %d, which is not an up link", e, k, t.Nodes[cur].GUID, out)
					}
					next := t.Port(ref).Peer.Node
					if t.SwitchIndex(next) < 0 {
						return fmt.Errorf("destination %d plane %d: switch 0x%016x port %d leads to a non-switch that is not the destination", e, k, t.Nodes[cur].GUID, out)
					}
					cur = next
				}
			}
		}
	}
	return nil
}

func checkPaths(t *topology.Topology, r *plan.Routes) error {
	for i, p := range r.Paths {
		for k := 0; k+1 < len(p.Hops); k++ {
			h := p.Hops[k]
			ref := topology.PortRef{Node: h.Switch, Port: h.Out}
			if h.Out == 0 || !t.IsLinkUp(ref) {
				return fmt.Errorf("path %d hop %d: port %d is not an up link", i, k, h.Out)
			}
			peer := t.Port(ref).Peer
			if peer.Node != p.Hops[k+1].Switch || peer.Port != p.Hops[k+1].In {
				return fmt.Errorf("path %d hop %d: port %d does not lead to hop %d's switch and in-port", i, k, h.Out, k+1)
			}
		}
	}
	return nil
}

// CheckLIDs checks that every endpoint has a LID range of at most 2^lmc
// LIDs, aligned, unique and in the unicast space, and that the plan realises.
func CheckLIDs(t *topology.Topology, r *plan.Routes, l *plan.LIDPlan, lmc uint8) error {
	for e, p := range l.Ports {
		if p.Base == 0 {
			return fmt.Errorf("endpoint %d has no LID", e)
		}
		if p.LMC > lmc {
			return fmt.Errorf("endpoint %d has LMC %d, more than the configured %d", e, p.LMC, lmc)
		}
	}
	_, err := plan.Realize(t, r, l)
	return err
}

// CheckVLs checks that the plan uses SLs 0..15 and maps them only to data
// VLs below maxVLs (or to VL 15, the spec's drop).
func CheckVLs(t *topology.Topology, v *plan.VLPlan, maxVLs int) error {
	if v.VLs > maxVLs {
		return fmt.Errorf("plan uses %d VLs, fabric supports %d", v.VLs, maxVLs)
	}
	check := func(what string, tab [16]uint8) error {
		for sl, vl := range tab {
			if int(vl) >= maxVLs && vl != 15 {
				return fmt.Errorf("%s maps SL %d to VL %d, fabric supports VL 0..%d", what, sl, vl, maxVLs-1)
			}
		}
		return nil
	}
	if err := check("default SL2VL", v.Default); err != nil {
		return err
	}
	for i, e := range v.SL2VL {
		if err := check(fmt.Sprintf("SL2VL entry %d (node 0x%016x %d->%d)", i, t.Nodes[e.Node].GUID, e.In, e.Out), e.VL); err != nil {
			return err
		}
	}
	for lid, sl := range v.SLByDLID {
		if sl > 15 {
			return fmt.Errorf("DLID %d uses SL %d", lid, sl)
		}
	}
	return nil
}
