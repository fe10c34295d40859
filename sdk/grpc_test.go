package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk"
	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/sdktest"
	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
)

// fakePlugin implements all three kinds; each kind method returns what its
// fields say, so tests control exactly what crosses the wire.
type fakePlugin struct {
	kind   sdk.Kind
	cfg    cty.Value
	routes func(sdk.RouteRequest) (*plan.Routes, error)
	lids   func(sdk.LIDRequest) (*plan.LIDPlan, error)
	vls    func(sdk.VLRequest) (*plan.VLPlan, error)
}

func (f *fakePlugin) Info() sdk.Info {
	return sdk.Info{Name: "fake", Version: "1.2.3", Kind: f.kind, Capabilities: []string{"lmc"}}
}

func (f *fakePlugin) Schema() schema.Block {
	return schema.Object(schema.Attr("mode", cty.String, "what to do").WithDefault(cty.StringVal("normal")),
		schema.Attr("n", cty.Number, "a number").AsRequired())
}

func (f *fakePlugin) Configure(v cty.Value) error {
	if v.Type().IsObjectType() && v.Type().HasAttribute("mode") && v.GetAttr("mode") == cty.StringVal("reject") {
		return errors.New("mode reject is not allowed")
	}
	f.cfg = v
	return nil
}

func (f *fakePlugin) Route(ctx context.Context, r sdk.RouteRequest) (*plan.Routes, error) {
	return f.routes(r)
}

func (f *fakePlugin) AssignLIDs(ctx context.Context, r sdk.LIDRequest) (*plan.LIDPlan, error) {
	return f.lids(r)
}

func (f *fakePlugin) AssignVLs(ctx context.Context, r sdk.VLRequest) (*plan.VLPlan, error) {
	return f.vls(r)
}

func connect(t testing.TB, p sdk.Plugin, kind sdk.Kind) *sdk.RemoteClient {
	t.Helper()
	return sdktest.InProcess(t, p, kind)
}

func sequentialLIDs(n int, lmc uint8) *plan.LIDPlan {
	l := &plan.LIDPlan{Ports: make([]plan.PortLID, n)}
	step := uint16(1) << lmc
	for i := range l.Ports {
		l.Ports[i] = plan.PortLID{Base: step * uint16(i+1), LMC: lmc}
	}
	return l
}

func TestRoundTripAllKinds(t *testing.T) {
	topo, err := sdktest.FatTree2(4, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := sdktest.BFSRoutes(topo)
	lids := sequentialLIDs(len(topo.Endpoints()), 1)
	lids.Rule = plan.DLIDSpread
	lids.Overrides = []plan.DLIDOverride{{Src: 1, Dst: 2, Offset: 1}}
	vl := &plan.VLPlan{SLByDLID: []uint8{0, 1, 2, 3}, Overrides: []plan.SLOverride{{Src: 3, DLID: 2, SL: 5}},
		Default: [16]uint8{0, 1, 2, 3}, SL2VL: []plan.SL2VLEntry{{Node: 0, In: 1, Out: 2, VL: [16]uint8{1, 1}}}, VLs: 4}
	var gotPrev map[uint64]uint16
	var gotRealized *plan.Realized
	f := &fakePlugin{kind: sdk.KindRouting,
		routes: func(r sdk.RouteRequest) (*plan.Routes, error) {
			if r.Topo.Hash() != topo.Hash() || r.LMC != 1 {
				return nil, errors.New("request mangled")
			}
			return want, nil
		},
		lids: func(r sdk.LIDRequest) (*plan.LIDPlan, error) { gotPrev = r.Previous; return lids, nil },
		vls:  func(r sdk.VLRequest) (*plan.VLPlan, error) { gotRealized = r.Realized; return vl, nil },
	}
	c := connect(t, f, sdk.KindRouting)
	ctx := context.Background()

	info, err := c.GetInfo(ctx)
	if err != nil || info.Name != "fake" || info.Kind != sdk.KindRouting || info.Version != "1.2.3" {
		t.Fatalf("GetInfo = %+v, %v", info, err)
	}
	sch, err := c.GetSchema(ctx)
	if err != nil || len(sch.Attributes) != 2 || !sch.Attributes[0].Default.RawEquals(cty.StringVal("normal")) || !sch.Attributes[1].Required {
		t.Fatalf("GetSchema = %+v, %v", sch, err)
	}
	cfg := cty.ObjectVal(map[string]cty.Value{"mode": cty.StringVal("x"), "n": cty.NumberIntVal(3)})
	if err := c.Configure(ctx, cfg); err != nil || !f.cfg.RawEquals(cfg) {
		t.Fatalf("Configure: %v, plugin got %#v", err, f.cfg)
	}
	if err := c.Configure(ctx, cty.ObjectVal(map[string]cty.Value{"mode": cty.StringVal("reject")})); err == nil || !strings.Contains(err.Error(), "mode reject is not allowed") {
		t.Fatalf("Configure reject: %v", err)
	}

	routes, err := c.Route(ctx, sdk.RouteRequest{Topo: topo, LMC: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes.Planes) != len(want.Planes) {
		t.Fatalf("got %d destinations, want %d", len(routes.Planes), len(want.Planes))
	}
	for e := range want.Planes {
		if string(routes.Planes[e].Planes[0]) != string(want.Planes[e].Planes[0]) {
			t.Fatalf("destination %d plane differs", e)
		}
	}

	prev := map[uint64]uint16{0x10: 5, 0x20: 0 /* dropped: not a LID */}
	gl, err := c.AssignLIDs(ctx, sdk.LIDRequest{Topo: topo, Routes: routes, LMC: 1, Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	if len(gotPrev) != 1 || gotPrev[0x10] != 5 {
		t.Fatalf("plugin got previous %v", gotPrev)
	}
	if len(gl.Ports) != len(lids.Ports) || gl.Ports[3] != lids.Ports[3] || gl.Rule != plan.DLIDSpread || len(gl.Overrides) != 1 || gl.Overrides[0] != lids.Overrides[0] {
		t.Fatalf("LID plan mangled: %+v", gl)
	}

	gv, err := c.AssignVLs(ctx, sdk.VLRequest{Topo: topo, Routes: routes, LIDs: gl, MaxVLs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if gotRealized == nil || len(gotRealized.LFT) != len(topo.Switches()) {
		t.Fatalf("plugin did not get realised tables")
	}
	if string(gv.SLByDLID) != string(vl.SLByDLID) || gv.Default != vl.Default || gv.VLs != 4 || len(gv.SL2VL) != 1 || gv.SL2VL[0] != vl.SL2VL[0] || gv.Overrides[0] != vl.Overrides[0] {
		t.Fatalf("VL plan mangled: %+v", gv)
	}
}

// TestGarbageRejected checks that malformed plugin answers become precise
// errors on the host side.
func TestGarbageRejected(t *testing.T) {
	topo, err := sdktest.FatTree2(2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	nsw := len(topo.Switches())
	neps := len(topo.Endpoints())
	good := func() *plan.Routes { return sdktest.BFSRoutes(topo) }
	tests := []struct {
		name   string
		routes func() *plan.Routes
		lids   func() *plan.LIDPlan
		vls    func() *plan.VLPlan
		want   string
	}{
		{name: "short plane", routes: func() *plan.Routes { r := good(); r.Planes[1].Planes[0] = r.Planes[1].Planes[0][:nsw-1]; return r },
			want: "destination endpoint 1 plane 0 has 3 entries, want one per switch (4)"},
		{name: "port out of range", routes: func() *plan.Routes { r := good(); r.Planes[0].Planes[0][2] = 77; return r },
			want: "out-port 77 does not exist"},
		{name: "too few destinations", routes: func() *plan.Routes { r := good(); r.Planes = r.Planes[:2]; return r },
			want: "planes for 2 destinations"},
		{name: "too many planes", routes: func() *plan.Routes {
			r := good()
			r.Planes[0].Planes = append(r.Planes[0].Planes, r.Planes[0].Planes[0], r.Planes[0].Planes[0])
			return r
		}, want: "has 3 planes, want 1..2"},
		{name: "path hop not a switch", routes: func() *plan.Routes {
			return &plan.Routes{Paths: []plan.Path{{Src: 0, Dst: 1, Hops: []plan.Hop{{Switch: int32(topo.Endpoints()[neps-1].Node), In: 1, Out: 1}}}}}
		}, want: "is not a switch"},
		{name: "nil routes", routes: func() *plan.Routes { return nil }, want: "routes are nil"},
		{name: "LMC too big", lids: func() *plan.LIDPlan { l := sequentialLIDs(neps, 0); l.Ports[2].LMC = 9; return l }, want: "endpoint 2: LMC 9 > 7"},
		{name: "LID unaligned", lids: func() *plan.LIDPlan {
			l := sequentialLIDs(neps, 0)
			l.Ports[2] = plan.PortLID{Base: 3, LMC: 1}
			return l
		}, want: "not aligned"},
		{name: "LID beyond unicast", lids: func() *plan.LIDPlan { l := sequentialLIDs(neps, 0); l.Ports[0].Base = 0xC000; return l }, want: "outside 1..0xBFFF"},
		{name: "LID plan short", lids: func() *plan.LIDPlan { return sequentialLIDs(neps-1, 0) }, want: "LID plan: 7 ports, topology has 8 endpoints"},
		{name: "override offset", lids: func() *plan.LIDPlan {
			l := sequentialLIDs(neps, 0)
			l.Overrides = []plan.DLIDOverride{{Src: 0, Dst: 1, Offset: 1}}
			return l
		}, want: "offset 1 >= 2^LMC=1"},
		{name: "SL out of range", vls: func() *plan.VLPlan { return &plan.VLPlan{SLByDLID: []uint8{0, 16}} }, want: "SL 16 for DLID 1"},
		{name: "VL out of range", vls: func() *plan.VLPlan { return &plan.VLPlan{Default: [16]uint8{3: 16}} }, want: "maps SL 3 to VL 16"},
		{name: "SL2VL entry VL out of range", vls: func() *plan.VLPlan {
			return &plan.VLPlan{SL2VL: []plan.SL2VLEntry{{Node: 0}, {Node: 0, VL: [16]uint8{5: 16}}}}
		}, want: "SL2VL entry 1 maps SL 5 to VL 16"},
		{name: "SL2VL port", vls: func() *plan.VLPlan { return &plan.VLPlan{SL2VL: []plan.SL2VLEntry{{Node: 0, In: 200}}} }, want: "ports 200 -> 0"},
		{name: "too many VLs", vls: func() *plan.VLPlan { return &plan.VLPlan{VLs: 16} }, want: "uses 16 data VLs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePlugin{kind: sdk.KindRouting, routes: func(sdk.RouteRequest) (*plan.Routes, error) { return tc.routes(), nil },
				lids: func(sdk.LIDRequest) (*plan.LIDPlan, error) { return tc.lids(), nil },
				vls:  func(sdk.VLRequest) (*plan.VLPlan, error) { return tc.vls(), nil }}
			c := connect(t, f, sdk.KindRouting)
			ctx := context.Background()
			var err error
			switch {
			case tc.routes != nil:
				_, err = c.Route(ctx, sdk.RouteRequest{Topo: topo, LMC: 1})
			case tc.lids != nil:
				_, err = c.AssignLIDs(ctx, sdk.LIDRequest{Topo: topo, Routes: good(), LMC: 0})
			default:
				_, err = c.AssignVLs(ctx, sdk.VLRequest{Topo: topo, Routes: good(), LIDs: sequentialLIDs(neps, 0), MaxVLs: 4})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

type panicky struct{ fakePlugin }

func (p *panicky) Route(context.Context, sdk.RouteRequest) (*plan.Routes, error) {
	var m map[string]int
	//lint:ignore SA5000 the nil-map write is the runtime panic under test
	m["boom"]++
	return nil, nil
}

func TestPanicBecomesError(t *testing.T) {
	topo, _ := sdktest.Ring(3, 1)
	c := connect(t, &panicky{fakePlugin{kind: sdk.KindRouting}}, sdk.KindRouting)
	_, err := c.Route(context.Background(), sdk.RouteRequest{Topo: topo})
	if err == nil || !strings.Contains(err.Error(), "plugin panicked in Route") {
		t.Fatalf("error = %v", err)
	}
	// The plugin survives.
	if _, err := c.GetInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type noKind struct{}

func (noKind) Info() sdk.Info            { return sdk.Info{Kind: sdk.KindRouting} }
func (noKind) Schema() schema.Block      { return schema.Block{} }
func (noKind) Configure(cty.Value) error { return nil }

func TestServerPluginSetChecksKind(t *testing.T) {
	if _, err := sdk.ServerPluginSet(noKind{}, nil); err == nil || !strings.Contains(err.Error(), "implements no plugin kind") {
		t.Fatalf("err = %v", err)
	}
	type lidOnly struct{ sdk.LIDAssigner }
	if _, err := sdk.ServerPluginSet(lidOnly{&fakePlugin{kind: sdk.KindRouting}}, nil); err == nil || !strings.Contains(err.Error(), "does not implement that kind") {
		t.Fatalf("err = %v", err)
	}
}

// serveProtocolEnv makes the test binary serve fakePlugin as a plugin
// binary speaking the protocol named in it (see TestMain).
const serveProtocolEnv = "IBSM_SDK_TEST_SERVE_PROTOCOL"

func TestMain(m *testing.M) {
	if v := os.Getenv(serveProtocolEnv); v != "" {
		// Stand in for a plugin built against another SDK: same services,
		// different handshake protocol.
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		set, err := sdk.ServerPluginSet(&fakePlugin{kind: sdk.KindRouting}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		plugin.Serve(&plugin.ServeConfig{HandshakeConfig: sdk.Handshake(), VersionedPlugins: map[int]plugin.PluginSet{n: set},
			GRPCServer: sdk.NewGRPCServer, Logger: hclog.NewNullLogger()})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestProtocolHandshake starts this test binary as a plugin process
// speaking the current, a retired and a future protocol, through go-plugin's
// real negotiation, and checks what the host gets.
func TestProtocolHandshake(t *testing.T) {
	tests := []struct {
		protocol int
		want     string // "" = works
	}{
		{sdk.ProtocolVersion, ""},
		{1, fmt.Sprintf("plugin speaks ibsm plugin protocol 1, this host speaks %d: rebuild the plugin against ibsm SDK v%s", sdk.ProtocolVersion, sdk.SDKVersion)},
		{sdk.ProtocolVersion + 1, "incompatible API version with plugin"},
	}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.protocol), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", serveProtocolEnv, tc.protocol), plugin.EnvUnixSocketDir+"="+dir)
			c := plugin.NewClient(&plugin.ClientConfig{
				HandshakeConfig:  sdk.Handshake(),
				VersionedPlugins: sdk.HostPluginSets(),
				Cmd:              cmd,
				AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
				Logger:           hclog.NewNullLogger(),
				StartTimeout:     20 * time.Second,
				GRPCDialOptions:  sdk.GRPCDialOptions(),
			})
			t.Cleanup(c.Kill)
			rpc, err := c.Client()
			var raw any
			if err == nil {
				raw, err = rpc.Dispense(string(sdk.KindRouting))
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				info, err := raw.(*sdk.RemoteClient).GetInfo(context.Background())
				if err != nil || info.Name != "fake" {
					t.Fatalf("GetInfo = %+v, %v", info, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			var stale *sdk.StaleProtocolError
			if tc.protocol < sdk.ProtocolVersion && (!errors.As(err, &stale) || stale.Plugin != tc.protocol) {
				t.Fatalf("error %T is not a StaleProtocolError for protocol %d", err, tc.protocol)
			}
		})
	}
}

// rawEngine is a routing plugin that bypasses the SDK encoder and answers
// with exactly the chunks it is given, as a buggy or stale plugin might.
type rawEngine struct {
	pb.UnimplementedRoutingEngineServer
	answer []*pb.Chunk
}

func (r *rawEngine) Route(stream pb.RoutingEngine_RouteServer) error {
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	for _, c := range r.answer {
		if err := stream.Send(c); err != nil {
			return err
		}
	}
	return nil
}

type rawPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	srv *rawEngine
}

func (p *rawPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterRoutingEngineServer(s, p.srv)
	return nil
}

func (p *rawPlugin) GRPCClient(ctx context.Context, b *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return sdk.HostPluginSets()[sdk.ProtocolVersion][string(sdk.KindRouting)].(plugin.GRPCPlugin).GRPCClient(ctx, b, cc)
}

// TestRawGarbageRefused checks the host decoder against plane streams the
// SDK encoder would never produce.
func TestRawGarbageRefused(t *testing.T) {
	topo, err := sdktest.FatTree2(2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	nsw, neps := len(topo.Switches()), len(topo.Endpoints())
	header := &pb.Chunk{Part: &pb.Chunk_RoutesHeader{RoutesHeader: &pb.RoutesHeader{Form: pb.RoutesHeader_FORM_PLANES, NumDestinations: uint32(neps)}}}
	batch := func(b *pb.PlaneBatch) *pb.Chunk { return &pb.Chunk{Part: &pb.Chunk_Planes{Planes: b}} }
	ones := func(n int) []byte { return []byte(strings.Repeat("\x01", n)) }
	// A protocol-1 PlaneBatch: field 1 (DestPlanes) only, now reserved.
	v1 := &pb.PlaneBatch{}
	v1.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), ones(nsw))))
	tests := []struct {
		name   string
		answer []*pb.Chunk
		want   string
	}{
		{"valid", []*pb.Chunk{header, batch(&pb.PlaneBatch{Width: uint32(nsw), Counts: ones(neps), Planes: ones(neps * nsw)})}, ""},
		{"protocol 1 batch", []*pb.Chunk{header, batch(v1)}, "planes are 0 entries wide"},
		{"width", []*pb.Chunk{header, batch(&pb.PlaneBatch{Width: uint32(nsw + 1), Counts: ones(neps), Planes: ones(neps * (nsw + 1))})}, "want one per switch"},
		{"short block", []*pb.Chunk{header, batch(&pb.PlaneBatch{Width: uint32(nsw), Counts: ones(neps), Planes: ones(neps*nsw - 1)})}, "want 32"},
		{"bad port", []*pb.Chunk{header, batch(&pb.PlaneBatch{Width: uint32(nsw), Counts: ones(neps), Planes: append(ones(neps*nsw-1), 200)})}, "out-port 200 does not exist"},
		{"truncated", []*pb.Chunk{header, batch(&pb.PlaneBatch{Width: uint32(nsw), Counts: ones(neps - 1), Planes: ones((neps - 1) * nsw)})}, "stream ended while expecting planes"},
		{"trailing", []*pb.Chunk{header, batch(&pb.PlaneBatch{Width: uint32(nsw), Counts: ones(neps), Planes: ones(neps * nsw)}), header}, "unexpected routes_header chunk after the last expected one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := &rawPlugin{srv: &rawEngine{answer: tc.answer}}
			client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{string(sdk.KindRouting): raw})
			t.Cleanup(func() { server.Stop(); client.Close() })
			d, err := client.Dispense(string(sdk.KindRouting))
			if err != nil {
				t.Fatal(err)
			}
			r, err := d.(*sdk.RemoteClient).Route(context.Background(), sdk.RouteRequest{Topo: topo})
			if tc.want == "" {
				if err != nil || len(r.Planes) != neps {
					t.Fatalf("valid answer: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
