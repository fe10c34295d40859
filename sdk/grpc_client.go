package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/ibsm/ibsm/sdk/internal/wire"
	"github.com/ibsm/ibsm/sdk/plan"
	pb "github.com/ibsm/ibsm/sdk/pluginv1"
	"github.com/ibsm/ibsm/sdk/schema"
	"github.com/ibsm/ibsm/sdk/topology"
	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// RemoteClient is the host's connection to one plugin process, as returned
// by go-plugin's Dispense with HostPluginSets. Every answer is decoded with
// full validation: malformed output from the plugin is an error, never a
// panic or an out-of-range value. It is safe for concurrent use.
type RemoteClient struct {
	base    pb.PluginClient
	routing pb.RoutingEngineClient
	lids    pb.LIDAssignerClient
	vls     pb.VLAssignerClient
	mcast   pb.MulticastRouterClient
	// gone is cancelled by go-plugin when the plugin process exits.
	gone context.Context
	// routesUnread: GetInfo found CapRoutesUnread, so AssignLIDs sends
	// only the routes' shape.
	routesUnread atomic.Bool
	// patches: GetInfo found FeatureTopologyPatch, so a call's topology
	// may go as a patch of sent's.
	patches atomic.Bool
	sent    sentTopology
}

func newRemoteClient(gone context.Context, cc *grpc.ClientConn) *RemoteClient {
	return &RemoteClient{
		base:    pb.NewPluginClient(cc),
		routing: pb.NewRoutingEngineClient(cc),
		lids:    pb.NewLIDAssignerClient(cc),
		vls:     pb.NewVLAssignerClient(cc),
		mcast:   pb.NewMulticastRouterClient(cc),
		gone:    gone,
	}
}

// Gone is closed when the plugin process has exited.
func (c *RemoteClient) Gone() <-chan struct{} { return c.gone.Done() }

// GetInfo asks the plugin who it is.
func (c *RemoteClient) GetInfo(ctx context.Context) (Info, error) {
	r, err := c.base.GetInfo(ctx, &pb.GetInfoRequest{})
	if err != nil {
		return Info{}, err
	}
	info := Info{Name: r.Name, Version: r.Version, Kind: Kind(r.Kind), Capabilities: r.Capabilities, SDKVersion: r.SdkVersion}
	c.routesUnread.Store(info.Kind == KindLIDAssign && info.HasCapability(CapRoutesUnread))
	c.patches.Store(slices.Contains(r.SdkFeatures, FeatureTopologyPatch))
	return info, nil
}

// GetSchema fetches the plugin's config schema.
func (c *RemoteClient) GetSchema(ctx context.Context) (schema.Block, error) {
	r, err := c.base.GetSchema(ctx, &pb.GetSchemaRequest{})
	if err != nil {
		return schema.Block{}, err
	}
	return wire.SchemaFromProto(r)
}

// Configure sends a decoded config block.
func (c *RemoteClient) Configure(ctx context.Context, cfg cty.Value) error {
	req, err := wire.ConfigToProto(cfg)
	if err != nil {
		return err
	}
	_, err = c.base.Configure(ctx, req)
	return err
}

// Stop asks the plugin to abandon work before it is killed.
func (c *RemoteClient) Stop(ctx context.Context) error {
	_, err := c.base.Stop(ctx, &pb.StopRequest{})
	return err
}

// chunkStream is what the three generated bidi stream clients share.
type chunkStream interface {
	Send(*pb.Chunk) error
	Recv() (*pb.Chunk, error)
	CloseSend() error
}

// exchange opens a kind stream with open, sends start, the topology and
// then whatever rest writes, half-closes, decodes the answer with read and
// checks nothing follows. A send failing with io.EOF means the plugin
// already ended the call; its status is the real error. To a plugin whose
// SDK takes patches the topology goes as a patch of the last one it
// accepted where that is smaller; if the plugin no longer holds that one
// (FailedPrecondition), the call is made again with the topology whole.
func exchange[T any](ctx context.Context, c *RemoteClient, open func(context.Context) (chunkStream, error), start *pb.Start, topo *topology.Topology, rest func(wire.Send) error, read func(wire.Recv) (T, error)) (T, error) {
	if !c.patches.Load() {
		return exchangeOnce(ctx, open, start, func(send wire.Send) (bool, error) { return false, wire.SendTopology(send, topo) }, rest, read)
	}
	token, base, baseToken := c.sent.next()
	sendTopo := func(send wire.Send) (bool, error) { return wire.SendNamedTopology(send, topo, token, base, baseToken) }
	out, err := exchangeOnce(ctx, open, start, sendTopo, rest, read)
	if baseToken != 0 && lostBase(err) {
		c.sent.forget()
		baseToken = 0
		out, err = exchangeOnce(ctx, open, start, sendTopo, rest, read)
	}
	if err == nil {
		c.sent.accepted(topo, token)
	}
	return out, err
}

// lostBase reports whether err is a plugin's refusal of a patch against a
// topology it does not hold (the SDK's server, recvTopology).
func lostBase(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.FailedPrecondition && st.Message() == wire.ErrUnknownBase.Error()
}

// exchangeOnce is one call of exchange; sendTopo writes the topology and
// reports whether it sent a patch.
func exchangeOnce[T any](ctx context.Context, open func(context.Context) (chunkStream, error), start *pb.Start, sendTopo func(wire.Send) (bool, error), rest func(wire.Send) error, read func(wire.Recv) (T, error)) (T, error) {
	var zero T
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream if decoding fails half-way
	stream, err := open(ctx)
	if err != nil {
		return zero, err
	}
	err = wire.SendStart(stream.Send, start)
	if err == nil {
		_, err = sendTopo(stream.Send)
	}
	if err == nil {
		err = rest(stream.Send)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			_, rerr := stream.Recv()
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				return zero, rerr
			}
		}
		return zero, err
	}
	if err := stream.CloseSend(); err != nil {
		return zero, err
	}
	out, err := read(stream.Recv)
	if err != nil {
		return zero, err
	}
	if err := wire.ExpectEnd(stream.Recv); err != nil {
		return zero, err
	}
	return out, nil
}

// Route runs the plugin's routing engine. With req.Since the answer may
// be changes to the answer named (plan.Routes.Base), with req.Edits
// too as edits of its planes (plan.Routes.Edits); each edit's plane is
// then only known to be below 2^LMC, not to exist in that answer.
func (c *RemoteClient) Route(ctx context.Context, req RouteRequest) (*plan.Routes, error) {
	if req.Topo == nil || req.LMC > 7 {
		return nil, fmt.Errorf("route request needs a topology and LMC <= 7")
	}
	return exchange(ctx, c, func(ctx context.Context) (chunkStream, error) { return c.routing.Route(ctx) },
		&pb.Start{Lmc: uint32(req.LMC), Since: req.Since, Edits: req.Edits}, req.Topo,
		func(wire.Send) error { return nil },
		func(recv wire.Recv) (*plan.Routes, error) {
			r, err := wire.RecvRouteAnswer(recv, req.Topo, req.LMC)
			switch {
			case err != nil:
			case r.Base != 0 && r.Base != req.Since:
				err = fmt.Errorf("routes: the plugin answered changes to answer %#x, the request named %#x", r.Base, req.Since)
			case r.Edits != nil && !req.Edits:
				err = fmt.Errorf("routes: the plugin answered edits to answer %#x, the request did not ask for edits", r.Base)
			}
			return r, err
		})
}

// errPartialRoutes: routes that carry only an answer's changes
// (plan.Routes.Base: planes or edits) were to be sent to a plugin that
// reads them.
var errPartialRoutes = errors.New("routes carry only the destinations changed since an earlier answer; a plugin that reads routes needs them whole")

// AssignLIDs runs the plugin's LID assigner. Previous entries with a LID
// outside the unicast range are not sent.
func (c *RemoteClient) AssignLIDs(ctx context.Context, req LIDRequest) (*plan.LIDPlan, error) {
	if req.Topo == nil || req.Routes == nil || req.LMC > 7 {
		return nil, fmt.Errorf("LID request needs a topology, routes and LMC <= 7")
	}
	guids := make([]uint64, 0, len(req.Previous))
	for g, lid := range req.Previous {
		if lid != 0 && lid <= plan.MaxUnicastLID {
			guids = append(guids, g)
		}
	}
	slices.Sort(guids)
	return exchange(ctx, c, func(ctx context.Context) (chunkStream, error) { return c.lids.AssignLIDs(ctx) },
		&pb.Start{Lmc: uint32(req.LMC), NumPrevious: uint32(len(guids))}, req.Topo,
		func(send wire.Send) error {
			sendRoutes := wire.SendRoutes
			if c.routesUnread.Load() {
				sendRoutes = func(send wire.Send, _ *topology.Topology, r *plan.Routes) error { return wire.SendRoutesShape(send, r) }
			} else if req.Routes.Base != 0 {
				return errPartialRoutes
			}
			if err := sendRoutes(send, req.Topo, req.Routes); err != nil {
				return err
			}
			return wire.SendPrevious(send, req.Previous, guids)
		},
		func(recv wire.Recv) (*plan.LIDPlan, error) { return wire.RecvLIDPlan(recv, req.Topo) })
}

// AssignVLs runs the plugin's VL assigner. req.Realized is not sent: the
// plugin realises the same tables from Routes and LIDs with plan.Realize.
func (c *RemoteClient) AssignVLs(ctx context.Context, req VLRequest) (*plan.VLPlan, error) {
	if req.Topo == nil || req.Routes == nil || req.LIDs == nil || req.MaxVLs < 0 || req.MaxVLs > 15 {
		return nil, fmt.Errorf("VL request needs a topology, routes, a LID plan and MaxVLs in 0..15")
	}
	return exchange(ctx, c, func(ctx context.Context) (chunkStream, error) { return c.vls.AssignVLs(ctx) },
		&pb.Start{MaxVls: uint32(req.MaxVLs)}, req.Topo,
		func(send wire.Send) error {
			if req.Routes.Base != 0 {
				return errPartialRoutes
			}
			if err := wire.SendRoutes(send, req.Topo, req.Routes); err != nil {
				return err
			}
			return wire.SendLIDPlan(send, req.Topo, req.LIDs)
		},
		func(recv wire.Recv) (*plan.VLPlan, error) { return wire.RecvVLPlan(recv, req.Topo) })
}
