package sdk

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/ibsm/ibsm/sdk/internal/wire"
	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/topology"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Stopper is implemented by plugins that hold resources to release when the
// host stops them (the Stop RPC). In-flight kind calls see their context
// cancelled either way.
type Stopper interface {
	Stop(ctx context.Context) error
}

// grpcPlugin is the go-plugin glue for one plugin-set entry. In a plugin
// binary register is set and GRPCServer registers services; on the host
// GRPCClient returns a *RemoteClient.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	register func(*grpc.Server)
}

func (g *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if g.register == nil {
		return errors.New("sdk: host-side plugin set used to serve")
	}
	g.register(s)
	return nil
}

func (g *grpcPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return newRemoteClient(ctx, cc), nil
}

// server is the plugin side of every service for one implementation.
type server struct {
	pb.UnimplementedPluginServer
	pb.UnimplementedRoutingEngineServer
	pb.UnimplementedLIDAssignerServer
	pb.UnimplementedVLAssignerServer
	pb.UnimplementedMulticastRouterServer

	impl Plugin
	log  hclog.Logger
	// life is cancelled by Stop; every kind call's context derives from it.
	life    context.Context
	stop    context.CancelFunc
	stopped sync.Once
	// last is a routing engine's last planes answer (routes_since.go).
	last lastAnswer
	// topos are the topologies the host may patch (topologies.go).
	topos keptTopologies
}

// ServerPluginSet builds the plugin set a binary serves for p: the Plugin
// service plus one service per kind interface p implements. It fails if p
// implements no kind or if Info().Kind is not one of them. Serve uses it;
// sdktest uses it to run an implementation in-process over real gRPC.
func ServerPluginSet(p Plugin, logger hclog.Logger) (plugin.PluginSet, error) {
	if p == nil {
		return nil, errors.New("sdk: nil plugin")
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	life, stop := context.WithCancel(context.Background())
	s := &server{impl: p, log: logger, life: life, stop: stop}
	set := plugin.PluginSet{basePluginName: &grpcPlugin{register: func(g *grpc.Server) { pb.RegisterPluginServer(g, s) }}}
	if _, ok := p.(RoutingEngine); ok {
		set[string(KindRouting)] = &grpcPlugin{register: func(g *grpc.Server) { pb.RegisterRoutingEngineServer(g, s) }}
	}
	if _, ok := p.(LIDAssigner); ok {
		set[string(KindLIDAssign)] = &grpcPlugin{register: func(g *grpc.Server) { pb.RegisterLIDAssignerServer(g, s) }}
	}
	if _, ok := p.(VLAssigner); ok {
		set[string(KindVLAssign)] = &grpcPlugin{register: func(g *grpc.Server) { pb.RegisterVLAssignerServer(g, s) }}
	}
	if _, ok := p.(MulticastRouter); ok {
		set[string(KindMulticast)] = &grpcPlugin{register: func(g *grpc.Server) { pb.RegisterMulticastRouterServer(g, s) }}
	}
	if len(set) == 1 {
		return nil, fmt.Errorf("sdk: %T implements no plugin kind; implement sdk.RoutingEngine, sdk.LIDAssigner, sdk.VLAssigner or sdk.MulticastRouter", p)
	}
	var info Info
	if err := s.guard("Info", func() error { info = p.Info(); return nil }); err != nil {
		return nil, err
	}
	if _, ok := set[string(info.Kind)]; !ok {
		return nil, fmt.Errorf("sdk: Info().Kind is %q but %T does not implement that kind's interface", info.Kind, p)
	}
	return set, nil
}

// guard runs f, turning a panic into an Internal error and logging the stack
// so that one bad input does not kill a long-lived plugin.
func (s *server) guard(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("plugin panicked", "call", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = status.Errorf(codes.Internal, "plugin panicked in %s: %v (stack trace in the plugin log)", what, r)
		}
	}()
	return f()
}

// callCtx derives a kind call's context from the RPC's (host deadline and
// cancellation) and the server's life (Stop).
func (s *server) callCtx(rpc context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(rpc)
	undo := context.AfterFunc(s.life, cancel)
	return ctx, func() { undo(); cancel() }
}

// implErr wraps an error returned by the implementation; status errors pass
// through, context errors keep their gRPC meaning.
func implErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Errorf(codes.DeadlineExceeded, "%s: %v", what, err)
	case errors.Is(err, context.Canceled):
		return status.Errorf(codes.Canceled, "%s: %v", what, err)
	}
	return status.Errorf(codes.Unknown, "%s: %v", what, err)
}

func badInput(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Errorf(codes.InvalidArgument, "decoding request: %v", err)
}

func (s *server) GetInfo(context.Context, *pb.GetInfoRequest) (*pb.Info, error) {
	var out *pb.Info
	err := s.guard("Info", func() error {
		i := s.impl.Info()
		out = &pb.Info{Name: i.Name, Version: i.Version, Kind: string(i.Kind), Capabilities: i.Capabilities, SdkVersion: SDKVersion, SdkFeatures: sdkFeatures}
		return nil
	})
	return out, err
}

func (s *server) GetSchema(context.Context, *pb.GetSchemaRequest) (*pb.Schema, error) {
	var out *pb.Schema
	err := s.guard("Schema", func() error {
		var err error
		out, err = wire.SchemaToProto(s.impl.Schema())
		return implErr("schema", err)
	})
	return out, err
}

func (s *server) Configure(_ context.Context, r *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	err := s.guard("Configure", func() error {
		v, err := wire.ConfigFromProto(r)
		if err != nil {
			return badInput(err)
		}
		return implErr("configure", s.impl.Configure(v))
	})
	if err != nil {
		return nil, err
	}
	return &pb.ConfigureResponse{}, nil
}

func (s *server) Stop(ctx context.Context, _ *pb.StopRequest) (*pb.StopResponse, error) {
	s.stopped.Do(s.stop)
	err := s.guard("Stop", func() error {
		if st, ok := s.impl.(Stopper); ok {
			return implErr("stop", st.Stop(ctx))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &pb.StopResponse{}, nil
}

// request is a decoded kind request. The three kinds' streams share one
// layout, each a prefix of the next but for the last part: Start, topology,
// then routes and previous LIDs (LID assigners) or routes and the LID plan
// (VL assigners), then end of stream.
type request struct {
	start  *pb.Start
	topo   *topology.Topology
	routes *plan.Routes
	prev   map[uint64]uint16
	lids   *plan.LIDPlan
}

// recvRequest reads and vets the request of kind k; every error is already
// a gRPC status.
func (s *server) recvRequest(recv wire.Recv, k Kind) (*request, error) {
	st, err := wire.RecvStart(recv)
	if err != nil {
		return nil, badInput(err)
	}
	if k == KindVLAssign {
		if st.MaxVls > 15 {
			return nil, status.Errorf(codes.InvalidArgument, "max VLs %d > 15", st.MaxVls)
		}
	} else if st.Lmc > 7 {
		return nil, status.Errorf(codes.InvalidArgument, "LMC %d > 7", st.Lmc)
	}
	r := &request{start: st}
	if r.topo, err = s.recvTopology(recv); err != nil {
		return nil, err
	}
	switch k {
	case KindLIDAssign:
		// Only the routes' shape comes to an assigner that declared
		// CapRoutesUnread.
		if r.routes, err = wire.RecvRoutesOrShape(recv, r.topo, uint8(st.Lmc)); err != nil {
			return nil, badInput(err)
		}
		if r.prev, err = wire.RecvPrevious(recv, st.NumPrevious); err != nil {
			return nil, badInput(err)
		}
	case KindVLAssign:
		// The routes' LMC is not sent to VL assigners; 7 admits any.
		if r.routes, err = wire.RecvRoutes(recv, r.topo, 7); err != nil {
			return nil, badInput(err)
		}
		if r.lids, err = wire.RecvLIDPlan(recv, r.topo); err != nil {
			return nil, badInput(err)
		}
	}
	if err := wire.ExpectEnd(recv); err != nil {
		return nil, badInput(err)
	}
	return r, nil
}

// recvTopology reads a kind call's topology, whole or as a patch of one
// kept, and keeps it under its token. A patch of a topology not kept
// fails the call with FailedPrecondition: the host then sends it whole.
func (s *server) recvTopology(recv wire.Recv) (*topology.Topology, error) {
	t, token, err := wire.RecvNamedTopology(recv, s.topos.get)
	if errors.Is(err, wire.ErrUnknownBase) {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	if err != nil {
		return nil, badInput(err)
	}
	s.topos.put(token, t)
	return t, nil
}

func (s *server) Route(stream pb.RoutingEngine_RouteServer) error {
	return s.guard("Route", func() error {
		r, err := s.recvRequest(stream.Recv, KindRouting)
		if err != nil {
			return err
		}
		ctx, done := s.callCtx(stream.Context())
		defer done()
		routes, err := s.impl.(RoutingEngine).Route(ctx, RouteRequest{Topo: r.topo, LMC: uint8(r.start.Lmc)})
		if err != nil {
			return implErr("route", err)
		}
		if routes == nil {
			return implErr("sending routes", wire.SendRoutes(stream.Send, r.topo, routes))
		}
		routes = s.last.answer(r.start.Since, len(r.topo.Switches()), routes, s.impl.Info().HasCapability(CapStablePlanes), r.start.Edits)
		return implErr("sending routes", wire.SendRoutes(stream.Send, r.topo, routes))
	})
}

func (s *server) AssignLIDs(stream pb.LIDAssigner_AssignLIDsServer) error {
	return s.guard("AssignLIDs", func() error {
		r, err := s.recvRequest(stream.Recv, KindLIDAssign)
		if err != nil {
			return err
		}
		ctx, done := s.callCtx(stream.Context())
		defer done()
		lids, err := s.impl.(LIDAssigner).AssignLIDs(ctx, LIDRequest{Topo: r.topo, Routes: r.routes, LMC: uint8(r.start.Lmc), Previous: r.prev})
		if err != nil {
			return implErr("assign LIDs", err)
		}
		return implErr("sending LID plan", wire.SendLIDPlan(stream.Send, r.topo, lids))
	})
}

func (s *server) AssignVLs(stream pb.VLAssigner_AssignVLsServer) error {
	return s.guard("AssignVLs", func() error {
		r, err := s.recvRequest(stream.Recv, KindVLAssign)
		if err != nil {
			return err
		}
		// The forwarding tables are realised here rather than sent: Realize
		// is deterministic and shared, so host and plugin agree on them.
		var realized *plan.Realized
		if !s.impl.Info().HasCapability(CapTablesUnread) {
			if realized, err = plan.Realize(r.topo, r.routes, r.lids); err != nil {
				return status.Errorf(codes.InvalidArgument, "realising forwarding tables: %v", err)
			}
		}
		ctx, done := s.callCtx(stream.Context())
		defer done()
		vls, err := s.impl.(VLAssigner).AssignVLs(ctx, VLRequest{Topo: r.topo, Routes: r.routes, LIDs: r.lids, Realized: realized, MaxVLs: int(r.start.MaxVls)})
		if err != nil {
			return implErr("assign VLs", err)
		}
		return implErr("sending VL plan", wire.SendVLPlan(stream.Send, vls))
	})
}
